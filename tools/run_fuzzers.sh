#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build-fuzz/) and runs each one for SECONDS (default
# 60) over its corpus fuzz/corpus/<target minus _fuzz>/. New interesting inputs go to
# fuzz/out/<target>/ (git-ignored), so the committed corpus changes only on purpose; a crash
# leaves its input in fuzz/out/ — minimize it (-minimize_crash=1) and commit it to the corpus.
#
# Usage: tools/run_fuzzers.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-60}"
BUILD_DIR="${BUILD_DIR:-build-fuzz}"
JOBS="${JOBS:-$(nproc)}"

CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -DVMETRICS_FUZZ=ON -DVMETRICS_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=()
for src in fuzz/*_fuzz.cc; do
  targets+=("$(basename "$src" .cc)")
done
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]}"

status=0
for target in "${targets[@]}"; do
  corpus="fuzz/corpus/${target%_fuzz}"
  out="fuzz/out/$target"
  mkdir -p "$corpus" "$out"
  echo "== $target: ${SECONDS_PER_TARGET}s over $corpus"
  bin="$(find "$BUILD_DIR" -type f -name "$target" -perm -u+x | head -n 1)"
  if ! "$bin" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$out/" -print_final_stats=1 "$out" "$corpus"; then
    echo "!! $target failed; the crashing input is in $out/" >&2
    status=1
  fi
done
exit $status
