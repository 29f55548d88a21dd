#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_clang_tidy.sh [--tests] [--jobs N] [BUILD_DIR] [-- FILE...]
#
# Runs clang-tidy (.clang-tidy at the top of the tree) over every tracked src/**/*.cc that
# BUILD_DIR/compile_commands.json compiles (default BUILD_DIR: build; configure it first, e.g.
# `make build`), N files at a time (default: the number of cores). With --tests, tests/**/*.cc
# too. FILE... checks just those files. Findings in our own headers (include/, src/, and
# tests/ with --tests) are reported once, however many files include them.
#
# Prints every finding (file:line:col: warning: ... [check]) and a count per check, and exits 1
# when there is any finding, 2 when clang-tidy cannot run (no compile_commands.json, a file it
# cannot parse), 0 otherwise. CLANG_TIDY names the binary (default: clang-tidy).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
CLANG_TIDY=${CLANG_TIDY:-clang-tidy}
jobs=$(nproc)
with_tests=0
build=build
files=()
while (($#)); do
  case $1 in
    --tests) with_tests=1 ;;
    --jobs) jobs=$2; shift ;;
    --) shift; files=("$@"); break ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) build=$1 ;;
  esac
  shift
done
db=$build/compile_commands.json
command -v "$CLANG_TIDY" >/dev/null || { echo "run_clang_tidy: $CLANG_TIDY not found" >&2; exit 2; }
[[ -f $db ]] || { echo "run_clang_tidy: no $db; configure $build first (make build)" >&2; exit 2; }

if ((${#files[@]} == 0)); then
  compiled=$(/usr/bin/python3 -c 'import json,sys; print("\n".join(e["file"] for e in json.load(open(sys.argv[1]))))' "$db")
  patterns=('src/*.cc')
  ((with_tests)) && patterns+=('tests/*.cc')
  while IFS= read -r f; do
    grep -qxF "$root/$f" <<<"$compiled" && files+=("$f")
  done < <(git ls-files "${patterns[@]}")
fi
header_filter="^$root/(include|src)/"
((with_tests)) && header_filter="^$root/(include|src|tests)/"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
printf '%s\0' "${files[@]}" |
  xargs -0 -P "$jobs" -n 1 "$CLANG_TIDY" -p "$build" --quiet --header-filter="$header_filter" \
    >"$out" 2>"$out.err"
status=$?
elapsed=$(($(date +%s) - start))
rm -f "$out.err"
findings=$(grep -E '^/.*: warning: .*\[[a-z0-9.,-]+\]$' "$out" | sed "s|^$root/||" | sort -u)
# clang-tidy exits non-zero on findings too; a compiler error is what makes the run useless
# (the findings are printed all the same, so one run shows everything to fix).
if grep -q ' error: ' "$out"; then
  [[ -n $findings ]] && echo "$findings"
  grep ' error: ' "$out" | sort -u >&2
  echo "run_clang_tidy: clang-tidy could not compile a file (above)" >&2
  exit 2
fi
if [[ -z $findings ]]; then
  echo "run_clang_tidy: ${#files[@]} file(s), no findings (${elapsed}s, $jobs jobs)"
  exit 0
fi
echo "$findings"
echo
echo "run_clang_tidy: findings per check:"
sed -E 's/.*\[([a-z0-9.,-]+)\]$/\1/' <<<"$findings" | sort | uniq -c | sort -rn
echo "run_clang_tidy: $(wc -l <<<"$findings") finding(s) in ${#files[@]} file(s)" \
     "(${elapsed}s, $jobs jobs; xargs status $status)"
exit 1
