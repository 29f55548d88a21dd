#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# hostile_captures.sh PROMTOOL VMETRICS_BINARY SOURCE_DIR EXPOSITION_CHECK
#
# Nothing from the wire can poison an exposition or crash a subcommand. For every capture of
# tests/fixtures/hostile_wire/ (tools/gen_hostile_captures.py: label strings that are not
# UTF-8, control characters, 10 kB names, negative/NaN increments, integers above 2^63-1,
# fields of the wrong type), and for 300 operations named by 100 kB strings (generated here:
# 30 MB):
#   - `vmetrics replay` exits 0 or 1 (never a crash) in text and OpenMetrics;
#   - the text exposition passes `promtool check metrics` (Prometheus' own parser; the lint
#     lines vLLM's names draw are accepted, as in promtool_check.sh);
#   - both expositions decode as strict UTF-8 and pass prometheus_client's parsers, the
#     OpenMetrics one strict (text_string_to_metric_families, consumed whole), and the C++
#     exposition grammar checker (the exposition_check command of tests/support/);
#   - the exposition holds the sample lines scenarios.tsv lists (the skips are counted) and is
#     smaller than 1 MB;
#   - `vmetrics decode` exits 0 or 1, every stdout line is a JSON document;
#   - stderr of both is valid UTF-8 and has no control character but the newline.
set -uo pipefail

if [[ $# -ne 4 ]]; then
  echo "usage: $0 PROMTOOL VMETRICS_BINARY SOURCE_DIR EXPOSITION_CHECK" >&2
  exit 2
fi
promtool=$1
vmetrics=$2
source_dir=$3
exposition_check=$4
dir="$source_dir/tests/fixtures/hostile_wire"
python=/usr/bin/python3

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# Prints nothing when FILE (an exposition, format FORMAT) parses; else why not.
parse_with_prometheus_client() {
  "$python" - "$1" "$2" <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families as text_parser
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parser
path, fmt = sys.argv[1], sys.argv[2]
try:
    text = open(path, "rb").read().decode("utf-8")  # strict: invalid UTF-8 raises
    list((om_parser if fmt == "openmetrics" else text_parser)(text))
except Exception as e:  # noqa: BLE001 (any failure is the answer)
    print("%s: %s" % (type(e).__name__, str(e)[:300]))
EOF
}

# Prints nothing when FILE is valid UTF-8 without control characters but newlines.
check_log() {
  "$python" - "$1" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read()
try:
    text = data.decode("utf-8")
except UnicodeDecodeError as e:
    print("not UTF-8: %s" % e)
    sys.exit()
bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
if bad:
    print("control characters %r" % sorted(set(bad)))
EOF
}

promtool_ok() {
  local file=$1 rc
  "$promtool" check metrics <"$file" >"$tmp/promtool.out" 2>"$tmp/promtool.err"
  rc=$?
  [[ $rc -eq 0 ]] && return 0
  [[ $rc -eq 3 ]] && ! grep -v -E \
      -e "^[^ ]+ metric names should not contain ':'\$" \
      -e '^vllm:iteration_tokens_total non-counter metrics should not have "_total" suffix$' \
      "$tmp/promtool.err" >/dev/null && return 0
  head -c 600 "$tmp/promtool.err" >&2
  return 1
}

# check NAME CAPTURE CONFIG EXPECTED...: replays and decodes CAPTURE.
check() {
  local name=$1 capture=$2 config=$3 rc why
  shift 3
  local kv=()
  [[ $config != "-" ]] && kv=(--kv-transfer-config "$config")
  for fmt in text openmetrics; do
    local out="$tmp/$name.$fmt"
    env -u PROMETHEUS_DISABLE_CREATED_SERIES \
      "$vmetrics" replay "$capture" "${kv[@]}" --format "$fmt" >"$out" 2>"$tmp/$name.err"
    rc=$?
    if [[ $rc -ne 0 && $rc -ne 1 ]]; then
      fail "$name: vmetrics replay --format $fmt exited $rc"
      continue
    fi
    local size
    size=$(wc -c <"$out")
    echo "$name: $fmt exposition $size bytes"
    [[ $size -lt 1048576 ]] || fail "$name: $fmt exposition of $size bytes"
    why=$(parse_with_prometheus_client "$out" "$fmt")
    [[ -z $why ]] || fail "$name: prometheus_client ($fmt): $why"
    "$exposition_check" "$fmt" "$out" 2>"$tmp/check.err" ||
      fail "$name: exposition_check ($fmt): $(head -c 600 "$tmp/check.err")"
    why=$(check_log "$tmp/$name.err")
    [[ -z $why ]] || fail "$name: replay stderr: $why"
    if [[ $fmt == text ]]; then
      promtool_ok "$out" || fail "$name: promtool check metrics"
      for line in "$@"; do
        grep -qxF -- "$line" "$out" || fail "$name: exposition lacks '$line'"
      done
    fi
  done
  "$vmetrics" decode "$capture" "${kv[@]}" >"$tmp/$name.json" 2>"$tmp/$name.decode.err"
  rc=$?
  if [[ $rc -ne 0 && $rc -ne 1 ]]; then
    fail "$name: vmetrics decode exited $rc"
  else
    why=$("$python" -c '
import json, sys
for n, line in enumerate(open(sys.argv[1], "rb").read().decode("utf-8").splitlines(), 1):
    json.loads(line)
' "$tmp/$name.json" 2>&1 | tail -1)
    [[ -z $why ]] || fail "$name: decode output: $why"
    why=$(check_log "$tmp/$name.decode.err")
    [[ -z $why ]] || fail "$name: decode stderr: $why"
  fi
}

if [[ ! -r $dir/scenarios.tsv ]]; then
  echo "FAIL: cannot read $dir/scenarios.tsv (run tools/regen.sh)" >&2
  exit 1
fi
checked=0
while IFS=$'\t' read -r -a cols; do
  [[ ${#cols[@]} -eq 0 || ${cols[0]} == \#* ]] && continue
  check "${cols[0]}" "$dir/${cols[0]}.msgpack" "${cols[@]:1}"
  checked=$((checked + 1))
done <"$dir/scenarios.tsv"

"$python" "$source_dir/tools/gen_hostile_captures.py" --big "$tmp" ||
  fail "gen_hostile_captures.py --big"
check big_names "$tmp/big_names.msgpack" '{"kv_connector":"MooncakeStoreConnector"}' \
  'vmetrics_wire_values_skipped_total{reason="label_value_too_long"} 1500.0'
checked=$((checked + 1))

if [[ $failures -ne 0 ]]; then
  echo "hostile_captures: $failures failures over $checked captures" >&2
  exit 1
fi
echo "hostile_captures: $checked captures replay, decode and parse"
