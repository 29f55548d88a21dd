// SPDX-License-Identifier: Apache-2.0
// vmetrics describe-connectors: the flags of frontend::DescribeConnectors
// (offline/describe_connectors.h); the built-in connector rows as `_metrics_descriptor` JSON
// on stdout.
#include "vmetrics/offline/describe_connectors.h"

#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"

namespace vmetrics::cli {
namespace {

int RunDescribeConnectors(const frontend::DescribeConnectorsOptions& options) {
  Result<std::string> json = frontend::DescribeConnectors(options);
  if (!json.ok()) {
    std::fprintf(stderr, "vmetrics describe-connectors: %s\n", json.status().message().c_str());
    return 2;
  }
  std::fwrite(json->data(), 1, json->size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}

}  // namespace

void AddDescribeConnectorsCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<frontend::DescribeConnectorsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "describe-connectors",
      "Print the built-in KV-connector rows as _metrics_descriptor JSON (what is recorded)");
  cmd->footer(
      "Examples:\n"
      "  vmetrics describe-connectors\n"
      "  vmetrics describe-connectors --connector NixlPullConnector --compact");
  cmd->add_flag("--compact", options->compact, "One line instead of indented JSON");
  cmd->add_option("--connector", options->connector,
                  "Only the row that answers to this Python class name");
  cmd->callback([options, exit_code] { *exit_code = RunDescribeConnectors(*options); });
}

}  // namespace vmetrics::cli
