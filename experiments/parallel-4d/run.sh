#!/bin/sh
# Regenerates results/ (every search-4d answer, the across-node probes, summary, CSVs) and
# parallel_4d.{png,svg}. usage: experiments/parallel-4d/run.sh  (binary: $PROTWIN, default
# build/release/cli/protwin)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
/usr/bin/python3 "$here/run.py"
/usr/bin/python3 "$repo/plots/parallel_4d.py" "$here/results/summary.json" --out "$here/parallel_4d"
