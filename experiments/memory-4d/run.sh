#!/bin/sh
# Regenerates results/*.json and memory_heatmap.{png,svg} from config.json.
# usage: experiments/memory-4d/run.sh [/path/to/protwin]   (default: $PROTWIN, else the Release build)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
protwin=${1:-${PROTWIN:-$repo/build/release/cli/protwin}}
mkdir -p "$here/results"
# One line per (model, device), in config order:
# model device memory_GB gpus_per_node gpus seq gbs method
jobs=$(/usr/bin/python3 - "$here/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
for m in c["models"]:
    for d in c["devices"]:
        print(m, d["name"], d["memory_GB"], d["gpus_per_node"], c["gpus"], c["seq"], c["gbs"], c["method"])
PY
)
set --  # collects the result files, in config order
while read -r model dev mem per_node gpus seq gbs method; do
  out="$here/results/${model}_${dev}.json"
  "$protwin" estimate-search --model "$model" --gpus "$gpus" --gpus-per-node "$per_node" \
    --gpu-memory-GB "$mem" --seq "$seq" --gbs "$gbs" --method "$method" --all --json > "$out"
  echo "wrote $out"
  set -- "$@" "$out"
done <<EOF2
$jobs
EOF2
/usr/bin/python3 "$repo/plots/memory_heatmap.py" "$@" --out "$here/memory_heatmap"
/usr/bin/python3 "$here/check.py" "$@"
