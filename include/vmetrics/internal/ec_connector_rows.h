// SPDX-License-Identifier: Apache-2.0
// File: ec_connector_rows.h
//
// The EC (encoder cache) connectors' families, one row per connector: what the connector
// class's build_prom_metrics registers in vLLM's PrometheusStatLogger when --ec-transfer-config
// names it (the EC connector metrics framework, vllm-project/vllm #54960: ECConnectorProm in
// vllm/distributed/ec_transfer/ec_connector/metrics.py at 54ce10e5), fed from
// SchedulerStats.ec_connector_stats. A row's families are registered after the KV connectors'
// and before the families that follow them (MFU onwards), labelled model_name, engine, with
// one child per engine from the start; a counter adds the payload's number, a histogram
// observes each sample of its list.
//
// Adding an EC connector is adding its row here. Families, HELP and buckets are upstream's,
// byte for byte; `source` cites where they were read.
//
// Internal (include/vmetrics/internal/: shared by the libraries of this tree, not a stable API):
// the metrics library registers and records from it, the metrics reference lists it.
#ifndef VMETRICS_INTERNAL_EC_CONNECTOR_ROWS_H_
#define VMETRICS_INTERNAL_EC_CONNECTOR_ROWS_H_

#include <span>
#include <string_view>

#include "vmetrics/metric_type.h"

namespace vmetrics::internal {

struct EcMetric {
  std::string_view name;  // as registered: a counter's without `_total`; the payload's key
  MetricType type;        // kCounter or kHistogram
  std::string_view help;
  std::span<const double> buckets = {};  // histograms
};

struct EcConnectorRow {
  std::string_view class_name;        // --ec-transfer-config `ec_connector`
  std::string_view source;            // the upstream file the families were read from
  std::span<const EcMetric> metrics;  // registration order
};

// ECCPUConnector (GPU <-> CPU mmap tier): `_TRANSFER_SIZE_BUCKETS`, sized for encoder-cache
// batches (one embedding is ~1-20 MB).
inline constexpr double kEcCpuTransferSizeBuckets[] = {0.5e6, 1e6,  2e6,   5e6,  10e6,
                                                       20e6,  50e6, 100e6, 250e6};
// `_COUNTER_METRICS` then `_HISTOGRAM_METRICS`, in their dict order.
inline constexpr EcMetric kEcCpuMetrics[] = {
    {"vllm:ec_cpu_save_bytes", MetricType::kCounter,
     "Total bytes copied from GPU to the CPU mmap region (encoder cache save)."},
    {"vllm:ec_cpu_save_time_seconds", MetricType::kCounter,
     "Total time spent copying GPU to CPU for encoder cache saves, in seconds."},
    {"vllm:ec_cpu_load_bytes", MetricType::kCounter,
     "Total bytes copied from the CPU mmap region to GPU (encoder cache load)."},
    {"vllm:ec_cpu_load_time_seconds", MetricType::kCounter,
     "Total time spent copying CPU to GPU for encoder cache loads, in seconds."},
    {"vllm:ec_cpu_save_size_bytes", MetricType::kHistogram,
     "Histogram of per-batch GPU->CPU encoder cache save size, in bytes.",
     kEcCpuTransferSizeBuckets},
    {"vllm:ec_cpu_load_size_bytes", MetricType::kHistogram,
     "Histogram of per-batch CPU->GPU encoder cache load size, in bytes.",
     kEcCpuTransferSizeBuckets},
};

inline constexpr EcConnectorRow kEcConnectorRows[] = {
    {"ECCPUConnector",
     "`vllm/distributed/ec_transfer/ec_connector/cpu/metrics.py` (`ECCPUConnectorProm`) at "
     "vllm-project/vllm d32cfd41, a commit of PR #57333 (not seen on main: the families may "
     "still change before it merges)",
     kEcCpuMetrics},
};

// The row of EC connector class `class_name`, or nullptr (a connector with no row registers
// nothing).
constexpr const EcConnectorRow* FindEcConnectorRow(std::string_view class_name) {
  for (const EcConnectorRow& row : kEcConnectorRows) {
    if (row.class_name == class_name) return &row;
  }
  return nullptr;
}

}  // namespace vmetrics::internal

#endif  // VMETRICS_INTERNAL_EC_CONNECTOR_ROWS_H_
