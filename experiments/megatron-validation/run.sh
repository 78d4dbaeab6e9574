#!/bin/sh
# Regenerates results/*.json, results/comparison.{json,csv} and megatron_validation.{png,svg};
# exits 1 when the criterion (README.md) is missed, after drawing the figure.
# usage: experiments/megatron-validation/run.sh   (binary: $PROTWIN, default build/release/cli/protwin)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
rc=0
/usr/bin/python3 "$here/run.py" || rc=$?
[ -f "$here/results/comparison.json" ] || exit 1
/usr/bin/python3 "$repo/plots/megatron_validation.py" "$here/results/comparison.json" \
  --out "$here/megatron_validation"
exit $rc
