// SPDX-License-Identifier: Apache-2.0
// File: exposition_invariant.h
//
// The invariant every fuzz target that records into a Registry checks after each input: the
// registry renders, in text 0.0.4 and in OpenMetrics (with `_created` series, as serve does by
// default), expositions the grammar checker accepts (tests/support/exposition_grammar.h: line
// grammar, UTF-8, HELP/TYPE placement, grouping, histogram and counter rules, # EOF). Whatever the
// wire sent, /metrics must stay parsable. Shared by the libFuzzer entries and their corpus replays
// in ctest.
#ifndef VMETRICS_FUZZ_EXPOSITION_INVARIANT_H_
#define VMETRICS_FUZZ_EXPOSITION_INVARIANT_H_

#include <optional>
#include <string>

#include "tests/support/exposition_grammar.h"
#include "vmetrics/exposition.h"
#include "vmetrics/registry.h"

namespace vmetrics::fuzz {

// A negative histogram _sum is what vLLM writes for timestamps that run backwards
// (exposition_grammar.h, CheckOptions); everything else the grammar refuses is a finding.
inline constexpr test_support::CheckOptions kFuzzCheckOptions{.allow_negative_histogram_sum = true};

// "" when both renderings of `registry` are valid, else the format and the first violation.
inline std::string CheckExpositionGrammar(const Registry& registry) {
  using test_support::ExpositionFormat;
  for (const ExpositionFormat format :
       {ExpositionFormat::kText004, ExpositionFormat::kOpenMetrics}) {
    std::string body;
    if (format == ExpositionFormat::kText004) {
      WriteText(registry, ExpositionOptions{}, &body);
    } else {
      WriteOpenMetrics(registry, ExpositionOptions{}, &body);
    }
    if (const std::optional<test_support::GrammarViolation> v =
            test_support::CheckExposition(body, format, kFuzzCheckOptions)) {
      return "the " + std::string(test_support::FormatName(format)) +
             " exposition breaks the grammar: " + v->ToString();
    }
  }
  return "";
}

}  // namespace vmetrics::fuzz

#endif  // VMETRICS_FUZZ_EXPOSITION_INVARIANT_H_
