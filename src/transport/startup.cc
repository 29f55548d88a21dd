// Startup: binding, the HELLO/INIT/READY handshake (frontend mode) and the input registrations
// (both modes), as vLLM's wait_for_engine_startup (vllm/v1/engine/utils.py) and the Rust
// frontend's connect_handshake (rust/src/engine-core-client/src/transport.rs) do them at
// vllm-project/vllm 6adad087; docs/design.md §5.2-§5.4.
#include <algorithm>
#include <cerrno>
#include <string>

#include "client_impl.h"
#include "vmetrics/handshake.h"

namespace vmetrics {
namespace {

constexpr std::string_view kStageHello = "HELLO";
constexpr std::string_view kStageReady = "READY";
constexpr std::string_view kStageRegistration = "input registration";
constexpr std::string_view kDefaultDataAddress = "tcp://127.0.0.1:0";

std::string Ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

std::string ZmqError() { return zmq_strerror(zmq_errno()); }

}  // namespace

TransportStatus EngineCoreClient::Impl::Bind() {
  if (phase != Phase::kNew) return TransportStatus::InvalidArgument("Bind() called twice");
  const EngineCoreClientOptions& o = options;
  if (o.engine_count < 1) return TransportStatus::InvalidArgument("engine_count must be >= 1");
  if (o.engine_start_index < 0 || o.engine_start_index + o.engine_count > 65536) {
    return TransportStatus::InvalidArgument(
        "engines " + std::to_string(o.engine_start_index) + ".." +
        std::to_string(o.engine_start_index + o.engine_count - 1) +
        " do not fit the 2-byte engine identity");
  }
  const bool frontend = o.mode == StartupMode::kFrontend;
  if (frontend && o.handshake_address.empty()) {
    return TransportStatus::InvalidArgument("frontend mode needs a handshake address");
  }
  if (!frontend && (o.input_address.empty() || o.output_address.empty())) {
    return TransportStatus::InvalidArgument(
        "bootstrapped mode needs an input and an output address");
  }
  if (!wake.valid()) return TransportStatus::Socket("bind", "cannot create the wake-up pipe");
  phase = Phase::kFailed;  // until everything below succeeded

  const std::string input_address =
      o.input_address.empty() ? std::string(kDefaultDataAddress) : o.input_address;
  const std::string output_address =
      o.output_address.empty() ? std::string(kDefaultDataAddress) : o.output_address;
  try {
    input = zmq::socket_t(context, zmq::socket_type::router);
    output = zmq::socket_t(context, zmq::socket_type::pull);
    // The frontend closes without lingering: at shutdown nothing it still queues matters.
    internal::ConfigureSocket(input, input_address, 0);
    internal::ConfigureSocket(output, output_address, 0);
    // Send() to an engine that is gone must fail, not vanish silently.
    input.set(zmq::sockopt::router_mandatory, 1);
  } catch (const zmq::error_t& e) {
    return TransportStatus::Socket("bind", std::string("cannot create sockets: ") + e.what());
  }
  // Monitors first, so no connection can be accepted unseen.
  if (TransportStatus s =
          input_monitor.Attach(context, input, ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED);
      !s.ok()) {
    return s;
  }
  if (TransportStatus s =
          output_monitor.Attach(context, output, ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED);
      !s.ok()) {
    return s;
  }
  // Data-plane sockets first, then the handshake socket (vLLM's order), so INIT can carry
  // the real endpoints and no engine says HELLO before they exist.
  if (TransportStatus s =
          internal::BindSocket(input, input_address, "input ROUTER", &endpoints.input);
      !s.ok()) {
    return s;
  }
  if (TransportStatus s =
          internal::BindSocket(output, output_address, "output PULL", &endpoints.output);
      !s.ok()) {
    return s;
  }
  if (frontend) {
    try {
      handshake = zmq::socket_t(context, zmq::socket_type::router);
      // ROUTER_MANDATORY stays off here: an engine that left after HELLO must not make
      // the INIT reply fail the whole startup; its missing READY will.
      internal::ConfigureSocket(handshake, o.handshake_address, 0);
    } catch (const zmq::error_t& e) {
      return TransportStatus::Socket("bind", std::string("cannot create sockets: ") + e.what());
    }
    if (TransportStatus s = internal::BindSocket(handshake, o.handshake_address, "handshake ROUTER",
                                                 &endpoints.handshake);
        !s.ok()) {
      return s;
    }
  }

  liveness.emplace(o.engine_start_index, o.engine_count);
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
  return TransportStatus::Ok();
}

EngineCoreClient::Impl::WaitResult EngineCoreClient::Impl::WaitReadable(
    void* socket, Clock::time_point deadline) {
  for (;;) {
    if (wake.Notified()) return WaitResult::kStopped;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return WaitResult::kTimeout;
    // Round up so a poll never returns just before the deadline and spins.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    const long timeout_ms = std::min<long>(left.count(), 1L << 30);
    zmq_pollitem_t items[] = {
        {socket, 0, ZMQ_POLLIN, 0},
        {input_monitor.handle(), 0, ZMQ_POLLIN, 0},
        {output_monitor.handle(), 0, ZMQ_POLLIN, 0},
        {nullptr, wake.read_fd(), ZMQ_POLLIN, 0},
    };
    const int rc = zmq_poll(items, 4, timeout_ms);
    if (rc < 0) {
      if (zmq_errno() == EINTR) continue;
      return WaitResult::kError;
    }
    if (items[3].revents & ZMQ_POLLIN) return WaitResult::kStopped;
    if (items[1].revents & ZMQ_POLLIN) DrainInputMonitor();
    if (items[2].revents & ZMQ_POLLIN) DrainOutputMonitor();
    if (items[0].revents & ZMQ_POLLIN) return WaitResult::kReadable;
  }
}

TransportStatus EngineCoreClient::Impl::CheckIdentity(std::string_view identity,
                                                      std::string_view stage, int* index) const {
  const std::optional<uint16_t> idx = EngineIndexFromIdentity(identity);
  if (!idx || !InRange(*idx)) {
    std::string msg = "unknown engine identity " + internal::FormatIdentity(identity);
    if (idx) msg += " (engine " + std::to_string(*idx) + ")";
    msg += "; expected engines " + std::to_string(options.engine_start_index) + ".." +
           std::to_string(options.engine_start_index + options.engine_count - 1);
    return TransportStatus::Protocol(std::string(stage), msg);
  }
  *index = *idx;
  return TransportStatus::Ok();
}

TransportStatus EngineCoreClient::Impl::RunHandshake() {
  enum class State : uint8_t { kNew, kHello, kReady };
  const int count = options.engine_count;
  std::vector<State> state(static_cast<size_t>(count), State::kNew);
  int hellos = 0;
  int readies = 0;

  HandshakeInit init;
  init.addresses.inputs = {internal::ReplaceTcpHost(endpoints.input, options.advertised_host)};
  init.addresses.outputs = {internal::ReplaceTcpHost(endpoints.output, options.advertised_host)};
  const std::string init_bytes = EncodeHandshakeInit(init);

  auto missing = [&](State below) {
    std::vector<int> out;
    for (int i = 0; i < count; ++i) {
      if (state[static_cast<size_t>(i)] < below) out.push_back(options.engine_start_index + i);
    }
    return internal::FormatIndexList(out);
  };

  // Handles one message of the handshake socket. Any message that breaks the sequence is
  // fatal, as in vLLM: a frontend cannot serve engines it does not know or that skipped a step.
  auto handle = [&](std::string_view stage, size_t nframes) -> TransportStatus {
    const std::string st(stage);
    if (nframes != 2) {
      return TransportStatus::Protocol(
          st, "expected [identity, message] on the handshake socket, got " +
                  std::to_string(nframes) + " frames");
    }
    const std::string_view identity(static_cast<const char*>(frames[0].data()), frames[0].size());
    const std::string_view body(static_cast<const char*>(frames[1].data()), frames[1].size());
    int index = 0;
    if (TransportStatus s = CheckIdentity(identity, stage, &index); !s.ok()) return s;
    const size_t slot = static_cast<size_t>(index - options.engine_start_index);
    const std::string who = "engine " + std::to_string(index);
    Result<HandshakeMessage> msg = DecodeHandshakeMessage(body);
    if (!msg.ok()) {
      return TransportStatus::Protocol(
          st, who + " sent an undecodable handshake message: " + msg.status().ToString());
    }
    if (msg->status == kHandshakeHello) {
      if (state[slot] != State::kNew)
        return TransportStatus::Protocol(st, "duplicate HELLO from " + who);
      try {
        handshake.send(zmq::buffer(identity), zmq::send_flags::sndmore);
        handshake.send(zmq::buffer(init_bytes), zmq::send_flags::none);
      } catch (const zmq::error_t& e) {
        return TransportStatus::Socket(st, "cannot send INIT to " + who + ": " + e.what());
      }
      state[slot] = State::kHello;
      ++hellos;
      std::lock_guard<std::mutex> lock(mu);
      engines[slot].hello = std::move(*msg);
      return TransportStatus::Ok();
    }
    if (msg->status == kHandshakeReady) {
      // A READY during the HELLO stage is the "overlapping READY" (docs/design.md §5.2): this
      // engine finished while others have not said HELLO yet. Fine, as long as it said HELLO.
      if (state[slot] == State::kNew) {
        return TransportStatus::Protocol(st, "READY from " + who + " before its HELLO");
      }
      if (state[slot] == State::kReady) {
        return TransportStatus::Protocol(st, "duplicate READY from " + who);
      }
      state[slot] = State::kReady;
      ++readies;
      std::lock_guard<std::mutex> lock(mu);
      engines[slot].ready = std::move(*msg);
      return TransportStatus::Ok();
    }
    return TransportStatus::Protocol(
        st, "unexpected status '" + msg->status + "' from " + who + " (expected HELLO or READY)");
  };

  struct StageSpec {
    std::string_view name;
    std::chrono::milliseconds timeout;
    State target;
    const int* done;
    const char* verb;
  };
  const StageSpec stages[] = {
      {kStageHello, options.hello_timeout, State::kHello, &hellos, "said HELLO"},
      {kStageReady, options.ready_timeout, State::kReady, &readies, "ready"},
  };
  for (const StageSpec& stage : stages) {
    const Clock::time_point deadline = Clock::now() + stage.timeout;
    while (*stage.done < count) {
      switch (WaitReadable(handshake.handle(), deadline)) {
        case WaitResult::kReadable:
          break;
        case WaitResult::kTimeout:
          return TransportStatus::Timeout(
              std::string(stage.name),
              "timed out after " + Ms(stage.timeout) + " waiting for " + std::string(stage.name) +
                  " from engine(s) " + missing(stage.target) + " (" + std::to_string(*stage.done) +
                  " of " + std::to_string(count) + " " + stage.verb + ")");
        case WaitResult::kStopped:
          return TransportStatus::Stopped(std::string(stage.name));
        case WaitResult::kError:
          return TransportStatus::Socket(std::string(stage.name), "poll failed: " + ZmqError());
      }
      size_t nframes = 0;
      const int rc = internal::RecvMultipart(handshake.handle(), &frames, &nframes, ZMQ_DONTWAIT);
      if (rc == 0) continue;
      if (rc < 0) {
        return TransportStatus::Socket(std::string(stage.name), "receive failed: " + ZmqError());
      }
      if (TransportStatus s = handle(stage.name, nframes); !s.ok()) return s;
    }
  }
  return TransportStatus::Ok();
}

TransportStatus EngineCoreClient::Impl::RunRegistrations() {
  const int count = options.engine_count;
  const std::string stage(kStageRegistration);
  std::vector<bool> registered(static_cast<size_t>(count), false);
  int done = 0;
  const Clock::time_point deadline = Clock::now() + options.registration_timeout;
  while (done < count) {
    switch (WaitReadable(input.handle(), deadline)) {
      case WaitResult::kReadable:
        break;
      case WaitResult::kTimeout: {
        std::vector<int> missing;
        for (int i = 0; i < count; ++i) {
          if (!registered[static_cast<size_t>(i)])
            missing.push_back(options.engine_start_index + i);
        }
        return TransportStatus::Timeout(
            stage, "timed out after " + Ms(options.registration_timeout) +
                       " waiting for the input registration (ready response) of engine(s) " +
                       internal::FormatIndexList(missing) + " (" + std::to_string(done) + " of " +
                       std::to_string(count) + " registered)");
      }
      case WaitResult::kStopped:
        return TransportStatus::Stopped(stage);
      case WaitResult::kError:
        return TransportStatus::Socket(stage, "poll failed: " + ZmqError());
    }
    size_t nframes = 0;
    const int rc = internal::RecvMultipart(input.handle(), &frames, &nframes, ZMQ_DONTWAIT);
    if (rc == 0) continue;
    if (rc < 0) return TransportStatus::Socket(stage, "receive failed: " + ZmqError());
    if (nframes != 2) {
      return TransportStatus::Protocol(
          stage, "expected [identity, ready response] on the input socket, got " +
                     std::to_string(nframes) + " frames");
    }
    const std::string_view identity(static_cast<const char*>(frames[0].data()), frames[0].size());
    const std::string_view body(static_cast<const char*>(frames[1].data()), frames[1].size());
    int index = 0;
    if (TransportStatus s = CheckIdentity(identity, stage, &index); !s.ok()) return s;
    const size_t slot = static_cast<size_t>(index - options.engine_start_index);
    const std::string who = "engine " + std::to_string(index);
    if (registered[slot])
      return TransportStatus::Protocol(stage, "duplicate registration from " + who);
    Result<EngineCoreReadyResponse> rr = DecodeEngineCoreReadyResponse(body);
    if (!rr.ok()) {
      return TransportStatus::Protocol(
          stage, who + " sent an undecodable ready response: " + rr.status().ToString());
    }
    registered[slot] = true;
    ++done;
    {
      std::lock_guard<std::mutex> lock(mu);
      engines[slot].ready_response = std::move(*rr);
    }
    // Ties this engine to its input connection, whose closing will mean its death. The
    // monitor events that preceded this message were drained by WaitReadable. The fd comes
    // from the payload frame: libzmq 4.3 gives the identity frame no metadata when zmq_poll
    // prefetched the message (router_t::xhas_in).
    int fd = internal::SourceFd(frames[1]);
    if (fd < 0) fd = internal::SourceFd(frames[0]);
    if (auto death = liveness->OnRegistered(index, fd, Clock::now())) MarkDead(*death);
  }
  return TransportStatus::Ok();
}

TransportStatus EngineCoreClient::Impl::WaitForEngines() {
  if (phase != Phase::kBound) {
    return TransportStatus::InvalidArgument("WaitForEngines() needs a successful Bind() first");
  }
  phase = Phase::kFailed;
  if (options.mode == StartupMode::kFrontend) {
    if (TransportStatus s = RunHandshake(); !s.ok()) return s;
  }
  if (TransportStatus s = RunRegistrations(); !s.ok()) return s;
  phase = Phase::kReady;
  return TransportStatus::Ok();
}

}  // namespace vmetrics
