#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets with clang (build-fuzz/) and runs each one for SECONDS (default
# 60) over its corpus fuzz/corpus/<target minus _fuzz>/. New interesting inputs go to
# fuzz/out/<target>/ (git-ignored), so the committed corpus changes only on purpose; a crash
# leaves its input in fuzz/out/ — minimize it (-minimize_crash=1) and commit it to the corpus.
#
# FUZZ_PARALLEL targets run at once (default: the number of cores, so CI's 2 cores fuzz two
# targets side by side); each target's output goes to fuzz/out/<target>.log and is printed when
# it ends, followed by a summary line per target (executions, exec/s, coverage).
#
# Usage: tools/run_fuzzers.sh [SECONDS]        (also: make fuzz FUZZ_SECONDS=600)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-60}"
BUILD_DIR="${BUILD_DIR:-build-fuzz}"
JOBS="${JOBS:-$(nproc)}"
PARALLEL="${FUZZ_PARALLEL:-$(nproc)}"

CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -DVMETRICS_FUZZ=ON -DVMETRICS_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=()
for src in fuzz/*_fuzz.cc; do
  targets+=("$(basename "$src" .cc)")
done
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]}"

# run_one <target>: one libFuzzer run, output to fuzz/out/<target>.log; exit status is libFuzzer's.
run_one() {
  local target=$1 corpus="fuzz/corpus/${1%_fuzz}" out="fuzz/out/$1" bin
  mkdir -p "$corpus" "$out"
  bin="$(find "$BUILD_DIR" -type f -name "$target" -perm -u+x | head -n 1)"
  "$bin" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$out/" -print_final_stats=1 "$out" "$corpus" >"fuzz/out/$target.log" 2>&1
}

status=0
pids=()
names=()
finish() {  # waits for the oldest running target and reports it
  local pid=${pids[0]} target=${names[0]}
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
  echo "== $target: ${SECONDS_PER_TARGET}s over fuzz/corpus/${target%_fuzz}"
  if wait "$pid"; then
    tail -n 20 "fuzz/out/$target.log"
  else
    cat "fuzz/out/$target.log"
    echo "!! $target failed; the crashing input is in fuzz/out/$target/" >&2
    status=1
  fi
}
for target in "${targets[@]}"; do
  if [[ ${#pids[@]} -ge $PARALLEL ]]; then finish; fi
  run_one "$target" &
  pids+=($!)
  names+=("$target")
done
while [[ ${#pids[@]} -gt 0 ]]; do finish; done

echo
echo "== fuzz summary (${SECONDS_PER_TARGET}s per target, $PARALLEL at a time)"
for target in "${targets[@]}"; do
  log="fuzz/out/$target.log"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1)
  printf '%-20s %12s executions %8s exec/s  %s\n' "$target" "${runs:-?}" "${speed:-?}" "${cov:-}"
done
exit $status
