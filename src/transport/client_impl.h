// File: client_impl.h
//
// EngineCoreClient::Impl, shared by the files that implement the client: startup.cc (bind,
// handshake, registrations), output_loop.cc (the output thread) and engine_core_client.cc
// (the public methods). Not installed; include only from src/transport.
//
// Thread safety: `mu` guards `engines` and `pending_events`; `send_mu` serialises every use of
// the input ROUTER after startup. Everything else belongs to the startup thread until Start()
// and to the output thread after it.
#ifndef VMETRICS_TRANSPORT_CLIENT_IMPL_H_
#define VMETRICS_TRANSPORT_CLIENT_IMPL_H_

#include <atomic>
#include <chrono>
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

  // ---- startup.cc ----
  TransportStatus Bind();
  TransportStatus WaitForEngines();
  TransportStatus RunHandshake();
  TransportStatus RunRegistrations();
  // Waits until `socket` is readable, the deadline passes or a stop is requested, keeping the
  // monitors drained meanwhile (so no event is lost and each registration sees the events that
  // preceded it).
  WaitResult WaitReadable(void* socket, Clock::time_point deadline);
  bool InRange(int64_t index) const {
    return index >= options.engine_start_index &&
           index < options.engine_start_index + options.engine_count;
  }
  // Engine index of `identity`, or a Protocol error for `stage`.
  TransportStatus CheckIdentity(std::string_view identity, std::string_view stage,
                                int* index) const;

  // ---- output_loop.cc ----
  void RunLoop();
  void DrainInputMonitor();
  void DrainOutputMonitor();
  void HandleClosedOutputs();
  void HandleTick();
  void HandleOutput(size_t frame_count);
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
  BoundEndpoints endpoints;
  std::optional<internal::EngineLiveness> liveness;
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
  std::atomic<uint64_t> callback_exceptions{0};
  std::vector<zmq::message_t> frames;  // reused by the receiving thread
  std::vector<std::string_view> views;
};

}  // namespace vmetrics

#endif  // VMETRICS_TRANSPORT_CLIENT_IMPL_H_
