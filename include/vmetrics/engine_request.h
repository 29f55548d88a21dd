// SPDX-License-Identifier: Apache-2.0
// File: engine_request.h
//
// What a frontend sends its engines (docs/wire_format.md, "The input socket"): the msgpack body
// of an ADD (an EngineCoreRequest, a 21-position array whose SamplingParams is a map holding only
// the non-default keys, as msgspec's omit_defaults writes it) and of an ABORT (an array of
// request ids), and EngineRouter, which picks the engine for a request and remembers where each
// live request went. Sending the bodies is EngineCoreClient::Send's job (engine_core_client.h).
//
// Thread safety: the encoders are pure functions. EngineRouter is not synchronised; its owner
// serialises calls.
//
// Example:
//   EngineCoreRequestSpec spec;
//   spec.request_id = "r1";
//   spec.prompt_token_ids = {1, 2, 3};
//   spec.sampling.max_tokens = 8;
//   spec.arrival_time = 1700000000.0;
//   std::string body = EncodeEngineCoreRequest(spec);
//   std::string_view frames[] = {body};
//   client.Send(router.Choose(), EngineCoreRequestType::kAdd, frames);
#ifndef VMETRICS_ENGINE_REQUEST_H_
#define VMETRICS_ENGINE_REQUEST_H_

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/status.h"

namespace vmetrics {

// RepetitionDetectionParams (a dataclass: a map of its three keys).
struct RepetitionDetectionParams {
  int64_t max_pattern_size = 0;
  int64_t min_pattern_size = 0;
  int64_t min_count = 0;
  bool operator==(const RepetitionDetectionParams&) const = default;
};

// SamplingParams as vLLM 6adad087 defines it (vllm/sampling_params.py), every key an engine
// reads. The encoder writes a key only when its value differs from Python's default (msgspec's
// omit_defaults compares values: an explicit max_tokens=16 is not on the wire, while an empty
// list where the default is None is), in definition order. What vLLM's frontend computes before
// it sends (SamplingParams.__post_init__, update_from_generation_config: `stop` None -> [],
// `_all_stop_token_ids`, `_eos_token_id`, `skip_reading_prefix_cache`) is the caller's to set;
// the encoder writes the fields as they are.
struct SamplingParams {
  int64_t n = 1;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  double repetition_penalty = 1.0;
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = 0;
  double min_p = 0.0;
  std::optional<int64_t> seed;  // default None
  // Stop strings: vmetrics has no detokenizer and never sends any, but Python's post-init turns
  // None into [], which is on the wire.
  std::optional<std::vector<std::string>> stop;
  std::optional<std::vector<int64_t>> stop_token_ids;  // nullopt = None
  bool ignore_eos = false;
  std::optional<int64_t> max_tokens = 16;  // nullopt = None (encoded as nil)
  int64_t min_tokens = 0;
  std::optional<int64_t> logprobs;         // sample logprobs per token; -1 = all
  std::optional<int64_t> prompt_logprobs;  // prompt logprobs per position; -1 = all
  std::optional<std::vector<int64_t>> logprob_token_ids;
  bool flat_logprobs = false;
  bool detokenize = true;
  bool skip_special_tokens = true;
  bool spaces_between_special_tokens = true;
  bool include_stop_str_in_output = false;
  int64_t output_kind = 0;  // 0 CUMULATIVE, 1 DELTA, 2 FINAL_ONLY
  std::optional<int64_t> stream_interval;
  bool skip_clone = false;
  int64_t output_text_buffer_length = 0;
  std::optional<int64_t> eos_token_id;  // `_eos_token_id`: the engine's EOS stop
  // `_all_stop_token_ids` (a Python set, sent as an array; written in ascending order): what
  // min_tokens masks. Empty = the default, not on the wire.
  std::vector<int64_t> all_stop_token_ids;
  // logit_bias {token id: bias}, keys as msgpack ints. nullopt = None.
  std::optional<std::vector<std::pair<int64_t, double>>> logit_bias;
  std::optional<std::vector<int64_t>> allowed_token_ids;
  // extra_args: one raw msgpack map (vllm_xargs, kv_transfer_params, ec_transfer_params);
  // "" = None.
  std::string extra_args;
  int64_t routed_experts_prompt_start = 0;
  std::optional<std::vector<std::string>> bad_words;  // never non-empty from vmetrics
  std::optional<bool> skip_reading_prefix_cache;
  std::optional<int64_t> thinking_token_budget;
  std::optional<RepetitionDetectionParams> repetition_detection;
};

struct EngineCoreRequestSpec {
  std::string request_id;
  std::vector<int64_t> prompt_token_ids;
  SamplingParams sampling;
  double arrival_time = 0;  // frontend time.time()
  std::string lora_name;    // "" = no LoRA (position 6 nil)
  int64_t lora_int_id = 0;
  std::string lora_path;
  std::optional<std::string> cache_salt;      // position 7
  std::optional<int64_t> data_parallel_rank;  // position 8
  int64_t client_index = 0;
  int64_t priority = 0;  // position 13: lower runs earlier under --scheduling-policy priority
  std::string external_req_id;            // "" = nil
  std::optional<std::string> session_id;  // position 20
};

// EncodeEngineCoreRequest
//
// The msgpack body of an ADD: always 21 positions (array_like ignores omit_defaults).
//
// Example:
//   EXPECT_EQ(static_cast<uint8_t>(EncodeEngineCoreRequest(spec)[0]), 0xdc);  // array16, 21
std::string EncodeEngineCoreRequest(const EngineCoreRequestSpec& spec);

// The msgpack body of an ABORT: an array of request-id strings.
std::string EncodeAbort(std::span<const std::string> request_ids);

// DecodeEngineCoreRequest
//
// The engine's side of an ADD body: reads the fields EngineCoreRequestSpec holds (request_id,
// prompt_token_ids, arrival_time, LoRA name and id from position 6, cache_salt,
// data_parallel_rank, client_index, priority, external_req_id, session_id and every
// SamplingParams key
// above) and skips everything else, so a body from
// Python's encoder decodes as well as one from EncodeEngineCoreRequest. Missing trailing
// positions and missing SamplingParams keys keep their defaults. Fails with Malformed (with
// the byte offset) for a body that is not an array of at least 9 positions or a field of the
// wrong type. Used by the simulator, which answers requests like an engine.
//
// Example:
//   Result<EngineCoreRequestSpec> back = DecodeEngineCoreRequest(EncodeEngineCoreRequest(spec));
//   ASSERT_TRUE(back.ok());
//   EXPECT_EQ(back->sampling.max_tokens, spec.sampling.max_tokens);
Result<EngineCoreRequestSpec> DecodeEngineCoreRequest(std::string_view body);

// DecodeAbort: the request ids of an ABORT body. Malformed unless an array of strings.
Result<std::vector<std::string>> DecodeAbort(std::string_view body);

// EngineRouter
//
// Chooses an engine per request: the live engine with the fewest running + waiting requests
// in its last SchedulerStats; engines that have sent no stats yet, and ties, go round robin
// (vLLM's DP client balances on the same counts). Remembers request -> engine so outputs,
// aborts and engine death find their requests.
class EngineRouter {
 public:
  explicit EngineRouter(const std::vector<int64_t>& engine_indexes);

  // The engine for a new request, or -1 when no engine is alive.
  int64_t Choose();
  // Whether `engine_index` is one of the router's engines and alive (a request that names its
  // engine, as vLLM's X-data-parallel-rank header does, goes there or nowhere).
  bool IsAlive(int64_t engine_index) const;
  // Whether `engine_index` is one of the router's engines.
  bool Has(int64_t engine_index) const;
  void Assign(const std::string& request_id, int64_t engine_index);
  // The engine a live request went to, or -1.
  int64_t EngineOf(const std::string& request_id) const;
  void Release(const std::string& request_id);
  // Load from a message's SchedulerStats (counted from then on).
  void ObserveStats(int64_t engine_index, const SchedulerStats& stats);
  // Marks an engine dead and returns (and forgets) the requests that were on it; the caller
  // finishes them with an error.
  std::vector<std::string> MarkDead(int64_t engine_index);
  size_t num_assigned() const { return request_engine_.size(); }

 private:
  struct Engine {
    int64_t index = 0;
    bool alive = true;
    bool has_stats = false;
    int64_t load = 0;      // running + waiting at the last stats
    int64_t assigned = 0;  // requests sent since those stats
  };
  std::vector<Engine> engines_;
  size_t next_ = 0;  // round-robin cursor
  std::map<std::string, int64_t> request_engine_;
};

}  // namespace vmetrics

#endif  // VMETRICS_ENGINE_REQUEST_H_
