// SPDX-License-Identifier: Apache-2.0
// vLLM's --kv-transfer-config (KVTransferConfig as JSON): `kv_connector` names the connector
// class; a MultiConnector lists its children in kv_connector_extra_config.connectors, each a
// KVTransferConfig of its own.
#include <nlohmann/json.hpp>

#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {

Result<ConnectorConfig> ConnectorConfig::FromKvTransferConfigJson(std::string_view json) {
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::InvalidArgument("--kv-transfer-config is not valid JSON");
  if (!doc.is_object())
    return Status::InvalidArgument("--kv-transfer-config must be a JSON object");
  ConnectorConfig config;
  auto it = doc.find("kv_connector");
  if (it == doc.end() || it->is_null()) return config;  // no connector: nothing configured
  if (!it->is_string()) return Status::InvalidArgument("kv_connector must be a string");
  config.connector = it->get<std::string>();
  if (auto role = doc.find("kv_role"); role != doc.end() && !role->is_null()) {
    if (!role->is_string()) return Status::InvalidArgument("kv_role must be a string");
    config.kv_role = role->get<std::string>();
  }
  if (!config.is_multi()) return config;
  auto extra = doc.find("kv_connector_extra_config");
  if (extra == doc.end() || !extra->is_object()) return config;
  auto children = extra->find("connectors");
  if (children == extra->end()) return config;
  if (!children->is_array()) {
    return Status::InvalidArgument("kv_connector_extra_config.connectors must be a list");
  }
  for (const auto& child : *children) {
    if (!child.is_object() || !child.contains("kv_connector") ||
        !child["kv_connector"].is_string()) {
      return Status::InvalidArgument(
          "each kv_connector_extra_config.connectors entry needs a string kv_connector");
    }
    config.children.push_back(child["kv_connector"].get<std::string>());
  }
  return config;
}

}  // namespace vmetrics
