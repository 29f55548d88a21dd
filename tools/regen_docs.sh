#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Rewrites what the built `vmetrics` generates into the tree from its own tables:
#   docs/metrics.md                     vmetrics metrics-reference
#   docs/wire_format.md (its tables)    vmetrics wire-reference --doc docs/wire_format.md
#   tests/fixtures/wire_layouts.json    vmetrics wire-reference --json (read by tools/*.py)
# The ctests metrics_reference_current and wire_reference_current fail until this is run after
# a change to a family table, the connector catalog or a wire generation's table.
# Usage: tools/regen_docs.sh [VMETRICS_BINARY]   (default: build/src/cli/vmetrics)
set -euo pipefail
cd "$(dirname "$0")/.."
vmetrics=${1:-build/src/cli/vmetrics}
if [[ ! -x $vmetrics ]]; then
  echo "regen_docs: $vmetrics is not an executable; build the vmetrics_cli target first" >&2
  exit 1
fi

# Each output goes through a temporary file, so that a failing command leaves the file as it was.
write() {
  local target=$1
  shift
  local tmp
  tmp=$(mktemp)
  if ! "$@" >"$tmp"; then
    rm -f "$tmp"
    echo "regen_docs: $* failed; $target left as it was" >&2
    exit 1
  fi
  if cmp -s "$tmp" "$target"; then
    rm -f "$tmp"
    echo "regen_docs: $target up to date"
  else
    cat "$tmp" >"$target"
    rm -f "$tmp"
    echo "regen_docs: $target rewritten"
  fi
}
write docs/metrics.md "$vmetrics" metrics-reference
write docs/wire_format.md "$vmetrics" wire-reference --doc docs/wire_format.md
write tests/fixtures/wire_layouts.json "$vmetrics" wire-reference --json
