// SPDX-License-Identifier: Apache-2.0
// File: metrics_reference.h
//
// MetricsReference: what `vmetrics metrics-reference` prints, the Markdown reference of every
// family vmetrics can register. docs/metrics.md is this output, and the ctest
// metrics_reference_current fails when the two differ, so the reference cannot drift from the
// code.
//
// Thread safety: free function without shared state.
//
// Example:
//   EXPECT_NE(MetricsReference().find("vllm:num_requests_running"), std::string::npos);
#ifndef VMETRICS_FRONTEND_METRICS_REFERENCE_H_
#define VMETRICS_FRONTEND_METRICS_REFERENCE_H_

#include <string>

namespace vmetrics::frontend {

std::string MetricsReference();

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_METRICS_REFERENCE_H_
