#!/bin/sh
# The five runs of issue 22, session 11 (experiments/twin-accuracy/five_runs.sh into this folder).
# usage (from the repository root): sh experiments/twin-accuracy/results/issue22-s11/five_runs.sh
exec sh experiments/twin-accuracy/five_runs.sh experiments/twin-accuracy/results/issue22-s11
