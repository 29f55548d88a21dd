// SPDX-License-Identifier: Apache-2.0
// DescribeConnectors: the built-in connector rows as descriptors; see describe_connectors.h.
#include "vmetrics/offline/describe_connectors.h"

#include "vmetrics/connector_catalog.h"
#include "vmetrics/metrics_descriptor.h"

namespace vmetrics::frontend {

Result<std::string> DescribeConnectors(const DescribeConnectorsOptions& options) {
  const ConnectorCatalog& catalog = ConnectorCatalog::BuiltIn();
  ConnectorCatalog::RowList rows;
  if (options.connector.empty()) {
    rows = catalog.rows();
  } else {
    for (const auto& row : catalog.rows()) {
      if (catalog.FindByClassName(options.connector) == row.get()) rows.push_back(row);
    }
    if (rows.empty()) {
      return Status::InvalidArgument("no built-in row answers to " + options.connector);
    }
  }
  return DescribeRowsAsDescriptorJson(rows, options.compact ? -1 : 2);
}

}  // namespace vmetrics::frontend
