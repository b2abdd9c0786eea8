#!/usr/bin/env bash
# The real-code engine's check, per fix and mode (issue 26): runs explored, whether the search
# was exhausted, and wall / CPU seconds (of rerace and its Python children, /usr/bin/time).
#   tools/scripts/engine-check-table.sh BUILD/bin/rerace PYTHON [BOUND] [MAX_RUNS] [TRACE]
# Prints a Markdown table; one row per (mode, fix).
set -uo pipefail
rerace=${1:?rerace binary}
py=${2:?python with triton}
bound=${3:-2}
max=${4:-5000}
trace=${5:-traces/samples/triton-none-h200.rrt}
fixes=${FIXES:-none lock-run tls-nargs tls-state lock-key-event prewarm}
echo "| mode | fix | verdict | schedules (probe + systematic) | exhausted | wall s | CPU s |"
echo "|---|---|---|---|---|---|---|"
for mode in gil free-threaded; do
  for fix in $fixes; do
    out=$(mktemp)
    t=$( { /usr/bin/time -f '%e %U %S' "$rerace" check "$trace" --engine python --python-exe "$py" \
           --python "$mode" --fix "$fix" --bound "$bound" --max-runs "$max" --json >"$out" 2>/dev/null; } 2>&1 | tail -1)
    verdict=$(grep -o '"verdict":"[a-z]*"' "$out" | head -1 | cut -d'"' -f4)
    explored=$(grep -o '"explored":[0-9]*' "$out" | head -1 | cut -d: -f2)
    probed=$(grep -o '"probed":[0-9]*' "$out" | head -1 | cut -d: -f2)
    runs=$(grep -o '"search":{[^}]*' "$out" | grep -o '"runs":[0-9]*' | cut -d: -f2)
    exh=$(grep -o '"exhausted":[a-z]*' "$out" | head -1 | cut -d: -f2)
    read -r wall user sys <<<"$t"
    cpu=$(echo "$user + $sys" | bc)
    echo "| $mode | $fix | ${verdict:-error} | ${explored:-?} (${probed:-?} + ${runs:-?}) | ${exh:-?} | $wall | $cpu |"
    rm -f "$out"
  done
done
