#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# promtool_check.sh PROMTOOL VMETRICS_BINARY SOURCE_DIR
#
# Runs `promtool check metrics` on every golden exposition tests/golden/*.txt and on the
# `vmetrics replay` output of every text-format scenario of tests/golden/scenarios.tsv.
#
# promtool 2.42 exits 0 when the input parses and lints clean, 1 when it does not parse, and 3
# when it parses but its linter complains (complaints on stderr, one per line). vLLM's own names
# draw two complaints that are part of the parity target, so exit 3 is accepted when every line
# is one of these:
#   <name> metric names should not contain ':'                      (every vllm: family)
#   vllm:iteration_tokens_total non-counter metrics should not have "_total" suffix
#                                                                   (vLLM's histogram name)
# Anything else (exit 1, another exit code, or another lint line) fails the test.
set -uo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 PROMTOOL VMETRICS_BINARY SOURCE_DIR" >&2
  exit 2
fi
promtool=$1
vmetrics=$2
source_dir=$3
scenarios="$source_dir/tests/golden/scenarios.tsv"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failures=0
checked=0

# check LABEL FILE: promtool on FILE; prints and counts a failure if it is not acceptable.
check() {
  local label=$1 file=$2 rc
  "$promtool" check metrics <"$file" >"$tmp/promtool.out" 2>"$tmp/promtool.err"
  rc=$?
  checked=$((checked + 1))
  if [[ $rc -eq 0 ]]; then
    return
  fi
  if [[ $rc -eq 3 ]] && ! grep -v -E \
      -e "^[^ ]+ metric names should not contain ':'\$" \
      -e '^vllm:iteration_tokens_total non-counter metrics should not have "_total" suffix$' \
      "$tmp/promtool.err" >"$tmp/unexpected"; then
    return   # exit 3 and nothing but the accepted lint lines
  fi
  echo "FAIL: $label: promtool check metrics exited $rc" >&2
  if [[ $rc -eq 3 ]]; then
    echo "  lint lines other than the accepted ones:" >&2
    sed 's/^/    /' "$tmp/unexpected" >&2
  else
    sed 's/^/    /' "$tmp/promtool.out" "$tmp/promtool.err" >&2
  fi
  failures=$((failures + 1))
}

shopt -s nullglob
goldens=("$source_dir"/tests/golden/*.txt)
if [[ ${#goldens[@]} -eq 0 ]]; then
  echo "FAIL: no golden expositions in $source_dir/tests/golden (run tools/regen.sh)" >&2
  exit 1
fi
for golden in "${goldens[@]}"; do
  check "golden ${golden#"$source_dir"/}" "$golden"
done

if [[ ! -r $scenarios ]]; then
  echo "FAIL: cannot read $scenarios (run tools/regen.sh)" >&2
  exit 1
fi
# Columns: name, input, expected, replay args (space-separated; no quoting, no globbing: `read -a`
# splits on spaces and never expands anything).
while IFS=$'\t' read -r name input expected args; do
  [[ -z $name || $name == \#* ]] && continue
  [[ $expected == *.txt ]] || continue   # promtool reads the text format only
  read -r -a argv <<<"$args"
  # Exit 1 = some message was skipped; the exposition is printed all the same (cli_test checks
  # the status against the golden). The environment switch would drop `_created`: unset it.
  env -u PROMETHEUS_DISABLE_CREATED_SERIES \
    "$vmetrics" replay "$source_dir/$input" "${argv[@]}" >"$tmp/replay.txt" 2>"$tmp/replay.err"
  rc=$?
  if [[ $rc -ne 0 && $rc -ne 1 ]]; then
    echo "FAIL: replay $name: vmetrics replay exited $rc" >&2
    sed 's/^/    /' "$tmp/replay.err" >&2
    failures=$((failures + 1))
    continue
  fi
  check "replay $name" "$tmp/replay.txt"
done <"$scenarios"

if [[ $failures -ne 0 ]]; then
  echo "promtool_check: $failures of $checked checks failed" >&2
  exit 1
fi
echo "promtool_check: $checked expositions pass promtool check metrics"
