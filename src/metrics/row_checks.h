// SPDX-License-Identifier: Apache-2.0
// File: row_checks.h
//
// The checks behind ValidateRow (connector_catalog.h), with the opening of their messages left
// to the caller: ValidateRow names the connector ("connector NixlConnector, metric 'x': ..."),
// the `_metrics_descriptor` parser names the field instead ("metrics[0]: metric 'x': ...").
#ifndef VMETRICS_METRICS_ROW_CHECKS_H_
#define VMETRICS_METRICS_ROW_CHECKS_H_

#include <string_view>

#include "vmetrics/connector_catalog.h"
#include "vmetrics/status.h"

namespace vmetrics::internal {

// ValidateRow's checks of the row's metrics (each metric, shared family names, colliding sample
// names); every message starts with `opening`. The row's id and record labels are not checked.
Status ValidateRowMetrics(const ConnectorRow& row, std::string_view opening);

}  // namespace vmetrics::internal

#endif  // VMETRICS_METRICS_ROW_CHECKS_H_
