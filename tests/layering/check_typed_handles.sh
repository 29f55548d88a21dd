#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_typed_handles.sh CXX SOURCE_DIR
#
# Compiles small translation units against the declared families' typed handles
# (src/metrics/family_handles.h): the control records the right way and must compile; each other
# case makes one mistake and must fail to compile with a diagnostic that names it. Prints every
# case that does not behave and exits 1 if there is one.
set -uo pipefail
cxx=$1
source_dir=$2
failures=0

prelude='#include "family_handles.h"
using namespace vmetrics;
using namespace vmetrics::internal;
void Record(const EngineHandles& h, Child* child) {
  (void)child;'

# check NAME ok|fail REGEX BODY
check() {
  local name=$1 expect=$2 regex=$3 body=$4 out status
  out=$(printf '%s\n%s\n}\n' "$prelude" "$body" |
    "$cxx" -std=c++20 -fsyntax-only -x c++ -I"$source_dir/include" -I"$source_dir/src/metrics" - 2>&1)
  status=$?
  if [[ $expect == ok ]]; then
    if [[ $status -ne 0 ]]; then
      echo "FAIL: $name should compile:"
      echo "$out" | head -10
      failures=$((failures + 1))
    fi
  elif [[ $status -eq 0 ]]; then
    echo "FAIL: $name compiles, but must not"
    failures=$((failures + 1))
  elif ! grep -qiE "$regex" <<<"$out"; then
    echo "FAIL: $name fails to compile, but not for its mistake (expected /$regex/):"
    echo "$out" | grep -i error | head -5
    failures=$((failures + 1))
  fi
}

check control ok '' '
  h.Get<FamilyId::kNumRequestsRunning>()->Set(1);
  h.Get<FamilyId::kPromptTokensBySource, "local_cache_hit">()->Add(1);
  h.Get<FamilyId::kRequestSuccess>(2)->Add(1);
  h.Get<FamilyId::kE2eRequestLatencySeconds>()->Observe(0.5);
  h.Position<FamilyId::kSpecDecodeNumAcceptedTokensPerPos>(0)->Add(1);
  if (Counter* c = child->As<Counter>()) c->Add(1);'
check misspelt_family fail 'kNumRequestRunning' '
  h.Get<FamilyId::kNumRequestRunning>()->Set(1);'
check value_the_family_does_not_create fail 'no such eager value|not a constant|EagerIndex' '
  h.Get<FamilyId::kPromptTokensBySource, "local_cache">()->Add(1);'
check observe_on_a_gauge fail "member named .?Observe" '
  h.Get<FamilyId::kNumRequestsRunning>()->Observe(1);'
check set_on_a_counter fail "member named .?Set" '
  h.Get<FamilyId::kPromptTokens>()->Set(1);'
check add_on_a_histogram fail "member named .?Add" '
  h.Get<FamilyId::kTimeToFirstTokenSeconds>()->Add(1);'
check recording_into_an_untyped_child fail "member named .?Add" '
  child->Add(1);'
check engine_handle_of_a_family_without_engine_children fail 'no eager per-engine children' '
  h.Get<FamilyId::kLoraRequestsInfo>()->Set(1);'
check register_family_typed_as_its_row ok '' '
  Registry registry;
  const SummaryFamily sizes = RegisterFamily<FamilyId::kHttpRequestSizeBytes>(&registry);
  const GaugeFamily state = RegisterFamily<FamilyId::kEngineState>(&registry);
  (void)sizes;
  (void)state;'
check register_family_typed_otherwise fail 'conversion|convert' '
  Registry registry;
  const CounterFamily sizes = RegisterFamily<FamilyId::kHttpRequestSizeBytes>(&registry);'
check register_family_of_a_histogram_sized_by_the_model fail 'needs max_model_len' '
  Registry registry;
  (void)RegisterFamily<FamilyId::kRequestPromptTokens>(&registry);'

echo "typed_handles_compile_checks: $failures failures"
[[ $failures -eq 0 ]]
