// SPDX-License-Identifier: Apache-2.0
// File: handshake.h
//
// The startup messages vLLM's EngineCore and its frontend exchange before any output flows
// (vllm/v1/engine/utils.py, vllm/v1/engine/core.py): HELLO and READY on the handshake socket,
// INIT (EngineHandshakeMetadata) in reply to HELLO, and the EngineCoreReadyResponse each engine
// sends as its first frame on every input socket. All four are msgpack maps: plain dicts for
// HELLO/READY, @dataclasses (every field present, definition order) for the other two.
//
// This header offers the frontend's side — decode HELLO/READY and the ready response, encode
// INIT — plus DecodeHandshakeInit for stand-in engines and tests. Decoding is lenient in the
// direction vLLM evolves: unknown keys are ignored, missing keys take defaults, and the older
// variants (docs/design.md §5.3: an empty registration frame, READY carrying
// num_gpu_blocks/dp_stats_address) are understood. Every decoder reads through the
// bounded MsgpackReader, so hostile input cannot make it allocate by a length field.
//
// Thread safety: plain values and pure functions; call from any thread.
#ifndef VMETRICS_HANDSHAKE_H_
#define VMETRICS_HANDSHAKE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/status.h"

namespace vmetrics {

// The `status` values of the handshake socket's messages.
inline constexpr std::string_view kHandshakeHello = "HELLO";
inline constexpr std::string_view kHandshakeReady = "READY";

// HandshakeMessage
//
// HELLO or READY from an engine on the handshake socket: a plain dict, so a msgpack map.
// At vLLM 6adad087: {"status", "local", "headless"} plus "parallel_config_hash" on READY when
// data_parallel_size > 1. Engines released before 2026-04-09 also put "num_gpu_blocks" and
// "dp_stats_address" on READY (now in the ready response). Every key is optional here (the
// Rust frontend's ReadyMessage does the same); the caller decides what a missing status means.
struct HandshakeMessage {
  std::string status;  // "HELLO", "READY", anything else the engine sent; "" when absent/nil
  std::optional<bool> local;
  std::optional<bool> headless;
  std::optional<std::string> parallel_config_hash;
  // Older READY only.
  std::optional<int64_t> num_gpu_blocks;
  std::optional<std::string> dp_stats_address;  // nullopt when absent or nil
};

// DecodeHandshakeMessage
//
// Decodes one HELLO/READY frame. Fails (Malformed) when the frame is not exactly one msgpack
// map; a known key holding a value of the wrong type fails too (a handshake is not the place
// to guess), while unknown keys are skipped.
//
// Example:
//   Result<HandshakeMessage> m = DecodeHandshakeMessage(hello_bytes);
//   ASSERT_TRUE(m.ok());
//   EXPECT_EQ(m->status, "HELLO");
//   EXPECT_EQ(m->headless, true);
Result<HandshakeMessage> DecodeHandshakeMessage(std::string_view frame);

// EngineZmqAddresses (vllm/v1/engine/utils.py, @dataclass, map). inputs[i] / outputs[i]
// belong to API-server (client) index i.
struct EngineZmqAddresses {
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::optional<std::string> coordinator_input;
  std::optional<std::string> coordinator_output;
  std::optional<std::string> frontend_stats_publish_address;
};

// HandshakeInit
//
// INIT, the frontend's reply to HELLO: EngineHandshakeMetadata {"addresses": ...,
// "parallel_config": {...}}. `parallel_config` is kept as raw msgpack (a map); it is `{}` except
// for MoE data parallel, which this frontend does not coordinate.
struct HandshakeInit {
  EngineZmqAddresses addresses;
  std::string parallel_config = std::string("\x80", 1);  // raw msgpack map, `{}` by default
};

// EncodeHandshakeInit
//
// Encodes INIT exactly as msgspec encodes EngineHandshakeMetadata: a 2-key map, the addresses
// map with its five keys in definition order, nil for absent optional addresses. Never fails;
// `parallel_config` is copied verbatim (the caller guarantees it is one msgpack map).
//
// Example:
//   HandshakeInit init;
//   init.addresses.inputs = {"tcp://127.0.0.1:5001"};
//   init.addresses.outputs = {"tcp://127.0.0.1:5002"};
//   std::string bytes = EncodeHandshakeInit(init);
//   EXPECT_EQ(DecodeHandshakeInit(bytes)->addresses.inputs[0], "tcp://127.0.0.1:5001");
std::string EncodeHandshakeInit(const HandshakeInit& init);

// DecodeHandshakeInit
//
// The engine's side: decodes INIT. Unknown keys are ignored; `addresses` with at least one
// input and one output is required (an engine cannot proceed without them). Fails (Malformed)
// otherwise.
Result<HandshakeInit> DecodeHandshakeInit(std::string_view frame);

// EngineCoreReadyResponse
//
// The engine's first frame on each input socket (vllm/v1/engine/__init__.py, @dataclass, map).
// Keys as docs/design.md §5.2 lists them (Python's and the Rust frontend's sets). Values
// that a frontend must treat as "not reported" when missing are optional; the rest take the
// defaults shown. Strings are owned: a ready response outlives its frame.
struct EngineCoreReadyResponse {
  // True when the frame was empty: the registration of engines released before 2026-04-09,
  // which carries nothing (their num_gpu_blocks and dp_stats_address came on READY).
  bool empty_registration = false;

  std::optional<int64_t> max_model_len;
  std::optional<int64_t> num_gpu_blocks;  // 0 = unknown, as the engine reports it
  std::optional<int64_t> block_size;
  std::optional<std::string> dp_stats_address;
  std::string dtype;         // "bfloat16", "float16", "float32"; "" when absent
  std::string vllm_version;  // "" when absent
  int64_t world_size = 1;
  int64_t data_parallel_size = 1;
  int64_t tensor_parallel_size = 1;
  int64_t pipeline_parallel_size = 1;
  int64_t decode_context_parallel_size = 1;
  int64_t data_parallel_rank = 0;
  std::optional<int64_t> max_num_seqs;
  std::optional<int64_t> max_num_batched_tokens;
  std::string instance_id;
  std::optional<int64_t> kv_cache_size_tokens;
  std::optional<double> kv_cache_max_concurrency;
  std::string kv_events_config;  // raw msgpack map; empty when absent or nil

  // KV transfer: the class name configured with --kv-transfer-config (e.g. "NixlConnector",
  // "MultiConnector"); nullopt when absent or nil.
  std::optional<std::string> kv_connector;
  std::optional<std::string> kv_role;
  std::optional<std::string> kv_engine_id;
  // Flattened KV-event settings of the Rust struct.
  std::optional<std::string> kv_events_publisher;
  std::optional<std::string> kv_events_endpoint;
  std::optional<std::string> kv_events_replay_endpoint;
  std::optional<std::string> kv_events_topic;
  std::optional<int64_t> kv_events_buffer_steps;
  std::optional<int64_t> kv_events_hwm;
  std::optional<int64_t> kv_events_max_queue_size;

  bool supports_lora = false;
  int64_t max_loras = 0;
  std::optional<std::string> weight_transfer_backend;
  bool enable_sleep_mode = false;
  bool supports_draft_weight_updates = false;
  std::optional<int64_t> effective_attention_block_size;

  // Keys whose value had an unexpected type and were skipped (kept at their default), for the
  // caller to log. Unknown keys are not listed: newer engines add keys all the time.
  std::vector<std::string> skipped_keys;

  // Every key the response carried, in order (the first kMaxReadyResponseKeys): which fields an
  // engine sends dates it (wire_decoder.h).
  std::vector<std::string> keys;
};
inline constexpr size_t kMaxReadyResponseKeys = 64;

// DecodeEngineCoreReadyResponse
//
// Decodes an input-registration frame. An empty frame is the older empty registration
// (`empty_registration` = true, everything defaulted). Otherwise the frame must be one msgpack
// map (Malformed if not, or if bytes trail it); inside it nothing fails: unknown keys are
// ignored, missing keys defaulted, and a known key with a value of the wrong type is skipped
// and named in `skipped_keys`. Ints are accepted for float fields, as msgspec does.
//
// Example:
//   Result<EngineCoreReadyResponse> r = DecodeEngineCoreReadyResponse("");
//   ASSERT_TRUE(r.ok());
//   EXPECT_TRUE(r->empty_registration);
//   EXPECT_FALSE(r->max_model_len.has_value());
Result<EngineCoreReadyResponse> DecodeEngineCoreReadyResponse(std::string_view frame);

// EngineIdentity / EngineIndexFromIdentity
//
// vLLM engines use `engine_index.to_bytes(2, "little")` as their ZeroMQ routing identity on
// every DEALER socket. EngineIdentity(258) == "\x02\x01". EngineIndexFromIdentity returns
// nullopt unless the identity is exactly two bytes.
//
// Example:
//   EXPECT_EQ(EngineIndexFromIdentity(EngineIdentity(258)), 258);
std::string EngineIdentity(uint16_t engine_index);
std::optional<uint16_t> EngineIndexFromIdentity(std::string_view identity);

}  // namespace vmetrics

#endif  // VMETRICS_HANDSHAKE_H_
