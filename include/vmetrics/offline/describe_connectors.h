// SPDX-License-Identifier: Apache-2.0
// File: describe_connectors.h
//
// DescribeConnectors: what `vmetrics describe-connectors` prints. The connector catalog's
// built-in rows as `_metrics_descriptor` JSON (one document: a list of descriptors): the
// documentation of what vmetrics records for each KV connector, generated from the very rows
// that decode and record, and what a third-party connector would send to be recorded the
// same way.
//
// Thread safety: free function; the built-in catalog is immutable.
//
// Example:
//   Result<std::string> json = DescribeConnectors({.connector = "NixlPullConnector"});
//   ASSERT_TRUE(json.ok());
#ifndef VMETRICS_FRONTEND_DESCRIBE_CONNECTORS_H_
#define VMETRICS_FRONTEND_DESCRIBE_CONNECTORS_H_

#include <string>

#include "vmetrics/status.h"

namespace vmetrics::frontend {

struct DescribeConnectorsOptions {
  // Only the row that answers to this Python class name ("" = every built-in row). By class
  // name, so subclasses (NixlPullConnector) find their row.
  std::string connector;
  // One line instead of JSON indented by two.
  bool compact = false;
};

// The JSON, without a trailing newline. kInvalidArgument when no built-in row answers to
// options.connector.
Result<std::string> DescribeConnectors(const DescribeConnectorsOptions& options);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_DESCRIBE_CONNECTORS_H_
