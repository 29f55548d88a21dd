// SPDX-License-Identifier: Apache-2.0
// File: simulator.h
//
// Simulator: a stand-in for one or several vLLM EngineCore processes (one thread each). It
// plays the engine's side of either startup mode — HELLO / INIT / ready response / READY over
// a DEALER and a PUSH whose identity is the 2-byte little-endian engine index, or, bootstrapped,
// just the registration and the PUSH — then sends one EngineCoreOutputs per engine step,
// encoded byte for byte as msgspec would (an 8-element array; SchedulerStats and every nested
// stats dataclass as a map with all its keys). The content is a small engine model: requests
// arrive, wait (deferred while their KV is pulled from a remote instance when a P/D connector
// is configured), get scheduled, emit tokens with their events and prefill stats, finish or
// get preempted; SchedulerStats reports the resulting counts, KV usage and prefix-cache
// deltas, optional speculative decoding, and `kv_connector_stats` for the chosen connector.
//
// Everything sent is also added up (EngineTotals), so a test can check that what a frontend
// recorded equals what was sent. With a seed the payloads are deterministic; the only
// time-derived values are the monotonic timestamps, and with a seed those follow the step
// number too, so a seeded capture is byte-for-byte reproducible.
//
// Instead of sockets the simulator can write every frame 0 it would send to a capture file
// (concatenated msgpack, the input of `vmetrics replay` and the benchmarks). For fault tests an
// engine can send ENGINE_CORE_DEAD after N steps, or close its sockets without a word.
//
// Thread safety: Start and Wait from one thread; Totals() from any thread at any time (a
// consistent snapshot per engine); RequestStop() from anywhere, including a signal handler.
//
// Example:
//   SimulatorOptions o;
//   o.handshake_address = client.endpoints().handshake;
//   o.engines = 2;
//   o.steps = 100;
//   o.connector = SimConnector::kNixl;
//   o.seed = 7;
//   Simulator sim(o);
//   ASSERT_TRUE(sim.Start().ok());
//   ...
//   ASSERT_TRUE(sim.Wait().ok());
//   EXPECT_EQ(sim.Totals().engines[0].messages, 100u);
#ifndef VMETRICS_SIMULATOR_H_
#define VMETRICS_SIMULATOR_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vmetrics/engine_core_client.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics {

// The KV-transfer setup whose statistics the simulated engines report.
enum class SimConnector : uint8_t {
  kNone,           // no connector: kv_connector_stats and connector_prefix_cache_stats nil
  kNixl,           // NixlConnector, bare payload
  kMooncakeP2p,    // MooncakeConnector, bare payload
  kMooncakeStore,  // MooncakeStoreConnector, bare payload ({operation: [record, ...]})
  kMulti,          // MultiConnector: NixlConnector + MooncakeStoreConnector + MooncakeConnector
};
// "none", "nixl", "mooncake-p2p", "mooncake-store", "multi" (the --connector values), and
// back; ParseSimConnector returns nullopt for any other name.
//
// Example:
//   EXPECT_EQ(ParseSimConnector("mooncake-p2p"), SimConnector::kMooncakeP2p);
//   EXPECT_STREQ(SimConnectorName(SimConnector::kMulti), "multi");
const char* SimConnectorName(SimConnector connector);
std::optional<SimConnector> ParseSimConnector(std::string_view name);
// The class name engines report as `kv_connector` in their ready response ("" for none):
// "NixlConnector", "MooncakeConnector", "MooncakeStoreConnector", "MultiConnector".
const char* SimConnectorClassName(SimConnector connector);

// The part a served request's engine plays in prefill/decode disaggregation, named after vLLM's
// KVTransferConfig.kv_role. With NIXL the role is decided per request by its
// kv_transfer_params (vLLM deployments run both instances as kv_both); the role here only
// says which half of the contract the stand-in engine honours.
enum class SimKvRole : uint8_t {
  kNone,      // no P/D contract: served requests' KV pulls are drawn like synthetic ones
  kProducer,  // "kv_producer": the prefill half (do_remote_decode)
  kConsumer,  // "kv_consumer": the decode half (do_remote_prefill)
  kBoth,      // "kv_both": either, as the request's kv_transfer_params say
};
// "none", "kv_producer", "kv_consumer", "kv_both" (the --kv-role values), and back.
const char* SimKvRoleName(SimKvRole role);
std::optional<SimKvRole> ParseSimKvRole(std::string_view name);

// SimulatorOptions, field by field.
struct SimulatorOptions {
  // ---- Where to send (exactly one of the three) ----
  // Frontend mode: the frontend's handshake ROUTER (vLLM engines' --data-parallel-address and
  // --data-parallel-rpc-port). The engines learn the data addresses from INIT.
  std::string handshake_address;
  // Bootstrapped mode: the frontend's input ROUTER and output PULL.
  std::string input_address;
  std::string output_address;
  // Capture: no sockets; every frame 0 is appended to this file, engines interleaved step by
  // step (engine s, s+1, ... of step 1, then of step 2, ...). REQUIRES: steps > 0.
  std::string capture_path;

  // ---- The engines ----
  int engine_start_index = 0;  // the first engine's index (its identity)
  int engines = 1;             // how many, each on its own thread
  uint64_t steps = 100;        // steps per engine; 0 = until RequestStop()
  double rate_hz = 0;          // steps per second per engine; 0 = as fast as possible
  SimConnector connector = SimConnector::kNone;
  // MultiConnector children as {"<Class>": {"data": {...}}}, the wire shape before September
  // 2026, instead of the flat {"<Class>": {...}}.
  bool legacy_multi_shape = false;
  // The wire generation the engines speak (wire_generation.h): its handshake (an empty input
  // registration and READY with num_gpu_blocks up to g20260204, then its ready response's key
  // set), its EngineCoreOutput and SchedulerStats layouts, and its EngineCoreRequest layout:
  // an ADD is decoded with that generation's table as its msgspec decoder would, and one it
  // refuses ends the engine's input as it ends a vLLM engine's input thread (nothing sent
  // after it is read; counted in requests_rejected). nullptr = the layouts of vLLM 6adad087
  // with the newest ready response.
  const WireGeneration* wire = nullptr;
  // Seeds every engine's generator (engine i uses (seed, i)) and pins timestamps to the step
  // number. nullopt = a random seed (reported in the totals so the run can be repeated).
  std::optional<uint64_t> seed;
  int64_t max_model_len = 8192;  // reported in the ready response; bounds prompt + output
  int64_t block_size = 16;
  int64_t num_gpu_blocks = 4096;  // 65536 tokens: the model fills it at its load peaks
  int64_t max_num_seqs = 256;
  // > 0: speculative decoding with this many draft tokens (SpecDecodingStats each step).
  int num_speculative_tokens = 0;
  // Emit one EngineCoreOutput per running request (tokens, events, prefill stats). false =
  // stats-only messages (outputs = []), the lightest load a frontend can get.
  bool request_outputs = true;
  // Answer the frontend's requests like an engine: an ADD on the input socket joins the
  // waiting queue and is scheduled, decoded and finished with the synthetic ones (QUEUED /
  // SCHEDULED / PREEMPTED events, prefill_stats with local and connector cache hits, "length"
  // at max_tokens, "stop" at a stop token: see served_stop); an ABORT drops the request without
  // an output, as vLLM's engine does for client aborts. The ADD's SamplingParams are honoured
  // where a stand-in can: max_tokens (None: the rest of the context), min_tokens (no stop token
  // before it), `_eos_token_id` and stop_token_ids, allowed_token_ids (every token drawn from
  // them), logprobs and prompt_logprobs (LogprobsLists / LogprobsTensors in the engine's
  // layout: the sampled or prompt token in column 0, then the top k; -1 sends 64 columns), and
  // determinism: a request with a seed, or greedy (temperature < 1e-5, keyed by its prompt),
  // gets the same tokens every time. false = ADD and ABORT ignored.
  bool serve_requests = false;
  // How a served request that can stop early does (one whose ADD names stop tokens:
  // `_eos_token_id` unless ignore_eos, or `stop_token_ids`): kSampled, 30% of them at a random
  // position, as a model that samples EOS now and then; kEarliest, every one at the first
  // position min_tokens allows (min_tokens + 1), so a test knows where. Either way the stop
  // token is the last token sent, with finish reason "stop" and, for a `stop_token_ids` token,
  // that token as stop_reason (the EOS stop carries none), as vLLM's check_stop does.
  enum class ServedStop : uint8_t { kSampled, kEarliest };
  ServedStop served_stop = ServedStop::kSampled;
  // A served request's final output carries back the kv_transfer_params its ADD carried in
  // sampling_params.extra_args (raw msgpack, byte for byte), as a connector's
  // request_finished would return its own: a pass-through check of both directions.
  bool echo_kv_transfer_params = false;
  // An engine run with --enable-return-routed-experts (REQUIRES: serve_requests): every
  // output of a served request carries routed_experts, a "|u1" ndarray [tokens forwarded by
  // the step, this many layers, 2 experts] (EngineModel::RoutedExpertsChunk says which
  // numbers), inline as ext 3 whatever its size; 0 = nil, as engines without the option send.
  int64_t routed_experts_layers = 0;
  // An engine run with --per-request-spec-decode-metrics (REQUIRES: num_speculative_tokens > 0
  // and a `wire` whose outputs carry spec_decode_metrics, the newest layout): every request's
  // final output carries its RequestSpecDecodeMetrics, a map {num_spec_tokens, histogram,
  // num_draft_tokens, per_step_accepted, per_step_drafted} over the steps that verified its
  // drafts, the per-step lists filled by kDetailed only (vLLM PR #48915).
  enum class SpecDecodeMetrics : uint8_t { kNone, kSummary, kDetailed };
  SpecDecodeMetrics per_request_spec_decode_metrics = SpecDecodeMetrics::kNone;
  // Prefill/decode disaggregation through NIXL (REQUIRES: serve_requests, connector kNixl,
  // not echo_kv_transfer_params). The engine follows NixlConnector's contract
  // (vllm/distributed/kv_transfer/kv_connector/v1/nixl/scheduler.py at vllm-project/vllm
  // 053da34b) for served requests whose ADD carries kv_transfer_params:
  //  - producer half: a request with do_remote_decode true that finishes at max_tokens
  //    ("length"; a router sends max_tokens 1) returns on its final output
  //    {do_remote_prefill: true, do_remote_decode: false, remote_block_ids: [[ids of its prompt
  //    blocks]], remote_engine_id: kv_engine_id, remote_request_id: its request id,
  //    remote_host: "localhost", remote_port: 5600 + engine index, tp_size: 1}; any other
  //    finish returns nothing (the blocks are freed at once). It reports no transfer: NIXL reads
  //    are issued, timed and reported by the decode side.
  //  - consumer half: a request with do_remote_prefill true, non-empty remote_block_ids and
  //    remote_engine_id, remote_request_id, remote_host and remote_port present waits one step
  //    for its KV (skipped waiting), is scheduled with every prompt token but the last as an
  //    external hit (the last is recomputed for its logits, as vLLM's scheduler does after a
  //    full remote load) and adds one successful transfer to that step's NixlKVConnectorStats:
  //    bytes_transferred = blocks x block_size x kKvBytesPerToken, num_descriptors = blocks x
  //    kKvLayers, log-normal transfer and post durations. Params without those fields are
  //    ignored (the request is computed locally, vLLM's "Got invalid KVTransferParams").
  //  - its final output carries no kv_transfer_params, as the connector returns none there.
  // Served requests under a role draw no random cache hits and no random transfer faults, so
  // a test can count exactly. kNone: the behaviour described at `connector` and
  // `echo_kv_transfer_params`.
  SimKvRole kv_role = SimKvRole::kNone;
  // The producer's remote_engine_id ("" = "stand-in-<engine index>").
  std::string kv_engine_id;
  // vLLM's --kv-events-config: a KVEventsConfig as JSON (vllm/config/kv_events.py at
  // vllm-project/vllm 6adad087); "" = none. With enable_kv_cache_events true and the "zmq"
  // publisher (the default then), each engine's ready response carries `kv_events_config`, its
  // publisher's configuration as a vLLM engine reports it (since 48fc2e279, #50033): every
  // field, defaults filled in, `endpoint` and `replay_endpoint` offset by the engine's rank as
  // ZmqEventPublisher.offset_endpoint_port does (tcp: port + rank; inproc: "_dp<rank>").
  // Otherwise nil, as an engine with vLLM's NullEventPublisher reports. The stand-in binds no
  // publisher and sends no events: this is what a frontend's /kv_event_sources answers from.
  // Start() fails (InvalidArgument) on JSON that is not a KVEventsConfig.
  std::string kv_events_config;
  // The KV layout the transfer sizes follow: a Llama-3-8B-like model in bf16 (32 layers,
  // 8 KV heads of 128, K and V).
  static constexpr int64_t kKvLayers = 32;
  static constexpr int64_t kKvBytesPerToken = int64_t{32} * 8 * 128 * 2 * 2;
  // Generate the engine's own synthetic arrivals. Their ids are unknown to any frontend, which
  // skips their outputs; false (with serve_requests) = an engine busy only with what it is sent.
  bool synthetic_requests = true;

  // ---- Faults ----
  // After this many steps the engine sends ENGINE_CORE_DEAD and closes its sockets.
  std::optional<uint64_t> die_after;
  // After this many steps the engine closes its sockets without a word.
  std::optional<uint64_t> vanish_after;
  // The engine index the faults apply to; -1 = every engine.
  int fault_engine = -1;
  // After the last step keep the sockets open until RequestStop() (instead of closing, which a
  // frontend sees as the engine going away).
  bool hold_after_steps = false;
  // Malformed frames (sockets only; engines that `fault_engine` selects): before each step,
  // with this probability, the engine first sends a frame that cannot decode (a strict prefix
  // of the step's message, cut at a random length: an incomplete msgpack value). Drawn from a
  // generator of its own seeded with (seed, engine index), so the valid messages are the same
  // with or without faults. 0 = never.
  double malformed_probability = 0;
  // Truncated multipart messages, likewise before a step with this probability: a message
  // whose frame 0 has an output whose logprobs tensor lives in aux frame 2, sent as frames 0
  // and 1 only (the last part cut off), so a frontend must refuse it. 0 = never.
  double truncated_multipart_probability = 0;

  // How long to wait for INIT after HELLO.
  std::chrono::milliseconds handshake_timeout{60'000};
};

// What one connector field carried: the number of values (list elements) and their sum.
struct FieldTotals {
  uint64_t count = 0;
  double sum = 0;
};

// Mooncake store records for one (operation, status).
struct StoreTotals {
  uint64_t records = 0;
  double duration_seconds_sum = 0;
  uint64_t num_keys = 0;
  uint64_t num_bytes = 0;
  uint64_t num_failed_keys = 0;
};

struct PrefixCacheTotals {
  uint64_t requests = 0;
  uint64_t queries = 0;
  uint64_t hits = 0;
  uint64_t preempted_requests = 0;
  uint64_t preempted_queries = 0;
  uint64_t preempted_hits = 0;
};

// Everything one engine sent. Sums are accumulated in send order, so a frontend that adds
// the same values in receive order gets bit-identical doubles.
struct EngineTotals {
  int engine_index = 0;
  uint64_t steps = 0;
  uint64_t messages = 0;         // EngineCoreOutputs with SchedulerStats (one per step)
  uint64_t utility_replies = 0;  // EngineCoreOutputs answering UTILITY calls
  // The UTILITY calls received, in order, as Python would print the call ("sleep(1, 'abort')"),
  // and what they left the engine in, as its generation's EngineCore would (a call its
  // generation has no such method or signature for fails, as getattr or the call would).
  std::vector<std::string> utility_calls;
  uint64_t utility_failures = 0;
  int64_t sleep_level = 0;  // 0 = awake
  bool scheduler_paused = false;
  uint64_t prefix_cache_resets = 0;
  std::string weight_version = "default";  // EngineCore._weight_version
  uint64_t outputs = 0;                    // EngineCoreOutput entries
  uint64_t requests_arrived = 0;
  uint64_t requests_scheduled = 0;  // first schedules (prefill_stats sent)
  uint64_t prompt_tokens = 0;       // of scheduled requests
  uint64_t generation_tokens = 0;   // new_token_ids sent
  uint64_t preemptions = 0;
  std::map<std::string, uint64_t> finished;  // finish reason ("stop", "length") -> requests
  PrefixCacheTotals prefix_cache;
  PrefixCacheTotals connector_prefix_cache;
  // Speculative decoding.
  uint64_t spec_num_drafts = 0;
  uint64_t spec_num_draft_tokens = 0;
  uint64_t spec_num_accepted_tokens = 0;
  std::vector<uint64_t> spec_accepted_per_pos;
  // The gauges of the last SchedulerStats sent.
  int64_t last_num_running_reqs = 0;
  int64_t last_num_waiting_reqs = 0;
  int64_t last_num_skipped_waiting_reqs = 0;
  double last_kv_cache_usage = 0;
  // kv_connector_stats: messages carrying a payload, per connector class the payloads it
  // appeared in, and per class and field the values sent (counter fields are lists of 1s, so
  // their sum is the counter increment).
  uint64_t kv_connector_messages = 0;
  std::map<std::string, uint64_t> connector_payloads;
  std::map<std::string, std::map<std::string, FieldTotals>> connector_fields;
  std::map<std::pair<std::string, std::string>, StoreTotals> store;  // (operation, status)
  bool sent_engine_core_dead = false;
  bool vanished = false;
  // serve_requests: ADDs accepted (also counted in requests_arrived), ADD and ABORT bodies
  // that did not decode, and requests dropped by an ABORT (no output, so not in `finished`).
  uint64_t requests_served = 0;
  uint64_t requests_rejected = 0;
  uint64_t requests_aborted = 0;
  // kv_role: params returned by the producer half (do_remote_prefill for a decode instance),
  // remote prefills the consumer half accepted (one NIXL transfer each), and ADDs whose
  // do_remote_prefill params lacked a field the transfer needs (computed locally instead).
  uint64_t kv_params_returned = 0;
  uint64_t kv_remote_prefills = 0;
  uint64_t kv_params_invalid = 0;
  // Frames sent that a frontend must refuse (the malformed_probability and
  // truncated_multipart_probability faults); not counted in `messages`.
  uint64_t malformed_frames = 0;
  uint64_t truncated_multipart = 0;
};

struct SimulatorTotals {
  uint64_t seed = 0;
  SimConnector connector = SimConnector::kNone;
  std::vector<EngineTotals> engines;  // by index
  // The JSON document of --report-totals (layout documented in src/simulate/totals.cc).
  //
  // Example:
  //   nlohmann::json doc = nlohmann::json::parse(sim.Totals().ToJson());
  //   EXPECT_EQ(doc["engines"][0]["messages"], 100);
  std::string ToJson() const;
};

class Simulator {
 public:
  explicit Simulator(SimulatorOptions options);
  // Requests a stop and waits for the engine threads.
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Start
  //
  // Validates the options and starts the engine threads (capture mode: one thread writing the
  // file). Returns InvalidArgument for bad options (no destination or more than one, engines
  // outside 0..65535, capture without steps), Socket when the capture file cannot be opened.
  // Connecting never fails here: ZeroMQ connects in the background, and an engine that gets no
  // INIT within handshake_timeout fails Wait() with Timeout (stage kInit).
  //
  // Example:
  //   SimulatorOptions o;
  //   o.capture_path = "/tmp/multi.msgpack";
  //   o.steps = 1000;
  //   o.connector = SimConnector::kMulti;
  //   o.seed = 1;
  //   Simulator sim(o);
  //   ASSERT_TRUE(sim.Start().ok());
  //   ASSERT_TRUE(sim.Wait().ok());  // the file holds 1000 messages
  Status Start();

  // RequestStop: ends every engine after its current step. Async-signal-safe; idempotent.
  void RequestStop() noexcept;

  // Wait
  //
  // Waits for every engine thread and returns the first failure (an engine's handshake timed
  // out, INIT was malformed, a socket failed), or ok. Steps run to `steps` (or the stop) first.
  Status Wait();

  // Totals of everything sent so far, each engine's taken between two of its steps. Complete
  // after Wait(); the seed is known after Start().
  SimulatorTotals Totals() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vmetrics

#endif  // VMETRICS_SIMULATOR_H_
