#!/usr/bin/env bash
# Issue 18, fourth measurement: the native step's fixes whose own recording was off (per-thread-
# tuner, +15.9 % from one recording that ran slow) or not kept (owner-thread). Through the device
# tool, from the repository root, with .devrun/.devlibs as h200-recorder-check.sh; log to
# $OUT/h200-$TAG.log, recordings to $OUT/native-$TAG.tgz.
#   For each fix in FIXES, ROUNDS (3) rounds of: RUNS (4) runs of
#   `rerace-train-step --threads 8 --steps 1 --fix F` (step 0's wall time), then one recording
#   (native-F-r<round>-cost4-h200.rrt), so that the recordings and the real runs interleave and
#   the estimate can be compared with the real median per recording, not with one lucky run.
#   Before that, the GPU tests (gpu_record_test, kernels_gpu_test) unless TESTS=0. TAG (cost4)
#   names the log, the recordings and the archive (cost5: the recorder with one activity buffer
#   for the process, docs/RECORDER.md).
set -uo pipefail
. tools/scripts/h200-env.sh
fixes=${FIXES:-per-thread-tuner owner-thread} rounds=${ROUNDS:-3} runs=${RUNS:-4} tag=${TAG:-cost4}
mkdir -p "$out/n"
{
echo "== machine ($(date -u +%FT%TZ))"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ "${TESTS:-1}" = 1 ]; then
  echo "== GPU tests"
  RERACE_BIN=$bin timeout 120 .devrun/tests/gpu_record_test 2>&1 | tail -3
  RERACE_BIN=$bin timeout 300 .devrun/tests/kernels_gpu_test 2>&1 | tail -3
fi
for fix in $fixes; do
  for r in $(seq "$rounds"); do
    for i in $(seq "$runs"); do
      o=$(timeout 60 "$bin/rerace-train-step" --threads 8 --steps 1 --fix "$fix" --seed "$i" 2>&1)
      echo "native fix=$fix round=$r run=$i rc=$? failures=$(echo "$o" | sed -n 's/^failures: //p') $(echo "$o" | grep -E '^step 0' | tr '\n' ' ')"
    done
    (cd "$out/n" && timeout 60 "$bin/rerace" record -o "native-$fix-r$r-$tag-h200.rrt" -- "$bin/rerace-train-step" --threads 8 --steps 1 --fix "$fix" --seed 1 2>&1 | grep -E '^step 0|^failures|rerace:' | sed "s/^/recorded native $fix round=$r: /")
  done
done
ls -la "$out/n"
echo "== done ($(date -u +%FT%TZ))"
} 2>&1 | tee "$out/h200-$tag.log"
(cd "$out/n" && tar czf "$out/native-$tag.tgz" ./*.rrt) && rm -rf "$out/n"
