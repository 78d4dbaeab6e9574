#!/bin/sh
# Session 16, outside the scored calibration: llama-tiny's 12 calibration plans (session 15's run 5,
# c00..c11.json) in one interleave process each, as calibrate runs a round (block probes on, 6 steps),
# in three orders: A as calibrate ordered them, B with c00 and c05 swapped (c05 first, c00 sixth),
# C with c00 and c11 swapped (c00 last). Processes in the order run: A-1 B-1 A-2 B-2, then B-3 A-3 C-3.
# usage (in this folder, under `flock -x /work/wt/cpu.lock`): sh twelve_plans.sh
P=${PROTWIN:-../../../../build/release/cli/protwin}
A="--plan c00.json --plan c01.json --plan c02.json --plan c03.json --plan c04.json --plan c05.json --plan c06.json --plan c07.json --plan c08.json --plan c09.json --plan c10.json --plan c11.json"
B="--plan c05.json --plan c01.json --plan c02.json --plan c03.json --plan c04.json --plan c00.json --plan c06.json --plan c07.json --plan c08.json --plan c09.json --plan c10.json --plan c11.json"
C="--plan c11.json --plan c01.json --plan c02.json --plan c03.json --plan c04.json --plan c05.json --plan c06.json --plan c07.json --plan c08.json --plan c09.json --plan c10.json --plan c00.json"
for k in 1 2; do
  $P interleave $A --steps 6 --link-GBps 0.25 --block-probes --json > A-$k.json
  $P interleave $B --steps 6 --link-GBps 0.25 --block-probes --json > B-$k.json
done
$P interleave $B --steps 6 --link-GBps 0.25 --block-probes --json > B-3.json
$P interleave $A --steps 6 --link-GBps 0.25 --block-probes --json > A-3.json
$P interleave $C --steps 6 --link-GBps 0.25 --block-probes --json > C-3.json
