#!/usr/bin/env python3
"""Runs two builds' replay_bench in turn, N times each, with RERACE_BENCH_RATES=1 (the trace
tables' schedules/s and steps/run only), and prints per trace and strategy the schedules/s of
each (min / median / max over the runs; CPU time, so the machine's load moves them less than
wall time) and the steps per run (the same in every run when the models take the same steps).

    tools/scripts/replay-bench-compare.py BEFORE/bench/replay_bench AFTER/bench/replay_bench [-n 5]

Run from the repository root (the bench reads traces/samples/ from RERACE_SOURCE, default .).
Only the trace tables are compared (the classic-bug corpus is sim's, not the models')."""
import argparse
import os
import re
import statistics
import subprocess
import sys


def parse(text):
    """{(table, strategy): (schedules/s, steps/run, runs to first failure)}"""
    out, title = {}, None
    for line in text.splitlines():
        if line.startswith("trace: "):
            title = line[len("trace: "):].split(",")[0].split(" (")[0]
        elif line.startswith("classic bug"):
            title = None
        elif title and line.startswith("| ") and not line.startswith("| strategy") and "---" not in line:
            cells = [c.strip() for c in line.strip("|").split("|")]
            out[(title, cells[0])] = (float(cells[1]), cells[2], cells[3])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("-n", type=int, default=5)
    a = ap.parse_args()
    runs = {"before": [], "after": []}
    for i in range(a.n):
        for name, exe in (("before", a.before), ("after", a.after)):
            env = dict(os.environ, RERACE_BENCH_RATES="1")
            r = subprocess.run([exe], capture_output=True, text=True, check=True, env=env)
            runs[name].append(parse(r.stdout))
            print(f"run {i + 1}/{a.n} {name} done", file=sys.stderr)
    print("| trace, strategy | before: schedules/s min / median / max | after: min / median / max "
          "| after/before (medians) | steps/run |")
    print("|---|---|---|---|---|")
    for key in runs["before"][0]:
        if key not in runs["after"][0]:
            continue
        row = {}
        for name in ("before", "after"):
            v = [r[key][0] for r in runs[name]]
            row[name] = (min(v), statistics.median(v), max(v))
        same = " / ".join(sorted({r[key][1] for n in runs for r in runs[n]}))
        b, f = row["before"], row["after"]
        print(f"| {key[0]}, {key[1]} | {b[0]:,.0f} / {b[1]:,.0f} / {b[2]:,.0f} | "
              f"{f[0]:,.0f} / {f[1]:,.0f} / {f[2]:,.0f} | {f[1] / b[1]:.2f} | {same} |")


if __name__ == "__main__":
    main()
