#!/bin/sh
# Regenerates results/ and throughput.{png,svg} from config.json: `protwin compare` per model
# (every system at its best knobs and batch), a CSV of throughputs and speed-ups, and the figure.
# usage: bash experiments/throughput-3090/run.sh      (PROTWIN=path overrides the binary)
# throughput-a100/run.sh runs this same script on its own folder (first argument).
set -eu
here=$(cd "${1:-$(dirname "$0")}" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
protwin=${PROTWIN:-build/release/cli/protwin}
py=/usr/bin/python3
mkdir -p "$here/results"
set -- $($py -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["machine"], c["gpus"], *c["models"])' "$here/config.json")
machine=$1 gpus=$2
shift 2
"$protwin" machine "$machine" --json > "$here/results/machine.json"
for model in "$@"; do
  "$protwin" compare --model "$model" --machine "$machine" --gpus "$gpus" --json 2>/dev/null \
    > "$here/results/$model.json"
  echo "wrote $here/results/$model.json"
done
# The criterion is judged by tabulate.py (exit 1 when missed); the figure is drawn either way.
rc=0
$py "$repo/experiments/throughput-3090/tabulate.py" "$here" || rc=$?
$py "$repo/plots/throughput.py" "$here/config.json" "$here/results" --out "$here/throughput"
exit $rc
