#!/usr/bin/env bash
# fuzz --jobs on the GPU machine's CPUs (issue 19): schedules per second at 1, 2, 4, 8 and 16
# jobs over the same seeds, and whether every report (text, JSON, JUnit, schedule files) is
# byte-identical to the one job's. Run through the device tool from the repository root with
# the rerace binary under .devrun/bin and its libraries under .devlibs (h200-env.sh).
set -uo pipefail
. "$(dirname "$0")/h200-env.sh"
trace=${TRACE:-traces/samples/synth-h200-shape.rrt}
runs=${RUNS:-40000}
work=/tmp/fuzz-jobs
rm -rf "$work"; mkdir -p "$work"
{
echo "machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "date: $(date -u +%Y-%m-%d)"
echo "command: rerace fuzz $trace --runs $runs --jobs N --save-failures DIR --junit FILE (and --json --races)"
base=""
for j in 1 2 4 8 16; do
  d=$work/j$j; mkdir -p $d
  t0=$(date +%s.%N)
  NO_PROGRESS=1 "$bin/rerace" fuzz "$trace" --runs "$runs" --jobs $j --save-failures $work/sched \
    --junit $d/report.xml > $d/report.txt
  rc=$?
  t1=$(date +%s.%N)
  mv $work/sched $d/sched
  NO_PROGRESS=1 "$bin/rerace" fuzz "$trace" --runs $((runs / 4)) --jobs $j --races --json > $d/report.json
  same=yes
  if [ -n "$base" ]; then
    # The JUnit files without their times (the seconds each case took).
    cmp -s $d/report.txt $base/report.txt &&
      cmp -s <(sed -E 's/ time="[0-9.]+"//g' $d/report.xml) <(sed -E 's/ time="[0-9.]+"//g' $base/report.xml) &&
      cmp -s $d/report.json $base/report.json && diff -r -q $d/sched $base/sched >/dev/null || same=NO
  else
    base=$d
  fi
  printf 'jobs %2d: exit %d, %d runs in %.2f s = %.0f schedules/s; reports and schedule files identical to jobs 1: %s\n' \
    $j $rc $runs "$(awk "BEGIN{print $t1 - $t0}")" "$(awk "BEGIN{print $runs / ($t1 - $t0)}")" $same
done
echo "--- jobs 1 report:"
cat $base/report.txt
} 2>&1 | tee "$out/h200-fuzz-jobs.log"
