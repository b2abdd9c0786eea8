#!/usr/bin/env bash
# make demo: rerace finds a classic race with a seeded strategy, saves the schedule, and
# replays the failure from the schedule alone.
set -uo pipefail
rerace=${1:-build/bin/rerace}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

say rerace classic lost-update --strategy pct --pct-depth 2 --pct-steps 13 --runs 100 --save-schedule "$out/lost-update.sched"
"$rerace" classic lost-update --strategy pct --pct-depth 2 --pct-steps 13 --runs 100 \
  --save-schedule "$out/lost-update.sched"
[ $? -eq 1 ] || { echo "demo: expected the race to be found (exit 1)"; exit 1; }

say cat "$out/lost-update.sched"
cat "$out/lost-update.sched"

say rerace classic lost-update --schedule "$out/lost-update.sched"
"$rerace" classic lost-update --schedule "$out/lost-update.sched"
[ $? -eq 1 ] || { echo "demo: expected the replay to fail the same way (exit 1)"; exit 1; }

say rerace classic lost-update --strategy round-robin --runs 100
"$rerace" classic lost-update --strategy round-robin --runs 100
echo
echo "demo: the race was found by PCT, replayed from its schedule, and missed by round-robin."
