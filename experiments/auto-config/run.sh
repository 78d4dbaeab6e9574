#!/bin/sh
# Regenerates results/ and auto_config.{png,svg} from config.json (about 20-50 s).
# usage: experiments/auto-config/run.sh      (PROTWIN=path/to/protwin, default build/release/cli/protwin)
# Everything is in run.py (protwin's runs, results/, then the figure via plots/).
exec /usr/bin/python3 "$(dirname "$0")/run.py"
