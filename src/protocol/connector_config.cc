// SPDX-License-Identifier: Apache-2.0
// vLLM's --kv-transfer-config (KVTransferConfig as JSON): `kv_connector` names the connector
// class; a MultiConnector lists its children in kv_connector_extra_config.connectors, each a
// KVTransferConfig of its own. And --ec-transfer-config (ECTransferConfig): `ec_connector` names
// the encoder-cache connector whose families are registered.
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/internal/python_int.h"

namespace vmetrics {
namespace {

// Python's int() of a JSON value, where it has one: vLLM reads integer settings of
// kv_connector_extra_config as `int(extra_config.get(key, default))` (e.g. `store_threshold` in
// vllm/v1/kv_offload/cpu/spec.py at vllm-project/vllm 6adad087), so 2, 2.7, true and " 2 " are
// all integers there.
std::optional<int64_t> PythonInt(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return INT64_MAX;  // past any threshold a row compares with
    }
    return v.get<int64_t>();
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d)) return std::nullopt;  // int(inf) raises
    if (d >= 9.2e18) return INT64_MAX;
    if (d <= -9.2e18) return INT64_MIN;
    return static_cast<int64_t>(std::trunc(d));
  }
  if (!v.is_string()) return std::nullopt;
  bool overflow = false;
  return internal::PythonIntOfText(v.get_ref<const std::string&>(), &overflow);
}

// Keeps the string values of `config`'s kv_connector_extra_config for `connector`, and the
// values Python's int() accepts (the first configuration of a class name wins, as a payload
// names its connector by class name only).
void KeepExtraConfig(const nlohmann::json& config, const std::string& connector,
                     ConnectorConfig* out) {
  for (const auto& [name, unused] : out->extra_config) {
    if (name == connector) return;
  }
  std::vector<std::pair<std::string, std::string>> entries;
  std::vector<std::pair<std::string, int64_t>> ints;
  auto extra = config.find("kv_connector_extra_config");
  if (extra != config.end() && extra->is_object()) {
    for (auto it = extra->begin(); it != extra->end(); ++it) {
      if (it->is_string()) entries.emplace_back(it.key(), it->get<std::string>());
      if (const std::optional<int64_t> i = PythonInt(*it)) ints.emplace_back(it.key(), *i);
    }
  }
  out->extra_config.emplace_back(connector, std::move(entries));
  out->extra_config_ints.emplace_back(connector, std::move(ints));
}

}  // namespace

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
  if (!config.is_multi()) {
    KeepExtraConfig(doc, config.connector, &config);
    return config;
  }
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
    KeepExtraConfig(child, config.children.back(), &config);
  }
  return config;
}

Result<EcConnectorConfig> EcConnectorConfig::FromEcTransferConfigJson(std::string_view json) {
  constexpr std::string_view kFlag = "--ec-transfer-config";
  const auto invalid = [&](std::string_view what) {
    return Status::InvalidArgument(std::string(kFlag) + ": " + std::string(what));
  };
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return invalid("not valid JSON");
  if (!doc.is_object()) return invalid("must be a JSON object");
  EcConnectorConfig config;
  if (auto it = doc.find("ec_connector"); it != doc.end() && !it->is_null()) {
    if (!it->is_string() || it->get<std::string>().empty()) {
      return invalid("ec_connector must be a connector class name (a non-empty string)");
    }
    config.connector = it->get<std::string>();
  }
  // ECTransferConfig.ec_role: Literal["ec_producer", "ec_consumer", "ec_both"] | None.
  if (auto role = doc.find("ec_role"); role != doc.end() && !role->is_null()) {
    const bool known = role->is_string() &&
                       (*role == "ec_producer" || *role == "ec_consumer" || *role == "ec_both");
    if (!known) return invalid("ec_role must be ec_producer, ec_consumer or ec_both");
    config.ec_role = role->get<std::string>();
  }
  if (auto extra = doc.find("ec_connector_extra_config");
      extra != doc.end() && !extra->is_object()) {
    return invalid("ec_connector_extra_config must be a JSON object");
  }
  return config;
}

}  // namespace vmetrics
