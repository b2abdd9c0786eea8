#!/usr/bin/env bash
# How far `check --threads K` goes: per fix, engine and K, the certificate's verdict, classes,
# runs and wall time, as a Markdown table (docs/PERFORMANCE.md, "Certificates").
#   tools/scripts/certificate-table.sh [RERACE] [TRACE]
# Env: PYTHON_EXE (the real code's interpreter; default build/py/venv312/bin/python), JOBS (2),
# LIMIT (seconds per cell, 120), FIXES, KS_MODEL ("2 3 4"), KS_PYTHON ("2 3").
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 70
bin=${1:-build/bin/rerace}
trace=${2:-traces/samples/triton-none-h200.rrt}
py=${PYTHON_EXE:-build/py/venv312/bin/python}
jobs=${JOBS:-2} limit=${LIMIT:-120}
fixes=${FIXES:-none tls-nargs lock-run tls-state lock-key-event prewarm}
export NO_PROGRESS=1 NO_COLOR=1
echo "| engine | fix | K | verdict | classes (combinations) | certificate runs | seconds |"
echo "|---|---|---|---|---|---|---|"
for engine in model python; do
  ks=${KS_MODEL-2 3 4}; extra=(--engine model)
  [ "$engine" = python ] && { ks=${KS_PYTHON-2 3}; extra=(--engine python --python-exe "$py"); }
  for fix in $fixes; do
    for k in $ks; do
      start=$(date +%s%N)
      json=$(timeout "$limit" "$bin" check "$trace" --fix "$fix" --threads "$k" --jobs "$jobs" \
             "${extra[@]}" --runs 0 --json 2>/dev/null)
      rc=$?
      secs=$(( ($(date +%s%N) - start) / 1000000 ))e-3
      if [ $rc -eq 124 ]; then
        printf '| %s | %s | %s | no verdict within %s s | | | > %s |\n' "$engine" "$fix" "$k" "$limit" "$limit"
        continue
      fi
      JSON=$json python3 - "$engine" "$fix" "$k" "$secs" "$rc" <<'PY'
import json, os, sys
engine, fix, k, secs, rc = sys.argv[1:]
try:
    d = json.loads(os.environ["JSON"])
except ValueError:
    print(f"| {engine} | {fix} | {k} | error (exit {rc}) | | | {float(secs):.1f} |"); sys.exit()
c = d.get("certificate") or {}
v = d["verdict"]
if v == "fails" and d.get("counterexample"):
    v += ": " + d["counterexample"]["findings"][0]["code"]
print(f"| {engine} | {fix} | {k} | {v} | {c.get('classes', '')} ({c.get('combinations', '')}) "
      f"| {c.get('runs', '')} | {float(secs):.1f} |")
PY
    done
  done
done
