// SPDX-License-Identifier: Apache-2.0
// File: engine_request.h
//
// What a frontend sends its engines (docs/wire_format.md, "Requests"): the msgspec body of an
// ADD (an EngineCoreRequest: an array of every position of the engine's wire generation, whose
// SamplingParams is a map holding the keys msgspec's omit_defaults writes) and of an ABORT (an
// array of request ids), and EngineRouter, which picks the engine for a request and remembers
// where each live request went. The layout of an ADD is a table of the engine's generation
// (WireGeneration::request, wire_generation.h); RequestLayoutFor gives the layout that every
// generation an engine may be decodes alike, or says there is none. Sending the bodies is
// EngineCoreClient::Send's job (engine_core_client.h).
//
// Thread safety: the encoders and decoders are pure functions; an EngineRequestLayout is an
// immutable value once built. EngineRouter is not synchronised; its owner serialises calls.
//
// Example:
//   EngineCoreRequestSpec spec;
//   spec.request_id = "r1";
//   spec.prompt_token_ids = {1, 2, 3};
//   spec.sampling.max_tokens = 8;
//   spec.arrival_time = 1700000000.0;
//   const RequestLayout& layout = FindWireGeneration("g20260204")->request;
//   ASSERT_TRUE(CheckRequestFits(spec, layout).ok());
//   std::string body = EncodeEngineCoreRequest(spec, layout);
//   std::string_view frames[] = {body};
//   Status sent = client.Send(engine_index, EngineCoreRequestType::kAdd, frames);
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
#include "vmetrics/wire_generation.h"

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
  // The completions frontend builds SamplingParams from its request model, whose floats are new
  // objects: msgspec writes presence_penalty, frequency_penalty, repetition_penalty and
  // temperature whatever their value, and top_p and min_p unless greedy sampling replaced them
  // with the class constants (it omits a default by identity, docs/wire_format.md). False: a
  // key is written when its value differs from the default.
  bool request_model_floats = false;
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
  // `_all_stop_token_ids` (a Python set, sent as an array): what min_tokens masks, in the order
  // the ids were added; the encoder writes them in the order CPython iterates such a set.
  // Empty = the default, not on the wire.
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
  // The tokenizer's EOS: EngineCoreRequest.eos_token_id in the generations that carry it there
  // (also with ignore_eos, as their frontends send it); later ones read sampling.eos_token_id.
  std::optional<int64_t> eos_token_id;
  double arrival_time = 0;  // frontend time.time()
  std::string lora_name;    // "" = no LoRA (lora_request nil)
  int64_t lora_int_id = 0;
  std::string lora_path;
  std::string lora_base_model_name;  // "" = nil
  std::optional<std::string> cache_salt;
  std::optional<int64_t> data_parallel_rank;
  int64_t client_index = 0;
  int64_t priority = 0;         // lower runs earlier under --scheduling-policy priority
  std::string external_req_id;  // "" = nil; read by frontends only
  std::optional<std::string> session_id;
  // A request the engine is to finish at once, freeing what a P/D prefill pinned for it.
  bool abort_immediately = false;
};

// CheckRequestFits
//
// Whether `layout` carries everything `spec` asks of an engine. A field or SamplingParams key
// the layout does not have is fine when it is at its default, or when only frontends read it
// (external_req_id, LoRARequest.base_model_name; stream_interval, skip_clone,
// output_text_buffer_length; skip_reading_prefix_cache, which engines without the key derive
// from prompt_logprobs themselves; _eos_token_id where EOS travels in eos_token_id). Anything
// else fails with kInvalidArgument naming it (an engine would ignore the key silently, or
// cannot be given the field): the request must not be sent to that engine.
Status CheckRequestFits(const EngineCoreRequestSpec& spec, const RequestLayout& layout);

// EncodeEngineCoreRequest
//
// The msgpack body of an ADD in `layout`: every position (array_like ignores omit_defaults),
// the SamplingParams keys of the layout in its order, the LoRARequest cut to the layout's
// positions. What the layout does not have is left out (call CheckRequestFits first). The
// one-argument form uses the newest generation's layout.
//
// Example:
//   EXPECT_EQ(static_cast<uint8_t>(EncodeEngineCoreRequest(spec)[0]), 0xdc);  // array16, 21
std::string EncodeEngineCoreRequest(const EngineCoreRequestSpec& spec, const RequestLayout& layout);
std::string EncodeEngineCoreRequest(const EngineCoreRequestSpec& spec);

// EngineRequestLayout / RequestLayoutFor
//
// The layout to encode an engine's ADDs with when its generation is one of `candidates`
// (WireCandidates, wire_decoder.h: bit i = WireGenerations()[i]). With one candidate, or
// candidates whose layouts are equal, that layout. Otherwise the longest EngineCoreRequest and
// LoRARequest prefixes on which every candidate agrees, and the SamplingParams keys every
// candidate has: every candidate then reads each position that is written as the same field
// and fills the rest with its defaults, so a request that CheckRequestFits accepts decodes to
// the same request everywhere. kUnavailable (naming the candidates) when some candidate has no
// default for a position past the common prefix: nothing can be sent that all of them read
// alike.
struct EngineRequestLayout {
  std::string name;  // "g20260814-6adad087", "common to g20250927-6f5c0931, ..."
  std::vector<RequestField> fields;
  std::vector<LoraField> lora;
  std::vector<SamplingKey> sampling;
  uint8_t required = 0;
  RequestLayout view() const {
    return RequestLayout{
        .fields = fields, .required = required, .lora = lora, .sampling = sampling};
  }
};
Result<EngineRequestLayout> RequestLayoutFor(uint32_t candidates);

// PythonSetOrder
//
// The order in which CPython 3 iterates a set of ints built by adding `ids` in turn (hash =
// the value for ints below 2**61 - 1; open addressing with linear probes, then perturbation;
// the table resized as CPython's setobject.c does). msgspec writes a set in that order.
std::vector<int64_t> PythonSetOrder(const std::vector<int64_t>& ids);

// The msgpack body of an ABORT: an array of request-id strings.
std::string EncodeAbort(std::span<const std::string> request_ids);

// DecodeEngineCoreRequest
//
// The engine's side of an ADD body, as an engine of `layout`'s generation decodes it with
// msgspec: an array whose positions are checked against the layout's fields (a value of a type
// the field does not accept fails, a shorter array than the positions without a default fails,
// missing trailing positions take their defaults, extra trailing ones are ignored), the
// LoRARequest likewise, SamplingParams keys the layout has checked by type (unknown keys
// ignored, as msgspec does), strings checked as UTF-8. Fails with kMalformed whose message
// names the path as msgspec does ("$[5]", "$[3].max_tokens") and whose offset is the byte's.
// Fills the fields EngineCoreRequestSpec holds. Used by the simulator, which answers requests
// as an engine of a chosen generation would, and by tests. The one-argument form uses the
// newest generation's layout.
//
// Example:
//   Result<EngineCoreRequestSpec> back = DecodeEngineCoreRequest(EncodeEngineCoreRequest(spec));
//   ASSERT_TRUE(back.ok());
//   EXPECT_EQ(back->sampling.max_tokens, spec.sampling.max_tokens);
Result<EngineCoreRequestSpec> DecodeEngineCoreRequest(std::string_view body,
                                                      const RequestLayout& layout);
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
  // An engine that registered again takes requests again (its load is learnt afresh).
  void MarkAlive(int64_t engine_index);
  // Requests assigned to the engine and not released yet.
  int64_t InFlight(int64_t engine_index) const;
  // The engines that have requests in flight.
  std::vector<int64_t> BusyEngines() const;
  size_t num_assigned() const { return request_engine_.size(); }

 private:
  struct Engine {
    int64_t index = 0;
    bool alive = true;
    bool has_stats = false;
    int64_t load = 0;       // running + waiting at the last stats
    int64_t assigned = 0;   // requests sent since those stats
    int64_t in_flight = 0;  // assigned and not released
  };
  Engine* Find(int64_t engine_index);
  std::vector<Engine> engines_;
  size_t next_ = 0;  // round-robin cursor
  std::map<std::string, int64_t> request_engine_;
};

}  // namespace vmetrics

#endif  // VMETRICS_ENGINE_REQUEST_H_
