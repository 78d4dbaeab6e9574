#!/bin/sh
# Session 16, outside the scored calibration: llama-tiny's "search best" (c00.json, n_buffer 3) and
# "pareto 5" (c05.json, n_buffer 2), each twice (b3 = b3x = c00, b2 = b2x = c05), interleaved alone
# in 3 processes of 6 steps (binary: main at b63cc1c, the runtime this branch also runs).
# usage (in this folder, under `flock -x /work/wt/cpu.lock`): sh two_plans.sh
P=${PROTWIN:-../../../../build/release/cli/protwin}
cp c00.json b3.json; cp c00.json b3x.json; cp c05.json b2.json; cp c05.json b2x.json
for k in 1 2 3; do
  $P interleave --plan b3.json --plan b2.json --plan b2x.json --plan b3x.json --steps 6 --link-GBps 0.25 -o m-b3-$k.json -o m-b2-$k.json -o m-b2x-$k.json -o m-b3x-$k.json --json > il-$k.json
done
