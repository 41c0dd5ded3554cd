#!/usr/bin/env python3
"""`meson install` into a DESTDIR, then use what was installed.

The layout: the PMD in <libdir>, linked from the installed DPDK's pmds-<ABI>
directory (where EAL auto-loads drivers), rte_pmd_mlx5_lm.h in <includedir>,
libdpdk-vdpa-mlx5-lm.pc, dpdk-test-lm in <bindir>. Then:
- the pkg-config file compiles and links a program against the header and library;
- the stock dpdk-vdpa example loads the PMD from the DESTDIR's pmds directory
  with EAL -d (the same directory scan as EAL's auto-load) and serves testpmd;
- the installed dpdk-test-lm (with the installed library) serves testpmd;
- the installed PMD exports its public API only (version.map) and needs neither the
  emulator nor libjansson: it loads the emulator library, installed beside it, when a
  device with emu= is probed, and names that library when it cannot.
EAL refuses plugins under world-writable directories (/tmp): the DESTDIR is in
the build directory, or in ~ when that has a world-writable parent.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from lmtest import (EXAMPLE_SRC, Proc, build_vdpa_example, doc_block, serve, testpmd_traffic,
                    vdpa_example_serves_testpmd, world_writable_parent)

BUILD = os.environ.get('LM_BUILD_ROOT', 'build')
PMD = 'librte_vdpa_mlx5_lm.so'
EMU = 'librte_vdpa_mlx5_lm_emu.so'


def defined_dynamic_symbols(lib):
    """nm -D --defined-only: {name: type}, a versioned name with its @@VERSION."""
    r = subprocess.run(['nm', '-D', '--defined-only', lib], stdout=subprocess.PIPE, check=True,
                       text=True, timeout=60)
    return {f[2]: f[1] for f in (l.split() for l in r.stdout.splitlines()) if len(f) == 3}


def needed(lib):
    r = subprocess.run(['readelf', '-d', lib], stdout=subprocess.PIPE, check=True, text=True,
                       timeout=60)
    return re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', r.stdout)


def loaded_by(log_prefix):
    """The files the dynamic linker loaded, from LD_DEBUG=files logs <log_prefix>.<pid>."""
    files = set()
    for path in glob.glob(log_prefix + '.*'):
        with open(path, errors='replace') as f:
            files.update(re.findall(r'file=(\S+) \[', f.read()))
    return files


def meson_introspect(what):
    r = subprocess.run(['meson', 'introspect', what, BUILD], check=True,
                       stdout=subprocess.PIPE, timeout=120)
    return json.loads(r.stdout)


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        base = next((b for b in (os.path.join(BUILD, 'tests', 'integration'), BUILD,
                                 os.path.expanduser('~'))
                     if os.path.isdir(b) and not world_writable_parent(b)), None)
        if base is None:
            raise unittest.SkipTest('no directory without world-writable parents for EAL -d')
        cls.destdir = tempfile.mkdtemp(prefix='install-', dir=os.path.abspath(base))
        os.chmod(cls.destdir, 0o755)
        r = subprocess.run(['meson', 'install', '-C', BUILD, '--no-rebuild', '--quiet',
                            '--destdir', cls.destdir], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=300)
        if r.returncode != 0:
            shutil.rmtree(cls.destdir, ignore_errors=True)
            raise AssertionError('meson install failed:\n' + r.stdout.decode(errors='replace'))
        opts = {o['name']: o['value'] for o in meson_introspect('--buildoptions')}
        prefix = opts['prefix']

        def inside(d):
            # <DESTDIR>/<prefix>/<dir> (an absolute <dir> replaces the prefix).
            return os.path.join(cls.destdir, os.path.join(prefix, d).lstrip('/'))
        cls.libdir = inside(opts['libdir'])
        cls.bindir = inside(opts['bindir'])
        cls.includedir = inside(opts['includedir'])
        pmds = [d for d in glob.glob(os.path.join(cls.destdir, '**', 'pmds-*'), recursive=True)
                if os.path.isdir(d)]
        cls.pmddir = pmds[0] if len(pmds) == 1 else None
        cls.work = tempfile.mkdtemp(prefix='work-', dir=cls.destdir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.destdir, ignore_errors=True)

    def env(self):
        e = dict(os.environ)
        e['LD_LIBRARY_PATH'] = self.libdir
        return e

    def test_pmd_header_pc_and_tool_are_installed_and_linked_into_pmds_dir(self):
        self.assertIsNotNone(self.pmddir, 'no single pmds-* directory in the DESTDIR')
        link = os.path.join(self.pmddir, PMD)
        self.assertTrue(os.path.islink(link), f'{link} is not a symlink')
        # The link is relative: it resolves to the library inside the DESTDIR.
        self.assertEqual(os.path.realpath(link), os.path.realpath(os.path.join(self.libdir, PMD)))
        for f in (os.path.join(self.libdir, PMD),
                  os.path.join(self.libdir, EMU),
                  os.path.join(self.libdir, 'librte_vdpa_mlx5_lm.a'),
                  os.path.join(self.includedir, 'rte_pmd_mlx5_lm.h'),
                  os.path.join(self.libdir, 'pkgconfig', 'libdpdk-vdpa-mlx5-lm.pc')):
            self.assertTrue(os.path.isfile(f), f'{f} not installed')
        # EAL loads every .so of its driver directory: the emulator is not one of them.
        self.assertEqual(os.listdir(self.pmddir), [PMD])
        self.assertTrue(os.access(os.path.join(self.bindir, 'dpdk-test-lm'), os.X_OK))
        # The installed binary does not look in the build tree.
        r = subprocess.run(['readelf', '-d', os.path.join(self.bindir, 'dpdk-test-lm')],
                           stdout=subprocess.PIPE, check=True)
        self.assertNotIn(os.path.abspath(BUILD).encode(), r.stdout)

    def test_pkg_config_builds_a_program_against_the_installed_library(self):
        if shutil.which('pkg-config') is None or shutil.which('cc') is None:
            self.skipTest('pkg-config or cc missing')
        # The .pc file names its final prefix: relocate a copy into the DESTDIR
        # (a sysroot would relocate libdpdk's paths too).
        pcdir = os.path.join(self.work, 'pkgconfig')
        os.makedirs(pcdir, exist_ok=True)
        with open(os.path.join(self.libdir, 'pkgconfig', 'libdpdk-vdpa-mlx5-lm.pc')) as f:
            pc = f.read().splitlines()
        prefix = next(l.split('=', 1)[1] for l in pc if l.startswith('prefix='))
        pmddir = next(l.split('=', 1)[1] for l in pc if l.startswith('pmddir='))
        self.assertEqual(os.path.join(self.destdir, pmddir.lstrip('/')), self.pmddir)
        with open(os.path.join(pcdir, 'libdpdk-vdpa-mlx5-lm.pc'), 'w') as f:
            f.write('\n'.join('prefix=' + os.path.join(self.destdir, prefix.lstrip('/'))
                              if l.startswith('prefix=') else l for l in pc) + '\n')
        e = dict(os.environ)
        e['PKG_CONFIG_PATH'] = pcdir
        flags = subprocess.run(['pkg-config', '--cflags', '--libs', 'libdpdk-vdpa-mlx5-lm'],
                               env=e, stdout=subprocess.PIPE, check=True,
                               timeout=60).stdout.decode().split()
        self.assertIn(f'-I{self.includedir}', flags)
        self.assertIn('-lrte_vdpa_mlx5_lm', flags)
        src = os.path.join(self.work, 'caps.c')
        with open(src, 'w') as f:
            f.write('#include <stdio.h>\n#include <rte_pmd_mlx5_lm.h>\n'
                    'int main(void) { struct rte_pmd_mlx5_lm_caps c;\n'
                    '  return rte_pmd_mlx5_lm_get_caps("none", &c) == 0; }\n')
        out = os.path.join(self.work, 'caps')
        r = subprocess.run(['cc', '-o', out, src] + flags, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout.decode(errors='replace'))
        # Resolves against the installed library only.
        r = subprocess.run(['ldd', out], env=self.env(), stdout=subprocess.PIPE, check=True)
        self.assertIn(os.path.join(self.libdir, PMD).encode(), r.stdout)

    def test_eal_loads_the_installed_pmds_dir_and_serves_testpmd(self):
        """dpdk-vdpa, -d <DESTDIR pmds dir>: EAL scans it as it scans its auto-load dir."""
        if not os.path.isdir(EXAMPLE_SRC):
            self.skipTest(f'{EXAMPLE_SRC} missing (package dpdk-doc)')
        example = build_vdpa_example(self.work)
        ifdir = tempfile.mkdtemp(prefix='lm-inst-')
        try:
            rx, rc, out = vdpa_example_serves_testpmd(example, self.pmddir,
                                                      os.path.join(ifdir, 'vhost-'),
                                                      f'ix{os.getpid()}')
        finally:
            shutil.rmtree(ifdir, ignore_errors=True)
        self.assertGreaterEqual(rx, 1000)
        self.assertEqual(rc, 0, out[-2000:])
        self.assertNotIn('left alive', out)

    def test_installed_test_lm_serves_testpmd_with_the_installed_library(self):
        tool = os.path.join(self.bindir, 'dpdk-test-lm')
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, 'vhost.sock')
            old = os.environ.get('LD_LIBRARY_PATH')
            os.environ['LD_LIBRARY_PATH'] = self.libdir
            try:
                srv = serve(tool, [sock], 'emu=fast,queues=1')
            finally:
                if old is None:
                    del os.environ['LD_LIBRARY_PATH']
                else:
                    os.environ['LD_LIBRARY_PATH'] = old
            try:
                with open(f'/proc/{srv.p.pid}/maps') as f:
                    maps = f.read()
                rx, _ = testpmd_traffic(sock, f'tpj{os.getpid()}', 1000,
                                        queues=1, queue_size=256)
            finally:
                rc = srv.stop()
        # The process ran the installed libraries, not the build tree's: the emulator
        # from beside the installed PMD.
        self.assertIn(os.path.realpath(os.path.join(self.libdir, PMD)), maps)
        self.assertIn(os.path.realpath(os.path.join(self.libdir, EMU)), maps)
        self.assertGreaterEqual(rx, 1000)
        self.assertEqual(rc, 0, srv.text()[-2000:])

    def test_5_pmd_exports_its_experimental_api_only(self):
        """nm -D --defined-only of the installed PMD: the functions rte_pmd_mlx5_lm.h
        declares, each marked __rte_experimental and of version EXPERIMENTAL, and the
        map's version names; nothing of the transport or the emulator."""
        with open(os.path.join(self.includedir, 'rte_pmd_mlx5_lm.h')) as f:
            header = f.read()
        declared = re.findall(r'^(__rte_experimental\n)?[a-z][a-z ]*[ *](rte_pmd_mlx5_lm_\w+)\(',
                              header, re.M)
        self.assertGreaterEqual(len(declared), 12, 'the header declares the API')
        self.assertEqual([name for mark, name in declared if not mark], [],
                         'public functions without __rte_experimental')
        api = {name for _, name in declared}
        syms = defined_dynamic_symbols(os.path.join(self.libdir, PMD))
        versions = {n for n, t in syms.items() if t == 'A'}
        self.assertEqual({n for n in versions if not re.fullmatch(r'DPDK_[0-9]+', n)},
                         {'EXPERIMENTAL'})
        self.assertEqual({n for n in syms if n not in versions},
                         {f'{name}@@EXPERIMENTAL' for name in api})

    def test_6_pmd_needs_neither_the_emulator_nor_jansson(self):
        pmd = needed(os.path.join(self.libdir, PMD))
        self.assertTrue(any(n.startswith('librte_vhost.so') for n in pmd), pmd)
        self.assertEqual([n for n in pmd if 'jansson' in n or 'mlx5_lm' in n], [], pmd)
        # The emulator brings libjansson, and exports only the transport's entry point.
        self.assertTrue(any('jansson' in n for n in needed(os.path.join(self.libdir, EMU))))
        self.assertEqual(set(defined_dynamic_symbols(os.path.join(self.libdir, EMU))),
                         {'mlx5_lm_emu_ops_v2'})

    def test_7_emulator_loaded_for_emu_devices_only(self):
        """The installed dpdk-test-lm probes an rdma device (ibdev=, on the emulated
        rdma-core) without loading the emulator library, and an emu= device with it."""
        wrapper, erdma = os.environ.get('LM_WRAPPER'), os.environ.get('LM_ERDMA_LIBDIR')
        if not wrapper or not erdma:
            self.fail('LM_WRAPPER / LM_ERDMA_LIBDIR not set (meson sets them)')
        tool = os.path.join(self.bindir, 'dpdk-test-lm')
        emu = os.path.realpath(os.path.join(self.libdir, EMU))
        for devargs, wrap, backend in (('ibdev=mlx5_0', [sys.executable, wrapper, '--'], 'rdma'),
                                       ('emu=fast', [], 'emu')):
            log = os.path.join(self.work, 'ld-' + devargs.split('=')[0])
            e = self.env()
            e.update(LD_DEBUG='files', LD_DEBUG_OUTPUT=log, MLX5_LM_ERDMA_LIBDIR=erdma)
            r = subprocess.run(wrap + [tool, 'probe', '--devargs', devargs], env=e,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout[-2000:])
            self.assertIn(f'({devargs}), back end: {backend}', r.stdout)
            files = {os.path.realpath(f) for f in loaded_by(log) if os.path.exists(f)}
            self.assertEqual(emu in files, backend == 'emu', devargs)

    def test_8_pmd_without_its_emulator_names_the_library(self):
        """A PMD with no emulator beside it, nor on the library path, refuses emu= in
        one line that names the library it needs; rdma devices are not concerned."""
        if EMU.encode() in subprocess.run(['ldconfig', '-p'], stdout=subprocess.PIPE).stdout:
            self.skipTest(f'{EMU} is installed system-wide: the PMD would find it')
        alone = tempfile.mkdtemp(prefix='pmd-alone-', dir=self.work)
        shutil.copy(os.path.join(self.libdir, PMD), alone)
        e = dict(os.environ)
        e['LD_LIBRARY_PATH'] = alone
        r = subprocess.run([os.path.join(self.bindir, 'dpdk-test-lm'), 'probe', '--devargs',
                            'emu=fast'], env=e, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        self.assertNotEqual(r.returncode, 0)
        line = [l for l in r.stdout.splitlines() if 'cannot open the device' in l]
        self.assertEqual(len(line), 1, r.stdout[-2000:])
        self.assertIn(f'cannot load the emulator library {EMU}', line[0])
        self.assertIn(alone, line[0])


# Runs inside a private mount namespace: overlays make /usr/local, /etc and the
# DPDK driver directory writable copies, so that the install is real (no
# DESTDIR, the system's dynamic linker cache) and vanishes with the namespace.
# The install itself is the user guide's block (doc-test install), run verbatim in $src, a
# fresh copy of the source tree (the block's `meson setup build` wants no build there).
SYSTEM_INSTALL = r"""
set -eu
work=$1; src=$2; dpdk=$3; block=$4
for d in /usr/local /etc "$dpdk"; do
    n=$(echo "$d" | tr / _)
    mkdir -p "$work/u$n" "$work/w$n"
    mount -t overlay overlay -o "lowerdir=$d,upperdir=$work/u$n,workdir=$work/w$n" "$d"
done
echo "== install"
(cd "$src" && bash -e -c "$block")
# The source tree's chart script is hidden: the installed tool must use its own.
: > "$work/empty.py"
mount --bind "$work/empty.py" "$src/tools/plot_migrate.py"
cd "$work"
export PATH=/usr/local/bin:$PATH
unset LD_LIBRARY_PATH
echo "== probe"
dpdk-test-lm probe --devargs emu=fast
echo "== pkg-config"
printf '#include <rte_pmd_mlx5_lm.h>\nint main(void) { struct rte_pmd_mlx5_lm_caps c;\n'\
'  return rte_pmd_mlx5_lm_get_caps("none", &c) == -19 ? 0 : 1; }\n' > caps.c
cc -o caps caps.c $(pkg-config --cflags --libs libdpdk-vdpa-mlx5-lm)
./caps
echo "== plot"
dpdk-test-lm migrate --devices 1 --queue-pairs 1 --mem-gb 1 --profile fast \
    --stages all --frames 32 --plot "$work/m.svg"
test -s "$work/m.svg"
echo "== all ok"
"""


def fresh_copy(top, dest):
    """The source tree as a clone would have it: the files git knows (tracked, or new
    and not ignored, so that uncommitted edits are tested too), or, outside a git
    checkout, everything but build directories."""
    r = subprocess.run(['git', '-C', top, 'ls-files', '-z', '--cached', '--others',
                        '--exclude-standard'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        shutil.copytree(top, dest, ignore=shutil.ignore_patterns('build*', '.git'),
                        symlinks=True)
        return
    for rel in r.stdout.decode().split('\0'):
        path = os.path.join(top, rel)
        if not rel or not os.path.lexists(path):  # deleted in the work tree
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        shutil.copy2(path, os.path.join(dest, rel), follow_symlinks=False)


class SystemInstall(unittest.TestCase):
    """The user guide's install block (`meson setup build && ninja -C build && meson
    install -C build`) as a user runs it, on a fresh copy of the source tree (no
    DESTDIR), then the installed tool, a program built with pkg-config and migrate
    --plot run with nothing set by hand."""

    def test_installed_tool_and_library_run_as_installed(self):
        if os.geteuid() != 0 or shutil.which('unshare') is None:
            self.skipTest('needs root and unshare for a private mount namespace')
        dpdk = subprocess.run(['pkg-config', '--variable=libdir', 'libdpdk'], check=True,
                              stdout=subprocess.PIPE, text=True).stdout.strip() + '/dpdk'
        top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        with tempfile.TemporaryDirectory() as work:
            src = os.path.join(work, 'mlx5-lm')
            fresh_copy(top, src)
            r = subprocess.run(['unshare', '--mount', '--propagation', 'private', 'bash',
                                '-c', SYSTEM_INSTALL, 'install', work, src, dpdk,
                                doc_block('install')],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=1200)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:])
        # The block built the copy and installed it (meson install lists what it installs).
        self.assertRegex(r.stdout, r'Installing .*dpdk-test-lm to /usr/local/bin')
        self.assertIn('== all ok', r.stdout)
        self.assertIn('migrate: chart written to', r.stdout)


if __name__ == '__main__':
    unittest.main(verbosity=2)
