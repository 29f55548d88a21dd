// vmetrics describe-connectors: prints the connector catalog's built-in rows as
// `_metrics_descriptor` JSON (one document: a list of descriptors). It is the documentation of
// what vmetrics records for each KV connector, generated from the very rows that decode and
// record: a third-party connector that sends such a descriptor is recorded the same way.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "vmetrics/connector_catalog.h"
#include "vmetrics/metrics_descriptor.h"

namespace vmetrics::cli {
namespace {

struct DescribeArgs {
  bool compact = false;
  std::string connector;  // "" = every built-in row
};

int RunDescribeConnectors(const DescribeArgs& args) {
  const ConnectorCatalog& catalog = ConnectorCatalog::BuiltIn();
  ConnectorCatalog::RowList rows;
  if (args.connector.empty()) {
    rows = catalog.rows();
  } else {
    // By class name, so subclasses (NixlPullConnector) find their row.
    for (const auto& row : catalog.rows()) {
      if (catalog.FindByClassName(args.connector) == row.get()) rows.push_back(row);
    }
    if (rows.empty()) {
      std::fprintf(stderr, "vmetrics describe-connectors: no built-in row answers to %s\n",
                   args.connector.c_str());
      return 2;
    }
  }
  const std::string json = DescribeRowsAsDescriptorJson(rows, args.compact ? -1 : 2);
  std::fwrite(json.data(), 1, json.size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}

}  // namespace

void AddDescribeConnectorsCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<DescribeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "describe-connectors",
      "Print the built-in KV-connector rows as _metrics_descriptor JSON (what is recorded)");
  cmd->footer(
      "Examples:\n"
      "  vmetrics describe-connectors\n"
      "  vmetrics describe-connectors --connector NixlPullConnector --compact");
  cmd->add_flag("--compact", args->compact, "One line instead of indented JSON");
  cmd->add_option("--connector", args->connector,
                  "Only the row that answers to this Python class name");
  cmd->callback([args, exit_code] { *exit_code = RunDescribeConnectors(*args); });
}

}  // namespace vmetrics::cli
