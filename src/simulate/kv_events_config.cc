// SPDX-License-Identifier: Apache-2.0
// The kv_events_config a stand-in engine reports; see kv_events_config.h.
#include "kv_events_config.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "msgspec_writer.h"

namespace vmetrics::internal {
namespace {

// ZmqEventPublisher.offset_endpoint_port (vllm/distributed/kv_events.py at 6adad087).
std::optional<std::string> OffsetEndpoint(const std::string& endpoint, int64_t rank,
                                          std::string* error) {
  if (endpoint.empty() || rank == 0) return endpoint;
  // Python tests "inproc" in endpoint, then "tcp" in endpoint: substrings, not schemes.
  if (endpoint.find("inproc") != std::string::npos) {
    return endpoint + "_dp" + std::to_string(rank);
  }
  if (endpoint.find("tcp") != std::string::npos) {
    const size_t colon = endpoint.rfind(':');
    if (colon == std::string::npos) return endpoint;
    const std::string port_text = endpoint.substr(colon + 1);
    int64_t port = 0;
    const auto [end, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size()) {
      *error = "kv_events_config: the port of " + endpoint + " is not a number";
      return std::nullopt;
    }
    return endpoint.substr(0, colon + 1) + std::to_string(port + rank);
  }
  *error = "kv_events_config: invalid endpoint " + endpoint + ": must contain 'inproc' or 'tcp'";
  return std::nullopt;
}

}  // namespace

std::optional<KvEventsConfig> ParseKvEventsConfig(std::string_view json, std::string* error) {
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    *error = "kv_events_config must be a JSON object";
    return std::nullopt;
  }
  KvEventsConfig c;
  bool publisher_given = false;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& value = it.value();
    auto wrong = [&](const char* type) {
      *error = "kv_events_config: " + key + " must be " + type;
      return std::nullopt;
    };
    if (key == "enable_kv_cache_events") {
      if (!value.is_boolean()) return wrong("a boolean");
      c.enable_kv_cache_events = value.get<bool>();
    } else if (key == "publisher") {
      if (!value.is_string() && !value.is_null()) return wrong("\"null\" or \"zmq\"");
      publisher_given = value.is_string();
      if (publisher_given) c.publisher = value.get<std::string>();
      if (publisher_given && c.publisher != "null" && c.publisher != "zmq") {
        return wrong("\"null\" or \"zmq\"");
      }
    } else if (key == "endpoint" || key == "topic") {
      if (!value.is_string()) return wrong("a string");
      (key == "endpoint" ? c.endpoint : c.topic) = value.get<std::string>();
    } else if (key == "replay_endpoint") {
      if (!value.is_string() && !value.is_null()) return wrong("a string or null");
      if (value.is_string()) c.replay_endpoint = value.get<std::string>();
    } else if (key == "buffer_steps" || key == "hwm" || key == "max_queue_size") {
      if (!value.is_number_integer()) return wrong("an integer");
      (key == "buffer_steps" ? c.buffer_steps
       : key == "hwm"        ? c.hwm
                             : c.max_queue_size) = value.get<int64_t>();
    } else {
      *error = "kv_events_config: unknown field " + key;
      return std::nullopt;
    }
  }
  if (!publisher_given) c.publisher = c.enable_kv_cache_events ? "zmq" : "null";
  return c;
}

std::optional<std::string> KvEventsConfigForRank(const KvEventsConfig& config, int64_t rank,
                                                 std::string* error) {
  // EventPublisherFactory.create builds the NullEventPublisher unless events are enabled, and
  // only ZmqEventPublisher reports a configuration.
  if (!config.enable_kv_cache_events || config.publisher != "zmq") return std::string();
  std::optional<std::string> endpoint = OffsetEndpoint(config.endpoint, rank, error);
  if (!endpoint) return std::nullopt;
  std::optional<std::string> replay;
  if (config.replay_endpoint) {
    replay = OffsetEndpoint(*config.replay_endpoint, rank, error);
    if (!replay) return std::nullopt;
  }
  MsgspecWriter w;
  w.Map(8);
  w.Key("enable_kv_cache_events").Bool(true);
  w.Key("publisher").Str(config.publisher);
  w.Key("endpoint").Str(*endpoint);
  w.Key("replay_endpoint").OptStr(replay);
  w.Key("buffer_steps").Int(config.buffer_steps);
  w.Key("hwm").Int(config.hwm);
  w.Key("max_queue_size").Int(config.max_queue_size);
  w.Key("topic").Str(config.topic);
  return w.Take();
}

}  // namespace vmetrics::internal
