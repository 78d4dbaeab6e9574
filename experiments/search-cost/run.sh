#!/bin/sh
# Regenerates results/ and search_cost.{png,svg} from config.json (about 20-60 s; the timings are
# wall-clock: run it on a quiet machine).
# usage: experiments/search-cost/run.sh      (PROTWIN=path/to/protwin, default build/release/cli/protwin)
# Everything is in run.py (protwin's runs, results/, then the figure via plots/).
exec /usr/bin/python3 "$(dirname "$0")/run.py"
