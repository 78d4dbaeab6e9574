#!/bin/sh
# Regenerates results/ and capacity.{png,svg} from config.json: `protwin capacity` per (server,
# GPUs), then `protwin compare --batch 1` one layer past each system's limit, which records the
# memory (GPU or host) that stops it there.
# usage: bash experiments/capacity/run.sh      (PROTWIN=path overrides the binary)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
protwin=${PROTWIN:-build/release/cli/protwin}
py=/usr/bin/python3
mkdir -p "$here/results"
setups=$($py -c 'import json,sys; c=json.load(open(sys.argv[1]))
print(",".join(c["systems"]))
for s in c["setups"]: print(s["machine"], s["gpus"])' "$here/config.json")
systems=$(echo "$setups" | head -n 1)
echo "$setups" | tail -n +2 | while read -r machine gpus; do
  out="$here/results/${machine}_${gpus}gpu"
  "$protwin" machine "$machine" --json > "$here/results/$machine.json"
  "$protwin" capacity --family gpt2 --machine "$machine" --gpus "$gpus" --systems "$systems" --json \
    2>/dev/null > "$out.json"
  echo "wrote $out.json"
  # One layer more than each system's largest model, in that system's hidden size.
  $py -c 'import json,sys
for s in json.load(open(sys.argv[1]))["systems"]:
    if s["max_params"]: print(s["name"], s["hidden"], s["layers"] + 1)' "$out.json" |
  while read -r system hidden layers; do
    "$protwin" compare --model "gpt2:hidden=$hidden,layers=$layers,heads=16,vocab=50257" --machine "$machine" \
      --gpus "$gpus" --batch 1 --json 2>/dev/null > "${out}_${system}_next.json"
  done
done
$py "$here/tabulate.py" "$here"
$py "$repo/plots/capacity.py" "$here/config.json" "$here/results" --out "$here/capacity"
