// SPDX-License-Identifier: Apache-2.0
// File: kv_events_config.h
//
// The `kv_events_config` a stand-in engine reports in its ready response: vLLM's
// `--kv-events-config` (KVEventsConfig, vllm/config/kv_events.py at vllm-project/vllm
// 6adad087) resolved for one data-parallel rank, as a vLLM engine whose ZmqEventPublisher runs
// reports it (EngineCoreProc._get_ready_response -> Scheduler.get_kv_event_publisher_config,
// added by 48fc2e279, "[Rust Frontend][gRPC] Add KV event source discovery" #50033).
//
// Thread safety: pure functions.
//
// Example:
//   std::string error;
//   auto config = ParseKvEventsConfig(R"({"enable_kv_cache_events":true})", &error);
//   std::optional<std::string> rank1 = KvEventsConfigForRank(*config, 1, &error);
//   // *rank1: msgpack {"enable_kv_cache_events": true, "publisher": "zmq",
//   //                  "endpoint": "tcp://*:5558", "replay_endpoint": nil, ...}
#ifndef VMETRICS_SIMULATE_KV_EVENTS_CONFIG_H_
#define VMETRICS_SIMULATE_KV_EVENTS_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vmetrics::internal {

// KVEventsConfig's fields and defaults, in its definition order (the order msgspec writes).
struct KvEventsConfig {
  bool enable_kv_cache_events = false;
  // __post_init__: "zmq" when events are enabled and no publisher is named, else "null".
  std::string publisher;
  std::string endpoint = "tcp://*:5557";
  std::optional<std::string> replay_endpoint;
  int64_t buffer_steps = 10'000;
  int64_t hwm = 100'000;
  int64_t max_queue_size = 100'000;
  std::string topic;
};

// ParseKvEventsConfig
//
// Reads `json`, a JSON object of KVEventsConfig fields (others missing take their defaults).
// nullopt, with `error` saying why, for text that is not such an object, an unknown key or a
// value of the wrong type, or a publisher other than "null" and "zmq".
std::optional<KvEventsConfig> ParseKvEventsConfig(std::string_view json, std::string* error);

// KvEventsConfigForRank
//
// What the engine of data-parallel rank `rank` reports: "" (nil) unless events are enabled
// with the "zmq" publisher (vLLM's NullEventPublisher reports None); otherwise the msgpack map
// of every field, `endpoint` and `replay_endpoint` offset by the rank as
// ZmqEventPublisher.offset_endpoint_port does (unchanged at rank 0; "inproc" endpoints get
// "_dp<rank>" appended; "tcp" ones the rank added to their port). nullopt, with `error`, for
// an endpoint that function refuses (neither inproc nor tcp, or a port that is not a number).
std::optional<std::string> KvEventsConfigForRank(const KvEventsConfig& config, int64_t rank,
                                                 std::string* error);

}  // namespace vmetrics::internal

#endif  // VMETRICS_SIMULATE_KV_EVENTS_CONFIG_H_
