#!/usr/bin/env bash
# Runs libFuzzer targets (built by `make fuzz`) for RUNS executions each, at most SECONDS each,
# seeded from the committed corpus; new interesting inputs go to a scratch folder (not committed),
# crashes to $OUT/<reader>/ (copy them into tests/fuzz/corpus/<reader>/ once fixed).
# Usage: tests/fuzz/run.sh [RUNS] [SECONDS] [reader ...]   (default: 1000000 900, every reader)
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-1000000}; SECONDS_MAX=${2:-900}; shift $(( $# > 2 ? 2 : $# )) || true
READERS=${*:-plan report machine policy model rates kineto checkpoint table}
OUT=${OUT:-/tmp/protwin-fuzz}
# MAX_LEN caps an input's bytes (default: the largest seed); large seeds (Kineto's 57 KB) are slow.
LEN_FLAG=${MAX_LEN:+-max_len=$MAX_LEN}
for r in $READERS; do
  mkdir -p "$OUT/$r/corpus"
  echo "== fuzz_$r: $RUNS runs, at most $SECONDS_MAX s"
  build/fuzz/tests/fuzz/fuzz_$r -runs="$RUNS" -max_total_time="$SECONDS_MAX" -timeout=${TIMEOUT:-10} -rss_limit_mb=2048 \
    -print_final_stats=1 $LEN_FLAG -artifact_prefix="$OUT/$r/" "$OUT/$r/corpus" "tests/fuzz/corpus/$r" 2>&1 |
    grep -E "^(Done|#[0-9]+\s+DONE|stat::number_of_executed_units|stat::average_exec_per_sec|==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)" || true
done
