#!/usr/bin/env bash
# The real-code engine's check, per fix and mode (issue 26): runs explored, whether the search
# was exhausted, and wall / CPU seconds (of rerace and its Python children, /usr/bin/time).
#   tools/scripts/engine-check-table.sh BUILD/bin/rerace PYTHON [BOUND] [MAX_RUNS] [TRACE]
# Prints a Markdown table; one row per (mode, fix); PATCHES="a.py b.py" adds a row per patch file.
set -uo pipefail
rerace=${1:?rerace binary}
py=${2:?python with triton}
bound=${3:-2}
max=${4:-5000}
trace=${5:-traces/samples/triton-none-h200.rrt}
fixes=${FIXES:-none lock-run tls-nargs tls-state lock-key-event prewarm}
patches=${PATCHES:-}  # patch files, each a row of its own (a user's lock, say)
echo "| mode | fix | verdict | schedules (probe + systematic) | exhausted | wall s | CPU s |"
echo "|---|---|---|---|---|---|---|"
for mode in gil free-threaded; do
  for fix in $(for f in $fixes; do echo "--fix=$f"; done) $(for p in $patches; do echo "--patch=$p"; done); do
    out=$(mktemp)
    # time's own figures to a file of their own: the command's standard error is not kept
    /usr/bin/time -o "$out.time" -f '%e %U %S' "$rerace" check "$trace" --engine python --python-exe "$py" \
      --python "$mode" $fix --bound "$bound" --max-runs "$max" --json >"$out" 2>/dev/null
    t=$(tail -1 "$out.time")
    verdict=$(grep -o '"verdict":"[a-z]*"' "$out" | head -1 | cut -d'"' -f4)
    explored=$(grep -o '"explored":[0-9]*' "$out" | head -1 | cut -d: -f2)
    probed=$(grep -o '"probed":[0-9]*' "$out" | head -1 | cut -d: -f2)
    runs=$(grep -o '"search":{[^}]*' "$out" | grep -o '"runs":[0-9]*' | cut -d: -f2)
    exh=$(grep -o '"exhausted":[a-z]*' "$out" | head -1 | cut -d: -f2)
    read -r wall user sys <<<"$t"
    cpu=$(echo "$user + $sys" | bc)
    echo "| $mode | ${fix#--*=} | ${verdict:-error} | ${explored:-?} (${probed:-?} + ${runs:-?}) | ${exh:-?} | $wall | $cpu |"
    rm -f "$out" "$out.time"
  done
done
