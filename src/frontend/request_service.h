// File: request_service.h
//
// RequestService: the request path of a vmetrics frontend. It takes checked completions
// (completion_api.h) from the HTTP threads, sends each prompt and sample to an engine as an
// EngineCoreRequest (ADD on the input ROUTER, the engine chosen by EngineRouter), routes the
// engines' outputs back to their requests by id, answers each HTTP exchange whole or streamed
// (server-sent events), and turns every EngineCoreOutputs message with at least one output
// into one IterationStats (RequestTracker, docs/recording.md's per-output algorithm) for the
// recorder.
//
// Parallel sampling (n > 1) is sent as vLLM's frontend sends it: n child requests with n = 1
// each, "<i>_<parent id>", grouped under the parent so the n and max-generation-tokens
// histograms get the parent's values once, when its last child finishes.
//
// Endings other than a finish reason from the engine:
//   - the client goes away (HttpExchange's client-gone callback): the requests are forgotten
//     without statistics and an ABORT goes to each engine that had one (Python's abort);
//   - an engine dies (ENGINE_CORE_DEAD or its connection closed): its requests are forgotten
//     without statistics and their completions answered with an EngineDeadError;
//   - an id in `finished_requests` that is still live: forgotten and finished as "abort";
//   - Shutdown(): everything in flight is answered 503.
//
// Thread safety: one mutex guards the tracker, the router and the completions. Submit and the
// client-gone callbacks run on HTTP threads; OnOutputs and OnEngineDead on the engine client's
// output thread. HttpExchange calls happen under the mutex (the exchange never calls back
// into the service while holding its own lock), ZeroMQ sends outside it.
#ifndef VMETRICS_FRONTEND_REQUEST_SERVICE_H_
#define VMETRICS_FRONTEND_REQUEST_SERVICE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "completion_api.h"
#include "vmetrics/engine_core_client.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/engine_request.h"
#include "vmetrics/http_server.h"
#include "vmetrics/iteration_stats.h"
#include "vmetrics/requests.h"

namespace vmetrics::frontend {

class RequestService {
 public:
  // How requests leave: EngineCoreClient::Send in the frontend, a recorder in tests.
  using SendFn = std::function<TransportStatus(int engine_index, EngineCoreRequestType type,
                                               std::string body)>;
  struct Options {
    CompletionLimits limits;
    std::vector<int64_t> engine_indexes;
    SendFn send;
    // The frontend's wall clock (time.time()): arrival and iteration timestamps. nullptr =
    // the system clock.
    std::function<double()> wall_clock;
  };

  explicit RequestService(Options options);
  ~RequestService();
  RequestService(const RequestService&) = delete;
  RequestService& operator=(const RequestService&) = delete;

  // HandleCompletion
  //
  // The handler of POST /v1/completions (openai_routes.h): parses `body`, answers refusals at
  // once (400/404), otherwise sends the requests and answers `exchange` when they finish
  // (streamed: from the first token on). Returns at once.
  void HandleCompletion(std::string body, std::shared_ptr<HttpExchange> exchange);

  // OnOutputs
  //
  // One decoded message from the engines (output thread): tokens and finish reasons go to
  // their completions, `finished_requests` are settled, the router learns the engine's load.
  // As in Python's output handler, the outputs are processed, then the LoRA adapters of the
  // requests in flight are written into the message's SchedulerStats
  // (RequestTracker::UpdateSchedulerStats), then `record` gets the message and its
  // IterationStats (null for a message without outputs): StatsRecorder::Record, then
  // RecordIteration. That happens before any completion the message finishes is answered, so
  // a client that has its answer finds its request in /metrics.
  using RecordFn = std::function<void(const EngineCoreOutputs&, const IterationStats*)>;
  void OnOutputs(EngineCoreOutputs* message, const RecordFn& record);

  // An engine died: its requests end with an error.
  void OnEngineDead(int engine_index, const std::string& reason);

  // Answers every completion in flight 503 and refuses new ones. Idempotent.
  void Shutdown();

  // Requests the tracker holds (0 once everything finished or was aborted) and completions
  // still waiting for their answer.
  size_t num_live_requests() const;
  size_t num_live_completions() const;

 private:
  struct Completion;
  struct Choice {
    Completion* completion = nullptr;
    size_t index = 0;
  };
  struct Abort {
    int engine_index;
    std::string request_id;
  };

  void AbortCompletion(const std::string& completion_id);
  // Sends one ABORT per engine with its ids (outside the lock).
  void SendAborts(std::vector<Abort> aborts);
  // Ends choice `index` of `c` (REQUIRES: mu_). `reason` "" = failed with `error`.
  void FinishChoiceLocked(Completion& c, size_t index, std::string reason);
  void CompleteLocked(Completion& c);
  // Forgets request `id` without statistics (REQUIRES: mu_); returns the engine it was on.
  int64_t ForgetLocked(const std::string& id);
  double WallClock() const;

  Options options_;
  mutable std::mutex mu_;
  RequestTracker tracker_;
  EngineRouter router_;
  std::map<std::string, std::unique_ptr<Completion>> completions_;  // by completion id
  std::map<std::string, Choice, std::less<>> choices_;              // engine request id -> choice
  uint64_t next_id_ = 0;
  uint64_t id_salt_ = 0;
  bool shut_down_ = false;
};

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_REQUEST_SERVICE_H_
