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
#include <vector>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/status.h"

namespace vmetrics {

// The SamplingParams fields vmetrics sets; every other field keeps its Python default and is
// therefore absent from the map. A field equal to its default is omitted too (msgspec
// omit_defaults compares values, so an explicit max_tokens=16 is not on the wire either).
struct SamplingParams {
  int64_t n = 1;
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = 0;
  std::optional<int64_t> seed;          // default None
  std::vector<int64_t> stop_token_ids;  // empty = None
  bool ignore_eos = false;
  std::optional<int64_t> max_tokens = 16;  // nullopt = None (encoded as nil)
  int64_t min_tokens = 0;
  int64_t output_kind = 0;  // 0 CUMULATIVE, 1 DELTA, 2 FINAL_ONLY
};

struct EngineCoreRequestSpec {
  std::string request_id;
  std::vector<int64_t> prompt_token_ids;
  SamplingParams sampling;
  double arrival_time = 0;  // frontend time.time()
  std::string lora_name;    // "" = no LoRA (position 6 nil)
  int64_t lora_int_id = 0;
  std::string lora_path;
  int64_t client_index = 0;
  std::string external_req_id;  // "" = nil
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
// prompt_token_ids, arrival_time, client_index, external_req_id and the SamplingParams keys
// it knows; LoRA name and id from position 6) and skips everything else, so a body from
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
  explicit EngineRouter(std::vector<int64_t> engine_indexes);

  // The engine for a new request, or -1 when no engine is alive.
  int64_t Choose();
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
