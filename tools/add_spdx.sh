#!/usr/bin/env bash
# add_spdx.sh [DIR]: adds `// SPDX-License-Identifier: Apache-2.0` (or the `#` form) to every
# file git tracks in DIR (default: this repository) that should carry it and does not, as its
# first line, or as its second after a `#!` line. tools/spdx_files.sh says which files and in
# which syntax. Idempotent: a file that has the line is left alone, so a second run changes
# nothing. File modes are kept. Prints each file it changes; exit 0, or 1 on an error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/spdx_files.sh
source "$here/spdx_files.sh"
cd "${1:-$here/..}"

changed=0
while IFS= read -r -d '' file; do
  [[ -f $file && ! -L $file ]] || continue
  comment=$(spdx_comment "$file") || continue
  spdx_has_line "$file" && continue
  line="$comment SPDX-License-Identifier: $SPDX_LICENSE"
  tmp=$(mktemp)
  if [[ $(head -c 2 "$file") == "#!" ]]; then
    { sed -n 1p "$file"; echo "$line"; sed 1d "$file"; } >"$tmp"
  else
    { echo "$line"; cat "$file"; } >"$tmp"
  fi
  # Write through the existing file so its mode (executable scripts) is kept.
  cat "$tmp" >"$file"
  rm -f "$tmp"
  echo "add_spdx: $file"
  changed=$((changed + 1))
done < <(git ls-files -z)
echo "add_spdx: $changed file(s) changed"
