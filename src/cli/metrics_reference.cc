// SPDX-License-Identifier: Apache-2.0
// vmetrics metrics-reference: frontend::MetricsReference (offline/metrics_reference.h), the
// Markdown reference of every family, on stdout. docs/metrics.md is this output.
#include "vmetrics/offline/metrics_reference.h"

#include <cstdio>
#include <string>

#include "commands.h"

namespace vmetrics::cli {

void AddMetricsReferenceCommand(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "metrics-reference",
      "Print the Markdown reference of every metric family vmetrics can register");
  cmd->footer(
      "The output is docs/metrics.md; regenerate it after changing a family table or the\n"
      "connector catalog.\n"
      "\n"
      "Examples:\n"
      "  vmetrics metrics-reference > docs/metrics.md\n"
      "  vmetrics metrics-reference | diff docs/metrics.md -");
  cmd->callback([exit_code] {
    const std::string text = frontend::MetricsReference();
    *exit_code = std::fwrite(text.data(), 1, text.size(), stdout) == text.size() ? 0 : 1;
  });
}

}  // namespace vmetrics::cli
