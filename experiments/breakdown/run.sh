#!/bin/sh
# Regenerates results/ and breakdown.{png,svg} from config.json (about 10 s).
# usage: experiments/breakdown/run.sh      (PROTWIN=path/to/protwin, default build/release/cli/protwin)
# Everything is in run.py (protwin's runs, results/, then the figure via plots/).
exec /usr/bin/python3 "$(dirname "$0")/run.py"
