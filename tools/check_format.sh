#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_format.sh [FILE...]: fails when a tracked .h/.cc file (or each FILE given) is not as
# clang-format (.clang-format: Google style, 100 columns) would write it. Prints the
# differences clang-format reports and the list of files to reformat (`make format` does it).
# Exit 0 when every file is formatted, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
command -v "$CLANG_FORMAT" >/dev/null || { echo "check_format: $CLANG_FORMAT not found" >&2; exit 2; }

if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.h' '*.cc')
fi
bad=()
for f in "${files[@]}"; do
  if ! "$CLANG_FORMAT" --dry-run -Werror "$f" 2>/dev/null; then
    bad+=("$f")
  fi
done
if ((${#bad[@]})); then
  printf 'check_format: not formatted: %s\n' "${bad[@]}"
  echo "check_format: ${#bad[@]} of ${#files[@]} file(s) differ from clang-format;" \
       "see them with: $CLANG_FORMAT --dry-run FILE" >&2
  exit 1
fi
echo "check_format: ${#files[@]} file(s) formatted"
