// SPDX-License-Identifier: Apache-2.0
// File: client_impl.h
//
// EngineCoreClient::Impl, shared by the files that implement the client: startup.cc (bind,
// the handshake and registrations, at startup and when an engine joins again), output_loop.cc
// (the output thread) and engine_core_client.cc (the public methods). Not installed; include
// only from src/transport.
//
// Thread safety: `mu` guards `engines` and `pending_events`; `send_mu` serialises every use of
// the input ROUTER after startup (sends from any thread, receives on the output thread).
// Everything else belongs to the startup thread until Start() and to the output thread after
// it.
#ifndef VMETRICS_TRANSPORT_CLIENT_IMPL_H_
#define VMETRICS_TRANSPORT_CLIENT_IMPL_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "engine_liveness.h"
#include "socket_monitor.h"
#include "vmetrics/engine_core_client.h"
#include "vmetrics/internal/zmq_util.h"

namespace vmetrics {

struct EngineCoreClient::Impl {
  using Clock = std::chrono::steady_clock;
  enum class Phase : uint8_t { kNew, kBound, kReady, kRunning, kFailed };
  enum class WaitResult : uint8_t { kReadable, kTimeout, kStopped, kError };

  explicit Impl(EngineCoreClientOptions opts) : options(std::move(opts)) {}
  ~Impl();

  // What the current life of an engine has done towards being ready: HELLO (INIT sent) and
  // READY on the handshake socket (frontend mode), its registration (ready response) on the
  // input socket. An engine joins when it has all it needs: the three in frontend mode, the
  // registration in bootstrapped mode. A HELLO after startup starts a new life.
  struct Joining {
    bool hello = false;
    bool ready = false;
    bool registered = false;
    int input_fd = -1;  // the connection its registration arrived on
  };
  // How a handshake or input message that breaks the rules is treated: fatal during startup
  // (vLLM's frontend gives up), dropped and counted once running (a late or hostile peer must
  // not take the service down).
  enum class Strictness : uint8_t { kStartup, kRunning };

  // ---- startup.cc ----
  Status Bind();
  Status WaitForEngines(const std::function<void(const EngineEvent&)>& on_progress);
  // Waits until the handshake or the input socket is readable (*which: 0 handshake, 1 input),
  // the deadline passes or a stop is requested, keeping the monitors drained meanwhile (so no
  // event is lost and each registration sees the events that preceded it).
  WaitResult WaitReadable(Clock::time_point deadline, int* which);
  // One message from the handshake ROUTER / the input ROUTER (already received into
  // `frames`). Not ok: the message broke the rules (see Strictness); the error names it.
  Status HandleHandshakeMessage(size_t nframes, StatusStage stage, Strictness strictness);
  Status HandleInputMessage(size_t nframes, Strictness strictness);
  // An engine whose life completed what joining needs: during startup it is reported to the
  // progress callback; once running it is alive again (EngineEventKind::kConnected).
  void MaybeJoined(size_t slot, Strictness strictness);
  bool JoinComplete(const Joining& j) const {
    return options.mode == StartupMode::kFrontend ? j.hello && j.ready && j.registered
                                                  : j.registered;
  }
  bool InRange(int64_t index) const {
    return index >= options.engine_start_index &&
           index < options.engine_start_index + options.engine_count;
  }
  // Engine index of `identity`, or a Protocol error for `stage`.
  Status CheckIdentity(std::string_view identity, StatusStage stage, int* index) const;

  // ---- output_loop.cc ----
  void RunLoop();
  void DrainInputMonitor();
  void DrainOutputMonitor();
  void HandleClosedOutputs();
  void HandleTick(bool outputs_drained);
  void HandleOutput(size_t frame_count);
  // Receives and handles what waits on the handshake or input ROUTER once running; a message
  // that is not part of an engine joining again is dropped and reported (on_input_dropped).
  void DrainHandshake();
  void DrainInput();
  void Dropped(std::string_view socket, const Status& why);
  // Records a death; reports it now when the loop runs, at loop start otherwise.
  void MarkDead(const internal::EngineLiveness::Death& death);
  void Emit(const EngineEvent& event) const;

  EngineCoreClientOptions options;
  std::atomic<Phase> phase{Phase::kNew};

  // Declared first so it is destroyed last, after every socket.
  zmq::context_t context{1};
  zmq::socket_t handshake;
  zmq::socket_t input;
  zmq::socket_t output;
  internal::SocketMonitor input_monitor;
  internal::SocketMonitor output_monitor;
  internal::WakePipe wake;
  // The input socket's ZMQ_FD (set by Start) and the bell that says "look at the input socket
  // again" (output_loop.cc says why).
  int input_signal_fd = -1;
  internal::Doorbell input_bell;
  BoundEndpoints endpoints;
  std::optional<internal::EngineLiveness> liveness;
  std::vector<Joining> joining;  // by slot
  std::string init_bytes;        // INIT, the same for every engine and every life
  // During WaitForEngines: engines that joined or died (on the startup thread).
  std::function<void(const EngineEvent&)> startup_progress;
  std::vector<int> closed_outputs;  // output fds whose DISCONNECTED waits for the PULL to drain

  mutable std::mutex mu;
  std::vector<EngineInfo> engines;          // by index - engine_start_index
  std::vector<EngineEvent> pending_events;  // deaths seen before the loop started
  bool loop_running = false;                // guarded by mu

  std::mutex send_mu;
  std::thread thread;
  std::atomic<std::thread::id> loop_thread_id{};
  EngineCoreClientCallbacks callbacks;
  std::atomic<uint64_t> messages{0};
  // When the output thread last found the output socket non-empty after finding it empty
  // (steady_clock ticks); 0 while it is drained (output_backlog()).
  std::atomic<int64_t> output_behind_since{0};
  std::atomic<uint64_t> callback_exceptions{0};
  std::atomic<uint64_t> dropped{0};
  std::vector<zmq::message_t> frames;  // reused by the receiving thread
  std::vector<std::string_view> views;
};

}  // namespace vmetrics

#endif  // VMETRICS_TRANSPORT_CLIENT_IMPL_H_
