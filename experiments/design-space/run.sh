#!/bin/sh
# Draws design_space.{png,svg} and tabulates results/ of the design-space study. By default from
# the committed sweep results (the 10,500 searches take about 10 minutes on this 2-core machine);
# RERUN=1 first re-runs every model's sweep under `mpirun -np 2` and the timing runs (1 process,
# 2 ranks) that results/timing.json holds.
# usage: [RERUN=1] experiments/design-space/run.sh   (PROTWIN=path/to/protwin, default build/release/cli/protwin)
exec /usr/bin/python3 "$(dirname "$0")/run.py"
