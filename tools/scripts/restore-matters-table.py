#!/usr/bin/env python3
"""The table of issue 31, items 1-3 (docs/FIDELITY.md, "A restore that matters"), from what
tools/scripts/h200-gpu-settle.sh writes: per release (3.6, 3.8, 3.9, fla) x fix, the GPU's
trials (restore_matters.py's JSON lines: exceptions and wrong results counted apart) against
rerace's verdicts from the unpatched recording (the "== verdict REL TAG fix=F: ..." lines of
settle-verdicts.log, model and engine).

GPU columns: trials that raised (threads that raised, over all trials); trials with a wrong
result in a thread that raised nothing (silent), with the kinds restore_matters.py read back
(missed-restore, wrong-restore, not-updated, other) and the largest abs error. rerace columns:
FAILS KIND, holds, or inconclusive, as `rerace check` said it.

Usage: restore-matters-table.py TRIALS.jsonl [VERDICTS.log]   (exit 65 on no trial line)
"""

import collections
import json
import os
import re
import sys

VERDICT = re.compile(r"^== verdict (\S+) (model \S+|engine(?: \([^)]*\))?) fix=(\S+): (.*)$")


def load_trials(lines):
    cells = collections.OrderedDict()
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        t = json.loads(line)
        if t.get("header"):
            continue
        key = ("fla" if t.get("fla") else t["release"], t["fix"])
        c = cells.setdefault(key, {"trials": 0, "raised": 0, "threads_raised": 0, "silent": 0,
                                   "kinds": collections.Counter(), "max_err": 0.0, "exceptions": collections.Counter()})
        c["trials"] += 1
        c["raised"] += 1 if t["threads_raised"] else 0
        c["threads_raised"] += t["threads_raised"]
        c["silent"] += 1 if t["wrong_silent"] else 0
        for w in t["wrong"]:
            if not w["raised"]:
                c["kinds"][w["kind"]] += 1
                c["max_err"] = max(c["max_err"], w["max_abs_err"])
        for k, n in t["exceptions"].items():
            c["exceptions"][k] += n
    return cells


def short_verdict(text):
    m = re.search(r"FAILED: (\S+)", text)
    if "FAILS" in text:
        return "FAILS: %s" % (m.group(1) if m else "?")
    if "inconclusive" in text:
        return "inconclusive"
    if " holds " in text:
        return "holds"
    return text.strip()[:40] or "—"


def load_verdicts(lines):
    out = {}
    for line in lines:
        m = VERDICT.match(line.rstrip("\n"))
        if m:
            out[(m.group(1), "engine" if m.group(2).startswith("engine") else "model", m.group(3))] = short_verdict(m.group(4))
    return out


def table(cells, verdicts):
    rows = ["| release | fix | GPU: trials that raised (threads) | GPU: trials with a silent wrong result (threads by kind; max abs error) | rerace model | rerace engine |",
            "|---|---|---|---|---|---|"]
    for (rel, fix), c in cells.items():
        kinds = ", ".join("%s %d" % (k, n) for k, n in sorted(c["kinds"].items()))
        silent = "%d of %d" % (c["silent"], c["trials"])
        if kinds:
            silent += " (%s; %.3g)" % (kinds, c["max_err"])
        rows.append("| %s | %s | %d of %d (%d) | %s | %s | %s |"
                    % (rel, fix, c["raised"], c["trials"], c["threads_raised"], silent,
                       verdicts.get((rel, "model", fix), "—"), verdicts.get((rel, "engine", fix), "—")))
    return "\n".join(rows)


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    with open(argv[1]) as f:
        cells = load_trials(f)
    if not cells:
        print("restore-matters-table.py: %s holds no trial line (restore_matters.py --json's)" % argv[1], file=sys.stderr)
        return 65
    verdicts = {}
    if len(argv) == 3 and os.path.exists(argv[2]):  # a trials-only run has no verdicts yet
        with open(argv[2]) as f:
            verdicts = load_verdicts(f)
    print(table(cells, verdicts))
    exc = collections.Counter()
    for c in cells.values():
        exc.update(c["exceptions"])
    for k, n in sorted(exc.items()):
        print("- %s: %d threads in all" % (k, n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
