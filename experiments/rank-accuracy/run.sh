#!/bin/sh
# Tabulates results/ (every system's 2-GPU plan of each model, run under mpirun -np 2 by `protwin
# calibrate --ranks 2`). By default from the committed results (measuring needs the runtime,
# protwin-rt, Open MPI and a quiet machine); RERUN=1 first re-runs the calibration for each model
# of config.json (MODELS="gpt2-tiny" for a subset), exactly as README.md documents.
# Exits 1 when a model misses a criterion.
# usage: [RERUN=1] [MODELS=...] experiments/rank-accuracy/run.sh   (PROTWIN=path/to/protwin)
exec /usr/bin/python3 "$(dirname "$0")/run.py"
