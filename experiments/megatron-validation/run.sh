#!/bin/sh
# Regenerates results/*.json, results/comparison.{json,csv} and megatron_validation.{png,svg}.
# usage: experiments/megatron-validation/run.sh   (binary: $PROTWIN, default build/release/cli/protwin)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
/usr/bin/python3 "$here/run.py"
/usr/bin/python3 "$repo/plots/megatron_validation.py" "$here/results/comparison.json" \
  --out "$here/megatron_validation"
