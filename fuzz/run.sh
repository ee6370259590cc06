#!/usr/bin/env bash
# Runs the libFuzzer harnesses (fuzz/README.md) and prints a table: per
# harness the seconds, executions, executions per second, coverage and
# corpus size, from libFuzzer's final stats.
#   fuzz/run.sh [--smoke] BUILD SECONDS NAME...
# Each harness runs SECONDS over fuzz/corpus/NAME (read only) and a working
# corpus: BUILD/corpus/NAME, kept between runs, or with --smoke a fresh one
# (`make test`: the committed inputs, then a few seconds of new ones). A
# crash, leak, UB report or timeout fails the run; the input is saved as
# BUILD/artifacts/NAME-* and the report's tail is printed.
set -uo pipefail

smoke=0
if [ "${1:-}" = "--smoke" ]; then smoke=1; shift; fi
build=$1 seconds=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$build/artifacts" "$build/logs"
tmp=""
if [ $smoke = 1 ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# the parsers are single-threaded; keep OpenMP from spinning up pools
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -1; }

failed=()
rows=()
for name in "$@"; do
  bin=$build/fuzz/fuzz_$name
  seeds=$root/fuzz/corpus/$name
  if [ $smoke = 1 ]; then work=$tmp/$name; else work=$build/corpus/$name; fi
  mkdir -p "$work"
  log=$build/logs/$name.log
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$name-" "$work" "$seeds" >"$log" 2>&1
  rc=$?
  execs=$(stat number_of_executed_units "$log")
  rate=$(stat average_exec_per_sec "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corpus=$(ls "$work" | wc -l)
  result=ok
  if [ $rc -ne 0 ]; then
    result="FAIL (rc $rc)"
    failed+=("$name")
    echo "fuzz: $name failed; the end of $log:" >&2
    tail -40 "$log" >&2
  fi
  rows+=("$(printf '| %-12s | %5s | %12s | %8s | %6s | %6s | %s |' "$name" "$seconds" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "$corpus" "$result")")
done

printf '| %-12s | %5s | %12s | %8s | %6s | %6s | %s |\n' harness s executions exec/s cov corpus result
printf '|%s|%s|%s|%s|%s|%s|%s|\n' -------------- ------- -------------- ---------- -------- -------- --------
printf '%s\n' "${rows[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${failed[*]} found a problem (inputs in $build/artifacts/)" >&2
  exit 1
fi
