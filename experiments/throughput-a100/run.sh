#!/bin/sh
# Regenerates results/ and throughput.{png,svg} from this folder's config.json with the same
# procedure as throughput-3090 (one script, two configs).
# usage: bash experiments/throughput-a100/run.sh      (PROTWIN=path overrides the binary)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec sh "$here/../throughput-3090/run.sh" "$here"
