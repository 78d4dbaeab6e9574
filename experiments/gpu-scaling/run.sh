#!/bin/sh
# Regenerates results/ and gpu_scaling.{png,svg} from config.json: `protwin compare` per (model,
# server, GPU count), plus ProTrain's search restricted to all-CKPT (`--ablation all-ckpt`) as a
# reference point, then the CSV and the figure.
# usage: bash experiments/gpu-scaling/run.sh      (PROTWIN=path overrides the binary)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
protwin=${PROTWIN:-build/release/cli/protwin}
py=/usr/bin/python3
mkdir -p "$here/results"
$py -c 'import json,sys; c=json.load(open(sys.argv[1]))
for s in c["setups"]:
    for g in c["gpus"]: print(s["model"], s["machine"], g)' "$here/config.json" |
while read -r model machine gpus; do
  "$protwin" machine "$machine" --json > "$here/results/$machine.json"
  out="$here/results/${model}_${machine}_${gpus}gpu"
  "$protwin" compare --model "$model" --machine "$machine" --gpus "$gpus" --json 2>/dev/null > "$out.json"
  "$protwin" search --model "$model" --machine "$machine" --gpus "$gpus" --ablation all-ckpt --json \
    2>/dev/null > "${out}_protrain_all_ckpt.json" || rm -f "${out}_protrain_all_ckpt.json"
  echo "wrote $out.json"
done
# The criterion is judged by tabulate.py (exit 1 when missed); the figure is drawn either way.
rc=0
$py "$here/tabulate.py" "$here" || rc=$?
$py "$repo/plots/gpu_scaling.py" "$here/config.json" "$here/results" --out "$here/gpu_scaling"
exit $rc
