#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_token_api_headers.sh CXX SOURCE_DIR
#
# The token API's headers (src/tokenapi/*.h) do not bring in the service around them: none of
# them reaches vmetrics/frontend.h (the whole service), vmetrics/http_server.h, exposition.h or
# registry.h. The two that declare HTTP routes (openai_routes.h, engine_control.h) are checked
# like the others: the route types are in vmetrics/http_route.h, which needs none of these.
# Each header's includes are listed by the compiler (-MM); prints every header that reaches one
# and exits 1 if there is one.
set -uo pipefail
cxx=$1
source_dir=$2
failures=0
checked=0
for header_path in "$source_dir"/src/tokenapi/*.h; do
  header=$(basename "$header_path")
  checked=$((checked + 1))
  if ! deps=$(printf '#include "%s"\n' "$header" |
    "$cxx" -std=c++20 -MM -x c++ -I"$source_dir/include" -I"$source_dir/src/tokenapi" - 2>&1); then
    echo "FAIL: $header does not preprocess:"
    echo "$deps" | head -5
    failures=$((failures + 1))
    continue
  fi
  for heavy in frontend.h http_server.h exposition.h registry.h; do
    if grep -q "include/vmetrics/$heavy" <<<"$deps"; then
      echo "FAIL: src/tokenapi/$header reaches vmetrics/$heavy"
      failures=$((failures + 1))
    fi
  done
done
echo "token_api_headers: $checked headers, $failures failures"
[[ $checked -gt 0 && $failures -eq 0 ]]
