#!/bin/sh
# meson install without DESTDIR: refresh the dynamic linker's cache so that
# the installed dpdk-test-lm and programs linked with the PMD find it.
if [ "$(id -u)" -eq 0 ]; then
	exec ldconfig
fi
echo "mlx5-lm: not root, ldconfig not run: run it as root, or add the install's" \
	"library directory to LD_LIBRARY_PATH"
