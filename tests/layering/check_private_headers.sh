#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_private_headers.sh CXX INCLUDE_DIRS_TSV SOURCE_DIR
#
# INCLUDE_DIRS_TSV has one line per library, lowest layer first: its name, then its include
# directories (the target's INCLUDE_DIRECTORIES, tab-separated), as CMake generates them. L
# reaches M when SOURCE_DIR/src/M is one of L's include directories
# (vmetrics_reach_private_headers). For every library L and every private header H of every
# library M (SOURCE_DIR/src/M/*.h):
#   M == L, or L reaches M: `#include "H"` compiles with L's include directories;
#   otherwise: `#include "H"` fails with "no such file" under them;
#   M != L: `#include "M/H"` fails with "no such file" under them.
# L reaching M is itself a failure when M's line comes after L's: headers are shared upward
# only. Prints every case that does not behave and exits 1 if there is one.
set -uo pipefail
cxx=$1
table=$2
source_dir=$3
failures=0
cases=0

# include_args LIB_DIRS...: the -I flags of a library's include directories.
include_args() {
  local dir
  for dir in "$@"; do
    [[ -n $dir ]] && printf '%s\0' "-I$dir"
  done
}

# The layer of each library: its line number in the table.
declare -A layer
n=0
while IFS=$'\t' read -r lib _; do
  [[ -z $lib ]] && continue
  layer[$lib]=$n
  n=$((n + 1))
done <"$table"

while IFS=$'\t' read -r lib dirs_line; do
  [[ -z $lib ]] && continue
  IFS=$'\t' read -r -a dirs <<<"$dirs_line"
  mapfile -d '' -t args < <(include_args "${dirs[@]}")
  declare -A reaches=()
  for dir in "${dirs[@]}"; do
    [[ $dir == "$source_dir"/src/* ]] || continue
    reached=${dir#"$source_dir"/src/}
    [[ $reached == "$lib" || -z ${layer[$reached]+x} ]] && continue
    reaches[$reached]=1
    cases=$((cases + 1))
    if ((layer[$reached] > layer[$lib])); then
      echo "FAIL: $lib reaches the private headers of $reached, a layer above it"
      failures=$((failures + 1))
    fi
  done
  # The headers of other libraries: one probe per spelling, all in one preprocessor run, with
  # the compiler's own search (__has_include finds exactly what #include would).
  probe=""
  for header_path in "$source_dir"/src/*/*.h; do
    owner=$(basename "$(dirname "$header_path")")
    header=$(basename "$header_path")
    # Only the libraries in the table have the one-directory-per-library scheme.
    [[ -n ${layer[$owner]+x} ]] || continue
    if [[ $owner == "$lib" ]]; then
      cases=$((cases + 1))
      if ! out=$(printf '#include "%s"\n' "$header" |
        "$cxx" -std=c++20 -fsyntax-only -x c++ "${args[@]}" - 2>&1); then
        echo "FAIL: $lib cannot compile its own private header $header:"
        echo "$out" | head -5
        failures=$((failures + 1))
      fi
      continue
    fi
    if [[ -n ${reaches[$owner]+x} ]]; then
      probe+="#if !__has_include(\"$header\")"$'\n'
      probe+="#error FAIL: $lib reaches $owner but does not find its private header \"$header\""$'\n'
      probe+="#endif"$'\n'
      spellings=("$owner/$header")
    else
      spellings=("$header" "$owner/$header")
    fi
    for spelling in "${spellings[@]}"; do
      probe+="#if __has_include(\"$spelling\")"$'\n'
      probe+="#error FAIL: $lib reaches $owner's private header as \"$spelling\""$'\n'
      probe+="#endif"$'\n'
    done
    cases=$((cases + 2))
  done
  out=$(printf '%s' "$probe" | "$cxx" -std=c++20 -E -x c++ "${args[@]}" - 2>&1 >/dev/null)
  status=$?
  errors=$(grep -o 'FAIL: .*' <<<"$out")
  if [[ -n $errors ]]; then
    echo "$errors"
    failures=$((failures + $(wc -l <<<"$errors")))
  elif [[ $status -ne 0 ]]; then
    echo "FAIL: the probe of $lib's reach did not run:"
    echo "$out" | head -5
    failures=$((failures + 1))
  fi
done <"$table"

echo "layering_private_headers: $cases cases, $failures failures"
[[ $cases -gt 0 && $failures -eq 0 ]]
