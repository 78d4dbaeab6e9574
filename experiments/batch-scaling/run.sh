#!/bin/sh
# Regenerates results/ and batch_scaling.{png,svg} from config.json: `protwin compare --batch B`
# (every system at its best knobs for that fixed batch) per (model, server, batch), `protwin
# compare` with the batch searched, then the CSV and the figure.
# usage: bash experiments/batch-scaling/run.sh      (PROTWIN=path overrides the binary)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
protwin=${PROTWIN:-build/release/cli/protwin}
py=/usr/bin/python3
mkdir -p "$here/results"
$py -c 'import json,sys; c=json.load(open(sys.argv[1]))
for s in c["setups"]:
    for b in s["batches"] + ["auto"]: print(s["model"], s["machine"], s["gpus"], b)' "$here/config.json" |
while read -r model machine gpus batch; do
  "$protwin" machine "$machine" --json > "$here/results/$machine.json"
  out="$here/results/${model}_${machine}_${gpus}gpu_b$batch.json"
  "$protwin" compare --model "$model" --machine "$machine" --gpus "$gpus" --batch "$batch" --json \
    2>/dev/null > "$out"
  echo "wrote $out"
done
# The criterion is judged by tabulate.py (exit 1 when missed); the figure is drawn either way.
rc=0
$py "$here/tabulate.py" "$here" || rc=$?
$py "$repo/plots/batch_scaling.py" "$here/config.json" "$here/results" --out "$here/batch_scaling"
exit $rc
