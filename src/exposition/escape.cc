// SPDX-License-Identifier: Apache-2.0
#include "escape.h"

namespace vmetrics::internal {
namespace {

// Appends `in` with `\`, newline and (if escape_quote) `"` escaped. Unescaped runs are
// appended whole, so the common case (nothing to escape) is one append.
void AppendEscaped(std::string_view in, bool escape_quote, std::string* out) {
  size_t run_start = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    const char* replacement;
    if (c == '\\') {
      replacement = "\\\\";
    } else if (c == '\n') {
      replacement = "\\n";
    } else if (c == '"' && escape_quote) {
      replacement = "\\\"";
    } else {
      continue;
    }
    out->append(in.data() + run_start, i - run_start);
    out->append(replacement, 2);
    run_start = i + 1;
  }
  out->append(in.data() + run_start, in.size() - run_start);
}

}  // namespace

void AppendEscapedHelpText(std::string_view help, std::string* out) {
  // The text format leaves `"` alone in HELP (exposition.py escapes only `\` and newline).
  AppendEscaped(help, /*escape_quote=*/false, out);
}

void AppendEscapedHelpOpenMetrics(std::string_view help, std::string* out) {
  AppendEscaped(help, /*escape_quote=*/true, out);
}

void AppendEscapedLabelValue(std::string_view value, std::string* out) {
  AppendEscaped(value, /*escape_quote=*/true, out);
}

}  // namespace vmetrics::internal
