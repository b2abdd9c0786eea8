#!/usr/bin/env bash
# Issue 10 on a one-GPU machine: a two-process run as torchrun starts it (RANK, LOCAL_RANK,
# WORLD_SIZE per process), each process recorded, each writing its own trace. With one GPU both
# ranks share it (LOCAL_RANK % visible). Expects .devrun/.devlibs as h200-recorder-check.sh.
set -uo pipefail
. "$(dirname "$0")/h200-env.sh"
mkdir -p "$out/traces"
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  cd "$out/traces"
  for r in 0 1; do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \
      "$bin/rerace" record -o native-ranks-h200.rrt -- \
      "$bin/rerace-train-step" --threads 4 --steps 1 --seed $((r + 1)) > "rank$r.log" 2>&1 &
  done
  wait
  for r in 0 1; do echo "== rank $r"; cat "rank$r.log"; done
  ls -la
  for f in native-ranks-h200.rank*.rrt; do "$bin/rerace" show "$f" | head -4; done
} 2>&1 | tee "$out/h200-ranks.log"
