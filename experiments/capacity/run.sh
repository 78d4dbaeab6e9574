#!/bin/sh
# Regenerates results/ and capacity.{png,svg} from config.json: `protwin capacity` per (server,
# GPUs), whose `next_size` says what stops one layer more than each system's largest model.
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
done
# The criterion is judged by tabulate.py (exit 1 when missed); the figure is drawn either way.
rc=0
$py "$here/tabulate.py" "$here" || rc=$?
$py "$repo/plots/capacity.py" "$here/config.json" "$here/results" --out "$here/capacity"
exit $rc
