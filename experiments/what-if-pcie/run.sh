#!/bin/sh
# Regenerates results/ and the figures of what-if-pcie from config.json (about 20 s).
# usage: experiments/what-if-pcie/run.sh      (PROTWIN=path/to/protwin, default build/release/cli/protwin)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
export PROTWIN="${PROTWIN:-build/release/cli/protwin}"
/usr/bin/python3 "$here/run.py"
gens="PCIe 3,PCIe 4,PCIe 5"
for m in rtx3090-server a100-server; do
  /usr/bin/python3 plots/sweep.py "$here/results/$m.json" --out "$here/throughput_$m" --x-labels "$gens" \
    --x-title "host link generation (x16; rates in config.json)" \
    --compare "$here/results/$m-best-known.json" --compare-label "best known: the best of all picks on the grid, re-simulated here (dashed)"
  /usr/bin/python3 plots/sweep.py "$here/results/$m.json" --out "$here/knobs_$m" --knobs --x-labels "$gens" \
    --x-title "host link generation" --series 12,16,24,28,68,112
done
