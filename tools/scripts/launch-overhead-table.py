#!/usr/bin/env python3
"""The recorder's overhead on a launch-heavy step (issue 31, item 4), as a Markdown table, from
the log that tools/scripts/h200-gpu-settle.sh (section `overhead`) writes. It reads the lines
that start with "ovh " and ignores the rest:

  ovh launches MODE SHAPE: gpu_launches: done in S s          MODE plain | recorded; SHAPE
                                                              "threads=T launches=L"
  ovh step MODE SHAPE: step I: X ms                            rerace-train-step, MODE as above
  ovh cupti mode=M spin=0 threads=T rep=R launch_part_us=U trial_us=V
                                                              cupti_activity_overhead: M off
                                                              (no CUPTI) or act-shared (kernel
                                                              activity only, one buffer: the
                                                              recorder's setting, no callbacks)

Per shape: the median of each mode; the recorder's overhead per launch ((recorded - plain) /
(T x L)) or per step (steady steps: step 0, which tunes, left out); and CUPTI's activity-only
minimum per launch at T threads (median act-shared minus median off launch part). Medians, not
means: one slow round (a cold start) does not move them.

Usage: launch-overhead-table.py LOG   (exit 65 when the log holds no "ovh " line)
"""

import collections
import re
import statistics
import sys

LAUNCHES = re.compile(r"^ovh launches (plain|recorded) threads=(\d+) launches=(\d+): .*done in ([0-9.]+) s")
STEP = re.compile(r"^ovh step (plain|recorded) (.*?): step (\d+): ([0-9.]+) ms")
CUPTI = re.compile(r"^ovh cupti mode=(\S+) spin=\d+ threads=(\d+) rep=\d+ launch_part_us=([0-9.]+)")


def parse(lines):
    launches = collections.defaultdict(lambda: collections.defaultdict(list))
    steps = collections.defaultdict(lambda: collections.defaultdict(list))
    cupti = collections.defaultdict(lambda: collections.defaultdict(list))
    seen = 0
    for line in lines:
        line = line.rstrip("\n")
        if not line.startswith("ovh "):
            continue
        seen += 1
        m = LAUNCHES.match(line)
        if m:
            launches[(int(m.group(2)), int(m.group(3)))][m.group(1)].append(float(m.group(4)))
            continue
        m = STEP.match(line)
        if m:
            if int(m.group(3)) > 0:  # step 0 tunes
                steps[m.group(2)][m.group(1)].append(float(m.group(4)))
            continue
        m = CUPTI.match(line)
        if m:
            cupti[int(m.group(2))][m.group(1)].append(float(m.group(3)))
    return seen, launches, steps, cupti


def _med(xs):
    return statistics.median(xs) if xs else None


def _fmt(v, unit, digits=2):
    return "—" if v is None else ("%.*f %s" % (digits, v, unit)).strip()


def activity_minimum_us(cupti, threads):
    """CUPTI's activity-only cost per launch at `threads` threads, in microseconds, or None."""
    c = cupti.get(threads, {})
    off, act = _med(c.get("off", [])), _med(c.get("act-shared", []))
    return None if off is None or act is None else act - off


def table(launches, steps, cupti):
    out = ["| workload | plain (median) | recorded (median) | recorder overhead | CUPTI activity-only minimum |",
           "|---|---|---|---|---|"]
    for (t, n), m in sorted(launches.items()):
        p, r = _med(m.get("plain", [])), _med(m.get("recorded", []))
        per = None if p is None or r is None else (r - p) / (t * n) * 1e6
        act = activity_minimum_us(cupti, t)
        out.append("| `gpu_launches --threads %d --launches %d` (%d launches; runs %d / %d) | %s | %s | %s per launch | %s per launch |"
                   % (t, n, t * n, len(m.get("plain", [])), len(m.get("recorded", [])), _fmt(p, "s", 4),
                      _fmt(r, "s", 4), _fmt(per, "us"), _fmt(act, "us")))
    for shape, m in sorted(steps.items()):
        p, r = _med(m.get("plain", [])), _med(m.get("recorded", []))
        d = None if p is None or r is None else r - p
        pct = None if d is None or not p else 100.0 * d / p
        out.append("| `rerace-train-step %s` (steady steps; %d / %d) | %s | %s | %s per step (%s) | — |"
                   % (shape, len(m.get("plain", [])), len(m.get("recorded", [])), _fmt(p, "ms", 3), _fmt(r, "ms", 3),
                      _fmt(d, "ms", 3), _fmt(pct, "%", 1)))
    return "\n".join(out)


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    with open(argv[1]) as f:
        seen, launches, steps, cupti = parse(f)
    if not seen:
        print("launch-overhead-table.py: %s holds no 'ovh ' line (expected the log of "
              "h200-gpu-settle.sh's overhead section)" % argv[1], file=sys.stderr)
        return 65
    print(table(launches, steps, cupti))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
