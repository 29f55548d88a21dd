// SPDX-License-Identifier: Apache-2.0
// File: escape.h
//
// The three string escapes of the exposition formats, as prometheus_client 0.16-0.25 applies
// them with str.replace (exposition.py, openmetrics/exposition.py):
//
//   HELP, text 0.0.4:    `\` -> `\\`, newline -> `\n`            (a `"` stays as it is)
//   HELP, OpenMetrics:   `\` -> `\\`, newline -> `\n`, `"` -> `\"`
//   label values (both): `\` -> `\\`, newline -> `\n`, `"` -> `\"`
//
// Nothing else is escaped: other control bytes and non-ASCII UTF-8 pass through unchanged,
// as they do in Python. Each function appends to `out`.
//
// Thread safety: pure functions.
//
// Example:
//   std::string out;
//   vmetrics::internal::AppendEscapedHelpText("a\\b \"c\"\n", &out);
//   EXPECT_EQ(out, "a\\\\b \"c\"\\n");
#ifndef VMETRICS_SRC_EXPOSITION_ESCAPE_H_
#define VMETRICS_SRC_EXPOSITION_ESCAPE_H_

#include <string>
#include <string_view>

namespace vmetrics::internal {

// HELP text for the Prometheus text format 0.0.4.
void AppendEscapedHelpText(std::string_view help, std::string* out);
// HELP text for OpenMetrics 1.0.0 (also escapes `"`).
void AppendEscapedHelpOpenMetrics(std::string_view help, std::string* out);
// A label value, between its double quotes (same in both formats).
void AppendEscapedLabelValue(std::string_view value, std::string* out);

}  // namespace vmetrics::internal

#endif  // VMETRICS_SRC_EXPOSITION_ESCAPE_H_
