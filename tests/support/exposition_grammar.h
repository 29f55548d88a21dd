// SPDX-License-Identifier: Apache-2.0
// File: exposition_grammar.h
//
// A checker for whole metric expositions, written from the two grammars vmetrics renders:
//
//   * Prometheus text format 0.0.4: "Exposition formats", "Text format details"
//     (content/docs/instrumenting/exposition_formats.md at prometheus/docs a3a0fda6): lines
//     ending in LF, tokens separated by blanks/tabs, `# HELP name docstring` (escapes `\\` and
//     `\n` only), `# TYPE name counter|gauge|histogram|summary|untyped` before the name's first
//     sample, at most one of each, sample `name{label="value",...} value [timestamp]` with label
//     values escaped as `\\`, `\"`, `\n`, values as Go's ParseFloat reads them (NaN, +Inf,
//     -Inf), an int64 millisecond timestamp; all lines of a metric in one group; every
//     (name, labels) once; histograms: `x_bucket` with `le`, buckets in increasing `le`, a
//     `+Inf` bucket equal to `x_count`; summaries: `quantile`.
//   * OpenMetrics 1.0: the ABNF and the rules of specification/OpenMetrics.md at
//     OpenObservability/OpenMetrics (the OpenMetrics/specification repository) 9ab4baba:
//     `exposition = metricset HASH SP eof [LF]`, single SP separators, no blank lines, only
//     TYPE/HELP/UNIT/EOF comments, escaped-string (any UTF-8 but LF, `"` and `\` unless
//     escaped), realnumber / [sign]inf(inity) / nan (case-insensitive), realnumber timestamps,
//     exemplars, metadata before samples and once each, families and metrics not interleaved,
//     counter samples `_total`/`_created`, histogram `_bucket`/`_count`/`_sum`/`_created`
//     with `_count` iff `_sum` and `_count` equal to the `+Inf` bucket, UNIT a suffix of the
//     name, info value 1, stateset 0/1, nothing after `# EOF`.
//
// Where the grammar leaves a case to the parser, the checker takes the stricter reading of
// the peers vmetrics is checked against (prometheus_client 0.16's OpenMetrics parser,
// prometheus_client/openmetrics/parser.py; `promtool check metrics`): bucket and count values
// integral, counter-like samples (`_total`, `_sum`, `_count`, `_bucket`) neither NaN nor
// negative in OpenMetrics, a `+Inf` bucket in every histogram metric, label names starting
// `__` refused, bucket values cumulative (non-decreasing, not NaN) in both formats. Not
// accepted although Go's ParseFloat reads them: hexadecimal floats and `_` digit separators
// (no client library writes them). Canonical `le`/`quantile` numbers are not required
// (OpenMetrics: "Parsers MUST NOT reject inputs which are outside of the canonical values").
//
// The checker is test support (ctest, the fuzzers' invariant, tools): it is no part of the
// product libraries and links none of them.
//
// Thread safety: CheckExposition is a pure function; call it from any thread.
//
// Example:
//   std::string text;
//   vmetrics::WriteOpenMetrics(registry, {}, &text);
//   if (auto v = vmetrics::test_support::CheckExposition(
//           text, vmetrics::test_support::ExpositionFormat::kOpenMetrics)) {
//     FAIL() << v->ToString();
//   }
#ifndef VMETRICS_TESTS_SUPPORT_EXPOSITION_GRAMMAR_H_
#define VMETRICS_TESTS_SUPPORT_EXPOSITION_GRAMMAR_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace vmetrics::test_support {

enum class ExpositionFormat {
  kText004,      // text/plain; version=0.0.4
  kOpenMetrics,  // application/openmetrics-text; version=1.0.0
};

// The first rule an exposition breaks.
struct GrammarViolation {
  size_t line = 0;      // 1-based line number; one past the last line for "missing # EOF"
  std::string message;  // what is wrong
  std::string excerpt;  // the line, escaped (non-printable bytes as \xNN), cut to 120 bytes

  // "line N: message: excerpt"
  std::string ToString() const;
};

struct CheckOptions {
  // OpenMetrics: "Semantically, Sum, and buckets values are counters so MUST NOT be NaN or
  // negative" (and prometheus_client's parser refuses a negative `_sum`). vLLM's own frontend
  // writes a negative histogram `_sum` when engine timestamps run backwards — real
  // data-parallel captures do (docs/recording.md) — and vmetrics writes what vLLM writes;
  // Prometheus ingests it. true accepts a negative histogram `_sum`; a NaN one never is.
  bool allow_negative_histogram_sum = false;
};

// Checks `exposition` (the whole body of a scrape) against `format`'s grammar and rules.
// Returns the first violation, or nullopt when the exposition is valid.
std::optional<GrammarViolation> CheckExposition(std::string_view exposition,
                                                ExpositionFormat format, CheckOptions options = {});

// "text" or "openmetrics" (for messages).
std::string_view FormatName(ExpositionFormat format);

}  // namespace vmetrics::test_support

#endif  // VMETRICS_TESTS_SUPPORT_EXPOSITION_GRAMMAR_H_
