#!/bin/sh
# Regenerates results/ and multinode.{png,svg} from config.json (about a minute); exits non-zero
# when a criterion of the README is missed.
# usage: experiments/multinode/run.sh      (PROTWIN=path/to/protwin, default build/release/cli/protwin)
exec /usr/bin/python3 "$(dirname "$0")/run.py"
