#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# metrics_reference_current.sh VMETRICS_BINARY SOURCE_DIR
#
# Fails when docs/metrics.md is not exactly what `vmetrics metrics-reference` prints, i.e. when
# a family table or the connector catalog changed and the reference was not regenerated.
set -uo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 VMETRICS_BINARY SOURCE_DIR" >&2
  exit 2
fi
vmetrics=$1
doc=$2/docs/metrics.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

if ! "$vmetrics" metrics-reference >"$tmp"; then
  echo "FAIL: $vmetrics metrics-reference exited non-zero" >&2
  exit 1
fi
if [[ ! -f $doc ]]; then
  echo "FAIL: $doc does not exist; create it with: vmetrics metrics-reference > docs/metrics.md" >&2
  exit 1
fi
if ! diff -u --label docs/metrics.md --label "vmetrics metrics-reference" "$doc" "$tmp"; then
  echo "FAIL: docs/metrics.md is stale. Regenerate it and commit the result:" >&2
  echo "  build/src/cli/vmetrics metrics-reference > docs/metrics.md" >&2
  exit 1
fi
echo "metrics_reference_current: docs/metrics.md matches vmetrics metrics-reference"
