# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests/repo scripts (`source scratch.sh NAME`): a scratch folder $tmp, removed
# on exit, $repo inside it for the repository under test, and fail MESSAGE.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
repo=$tmp/repo
