#!/bin/sh
# Five `RERUN=1 experiments/twin-accuracy/run.sh` in a row (issue 22), each in its own exclusive
# hold of the machine's CPU lock (LOCK, default /work/wt/cpu.lock: other jobs build under a shared
# hold, so a run measures a quiet machine); start, end, exit code and load average go to
# DIR/times.txt, each run's output to DIR/run-N.log and each model's calibration.json to
# DIR/run-N-<model>-calibration.json. FIRST/LAST choose the runs (default 1 and 5), so a series can
# be continued in later holds.
# usage (from the repository root): [FIRST=1] [LAST=5] sh experiments/twin-accuracy/five_runs.sh DIR
d=${1:?usage: five_runs.sh DIR}
lock=${LOCK:-/work/wt/cpu.lock}
mkdir -p "$d"
for n in $(seq "${FIRST:-1}" "${LAST:-5}"); do
  echo "run $n waiting for the lock $(date -u +%H:%M:%S)" >> $d/times.txt
  flock -x "$lock" sh -c "
    echo \"run $n start \$(date -u +%H:%M:%S) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $d/times.txt
    RERUN=1 experiments/twin-accuracy/run.sh > $d/run-$n.log 2>&1
    echo \"run $n exit \$? end \$(date -u +%H:%M:%S) load \$(cut -d' ' -f1-3 /proc/loadavg)\" >> $d/times.txt"
  for m in gpt2-tiny llama-tiny; do
    cp experiments/twin-accuracy/results/$m/calibration.json $d/run-$n-$m-calibration.json
  done
done
