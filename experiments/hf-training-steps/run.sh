#!/bin/sh
# Regenerates results/comparison.{json,csv}; exits 1 when a criterion of issue #18 is missed
# (README.md). usage: experiments/hf-training-steps/run.sh   (binary: $PROTWIN, default build/release/cli/protwin)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
/usr/bin/python3 "$here/run.py"
