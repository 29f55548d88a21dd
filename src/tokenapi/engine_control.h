// SPDX-License-Identifier: Apache-2.0
// File: engine_control.h
//
// EngineControl: the routes RL trainers and routers use to put engines to sleep between
// rollouts and wake them after a weight update, as vLLM's development routes serve them
// (vllm/entrypoints/serve/dev/{sleep,rlhf,cache}/api_router.py at vllm-project/vllm 6adad087):
//
//   POST /sleep?level=1&mode=abort    every engine sleeps (EngineCore.sleep)
//   POST /wake_up?tags=weights        every engine wakes up, the tags given or all
//   GET  /is_sleeping                 {"is_sleeping": bool}
//   POST /pause?mode=abort&clear_cache=true    EngineCore.pause_scheduler
//   POST /resume                      EngineCore.resume_scheduler
//   GET  /is_paused                   {"is_paused": bool}
//   POST /reset_prefix_cache?reset_running_requests=false&reset_external=false
//   POST /init_weight_transfer_engine, /start_weight_update, /start_draft_weight_update,
//        /update_weights, /finish_weight_update     the workers' weight transfer (collective_rpc)
//   POST /update_weight_version, GET /weight_info   EngineCore.set/get_weight_version
//
// Each is one UTILITY call (utility_call.h) per engine, with the method and arguments of that
// engine's wire generation (WireGeneration::control): an older engine gets what vLLM's frontend
// of its generation sent, and a route an engine's generation cannot serve as meant is refused
// before anything is sent. The calls go to every engine, or to the one named by
// X-data-parallel-rank; the route answers once every engine answered, failed, died or stayed
// silent past the timeout, and names each engine that did not succeed. vllm:engine_sleep_state
// follows each engine's answered sleep and wake-up calls.
//
// The routes exist only in development mode (VLLM_SERVER_DEV_MODE=1, as vLLM), behind
// --api-key when one is set (vLLM leaves them open).
//
// Thread safety: all methods may be called from any thread. Route handlers run on HTTP
// threads, OnUtilityOutput and OnEngineDead on the engine client's output thread; replies are
// sent outside the lock, and so are the UTILITY messages.
#ifndef VMETRICS_FRONTEND_ENGINE_CONTROL_H_
#define VMETRICS_FRONTEND_ENGINE_CONTROL_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "vmetrics/engine_core_client.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/http_route.h"
#include "vmetrics/utility_call.h"

namespace vmetrics::frontend {

// The paths of EngineControl::Routes (guarded by --api-key), each once, in the routes' order.
std::vector<std::string> EngineControlPaths();

class EngineControl {
 public:
  using SendFn =
      std::function<Status(int engine_index, EngineCoreRequestType type, std::string body)>;
  struct Options {
    SendFn send;
    std::vector<int64_t> engine_indexes;
    // How long a route waits for the engines' answers (--engine-control-timeout).
    std::chrono::milliseconds timeout{std::chrono::minutes(5)};
    // An engine answered a sleep (asleep, level) or wake-up call: vllm:engine_sleep_state.
    std::function<void(int64_t engine_index, bool asleep, int64_t level)> on_sleep_state;
    // The client_index of the UTILITY bodies: the output socket the engine answers on.
    int64_t client_index = 0;
  };

  explicit EngineControl(Options options);
  // Answers every route still waiting with a 503.
  ~EngineControl();
  EngineControl(const EngineControl&) = delete;
  EngineControl& operator=(const EngineControl&) = delete;

  // The wire generations engine `engine_index` may be (WireCandidates): which signatures it is
  // called with. An engine never set is called as the newest generation.
  void SetEngineWire(int64_t engine_index, uint32_t candidates);
  // An engine's UtilityOutput: the answer to a call, or ignored (not ours, or too late).
  void OnUtilityOutput(int64_t engine_index, const UtilityOutput& output);
  // Calls waiting on the engine fail, naming why; calls to it fail until it is ready again.
  void OnEngineDead(int64_t engine_index, const std::string& reason);
  void OnEngineReady(int64_t engine_index);
  // Answers every route still waiting with a 503 and refuses new ones. Idempotent.
  void Shutdown();

  // What one engine answered.
  struct EngineAnswer {
    int64_t engine_index = 0;
    bool ok = false;
    unsigned status = 0;  // when !ok: 400 refused, 500 the engine failed, 503 no answer
    std::string error;    // why not, when !ok
    UtilityArg value;     // the last call's result, when ok
  };
  // One UTILITY call of a plan.
  struct Call {
    std::string method;
    std::vector<UtilityArg> args;
  };
  // The calls one engine gets, in order (each sent once the previous one succeeded), from its
  // generation's signatures; an error (a route the generation cannot serve as meant) refuses the
  // whole request before anything is sent.
  using PlanFn = std::function<Result<std::vector<Call>>(const EngineControlCalls&)>;
  using DoneFn = std::function<void(std::vector<EngineAnswer>)>;

  // Run
  //
  // Sends every target engine (all, or `only` when set) its plan and calls `done` once with
  // every engine's answer, in engine order: at once (from this thread) when a plan is refused
  // (one answer, !ok, the refusal) or there is no engine; else from the thread that settled the
  // last engine. A refusal has engine_index -1.
  void Run(std::optional<int64_t> only, const PlanFn& plan, DoneFn done);

  // The routes above (handlers call `control()`, which may be null until the engines are
  // ready: then they answer 503).
  static std::vector<HttpRoute> Routes(const std::function<EngineControl*()>& control);

 private:
  struct Op;
  struct Pending {
    uint64_t op = 0;
    int64_t engine_index = 0;
  };
  struct Send {
    uint64_t op = 0;
    uint64_t call_id = 0;
    int64_t engine_index = 0;
    std::string body;
  };

  // Settles `engine` of `op` (REQUIRES: mu_); returns the op's done callback and answers when
  // it was the last.
  void SettleLocked(uint64_t op, int64_t engine, EngineAnswer answer,
                    std::vector<std::function<void()>>* finished);
  // The next call of `engine`'s plan in `op` as a message to send (REQUIRES: mu_).
  Send NextCallLocked(uint64_t op, int64_t engine);
  // Sends outside the lock; a call that cannot be sent settles its engine.
  void SendAll(std::vector<Send> sends);
  void ExpireLoop();

  Options options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  uint64_t next_op_ = 1;
  uint64_t next_call_id_ = 0;
  std::map<uint64_t, std::unique_ptr<Op>> ops_;
  std::map<uint64_t, Pending> pending_;  // by call_id
  std::map<int64_t, uint32_t> candidates_;
  std::set<int64_t> dead_;
  std::thread expirer_;
};

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_ENGINE_CONTROL_H_
