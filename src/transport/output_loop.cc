// SPDX-License-Identifier: Apache-2.0
// The output thread: receives every message the engines push to the output PULL socket and
// hands it to on_message in receive order; watches engine liveness on the side.
#include <algorithm>
#include <cerrno>
#include <exception>
#include <string>

#include "client_impl.h"
#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {
namespace {

// Messages taken from the PULL socket per wake-up before the monitors and the stop pipe are
// looked at again: large enough to amortise the poll, small enough that a stop or an engine
// death is noticed within one batch even under a flood of outputs.
constexpr int kBatch = 64;

}  // namespace

void EngineCoreClient::Impl::Emit(const EngineEvent& event) const {
  if (callbacks.on_engine_event) callbacks.on_engine_event(event);
}

void EngineCoreClient::Impl::MarkDead(const internal::EngineLiveness::Death& death) {
  EngineEvent event{death.engine_index, EngineEventKind::kDead, death.reason};
  bool report_now = false;
  {
    std::lock_guard<std::mutex> lock(mu);
    EngineInfo& info =
        engines[static_cast<size_t>(death.engine_index - options.engine_start_index)];
    info.alive = false;
    info.death_reason = death.reason;
    report_now = loop_running;
    if (!report_now) pending_events.push_back(event);
  }
  // Only the output thread sets loop_running and calls MarkDead while it is set, so the
  // callback runs on the output thread as promised. During startup the startup thread is the
  // one here, and tells its caller at once.
  if (report_now) {
    Emit(event);
  } else if (startup_progress) {
    startup_progress(event);
  }
}

void EngineCoreClient::Impl::Dropped(std::string_view socket, const Status& why) {
  dropped.fetch_add(1, std::memory_order_relaxed);
  if (!callbacks.on_input_dropped) return;
  // The kind is named by the failure's detail, the particulars by its message.
  std::string_view kind = "unexpected";
  switch (why.detail()) {
    case StatusDetail::kUnknownEngineIdentity:
      kind = "unknown engine identity";
      break;
    case StatusDetail::kNotIdentityAndMessage:
      kind = "not [identity, message]";
      break;
    case StatusDetail::kUndecodableMessage:
      kind = "undecodable";
      break;
    default:
      break;
  }
  callbacks.on_input_dropped(DroppedMessage{socket, kind, why.message()});
}

void EngineCoreClient::Impl::DrainHandshake() {
  // A batch at a time, as for outputs: a flood on this socket must not starve the others.
  for (int n = 0; n < kBatch; ++n) {
    size_t count = 0;
    if (internal::RecvMultipart(handshake.handle(), &frames, &count, ZMQ_DONTWAIT) <= 0) return;
    Status s = HandleHandshakeMessage(count, StatusStage::kHandshake, Strictness::kRunning);
    if (!s.ok()) Dropped("handshake", s);
  }
}

void EngineCoreClient::Impl::DrainInput() {
  input_bell.Clear();
  for (int n = 0; n < kBatch; ++n) {
    size_t count = 0;
    int rc = 0;
    {
      // Send() uses the same socket from other threads. A receive until EAGAIN also leaves
      // the socket's ZMQ_FD armed for the next message.
      std::lock_guard<std::mutex> lock(send_mu);
      rc = internal::RecvMultipart(input.handle(), &frames, &count, ZMQ_DONTWAIT);
    }
    if (rc <= 0) return;
    Status s = HandleInputMessage(count, Strictness::kRunning);
    if (!s.ok()) Dropped("input", s);
  }
  input_bell.Ring();  // more may wait: come back after the other sockets had their turn
}

void EngineCoreClient::Impl::DrainInputMonitor() {
  while (std::optional<internal::MonitorEvent> ev = input_monitor.Next()) {
    if (ev->event == ZMQ_EVENT_ACCEPTED) {
      liveness->OnInputAccepted(ev->value);
    } else if (ev->event == ZMQ_EVENT_DISCONNECTED) {
      if (auto death = liveness->OnInputDisconnected(ev->value, Clock::now())) MarkDead(*death);
    }
  }
}

void EngineCoreClient::Impl::DrainOutputMonitor() {
  while (std::optional<internal::MonitorEvent> ev = output_monitor.Next()) {
    if (ev->event == ZMQ_EVENT_ACCEPTED) {
      liveness->OnOutputAccepted(ev->value);
    } else if (ev->event == ZMQ_EVENT_DISCONNECTED) {
      // Handled once the PULL socket is drained: the connection's last messages (an
      // ENGINE_CORE_DEAD among them) were queued before it closed and must be read first.
      closed_outputs.push_back(ev->value);
    }
  }
}

void EngineCoreClient::Impl::HandleClosedOutputs() {
  for (int fd : closed_outputs) {
    if (auto death = liveness->OnOutputDisconnected(fd)) MarkDead(*death);
  }
  closed_outputs.clear();
}

void EngineCoreClient::Impl::HandleTick(bool outputs_drained) {
  for (const internal::EngineLiveness::Death& death :
       liveness->OnTick(Clock::now(), outputs_drained)) {
    MarkDead(death);
  }
}

void EngineCoreClient::Impl::HandleOutput(size_t frame_count) {
  views.resize(frame_count);
  for (size_t i = 0; i < frame_count; ++i) {
    views[i] = std::string_view(static_cast<const char*>(frames[i].data()), frames[i].size());
  }
  const int fd = internal::SourceFd(frames[0]);
  const internal::ConnectionKey connection = internal::ConnectionKeyOf(frames[0]);
  if (frame_count == 1 && views[0] == kEngineCoreDead) {
    if (auto death = liveness->OnEngineCoreDead(connection, Clock::now())) MarkDead(*death);
    return;
  }
  // Learn which engine owns this connection, for the day it sends ENGINE_CORE_DEAD. A frame
  // that does not start with an engine index teaches nothing and is delivered all the same.
  if (std::optional<int64_t> engine_index = internal::PeekEngineIndex(views[0])) {
    liveness->OnOutputMessage(connection, fd, *engine_index);
  }
  const uint64_t number = messages.fetch_add(1, std::memory_order_relaxed) + 1;
  if (!callbacks.on_message) return;
  // Decoding happens in the callback, and a message it cannot make sense of — malformed bytes,
  // a newer shape, even an exception — is that message's problem only: the next message is
  // independent and the engines keep sending, so the loop goes on. (The Rust frontend treats a
  // decode error as fatal; vmetrics counts and skips: docs/design.md §4.2.)
  try {
    callbacks.on_message(std::span<const std::string_view>(views.data(), frame_count), number);
  } catch (...) {
    callback_exceptions.fetch_add(1, std::memory_order_relaxed);
  }
}

void EngineCoreClient::Impl::RunLoop() {
  loop_thread_id = std::this_thread::get_id();
  std::vector<EngineEvent> startup_events;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const EngineInfo& info : engines) {
      std::string reason = "registered";
      if (info.ready_response.empty_registration) reason += " (empty registration: older engine)";
      startup_events.push_back({info.index, EngineEventKind::kConnected, std::move(reason)});
    }
    startup_events.insert(startup_events.end(), pending_events.begin(), pending_events.end());
    pending_events.clear();
    loop_running = true;
  }
  for (const EngineEvent& event : startup_events) Emit(event);
  // What arrived on the input socket since startup, before its fd is watched.
  DrainInput();

  Status exit_status;
  const bool frontend = options.mode == StartupMode::kFrontend;
  for (;;) {
    // The input and handshake ROUTERs are read too: engines join again through them, and
    // whatever else arrives must not pile up (engine_core_client.h). Send() uses the input
    // socket from other threads, so it is not polled as a socket (zmq_poll would touch it
    // unlocked) but through its ZMQ_FD, and Send() rings input_bell when its own use of the
    // socket took that fd's signal while a message waits.
    zmq_pollitem_t items[] = {
        {output.handle(), 0, ZMQ_POLLIN, 0},
        {input_monitor.handle(), 0, ZMQ_POLLIN, 0},
        {output_monitor.handle(), 0, ZMQ_POLLIN, 0},
        {nullptr, wake.read_fd(), ZMQ_POLLIN, 0},
        {nullptr, input_signal_fd, ZMQ_POLLIN, 0},
        {nullptr, input_bell.fd(), ZMQ_POLLIN, 0},
        {frontend ? handshake.handle() : nullptr, 0, ZMQ_POLLIN, 0},
    };
    // Sleep until something arrives, or until an engine whose input closed has waited long
    // enough for its last word (EngineLiveness rule c).
    long timeout_ms = -1;
    if (std::optional<Clock::time_point> deadline = liveness->NextDeadline()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
      timeout_ms = std::max<long>(0, static_cast<long>(left.count()));
    }
    if (zmq_poll(items, frontend ? 7 : 6, timeout_ms) < 0) {
      if (zmq_errno() == EINTR) continue;
      exit_status = Status::Socket(StatusStage::kOutput,
                                   std::string("poll failed: ") + zmq_strerror(zmq_errno()));
      break;
    }
    if (items[3].revents & ZMQ_POLLIN) break;  // RequestStop()
    // Order within one wake-up: output-connection events, then the outputs, then closed output
    // connections once nothing of theirs is left to read, then input disconnects — an exiting
    // engine's ENGINE_CORE_DEAD was sent before its connections closed, so reading it first
    // gives the exact reason.
    if (items[2].revents & ZMQ_POLLIN) DrainOutputMonitor();
    bool drained = true;
    if (items[0].revents & ZMQ_POLLIN) {
      drained = false;
      if (output_behind_since.load(std::memory_order_relaxed) == 0) {
        output_behind_since.store(Clock::now().time_since_epoch().count(),
                                  std::memory_order_relaxed);
      }
      for (int n = 0; n < kBatch; ++n) {
        size_t count = 0;
        const int rc = internal::RecvMultipart(output.handle(), &frames, &count, ZMQ_DONTWAIT);
        if (rc == 0) {
          drained = true;
          break;
        }
        if (rc < 0) {
          // Unlike a bad message, a failed receive is the socket or the context failing
          // (ETERM, ENOTSOCK, EFAULT): nothing more can arrive on it, so the loop ends and
          // says why.
          exit_status = Status::Socket(StatusStage::kOutput,
                                       std::string("receive failed: ") + zmq_strerror(zmq_errno()));
          break;
        }
        HandleOutput(count);
      }
      if (!exit_status.ok()) break;
    }
    if (drained) output_behind_since.store(0, std::memory_order_relaxed);
    if (drained && !closed_outputs.empty()) HandleClosedOutputs();
    if (items[1].revents & ZMQ_POLLIN) DrainInputMonitor();
    // Deaths first (above), then what joins: an engine that died and came back within one
    // wake-up is dead, then alive.
    if (frontend && (items[6].revents & ZMQ_POLLIN)) DrainHandshake();
    if ((items[4].revents | items[5].revents) & ZMQ_POLLIN) DrainInput();
    // An engine's grace (rule c) is longer while the output socket holds messages: when the
    // loop is behind, the engine's last word may still be queued there, seconds late.
    HandleTick(drained);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    loop_running = false;
  }
  if (callbacks.on_loop_exit) callbacks.on_loop_exit(exit_status);
}

}  // namespace vmetrics
