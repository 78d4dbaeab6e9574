#!/bin/sh
# Regenerates results/ablation.{json,csv} and host_dispatch.{png,svg}; exits 1 when a criterion of
# issue #18 is missed with every mechanism on (see README.md).
# usage: experiments/host-dispatch/run.sh   (binary: $PROTWIN, default build/release/cli/protwin)
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
/usr/bin/python3 "$here/run.py"
status=$?
/usr/bin/python3 "$repo/plots/host_dispatch.py" "$here/results/ablation.json" --out "$here/host_dispatch" || exit 1
exit $status
