#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates every generated test file (fixtures, goldens, tables) and fails if that changed
# anything under tests/ or fuzz/corpus/ (the seeds), so CI catches a generator change committed
# without its outputs.
#
# Runs, in this order and only if present, with Debian's /usr/bin/python3 (it sees
# python3-msgpack, python3-numpy and python3-prometheus-client; a pyenv python3 on PATH
# does not):
#   tools/gen_wire_newest.py (the newest wire generation's captures; goldens kept)
#   tools/gen_fixtures.py  tools/gen_float_table.py  tools/gen_exposition_goldens.py
#   tools/gen_http_goldens.py  tools/gen_goldens.py  tools/gen_descriptor_fixtures.py
#   tools/gen_request_goldens.py  tools/gen_numpy_goldens.py
#   tools/gen_hostile_captures.py
#   tools/gen_fuzz_seeds.py (it cuts the fuzz seeds out of the fixtures)
#   tools/gen_utility_call_goldens.py  tools/gen_spec_decode_goldens.py
# Usage: tools/regen.sh          (also: make regen)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=/usr/bin/python3
# gen_wire_newest.py first: later generators may read its captures.
# gen_goldens.py rewrites scenarios.tsv whole; the two after it append their own lines.
GENERATORS=(gen_wire_newest.py gen_fixtures.py gen_float_table.py gen_exposition_goldens.py
            gen_http_goldens.py gen_goldens.py gen_descriptor_fixtures.py gen_request_goldens.py
            gen_numpy_goldens.py gen_hostile_captures.py gen_fuzz_seeds.py
            gen_utility_call_goldens.py gen_spec_decode_goldens.py)

# Files under tests/ that git does not track yet, before the generators run (hand-written files
# not committed yet are not "stale"; a file a generator creates is).
untracked_before=$(git ls-files --others --exclude-standard -- tests/ fuzz/corpus/ | sort)

ran=0
for generator in "${GENERATORS[@]}"; do
  if [[ -f tools/$generator ]]; then
    echo "regen: $PYTHON tools/$generator"
    "$PYTHON" "tools/$generator"
    ran=$((ran + 1))
  fi
done
if [[ $ran -eq 0 ]]; then
  echo "regen: no generator found in tools/" >&2
  exit 1
fi

# Stale = a tracked file under tests/ changed, or a generator created a file git does not know.
stale=0
if ! git diff --exit-code --stat -- tests/ fuzz/corpus/; then
  stale=1
fi
untracked_after=$(git ls-files --others --exclude-standard -- tests/ fuzz/corpus/ | sort)
created=$(comm -13 <(echo "$untracked_before") <(echo "$untracked_after") | sed '/^$/d')
if [[ -n $created ]]; then
  echo "regen: new files under tests/ that are not committed:"
  echo "$created" | sed 's/^/  /'
  stale=1
fi
if [[ $stale -ne 0 ]]; then
  echo "regen: FAILED: the generated files under tests/ are stale. The generators above" >&2
  echo "regen: rewrote them; review 'git diff -- tests/' and commit the result together" >&2
  echo "regen: with the generator change." >&2
  exit 1
fi
echo "regen: generated files under tests/ are up to date"
