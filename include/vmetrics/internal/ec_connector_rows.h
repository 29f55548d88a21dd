// SPDX-License-Identifier: Apache-2.0
// File: ec_connector_rows.h
//
// The EC (encoder cache) connectors vmetrics has families for, one row per connector: the class
// --ec-transfer-config names (`ec_connector`) and the gate it opens. The families themselves are
// rows of declared_families.inc under that gate, like every other declared family: what the
// connector class's build_prom_metrics registers in vLLM's PrometheusStatLogger when
// --ec-transfer-config names it (the EC connector metrics framework, vllm-project/vllm #54960:
// ECConnectorProm in vllm/distributed/ec_transfer/ec_connector/metrics.py at 54ce10e5), fed
// from SchedulerStats.ec_connector_stats. The recorder registers them after the KV connectors'
// and before the families that follow them (MFU onwards), labelled model_name, engine, with
// one child per engine from the start; a counter adds the payload's number, a histogram
// observes each sample of its list.
//
// Adding an EC connector is adding its Gate (and kGates row), its row here and its families'
// rows in declared_families.inc. Families, HELP and buckets are upstream's, byte for byte;
// `source` cites where they were read.
//
// Internal (include/vmetrics/internal/: shared by the libraries of this tree, not a stable API):
// the metrics library registers and records from it, the metrics reference lists it.
#ifndef VMETRICS_INTERNAL_EC_CONNECTOR_ROWS_H_
#define VMETRICS_INTERNAL_EC_CONNECTOR_ROWS_H_

#include <string_view>

#include "vmetrics/internal/declared_families.h"

namespace vmetrics::internal {

struct EcConnectorRow {
  std::string_view class_name;  // --ec-transfer-config `ec_connector`
  Gate gate;                    // opens the connector's rows in declared_families.inc
  std::string_view source;      // the upstream file the families were read from
};

inline constexpr EcConnectorRow kEcConnectorRows[] = {
    {"ECCPUConnector", Gate::kEcCpuConnector,
     "`vllm/distributed/ec_transfer/ec_connector/cpu/metrics.py` (`ECCPUConnectorProm`) at "
     "vllm-project/vllm d32cfd41, a commit of PR #57333 (not seen on main: the families may "
     "still change before it merges)"},
};

// The row of EC connector class `class_name`, or nullptr (a connector with no row registers
// nothing).
constexpr const EcConnectorRow* FindEcConnectorRow(std::string_view class_name) {
  for (const EcConnectorRow& row : kEcConnectorRows) {
    if (row.class_name == class_name) return &row;
  }
  return nullptr;
}

// Each row's gate has families, and no two rows share one.
constexpr bool EcConnectorRowsAreConsistent() {
  for (size_t i = 0; i < std::size(kEcConnectorRows); ++i) {
    bool has_families = false;
    for (const FamilyDeclaration& d : kDeclaredFamilies) {
      has_families = has_families || d.gate == kEcConnectorRows[i].gate;
    }
    if (!has_families) return false;
    for (size_t j = i + 1; j < std::size(kEcConnectorRows); ++j) {
      if (kEcConnectorRows[i].gate == kEcConnectorRows[j].gate) return false;
    }
  }
  return true;
}
static_assert(EcConnectorRowsAreConsistent(),
              "an EC connector row's gate opens no declared family, or two rows share a gate");

}  // namespace vmetrics::internal

#endif  // VMETRICS_INTERNAL_EC_CONNECTOR_ROWS_H_
