#!/bin/sh
# Regenerates results/{predictions,mape}.json, results/mape.csv and gpu_kernels.{png,svg}; exits 1
# when a criterion of issue #19 is missed (README.md).
# usage: experiments/gpu-kernels/run.sh   (binary: $PROTWIN, default build/release/cli/protwin)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
/usr/bin/python3 "$here/run.py"
