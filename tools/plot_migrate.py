#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draw the downtime breakdown of a `dpdk-test-lm migrate --json` run as SVG.

One stacked bar per stage: source stop, destination memory registration,
destination queue configuration, and the rest of the downtime (vhost-user
messages, the front end's dirty-log check, the first packets); with
--repeat, a whisker from the fastest to the slowest run (the bar is the
median run); the model floor of the scenario as a dashed line, and each
stage's "x floor" under its name. An evacuation (--vms) draws its slowest
VM at once, and VM 0 alone as a tick. Standard library only.

Usage: plot_migrate.py RESULT.json [--output CHART.svg]
(default output: the JSON's path with .svg)
"""
import argparse
import json
import math
import os
import sys
from xml.sax.saxutils import escape

PARTS = [
    ('src_stop_ms', 'source stop', '#4e79a7'),
    ('dst_mr_ms', 'destination memory', '#f28e2b'),
    ('dst_vq_ms', 'destination queues', '#59a14f'),
    ('rest_ms', 'rest (messages, first packets)', '#bab0ac'),
]


def nice_step(top):
    """A round grid step giving 4-8 lines up to top."""
    if top <= 0:
        return 1.0
    raw = top / 5
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def segments(stage):
    """The stacked parts of one stage; the rest keeps the bar = downtime."""
    # null: a part only our PMD's API gives (the peer's stages): left in the rest.
    vals = {k: max(0.0, float(stage.get(k) or 0.0)) for k, _, _ in PARTS[:3]}
    vals['rest_ms'] = max(0.0, float(stage['downtime_ms']) - sum(vals.values()))
    return vals


def render(doc):
    stages = [s for s in doc['stages'] if s.get('ok', True)]
    if not stages:
        raise ValueError('no stage ran to its end: nothing to draw')
    sc = doc.get('scenario', {})
    vms = f"{sc['vms']} VMs of " if sc.get('vms', 1) > 1 or 'evacuate' in stages[0] else ''
    title = (f"{sc.get('name', '?')}: {vms}{sc.get('devices', '?')} device(s) x "
             f"{sc.get('queue_pairs', '?')} queue pairs, {sc.get('mem_gb', '?')} GiB, "
             f"queue size {sc.get('queue_size', '?')} - model {doc.get('model', '?')}")
    width, left, right, top, bottom = 860, 80, 250, 60, 70
    bar_w = min(90, (width - left - right) / len(stages) * 0.6)
    slot = (width - left - right) / len(stages)
    height = 420
    plot_h = height - top - bottom
    floor = float(stages[0].get('floor_ms') or 0.0)
    vmax = max(max(float(s['downtime_ms']), float(s.get('downtime_max_ms', 0.0)),
                   sum(segments(s).values())) for s in stages)
    vmax = max(vmax, floor)
    step = nice_step(vmax)
    ymax = step * math.ceil(vmax / step) if vmax > 0 else 1.0

    def y(v):
        return top + plot_h - v / ymax * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2 - right / 2 + left / 2}" y="24" text-anchor="middle" '
           f'font-size="14" font-weight="bold">{escape(title)}</text>',
           f'<text x="{width / 2 - right / 2 + left / 2}" y="42" text-anchor="middle" '
           f'fill="#555">downtime per stage (ms) and where it goes</text>']
    v = 0.0
    while v <= ymax + 1e-9:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                   f'stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
        v += step
    out.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#333"/>')
    out.append(f'<text transform="translate(20,{top + plot_h / 2}) rotate(-90)" '
               f'text-anchor="middle">ms</text>')
    for i, s in enumerate(stages):
        x = left + slot * i + (slot - bar_w) / 2
        base = 0.0
        for key, label, color in PARTS:
            val = segments(s)[key]
            if val <= 0:
                continue
            y0, y1 = y(base + val), y(base)
            out.append(f'<rect x="{x:.1f}" y="{y0:.1f}" width="{bar_w:.1f}" '
                       f'height="{max(y1 - y0, 0.5):.1f}" fill="{color}">'
                       f'<title>{escape(s["name"])}: {escape(label)} {val:.1f} ms</title></rect>')
            base += val
        label_y = y(base) - 6
        if s.get('repeat', 1) > 1:
            lo, hi = float(s['downtime_min_ms']), float(s['downtime_max_ms'])
            cx = x + bar_w / 2
            out.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(hi):.1f}" y2="{y(lo):.1f}" '
                       f'stroke="#222"><title>{escape(s["name"])}: {s["repeat"]} runs, '
                       f'{lo:.1f}-{hi:.1f} ms</title></line>')
            for v in (lo, hi):
                out.append(f'<line x1="{cx - 6:.1f}" x2="{cx + 6:.1f}" y1="{y(v):.1f}" '
                           f'y2="{y(v):.1f}" stroke="#222"/>')
            label_y = min(label_y, y(hi) - 6)
        ev = s.get('evacuate')
        if ev:
            ya = y(float(ev['alone']['downtime_ms']))
            out.append(f'<line x1="{x - 4:.1f}" x2="{x + bar_w + 4:.1f}" y1="{ya:.1f}" '
                       f'y2="{ya:.1f}" stroke="#b07aa1" stroke-width="3"><title>VM 0 alone '
                       f'{float(ev["alone"]["downtime_ms"]):.1f} ms</title></line>')
        out.append(f'<text x="{x + bar_w / 2:.1f}" y="{label_y:.1f}" '
                   f'text-anchor="middle">{float(s["downtime_ms"]):.0f}</text>')
        out.append(f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h + 18}" '
                   f'text-anchor="middle">{escape(s["name"])}</text>')
        if s.get('x_floor') is not None:
            out.append(f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h + 34}" '
                       f'text-anchor="middle" fill="#c00">{float(s["x_floor"]):.1f}x floor'
                       '</text>')
    if floor > 0:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(floor):.1f}" '
                   f'y2="{y(floor):.1f}" stroke="#c00" stroke-dasharray="6,4">'
                   f'<title>model floor {floor:.1f} ms</title></line>')
    lx = width - right + 20
    for j, (_, label, color) in enumerate(PARTS):
        ly = top + 10 + 22 * j
        out.append(f'<rect x="{lx}" y="{ly}" width="14" height="14" fill="{color}"/>')
        out.append(f'<text x="{lx + 20}" y="{ly + 11}">{escape(label)}</text>')
    extra = 0
    if floor > 0:
        ly = top + 10 + 22 * len(PARTS)
        out.append(f'<line x1="{lx}" x2="{lx + 14}" y1="{ly + 7}" y2="{ly + 7}" stroke="#c00" '
                   'stroke-dasharray="4,3"/>')
        out.append(f'<text x="{lx + 20}" y="{ly + 11}">model floor {floor:.1f} ms</text>')
        extra += 22
    if any(s.get('evacuate') for s in stages):
        ly = top + 10 + 22 * len(PARTS) + extra
        out.append(f'<line x1="{lx}" x2="{lx + 14}" y1="{ly + 7}" y2="{ly + 7}" '
                   'stroke="#b07aa1" stroke-width="3"/>')
        out.append(f'<text x="{lx + 20}" y="{ly + 11}">VM 0 alone</text>')
        extra += 22
    ratios = doc.get('ratios')
    if ratios:
        ly = top + 10 + 22 * len(PARTS) + extra + 16
        out.append(f'<text x="{lx}" y="{ly}">baseline / all:</text>')
        out.append(f'<text x="{lx}" y="{ly + 18}">downtime '
                   f'{ratios["downtime_baseline_over_all"]:.1f}x</text>')
        out.append(f'<text x="{lx}" y="{ly + 36}">destination queues '
                   f'{ratios["dst_vq_baseline_over_all"]:.1f}x</text>')
    out.append(f'<text x="{left}" y="{height - 16}" fill="#777" font-size="10">'
               'Absolute times are outputs of the emulator cost model; the ratios between '
               'stages of one run are the claims.</text>')
    out.append('</svg>')
    return '\n'.join(out) + '\n'


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('json', help='result of dpdk-test-lm migrate --json')
    ap.add_argument('--output', '-o', help='SVG to write (default: next to the JSON)')
    a = ap.parse_args(argv)
    try:
        with open(a.json) as f:
            doc = json.load(f)
        svg = render(doc)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f'plot_migrate: {a.json}: {e}', file=sys.stderr)
        return 1
    out = a.output or os.path.splitext(a.json)[0] + '.svg'
    try:
        with open(out, 'w') as f:
            f.write(svg)
    except OSError as e:
        print(f'plot_migrate: cannot write {out}: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
