// File: connector_families.h
//
// ConnectorRecorder: registers the families of connector rows and records identified
// kv_connector_stats payloads into them, accounting every payload in
// vmetrics_kv_connector_payloads_total{connector,outcome}. Registration, children and
// recording are loops over the row; nothing here knows a connector by name.
#ifndef VMETRICS_METRICS_CONNECTOR_FAMILIES_H_
#define VMETRICS_METRICS_CONNECTOR_FAMILIES_H_

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/registry.h"

namespace vmetrics::internal {

class ConnectorRecorder {
 public:
  ConnectorRecorder(Registry* registry, std::string model_name, std::vector<std::string> engines,
                    std::function<void(const std::string&)> log);

  // Registers vmetrics_kv_connector_payloads (call once, where it belongs in render order).
  void RegisterAccounting();
  // Registers a row's families (once per row) with eager children where the row says so.
  void Register(const ConnectorRow& row);
  // Records one message's kv_connector_stats from engine slot `engine_slot` (index into the
  // engines given at construction).
  void Record(const KvConnectorStats& stats, size_t engine_slot, const DecodeContext& ctx);

 private:
  struct RowState {
    std::vector<Family*> families;                   // per metric index
    std::vector<std::vector<Child*>> eager;          // [engine slot][metric index]
    // Lazily created children: key = engine slot + extra label values.
    std::unordered_map<std::string, std::vector<Child*>> lazy;
  };
  RowState& StateFor(const ConnectorRow& row);
  void Account(const std::string& connector, const char* outcome);
  std::vector<Child*>& LazyChildren(const ConnectorRow& row, RowState& state, size_t engine_slot,
                                    std::span<const std::string_view> extra, size_t metric_index);

  Registry* registry_;
  std::string model_name_;
  std::vector<std::string> engines_;
  std::function<void(const std::string&)> log_;
  Family* payloads_family_ = nullptr;
  std::mutex mu_;  // guards rows_, lazy maps and the accounting cache
  std::map<const ConnectorRow*, RowState> rows_;
  std::map<std::pair<std::string, std::string>, Child*> accounting_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_METRICS_CONNECTOR_FAMILIES_H_
