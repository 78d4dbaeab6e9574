#!/bin/sh
# Regenerates results/ and long_sequence.{png,svg} from config.json; exits non-zero when a
# criterion of the README is missed.
# usage: experiments/long-sequence/run.sh      (PROTWIN=path/to/protwin, default build/release/cli/protwin)
exec /usr/bin/python3 "$(dirname "$0")/run.py"
