// SPDX-License-Identifier: Apache-2.0
// File: request_service.h
//
// RequestService: the request path of a vmetrics frontend. It takes checked requests of the
// token APIs (POST /v1/completions, completion_api.h; POST /inference/v1/generate,
// generate_api.h) from the HTTP threads, sends each prompt and sample to an engine as an
// EngineCoreRequest (ADD on the input ROUTER, the engine chosen by EngineRouter or named by the
// X-data-parallel-rank header), routes the engines' outputs back to their requests by id
// (tokens, logprobs, prompt logprobs, stop reasons, kv_transfer_params), answers each HTTP
// exchange whole or streamed (server-sent events, batched by stream_interval), and turns every
// EngineCoreOutputs message with at least one output into one IterationStats (RequestTracker,
// docs/recording.md's per-output algorithm) for the recorder. Both APIs feed the same request
// and iteration families, as vLLM's server does (it submits both through the same engine
// client).
//
// Ids, as vLLM makes them: the response id is "cmpl-<base>" or "generate-tokens-<base>", the
// base being the X-Request-Id header, else the body's request_id, else a random one; prompt p
// of a completion is the external request "cmpl-<base>-<p>" (generate: the response id); the
// engine request id adds a unique suffix (InputProcessor.assign_request_id), so clients may
// reuse ids. Parallel sampling (n > 1) is sent as vLLM's frontend sends it: n child requests
// with n = 1 each, "<i>_<engine id>" (seeds seed + i), grouped under the parent so the n and
// max-generation-tokens histograms get the parent's values once, when its last child finishes.
//
// Endings other than a finish reason from the engine:
//   - the client goes away (HttpExchange's client-gone callback): the requests are forgotten
//     without statistics and an ABORT goes to each engine that had one (Python's abort);
//   - POST /abort_requests names the external id: the same, and the client is answered with
//     finish reason "abort";
//   - the engine finishes a request with reason "error": the answer is vLLM's 500 "Internal
//     server error" (in a stream: an error event), the request's other choices are aborted;
//   - an engine dies (ENGINE_CORE_DEAD or its connection closed): its requests are forgotten
//     without statistics and answered with a 500 naming the engine;
//   - an id in `finished_requests` that is still live: forgotten and finished as "abort";
//   - Shutdown(): everything in flight is answered 503 and aborted at its engine.
//
// Thread safety: Handle*, HandleAbortRequests and the client-gone callbacks run on HTTP threads;
// Track, Settle (IngestBookkeeping, ingest.h), OnOutputs, OnEngineDead and OnEngineReady on
// the engine client's output thread; FenceStalled on the stall watch's thread. Three mutexes,
// each guarding only its own state (docs/design.md, "Scale and threading"):
//   - jobs_mu_: the HTTP requests waiting for their answer (jobs_, choices_, external_) and
//     every HttpExchange call on them. Submission takes it once, to register a request whose
//     EngineCoreRequests are already encoded; the output thread takes it only for a message
//     with outputs or finished_requests, and never while the message is recorded;
//   - engines_mu_: the router, the stall watch's clocks and fences, each engine's request
//     layout: a few map operations per message or request;
//   - tracker_mu_: the RequestTracker: AddRequest per submitted request, ProcessOutputs and
//     UpdateSchedulerStats per message, AbortRequest per forgotten request.
// Lock order: jobs_mu_ before engines_mu_ or tracker_mu_; engines_mu_ and tracker_mu_ are never
// held together. A stats-only message takes engines_mu_ and tracker_mu_ only, recording takes
// none of them, encoding happens under none of them, and ZeroMQ sends happen outside all three.
// The exchange never calls back into the service while holding its own lock.
#ifndef VMETRICS_FRONTEND_REQUEST_SERVICE_H_
#define VMETRICS_FRONTEND_REQUEST_SERVICE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ingest.h"
#include "token_request.h"
#include "vmetrics/engine_core_client.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/engine_request.h"
#include "vmetrics/http_route.h"
#include "vmetrics/iteration_stats.h"
#include "vmetrics/requests.h"

namespace vmetrics::frontend {

// The request headers the token APIs read (vLLM's names).
inline constexpr std::string_view kRequestIdHeader = "X-Request-Id";
inline constexpr std::string_view kDataParallelRankHeader = "X-data-parallel-rank";
inline constexpr std::string_view kSessionIdHeader = "X-Session-ID";
inline constexpr std::string_view kPriorityHeader = "X-Vllm-Priority";

class RequestService final : public IngestBookkeeping {
 public:
  // How requests leave: EngineCoreClient::Send in the frontend, a recorder in tests.
  using SendFn =
      std::function<Status(int engine_index, EngineCoreRequestType type, std::string body)>;
  struct Options {
    ServingConfig config;
    std::vector<int64_t> engine_indexes;
    SendFn send;
    // The frontend's wall clock (time.time()): arrival and iteration timestamps. nullptr =
    // the system clock.
    std::function<double()> wall_clock;
    // VLLM_COMPUTE_NANS_IN_LOGITS: requests with NaNs in their logits count as corrupted.
    bool track_nans_in_logits = false;
    // The monotonic clock of the stall watch (FenceStalled). nullptr = steady_clock.
    std::function<std::chrono::steady_clock::time_point()> monotonic_clock;
    // A KV connector is configured (--kv-transfer-config, or the engines' ready responses):
    // refused remote-prefill completions are released at the engine (ReleaseRemotePrefill).
    bool kv_connector = false;
    // The engine request id of external request `external`: nullptr = `external` + "-" + 8
    // random hex digits (InputProcessor.assign_request_id). Tests pin it.
    std::function<std::string(const std::string& external)> engine_request_id;
    // Called for each field of an accepted request that was ignored as vLLM ignores it
    // (ParsedRequest::ignored_fields), from the HTTP thread that submits it. May be empty.
    std::function<void(std::string_view field)> on_ignored_field;
  };

  explicit RequestService(Options options);
  ~RequestService() override;
  RequestService(const RequestService&) = delete;
  RequestService& operator=(const RequestService&) = delete;

  // HandleCompletion, HandleGenerate
  //
  // The handlers of POST /v1/completions and POST /inference/v1/generate (openai_routes.h):
  // parse the body, answer refusals at once (400/404), otherwise send the requests and answer
  // `exchange` when they finish (streamed: from the first token on). Return at once.
  void HandleCompletion(const HttpRequest& request, std::shared_ptr<HttpExchange> exchange);
  void HandleGenerate(const HttpRequest& request, std::shared_ptr<HttpExchange> exchange);

  // HandleAbortRequests
  //
  // POST /abort_requests {"request_ids": [...]}: every request in flight whose external id is
  // listed ("generate-tokens-<id>", "cmpl-<id>-<prompt>") is aborted at its engine and answered
  // with finish reason "abort". 200 with an empty body; 400 for a body that is not JSON or has
  // no request_ids list (vLLM's wording).
  void HandleAbortRequests(const HttpRequest& request,
                           const std::shared_ptr<HttpExchange>& exchange);

  // Track, Settle (IngestBookkeeping)
  //
  // One decoded message from the engines, on the output thread, in two halves around its
  // recording (Ingest::Message). Track: tokens go to their requests (streamed deltas are
  // written), the router learns the engine's load and forgets finished requests, the tracker
  // turns the outputs into the IterationStats it returns, and the LoRA adapters of the
  // requests in flight are written into the message's SchedulerStats
  // (RequestTracker::UpdateSchedulerStats), as in Python's output handler. Settle: the
  // requests the message finished are answered and its `finished_requests` settled, so a
  // client that has its answer finds its request in /metrics. A message without outputs or
  // finished_requests never takes the requests' lock (jobs_mu_).
  std::optional<IterationStats> Track(EngineCoreOutputs* message, uint64_t message_number) override;
  void Settle(const EngineCoreOutputs& message) override;

  // OnOutputs
  //
  // Track, then `record` (with the IterationStats, null for a message without outputs), then
  // Settle: Ingest::Message for a caller with its own recording (tests).
  using RecordFn = std::function<void(const EngineCoreOutputs&, const IterationStats*)>;
  void OnOutputs(EngineCoreOutputs* message, const RecordFn& record);

  // An engine died: its requests end with an error.
  void OnEngineDead(int engine_index, const std::string& reason);
  // An engine that died registered again: requests go to it again.
  void OnEngineReady(int engine_index);

  // FenceStalled
  //
  // The stall watch. An engine with requests in flight that has sent nothing for `bound`
  // (counted from its last message, or from when it got work while idle) is fenced: its
  // requests end at once with a 503 naming it (streams with an error event), they are aborted
  // at the engine (read if it ever reads again), and it gets no new requests. Its next message
  // takes it back (OnOutputs; `on_engine_back` then runs). Returns the engines fenced now, each
  // with the reason, for /health and the log. Called periodically (the frontend's stall watch).
  std::vector<std::pair<int, std::string>> FenceStalled(std::chrono::milliseconds bound);
  // Called (outside the lock) when a fenced engine sent a message again.
  void SetOnEngineBack(std::function<void(int engine_index)> on_engine_back);

  // SetEngineWire
  //
  // The wire generations engine `engine_index` may be (WireCandidates: its handshake, its
  // messages, or --engine-wire). Its ADDs are encoded with RequestLayoutFor(candidates) from
  // then on; where there is none, every request for it is refused with a 503 naming the
  // candidates and --engine-wire, and nothing is sent. An engine never set uses the newest
  // generation's layout. Requests for sample logprobs are refused (400) while a candidate sends
  // them as lists (g20250927, g20251105), which the token APIs cannot read. Returns whether the
  // engine's requests are refused, and the layout's name or "refused" and why, for the log.
  struct EngineWireChoice {
    bool refused = false;
    std::string description;  // "g20260814-6adad087", "common to ...", "refused (...)"
  };
  EngineWireChoice SetEngineWire(int64_t engine_index, uint32_t candidates);

  // Answers every request in flight 503, sends each engine an ABORT for its requests in flight,
  // and refuses new ones. Idempotent.
  void Shutdown();

  const ServingConfig& config() const { return options_.config; }

  // Engine requests the tracker holds (0 once everything finished or was aborted) and HTTP
  // requests still waiting for their answer.
  size_t num_live_requests() const;
  size_t num_live_completions() const;

 private:
  struct Job;
  struct Choice {
    Job* job = nullptr;
    size_t index = 0;
  };
  struct Abort {
    int engine_index;
    std::string request_id;
  };

  // Sends the request's engine requests, or answers it with why not; false when nothing was
  // sent.
  bool Submit(ParsedRequest parsed, const HttpRequest& http, std::shared_ptr<HttpExchange> ex);
  // A refused completion whose kv_transfer_params ask for a remote prefill: the request the
  // engine aborts at once (abort_immediately), where its generation has the field.
  void ReleaseRemotePrefill(const HttpRequest& http);
  // The engine request of choice (`prompt`, `sample`) of `j`.
  EngineCoreRequestSpec MakeSpec(const Job& j, size_t prompt, size_t sample,
                                 const std::string& request_id, double arrival,
                                 std::optional<int64_t> rank) const;
  // Aborts every unfinished choice of `job` (REQUIRES: jobs_mu_) with `reason` ("" = failed with
  // the job's error); returns the ABORTs to send.
  std::vector<Abort> AbortJobLocked(Job& job, const std::string& reason);
  void AbortJob(uint64_t key);
  // Sends one ABORT per engine with its ids (outside the lock).
  void SendAborts(std::vector<Abort> aborts) const;
  // Writes the choice's pending stream delta (REQUIRES: jobs_mu_).
  static void FlushLocked(Job& job, size_t index);
  // Ends choice `index` of `job` (REQUIRES: jobs_mu_). `reason` "" = failed with the job's error.
  void FinishChoiceLocked(Job& job, size_t index, const std::string& reason);
  void CompleteLocked(Job& job);
  // The engine for a new request: the one X-data-parallel-rank names if it is alive, else the
  // router's choice; -1 when none (REQUIRES: engines_mu_).
  int64_t ChooseLocked(std::optional<int64_t> rank);
  // Forgets request `id` without statistics (REQUIRES: jobs_mu_; takes tracker_mu_, then
  // engines_mu_); returns the engine it was on.
  int64_t ForgetLocked(const std::string& id);
  double WallClock() const;

  Options options_;
  uint64_t id_salt_ = 0;  // set once, by the constructor
  std::atomic<uint64_t> next_id_{0};

  // The requests waiting for their answer.
  mutable std::mutex jobs_mu_;
  std::map<uint64_t, std::unique_ptr<Job>> jobs_;               // by submission number
  std::map<std::string, Choice, std::less<>> choices_;          // engine request id -> choice
  std::multimap<std::string, uint64_t, std::less<>> external_;  // external id -> job
  std::atomic<bool> shut_down_{false};                          // set under jobs_mu_

  // The engines: where requests go, how they are encoded, whether they answer.
  mutable std::mutex engines_mu_;
  EngineRouter router_;
  // Per engine: the layout its ADDs are encoded with, or why none can be sent (SetEngineWire).
  // Shared so that a submission encodes with it outside the lock while SetEngineWire replaces
  // it.
  struct EngineWire {
    std::shared_ptr<const EngineRequestLayout> layout;
    std::string refusal;
    // Some candidate sends sample logprobs as lists, which the token APIs do not read.
    bool list_logprobs = false;
  };
  std::map<int64_t, EngineWire> wires_;
  // The stall watch: when each engine was last heard from (a message, or work given to it
  // while idle), and the engines fenced for silence.
  std::map<int64_t, std::chrono::steady_clock::time_point> last_heard_;
  std::set<int64_t> fenced_;
  std::function<void(int)> on_engine_back_;
  std::chrono::steady_clock::time_point MonotonicNow() const;

  // The per-request statistics.
  mutable std::mutex tracker_mu_;
  RequestTracker tracker_;

  // From Track to Settle of the same message (output thread only): the requests it finished
  // (engine request id, finish reason), and the callback of an engine it took back.
  std::vector<std::pair<std::string, std::string>> settling_;
  std::function<void(int)> settling_back_;
};

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_REQUEST_SERVICE_H_
