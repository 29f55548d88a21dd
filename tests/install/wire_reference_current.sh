#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# wire_reference_current.sh VMETRICS_BINARY SOURCE_DIR
#
# Fails when the generated tables of docs/wire_format.md (between their BEGIN/END GENERATED
# markers) or tests/fixtures/wire_layouts.json (what the Python generators read) are not what
# `vmetrics wire-reference` prints, i.e. when a wire generation's table changed and the
# reference was not regenerated (tools/regen_docs.sh).
set -uo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 VMETRICS_BINARY SOURCE_DIR" >&2
  exit 2
fi
vmetrics=$1
doc=$2/docs/wire_format.md
json=$2/tests/fixtures/wire_layouts.json
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

status=0
if ! "$vmetrics" wire-reference --doc "$doc" >"$tmp"; then
  echo "FAIL: $vmetrics wire-reference --doc $doc exited non-zero" >&2
  exit 1
fi
if ! diff -u --label docs/wire_format.md --label "vmetrics wire-reference --doc" "$doc" "$tmp"; then
  echo "FAIL: the generated tables of docs/wire_format.md are stale" >&2
  status=1
fi
if ! "$vmetrics" wire-reference --json >"$tmp"; then
  echo "FAIL: $vmetrics wire-reference --json exited non-zero" >&2
  exit 1
fi
if ! diff -u --label tests/fixtures/wire_layouts.json --label "vmetrics wire-reference --json" \
    "$json" "$tmp"; then
  echo "FAIL: tests/fixtures/wire_layouts.json is stale" >&2
  status=1
fi
if [[ $status -ne 0 ]]; then
  echo "Regenerate and commit the result: tools/regen_docs.sh build/src/cli/vmetrics" >&2
  exit 1
fi
echo "wire_reference_current: docs/wire_format.md and tests/fixtures/wire_layouts.json match"
