// SPDX-License-Identifier: Apache-2.0
// Startup: binding, the HELLO/INIT/READY handshake (frontend mode) and the input registrations
// (both modes), as vLLM's wait_for_engine_startup (vllm/v1/engine/utils.py) and the Rust
// frontend's connect_handshake (rust/src/engine-core-client/src/transport.rs) do them at
// vllm-project/vllm 6adad087; docs/design.md §5.2-§5.4. The same message handling serves an
// engine that joins again once the output loop runs (output_loop.cc), with rule breaks dropped
// instead of fatal.
#include <algorithm>
#include <cerrno>
#include <string>

#include "client_impl.h"
#include "vmetrics/handshake.h"

namespace vmetrics {
namespace {

constexpr std::string_view kDefaultDataAddress = "tcp://127.0.0.1:0";

std::string Ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

std::string ZmqError() { return zmq_strerror(zmq_errno()); }

// The limits of a ROUTER that engines only join through (engine_core_client.h): a bounded
// queue per connection and a bounded message size, set before bind so every connection gets
// them.
void LimitJoinSocket(zmq::socket_t& socket) {
  socket.set(zmq::sockopt::rcvhwm, kInputHighWaterMark);
  socket.set(zmq::sockopt::maxmsgsize, kMaxInputMessageBytes);
}

}  // namespace

Status EngineCoreClient::Impl::Bind() {
  if (phase != Phase::kNew) return Status::InvalidArgument("Bind() called twice");
  const EngineCoreClientOptions& o = options;
  if (o.engine_count < 1) return Status::InvalidArgument("engine_count must be >= 1");
  if (o.engine_start_index < 0 || o.engine_start_index + o.engine_count > 65536) {
    return Status::InvalidArgument("engines " + std::to_string(o.engine_start_index) + ".." +
                                   std::to_string(o.engine_start_index + o.engine_count - 1) +
                                   " do not fit the 2-byte engine identity");
  }
  const bool frontend = o.mode == StartupMode::kFrontend;
  if (o.max_output_message_bytes < 1) {
    return Status::InvalidArgument("max_output_message_bytes must be >= 1");
  }
  if (frontend && o.handshake_address.empty()) {
    return Status::InvalidArgument("frontend mode needs a handshake address");
  }
  if (!frontend && (o.input_address.empty() || o.output_address.empty())) {
    return Status::InvalidArgument("bootstrapped mode needs an input and an output address");
  }
  if (!wake.valid()) return Status::Socket(StatusStage::kBind, "cannot create the wake-up pipe");
  phase = Phase::kFailed;  // until everything below succeeded

  const std::string input_address =
      o.input_address.empty() ? std::string(kDefaultDataAddress) : o.input_address;
  const std::string output_address =
      o.output_address.empty() ? std::string(kDefaultDataAddress) : o.output_address;
  try {
    input = zmq::socket_t(context, zmq::socket_type::router);
    output = zmq::socket_t(context, zmq::socket_type::pull);
    // At shutdown the input socket lingers for the ABORTs of the requests still in flight
    // (RequestService::Shutdown sends them just before), at most kShutdownAbortLingerMs: an
    // engine that does not read them holds the exit no longer. Nothing queued on the output
    // socket matters then.
    internal::ConfigureSocket(input, input_address, internal::kShutdownAbortLingerMs);
    internal::ConfigureSocket(output, output_address, 0);
    // Engines send one registration on the input socket; requests go the other way, whose
    // high-water mark stays 0 (a request is never dropped).
    LimitJoinSocket(input);
    // No receive high-water mark on the output socket (ConfigureSocket's 0): libzmq 4.3.4
    // drops the messages a high-water mark holds back when their engine disconnects (with 256,
    // 37 of an engine's last 300 messages were lost), and an engine's last messages (its
    // ENGINE_CORE_DEAD among them) must be read. Each frame is bounded instead, and /health
    // says when outputs wait (output_backlog()).
    output.set(zmq::sockopt::maxmsgsize, o.max_output_message_bytes);
    // Send() to an engine that is gone must fail, not vanish silently.
    input.set(zmq::sockopt::router_mandatory, 1);
    // A restarted engine reuses its identity (the engine index) and may connect before the
    // ROUTER has seen its previous connection close; without hand-over libzmq drops the new
    // connection's messages, so the restart would never be seen.
    input.set(zmq::sockopt::router_handover, 1);
  } catch (const zmq::error_t& e) {
    return Status::Socket(StatusStage::kBind, std::string("cannot create sockets: ") + e.what());
  }
  // Monitors first, so no connection can be accepted unseen.
  if (Status s = input_monitor.Attach(context, input, ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED);
      !s.ok()) {
    return s;
  }
  if (Status s =
          output_monitor.Attach(context, output, ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED);
      !s.ok()) {
    return s;
  }
  // Data-plane sockets first, then the handshake socket (vLLM's order), so INIT can carry
  // the real endpoints and no engine says HELLO before they exist.
  if (Status s = internal::BindSocket(input, input_address, "input ROUTER",
                                      StatusDetail::kInputSocket, &endpoints.input);
      !s.ok()) {
    return s;
  }
  if (Status s = internal::BindSocket(output, output_address, "output PULL",
                                      StatusDetail::kOutputSocket, &endpoints.output);
      !s.ok()) {
    return s;
  }
  if (frontend) {
    try {
      handshake = zmq::socket_t(context, zmq::socket_type::router);
      // ROUTER_MANDATORY stays off here: an engine that left after HELLO must not make
      // the INIT reply fail the whole startup; its missing READY will.
      internal::ConfigureSocket(handshake, o.handshake_address, 0);
      LimitJoinSocket(handshake);
      // As on the input socket: a restarted engine's HELLO must reach us (see above).
      handshake.set(zmq::sockopt::router_handover, 1);
    } catch (const zmq::error_t& e) {
      return Status::Socket(StatusStage::kBind, std::string("cannot create sockets: ") + e.what());
    }
    if (Status s = internal::BindSocket(handshake, o.handshake_address, "handshake ROUTER",
                                        StatusDetail::kHandshakeSocket, &endpoints.handshake);
        !s.ok()) {
      return s;
    }
    HandshakeInit init;
    init.addresses.inputs = {internal::ReplaceTcpHost(endpoints.input, o.advertised_host)};
    init.addresses.outputs = {internal::ReplaceTcpHost(endpoints.output, o.advertised_host)};
    init_bytes = EncodeHandshakeInit(init);
  }

  liveness.emplace(o.engine_start_index, o.engine_count);
  joining.assign(static_cast<size_t>(o.engine_count), Joining{});
  {
    std::lock_guard<std::mutex> lock(mu);
    engines.resize(static_cast<size_t>(o.engine_count));
    for (int i = 0; i < o.engine_count; ++i) {
      engines[static_cast<size_t>(i)].index = o.engine_start_index + i;
      engines[static_cast<size_t>(i)].identity =
          EngineIdentity(static_cast<uint16_t>(o.engine_start_index + i));
    }
  }
  phase = Phase::kBound;
  return Status::Ok();
}

EngineCoreClient::Impl::WaitResult EngineCoreClient::Impl::WaitReadable(Clock::time_point deadline,
                                                                        int* which) {
  const bool frontend = options.mode == StartupMode::kFrontend;
  for (;;) {
    if (wake.Notified()) return WaitResult::kStopped;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return WaitResult::kTimeout;
    // Round up so a poll never returns just before the deadline and spins.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    const long timeout_ms = std::min<long>(left.count(), 1L << 30);
    // The handshake socket last, so the other slots keep their places without it.
    zmq_pollitem_t items[] = {
        {input.handle(), 0, ZMQ_POLLIN, 0},
        {input_monitor.handle(), 0, ZMQ_POLLIN, 0},
        {output_monitor.handle(), 0, ZMQ_POLLIN, 0},
        {nullptr, wake.read_fd(), ZMQ_POLLIN, 0},
        {frontend ? handshake.handle() : nullptr, 0, ZMQ_POLLIN, 0},
    };
    const int rc = zmq_poll(items, frontend ? 5 : 4, timeout_ms);
    if (rc < 0) {
      if (zmq_errno() == EINTR) continue;
      return WaitResult::kError;
    }
    if (items[3].revents & ZMQ_POLLIN) return WaitResult::kStopped;
    if (items[1].revents & ZMQ_POLLIN) DrainInputMonitor();
    if (items[2].revents & ZMQ_POLLIN) DrainOutputMonitor();
    if (frontend && (items[4].revents & ZMQ_POLLIN)) {
      *which = 0;
      return WaitResult::kReadable;
    }
    if (items[0].revents & ZMQ_POLLIN) {
      *which = 1;
      return WaitResult::kReadable;
    }
  }
}

Status EngineCoreClient::Impl::CheckIdentity(std::string_view identity, StatusStage stage,
                                             int* index) const {
  const std::optional<uint16_t> idx = EngineIndexFromIdentity(identity);
  if (!idx || !InRange(*idx)) {
    std::string msg = "unknown engine identity " + internal::FormatIdentity(identity);
    if (idx) msg += " (engine " + std::to_string(*idx) + ")";
    msg += "; expected engines " + std::to_string(options.engine_start_index) + ".." +
           std::to_string(options.engine_start_index + options.engine_count - 1);
    return Status::Protocol(stage, msg, StatusDetail::kUnknownEngineIdentity);
  }
  *index = *idx;
  return Status::Ok();
}

void EngineCoreClient::Impl::MaybeJoined(size_t slot, Strictness strictness) {
  const Joining& j = joining[slot];
  if (!JoinComplete(j)) return;
  const int index = options.engine_start_index + static_cast<int>(slot);
  if (strictness == Strictness::kStartup) {
    if (startup_progress) startup_progress({index, EngineEventKind::kConnected, "ready"});
    return;
  }
  // A new life: what liveness knew of the previous one no longer applies, then the new input
  // connection is the one whose closing will mean its death.
  liveness->Revive(index);
  {
    std::lock_guard<std::mutex> lock(mu);
    EngineInfo& info = engines[slot];
    info.alive = true;
    info.death_reason.clear();
  }
  Emit({index, EngineEventKind::kConnected, "registered again", /*rejoined=*/true});
  if (auto death = liveness->OnRegistered(index, j.input_fd, Clock::now())) MarkDead(*death);
}

Status EngineCoreClient::Impl::HandleHandshakeMessage(size_t nframes, StatusStage stage,
                                                      Strictness strictness) {
  const StatusStage st = stage;
  const bool startup = strictness == Strictness::kStartup;
  if (nframes != 2) {
    return Status::Protocol(st,
                            "expected [identity, message] on the handshake socket, got " +
                                std::to_string(nframes) + " frames",
                            StatusDetail::kNotIdentityAndMessage);
  }
  const std::string_view identity(static_cast<const char*>(frames[0].data()), frames[0].size());
  const std::string_view body(static_cast<const char*>(frames[1].data()), frames[1].size());
  int index = 0;
  if (Status s = CheckIdentity(identity, stage, &index); !s.ok()) return s;
  const size_t slot = static_cast<size_t>(index - options.engine_start_index);
  const std::string who = "engine " + std::to_string(index);
  Result<HandshakeMessage> msg = DecodeHandshakeMessage(body);
  if (!msg.ok()) {
    return Status::Protocol(
        st, who + " sent an undecodable handshake message: " + msg.status().ToString(),
        StatusDetail::kUndecodableMessage);
  }
  Joining& j = joining[slot];
  if (msg->status == kHandshakeHello) {
    if (startup && j.hello) return Status::Protocol(st, "duplicate HELLO from " + who);
    if (!startup) {
      // A HELLO once running starts a new life of the engine. One that was alive has
      // restarted: its previous life ends here (its requests with it).
      bool alive = false;
      {
        std::lock_guard<std::mutex> lock(mu);
        alive = engines[slot].alive;
      }
      if (alive) {
        if (auto death = liveness->Kill(index, "said HELLO again (restarted)")) MarkDead(*death);
      }
      j = Joining{};
    }
    try {
      handshake.send(zmq::buffer(identity), zmq::send_flags::sndmore);
      handshake.send(zmq::buffer(init_bytes), zmq::send_flags::none);
    } catch (const zmq::error_t& e) {
      return Status::Socket(st, "cannot send INIT to " + who + ": " + e.what());
    }
    j.hello = true;
    std::lock_guard<std::mutex> lock(mu);
    engines[slot].hello = std::move(*msg);
    return Status::Ok();
  }
  if (msg->status == kHandshakeReady) {
    // A READY during the HELLO stage is the "overlapping READY" (docs/design.md §5.2): this
    // engine finished while others have not said HELLO yet. Fine, as long as it said HELLO.
    if (!j.hello) return Status::Protocol(st, "READY from " + who + " before its HELLO");
    if (j.ready) return Status::Protocol(st, "duplicate READY from " + who);
    j.ready = true;
    {
      std::lock_guard<std::mutex> lock(mu);
      engines[slot].ready = std::move(*msg);
    }
    MaybeJoined(slot, strictness);
    return Status::Ok();
  }
  return Status::Protocol(
      st, "unexpected status '" + msg->status + "' from " + who + " (expected HELLO or READY)");
}

Status EngineCoreClient::Impl::HandleInputMessage(size_t nframes, Strictness strictness) {
  const StatusStage stage = StatusStage::kInputRegistration;
  const bool startup = strictness == Strictness::kStartup;
  if (nframes != 2) {
    return Status::Protocol(stage,
                            "expected [identity, ready response] on the input socket, got " +
                                std::to_string(nframes) + " frames",
                            StatusDetail::kNotIdentityAndMessage);
  }
  const std::string_view identity(static_cast<const char*>(frames[0].data()), frames[0].size());
  const std::string_view body(static_cast<const char*>(frames[1].data()), frames[1].size());
  int index = 0;
  if (Status s = CheckIdentity(identity, stage, &index); !s.ok()) return s;
  const size_t slot = static_cast<size_t>(index - options.engine_start_index);
  const std::string who = "engine " + std::to_string(index);
  Joining& j = joining[slot];
  // The connection it came on (see below for why from the payload frame).
  int fd = internal::SourceFd(frames[1]);
  if (fd < 0) fd = internal::SourceFd(frames[0]);
  if (j.registered) {
    bool alive = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      alive = engines[slot].alive;
    }
    // Frontend mode: a new life starts with HELLO, so this is a second registration of the
    // same life. Bootstrapped mode: the same again over the connection of a live engine.
    if (startup || options.mode == StartupMode::kFrontend || (alive && fd == j.input_fd)) {
      return Status::Protocol(stage, "duplicate registration from " + who);
    }
    // Bootstrapped mode, over another connection (a ROUTER keeps an identity for one
    // connection at a time, so the previous one is gone) or after its death: the engine has
    // restarted. Its previous life ends here, unless that was already seen.
    if (auto death = liveness->Kill(index, "registered again (restarted)")) MarkDead(*death);
    j = Joining{};
  }
  Result<EngineCoreReadyResponse> rr = DecodeEngineCoreReadyResponse(body);
  if (!rr.ok()) {
    return Status::Protocol(stage,
                            who + " sent an undecodable ready response: " + rr.status().ToString(),
                            StatusDetail::kUndecodableMessage);
  }
  j.registered = true;
  {
    std::lock_guard<std::mutex> lock(mu);
    engines[slot].ready_response = std::move(*rr);
  }
  // Ties this engine to its input connection, whose closing will mean its death. The
  // monitor events that preceded this message were drained by WaitReadable. The fd comes
  // from the payload frame: libzmq 4.3 gives the identity frame no metadata when zmq_poll
  // prefetched the message (router_t::xhas_in).
  j.input_fd = fd;
  if (startup) {
    if (auto death = liveness->OnRegistered(index, fd, Clock::now())) MarkDead(*death);
  }
  MaybeJoined(slot, strictness);
  return Status::Ok();
}

Status EngineCoreClient::Impl::WaitForEngines(
    const std::function<void(const EngineEvent&)>& on_progress) {
  if (phase != Phase::kBound) {
    return Status::InvalidArgument("WaitForEngines() needs a successful Bind() first");
  }
  phase = Phase::kFailed;
  startup_progress = on_progress;
  const int count = options.engine_count;
  auto done = [&](bool Joining::*step) {
    int n = 0;
    for (const Joining& j : joining) n += (j.*step) ? 1 : 0;
    return n;
  };
  auto missing = [&](bool Joining::*step) {
    std::vector<int> out;
    for (int i = 0; i < count; ++i) {
      if (!(joining[static_cast<size_t>(i)].*step)) out.push_back(options.engine_start_index + i);
    }
    return internal::FormatIndexList(out);
  };
  struct StageSpec {
    StatusStage stage;
    std::chrono::milliseconds timeout;
    bool Joining::*step;
  };
  std::vector<StageSpec> stages;
  if (options.mode == StartupMode::kFrontend) {
    stages.push_back({StatusStage::kHello, options.hello_timeout, &Joining::hello});
    stages.push_back({StatusStage::kReady, options.ready_timeout, &Joining::ready});
  }
  stages.push_back(
      {StatusStage::kInputRegistration, options.registration_timeout, &Joining::registered});

  // Both sockets are read in every stage: an engine sends its registration before its READY,
  // so an engine is ready (and reported) as soon as its own READY is in, not when the last
  // engine's is.
  for (const StageSpec& stage : stages) {
    const std::string name = StatusStageName(stage.stage);
    const Clock::time_point deadline = Clock::now() + stage.timeout;
    while (done(stage.step) < count) {
      int which = 0;
      switch (WaitReadable(deadline, &which)) {
        case WaitResult::kReadable:
          break;
        case WaitResult::kTimeout: {
          const int n = done(stage.step);
          if (stage.step == &Joining::registered) {
            return Status::Timeout(
                stage.stage,
                "timed out after " + Ms(stage.timeout) +
                    " waiting for the input registration (ready response) of engine(s) " +
                    missing(stage.step) + " (" + std::to_string(n) + " of " +
                    std::to_string(count) + " registered)");
          }
          const char* verb = stage.step == &Joining::hello ? "said HELLO" : "ready";
          return Status::Timeout(
              stage.stage, "timed out after " + Ms(stage.timeout) + " waiting for " + name +
                               " from engine(s) " + missing(stage.step) + " (" + std::to_string(n) +
                               " of " + std::to_string(count) + " " + verb + ")");
        }
        case WaitResult::kStopped:
          return Status::Stopped(stage.stage);
        case WaitResult::kError:
          return Status::Socket(stage.stage, "poll failed: " + ZmqError());
      }
      void* socket = which == 0 ? handshake.handle() : input.handle();
      size_t nframes = 0;
      const int rc = internal::RecvMultipart(socket, &frames, &nframes, ZMQ_DONTWAIT);
      if (rc == 0) continue;
      if (rc < 0) return Status::Socket(stage.stage, "receive failed: " + ZmqError());
      Status s = which == 0 ? HandleHandshakeMessage(nframes, stage.stage, Strictness::kStartup)
                            : HandleInputMessage(nframes, Strictness::kStartup);
      if (!s.ok()) return s;
    }
  }
  startup_progress = nullptr;
  phase = Phase::kReady;
  return Status::Ok();
}

}  // namespace vmetrics
