#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_private_headers.sh CXX INCLUDE_DIRS_TSV SOURCE_DIR
#
# INCLUDE_DIRS_TSV has one line per library: its name, then its include directories (the
# target's INCLUDE_DIRECTORIES, tab-separated), as CMake generates them. For every library L
# and every private header H of every library M (SOURCE_DIR/src/M/*.h):
#   M == L: `#include "H"` compiles with L's include directories;
#   M != L: `#include "H"` and `#include "M/H"` fail with "no such file" under them.
# Prints every case that does not behave and exits 1 if there is one.
set -uo pipefail
cxx=$1
table=$2
source_dir=$3
failures=0
cases=0

# compile LIB_DIRS... -- HEADER: compiles a TU that includes HEADER; prints the diagnostics.
compile() {
  local args=()
  while [[ $1 != -- ]]; do
    [[ -n $1 ]] && args+=("-I$1")
    shift
  done
  shift
  printf '#include "%s"\n' "$1" |
    "$cxx" -std=c++20 -fsyntax-only -x c++ "${args[@]}" - 2>&1
}

while IFS=$'\t' read -r lib dirs_line; do
  [[ -z $lib ]] && continue
  IFS=$'\t' read -r -a dirs <<<"$dirs_line"
  for header_path in "$source_dir"/src/*/*.h; do
    owner=$(basename "$(dirname "$header_path")")
    header=$(basename "$header_path")
    # Only the libraries in the table have the one-directory-per-library scheme.
    grep -q "^$owner"$'\t' "$table" || continue
    if [[ $owner == "$lib" ]]; then
      cases=$((cases + 1))
      if ! out=$(compile "${dirs[@]}" -- "$header"); then
        echo "FAIL: $lib cannot compile its own private header $header:"
        echo "$out" | head -5
        failures=$((failures + 1))
      fi
      continue
    fi
    for spelling in "$header" "$owner/$header"; do
      cases=$((cases + 1))
      out=$(compile "${dirs[@]}" -- "$spelling")
      status=$?
      if [[ $status -eq 0 ]] || ! grep -qi 'no such file\|file not found' <<<"$out"; then
        echo "FAIL: $lib reaches $owner's private header as \"$spelling\" (exit $status)"
        echo "$out" | head -3
        failures=$((failures + 1))
      fi
    done
  done
done <"$table"

echo "layering_private_headers: $cases cases, $failures failures"
[[ $cases -gt 0 && $failures -eq 0 ]]
