set -uo pipefail
. "$(dirname "$0")/h200-env.sh"
exp=$PWD/tools/experiments/autotune_race.py
python3 "$exp" --variant lock-run --trials 1 >/dev/null 2>&1
for i in 1 2; do
python3 "$exp" --variant lock-run --trials 4 | sed 's/^/plain:    /'
(cd "$out" && "$bin/rerace" record --probe triton -o ovh.rrt -- python3 "$exp" --variant lock-run --trials 4 2>&1 | sed 's/^/recorded: /'; rm -f ovh.*.rrt)
python3 "$exp" --variant lock-run --trials 4 --profile 2>/dev/null | sed 's/^/profiler: /'
done 2>&1 | tee $OUT/h200-overhead.log
