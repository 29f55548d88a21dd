// SPDX-License-Identifier: Apache-2.0
// File: engine_model.h
//
// EngineModel: the content of a simulated engine. Each Step() advances a small scheduler model
// by one engine step and describes the EngineCoreOutputs the engine sends for it (SimMessage),
// adding everything it describes to the engine's totals. Encoding is wire_encode.h's job;
// sockets are simulator.cc's.
//
// The model, per step: requests arrive (Poisson, with a slowly drifting rate); with a P/D
// connector (NIXL, Mooncake P2P, Multi) a new request first waits 1-3 steps for its KV
// ("skipped waiting", vLLM's deferred queue); waiting requests are scheduled while sequences
// and KV blocks allow, recording prefix-cache queries and hits (and external hits with a
// connector); running requests emit one token (plus accepted draft tokens with speculative
// decoding) and finish at their target length ("length") or earlier at a sampled EOS ("stop");
// when KV blocks run out the newest request is preempted. Connector statistics follow the
// step's activity: a transfer per request whose KV was pulled, store lookups, loads and saves,
// with log-normal durations (ms to s), byte sizes from 64 KiB to 64 MiB, 8-512 descriptors and
// occasional failures and expiries.
//
// With SimulatorOptions::serve_requests the frontend's own requests (AddServedRequest) join
// the same waiting queue: prompt length and max_tokens from the ADD, cache hits drawn like
// any other request's, an EOS sampled unless ignore_eos. AbortServedRequests drops them
// wherever they are, without an output (vLLM sends none for a client abort).
//
// Thread safety: one model per engine thread.
#ifndef VMETRICS_SIMULATE_ENGINE_MODEL_H_
#define VMETRICS_SIMULATE_ENGINE_MODEL_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "vmetrics/engine_request.h"
#include "vmetrics/simulator.h"

namespace vmetrics::internal {

// ---- What one message carries (mirrors the Python types field by field) ----

struct SimEvent {
  int type = 1;  // EngineCoreEventType: 1 QUEUED, 2 SCHEDULED, 3 PREEMPTED
  double timestamp = 0;
};

struct SimPrefillStats {
  int64_t num_prompt_tokens = 0;
  int64_t num_computed_tokens = 0;
  int64_t num_cached_tokens = 0;
  int64_t num_local_cached_tokens = 0;
  int64_t num_external_cached_tokens = 0;
  int64_t num_cache_creation_tokens = 0;
};

// LogprobsLists (sample logprobs, numpy: "<i8" ids, "<f4" logprobs, "<i8" ranks, nil
// cu_num_generated_tokens) or LogprobsTensors (prompt logprobs, torch: "int64", "float32",
// "int64"): one row per position, `columns` entries each (the sampled or prompt token first,
// then the top k in rank order), and the rank of the column-0 token.
struct SimLogprobs {
  bool prompt = false;  // LogprobsTensors (3 fields, torch dtype names)
  int64_t rows = 0;
  int64_t columns = 0;
  std::vector<int64_t> token_ids;  // rows * columns
  std::vector<float> logprobs;     // rows * columns
  std::vector<int64_t> ranks;      // rows
};

// routed_experts: the expert ids each forwarded token was routed to, an np.ndarray "|u1"
// [rows, layers, experts per token] in C order.
struct SimRoutedExperts {
  int64_t rows = 0;
  int64_t layers = 0;
  int64_t experts_per_token = 0;
  std::string bytes;  // rows * layers * experts_per_token
};

// RequestSpecDecodeMetrics: one request's drafts, verified step by step.
struct SimSpecDecodeMetrics {
  int64_t num_spec_tokens = 0;
  std::vector<int64_t> histogram;  // num_spec_tokens + 1: steps that accepted exactly j
  int64_t num_draft_tokens = 0;
  std::vector<int64_t> per_step_accepted;  // detailed only
  std::vector<int64_t> per_step_drafted;
};

struct SimOutput {
  std::string request_id;
  std::vector<int64_t> new_token_ids;
  std::optional<SimLogprobs> new_logprobs;
  std::optional<SimLogprobs> new_prompt_logprobs;
  std::optional<int> finish_reason;    // FinishReason: 0 stop, 1 length
  std::optional<int64_t> stop_reason;  // the stop_token_ids token that stopped it
  std::vector<SimEvent> events;        // empty = nil on the wire
  std::string kv_transfer_params;      // raw msgpack; "" = nil
  std::optional<SimPrefillStats> prefill_stats;
  std::optional<SimRoutedExperts> routed_experts;
  std::optional<SimSpecDecodeMetrics> spec_decode_metrics;  // on the final output, when kept
};

struct SimPrefixCacheStats {
  bool reset = false;
  int64_t requests = 0;
  int64_t queries = 0;
  int64_t hits = 0;
  int64_t preempted_requests = 0;
  int64_t preempted_queries = 0;
  int64_t preempted_hits = 0;
};

struct SimSpecDecodingStats {
  int64_t num_spec_tokens = 0;
  int64_t num_drafts = 0;
  int64_t num_draft_tokens = 0;
  int64_t num_accepted_tokens = 0;
  std::vector<int64_t> num_accepted_tokens_per_pos;
  std::vector<int64_t> num_draft_tokens_per_pos;
};

// NixlKVConnectorStats.data (7 keys) or MooncakeKVConnectorStats.data (6 keys).
struct SimTransferStats {
  bool mooncake = false;  // Mooncake P2P: no post_duration / failed notifications; failed recvs
  std::vector<double> transfer_duration;  // seconds
  std::vector<double> post_duration;      // seconds (NIXL only)
  std::vector<int64_t> bytes_transferred;
  std::vector<int64_t> num_descriptors;
  std::vector<int64_t> num_failed_transfers;      // a 1 per failure
  std::vector<int64_t> num_failed_notifications;  // NIXL only
  std::vector<int64_t> num_failed_recvs;          // Mooncake only
  std::vector<int64_t> num_kv_expired_reqs;
  bool empty() const {
    return transfer_duration.empty() && num_failed_transfers.empty() &&
           num_failed_notifications.empty() && num_failed_recvs.empty() &&
           num_kv_expired_reqs.empty();
  }
};

struct SimStoreRecord {
  double duration_seconds = 0;
  int64_t num_keys = 0;
  int64_t num_bytes = 0;
  std::string status = "ok";
  int64_t num_failed_keys = 0;
};

// MooncakeStoreConnector payload: operation -> records, only operations that occurred.
struct SimStoreStats {
  std::vector<std::pair<std::string, std::vector<SimStoreRecord>>> operations;
  bool empty() const { return operations.empty(); }
};

struct SimKvConnectorStats {
  std::optional<SimTransferStats> nixl;
  std::optional<SimStoreStats> store;
  std::optional<SimTransferStats> mooncake;
};

struct SimSchedulerStats {
  int64_t num_running_reqs = 0;
  int64_t num_waiting_reqs = 0;
  int64_t num_skipped_waiting_reqs = 0;
  int64_t step_counter = 0;
  int64_t current_wave = 0;
  double kv_cache_usage = 0;
  SimPrefixCacheStats prefix_cache_stats;
  std::optional<SimPrefixCacheStats> connector_prefix_cache_stats;
  std::optional<SimSpecDecodingStats> spec_decoding_stats;
  // nullopt = nil on the wire (nothing happened this step, or no connector).
  std::optional<SimKvConnectorStats> kv_connector_stats;
};

struct SimMessage {
  int64_t engine_index = 0;
  std::vector<SimOutput> outputs;
  SimSchedulerStats scheduler_stats;
  double timestamp = 0;
};

// ---- The model ----

class EngineModel {
 public:
  // `seed` is the run's seed; the engine's generator is seeded with (seed, engine_index).
  // `deterministic_time`: timestamps follow the step number instead of the monotonic clock.
  EngineModel(const SimulatorOptions& options, int engine_index, uint64_t seed,
              bool deterministic_time);

  // Advances one step and describes the message sent for it (cleared first).
  void Step(SimMessage* message);

  // The engine's monotonic timestamp "now" (for utility replies between steps).
  static double Now();

  // A request from the frontend (an ADD), waiting from now on. Returns false (and counts it in
  // requests_rejected) when its id is already live.
  bool AddServedRequest(const EngineCoreRequestSpec& spec);
  // An ABORT: drops every listed request that is still live; unknown ids are ignored.
  void AbortServedRequests(std::span<const std::string> request_ids);

  const EngineTotals& totals() const { return totals_; }
  EngineTotals& mutable_totals() { return totals_; }

 private:
  // What a served request asked for (its ADD's SamplingParams), beyond its length.
  struct Served {
    std::vector<int64_t> prompt;
    std::vector<int64_t> stop_candidates;  // _eos_token_id (unless ignore_eos) + stop_token_ids
    std::optional<int64_t> eos;
    std::vector<int64_t> allowed;  // allowed_token_ids; empty = the vocabulary
    int64_t stop_token = -1;       // the token that ends it at target_tokens, if stops_early
    std::optional<int64_t> logprobs;
    std::optional<int64_t> prompt_logprobs;
    std::string kv_transfer_params;  // raw msgpack to send back, with echo_kv_transfer_params
    bool remote_decode = false;      // kv_role producer half: NIXL params at a "length" finish
    int64_t remote_blocks = 0;  // kv_role consumer half: prompt blocks pulled from the producer
    std::mt19937_64 rng;        // its tokens: seeded, greedy or drawn from the engine's
    bool greedy = false;
    int64_t routed_rows = 0;         // routed_experts rows sent so far
    int64_t last_output_tokens = 0;  // tokens of its previous output (forwarded in this step)
  };

  struct Request {
    std::string id;
    int64_t prompt_tokens = 0;
    int64_t target_tokens = 0;       // output tokens before finishing
    bool stops_early = false;        // finishes by EOS ("stop") rather than max_tokens ("length")
    std::shared_ptr<Served> served;  // null for synthetic requests
    int64_t generated = 0;
    int64_t local_hit_tokens = 0;
    int64_t external_hit_tokens = 0;
    int deferred_steps = 0;  // steps left waiting for remote KV
    bool kv_pulled = false;  // external hits come from a P2P pull, not the store
    bool ever_scheduled = false;
    bool first_output_sent = false;
    std::vector<SimEvent> pending_events;
    std::optional<SimSpecDecodeMetrics> spec;  // per_request_spec_decode_metrics on
  };

  // One verification step of `r`'s drafts into its RequestSpecDecodeMetrics, when kept;
  // SpecOf: that record, empty (an all-zero histogram) until a step verified drafts.
  void ObserveDrafts(Request* r, int64_t drafted, int64_t accepted) const;
  SimSpecDecodeMetrics& SpecOf(Request* r) const;
  // Draws the request's cache hits (local prefix, and connector hits with the KV pull that
  // defers it) from its prompt length.
  void DrawCacheHits(Request* r);
  bool IsLive(const std::string& id) const;
  // A served request's next token (never a stop candidate: those come only where it stops)
  // and its logprob rows.
  static int64_t NextServedToken(Served* s);
  static SimLogprobs LogprobRows(Served* s, const std::vector<int64_t>& tokens, int64_t k,
                                 bool prompt);
  // The routed_experts chunk of a served request's output with `tokens` new tokens: the
  // tokens this step forwarded (the prompt on its first output, after that the previous
  // output's tokens), routed_experts_layers layers of two experts each, numbered
  // (row * 31 + layer * 7 + k) % 256 with `row` counted over the whole request.
  SimRoutedExperts RoutedExpertsChunk(Served* s, bool after_first_output, int64_t tokens) const;

  double StepTime() const;
  void Arrive(double now);
  void Schedule(double now, SimSchedulerStats* stats, std::vector<Request*>* newly_scheduled);
  void Decode(SimMessage* message, SimSpecDecodingStats* spec);
  void PreemptIfFull(double now);
  int64_t BlocksFor(const Request& r) const;
  int64_t UsedBlocks() const;

  void AddTransfers(const std::vector<Request*>& pulled, bool mooncake, SimTransferStats* out);
  // The NIXL params a producer returns for a request that finished at max_tokens.
  std::string ProducerParams(const Request& r);
  // Applies kv_role to a served request from its ADD's kv_transfer_params (raw msgpack).
  void ApplyKvRole(std::string_view raw, Request* r);
  void AddStoreOperations(const std::vector<Request*>& scheduled, SimStoreStats* out);
  SimStoreRecord StoreRecord(int64_t keys, int64_t bytes_per_key, double median_s);
  void Account(const SimMessage& message);
  static void AccountTransfer(const SimTransferStats& t, const char* class_name,
                              EngineTotals* totals);

  // Distributions.
  double LogNormal(double median, double sigma);
  double Uniform(double lo, double hi);
  bool Chance(double p);
  int64_t LogUniformInt(int64_t lo, int64_t hi);
  int64_t Poisson(double mean);

  SimulatorOptions options_;
  int engine_index_;
  bool deterministic_time_;
  bool pd_connector_;  // requests pull KV from a remote instance (NIXL / Mooncake P2P / Multi)
  bool store_connector_;
  std::mt19937_64 rng_;
  uint64_t step_ = 0;
  uint64_t next_request_ = 0;
  double load_walk_ = 0;       // log-space random walk on the arrival rate
  uint64_t multi_toggle_ = 0;  // alternates pulled requests between Multi's P2P children
  int64_t next_block_id_ = 0;  // kv_role producer: the block ids its requests' params name
  int64_t deferred_this_step_ = 0;
  std::deque<Request> waiting_;
  std::vector<Request> running_;
  EngineTotals totals_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_SIMULATE_ENGINE_MODEL_H_
