#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_spdx.sh [DIR]: fails when a file git tracks in DIR (default: this repository) should
# carry the SPDX licence line (tools/spdx_files.sh) and does not have it as its first line, or
# as its second after a `#!` line. Lists every such file; tools/add_spdx.sh adds the lines.
# Exit 0 when every file has it, 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/spdx_files.sh
source "$here/spdx_files.sh"
cd "${1:-$here/..}"

missing=0
while IFS= read -r -d '' file; do
  [[ -f $file && ! -L $file ]] || continue
  spdx_comment "$file" >/dev/null || continue
  if ! spdx_has_line "$file"; then
    echo "check_spdx: $file: no SPDX-License-Identifier line"
    missing=$((missing + 1))
  fi
done < <(git ls-files -z)
if ((missing)); then
  echo "check_spdx: $missing file(s) without an SPDX line; run tools/add_spdx.sh" >&2
  exit 1
fi
echo "check_spdx: every source, build and script file carries its SPDX line"
