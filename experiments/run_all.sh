#!/bin/bash
# Regenerates every experiment's results and figures: runs experiments/*/run.sh in sorted order
# (each run.sh draws its own figures with its plots/*.py script), printing each one's wall time.
# An experiment that fails (a criterion missed, or an error) is named and the others still run; the
# script then exits non-zero and lists every failed experiment. A folder without a
# run.sh is skipped (with a note). At the end, plot scripts that no run.sh names are listed, so a
# figure nobody regenerates does not go unnoticed.
#
# usage: bash experiments/run_all.sh      (PROTWIN=path/to/protwin, default build/release/cli/protwin;
#                                          `make figures` calls this with the Release build)
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
PROTWIN=${PROTWIN:-build/release/cli/protwin}
case $PROTWIN in /*) ;; *) PROTWIN="$repo/$PROTWIN" ;; esac
export PROTWIN  # absolute, so every run.sh finds it whatever folder it works in
if [ ! -x "$PROTWIN" ]; then
  echo "run_all: no protwin binary at $PROTWIN (run \`make build\` or set PROTWIN)" >&2
  exit 1
fi

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

start_all=$(now)
ran=""
failed=""
for dir in experiments/*/; do
  name=$(basename "$dir")
  if [ ! -f "$dir/run.sh" ]; then
    echo "== $name: skipped (no run.sh)"
    continue
  fi
  echo "== $name"
  start=$(now)
  bash "$dir/run.sh"
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "run_all: experiment '$name' failed (exit code $rc) after $(elapsed "$start" "$(now)") s" >&2
    failed="$failed $name"
    continue
  fi
  echo "== $name: done in $(elapsed "$start" "$(now)") s"
  ran="$ran $name"
done

# Plot scripts (plots/*.py, not the _helpers) that no experiment's scripts mention.
orphans=""
for plot in plots/*.py; do
  base=$(basename "$plot")
  case $base in _*) continue ;; esac
  grep -qs "$base" experiments/*/*.sh experiments/*/*.py || orphans="$orphans $base"
done
[ -n "$orphans" ] && echo "note: plot scripts no experiments/*/run.sh calls (drawn elsewhere or by hand):$orphans"
echo "== all experiments ($ran ) done in $(elapsed "$start_all" "$(now)") s"
if [ -n "$failed" ]; then
  echo "run_all: failed (criterion missed or error; see above):$failed" >&2
  exit 1
fi
