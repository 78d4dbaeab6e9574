#!/bin/sh
# Tabulates results/ and draws twin_accuracy.{png,svg}. By default from the committed calibration
# results (measuring needs the real runtime, protwin-rt, and a quiet machine: about 10 minutes);
# RERUN=1 first re-runs `protwin calibrate --model M --fit --budget-s 180 -o experiments/twin-accuracy/results/M`
# for each model of config.json, exactly as README.md documents.
# usage: [RERUN=1] experiments/twin-accuracy/run.sh   (PROTWIN=path/to/protwin, default build/release/cli/protwin)
exec /usr/bin/python3 "$(dirname "$0")/run.py"
