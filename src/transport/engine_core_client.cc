// SPDX-License-Identifier: Apache-2.0
#include "vmetrics/engine_core_client.h"

#include <algorithm>
#include <cerrno>
#include <string>

#include "client_impl.h"

namespace vmetrics {

EngineCoreClient::Impl::~Impl() {
  // Monitors stop before the sockets they watch close; the context (declared first) is
  // destroyed last and does not wait, because every socket has linger 0.
  if (input_monitor.attached()) input_monitor.Detach(input);
  if (output_monitor.attached()) output_monitor.Detach(output);
}

EngineCoreClient::EngineCoreClient(EngineCoreClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

EngineCoreClient::~EngineCoreClient() { Stop(); }

Status EngineCoreClient::Bind() { return impl_->Bind(); }

const BoundEndpoints& EngineCoreClient::endpoints() const { return impl_->endpoints; }

Status EngineCoreClient::WaitForEngines(
    const std::function<void(const EngineEvent&)>& on_progress) {
  return impl_->WaitForEngines(on_progress);
}

Status EngineCoreClient::Connect() {
  if (Status s = Bind(); !s.ok()) return s;
  return WaitForEngines();
}

Status EngineCoreClient::Start(EngineCoreClientCallbacks callbacks) {
  if (impl_->phase != Impl::Phase::kReady) {
    return Status::InvalidArgument(
        "Start() needs WaitForEngines() to have succeeded, and runs once");
  }
  if (impl_->wake.Notified()) return Status::Stopped(StatusStage::kOutput);
  try {
    impl_->input_signal_fd = impl_->input.get(zmq::sockopt::fd);
  } catch (const zmq::error_t& e) {
    return Status::Socket(StatusStage::kOutput,
                          std::string("cannot watch the input socket: ") + e.what());
  }
  if (impl_->input_bell.fd() < 0) {
    return Status::Socket(StatusStage::kOutput, "cannot create the input socket's eventfd");
  }
  impl_->phase = Impl::Phase::kRunning;
  impl_->callbacks = std::move(callbacks);
  impl_->thread = std::thread([impl = impl_.get()] { impl->RunLoop(); });
  return Status::Ok();
}

void EngineCoreClient::RequestStop() noexcept { impl_->wake.Notify(); }

void EngineCoreClient::Stop() {
  RequestStop();
  // From a callback (the output thread itself) joining would deadlock: the request suffices,
  // and the destructor's join happens elsewhere.
  if (impl_->thread.joinable() && impl_->loop_thread_id.load() != std::this_thread::get_id()) {
    impl_->thread.join();
  }
}

Status EngineCoreClient::Send(int engine_index, EngineCoreRequestType type,
                              std::span<const std::string_view> frames) {
  const Impl::Phase phase = impl_->phase;
  if (phase != Impl::Phase::kReady && phase != Impl::Phase::kRunning) {
    return Status::InvalidArgument("Send() before the engines are ready");
  }
  if (!impl_->InRange(engine_index)) {
    return Status::InvalidArgument("no engine " + std::to_string(engine_index));
  }
  const std::string who = "engine " + std::to_string(engine_index);
  std::string identity;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    const EngineInfo& info =
        impl_->engines[static_cast<size_t>(engine_index - impl_->options.engine_start_index)];
    if (!info.alive)
      return Status::Unavailable(who + " is dead: " + info.death_reason, StatusStage::kSend);
    identity = info.identity;
  }
  const char type_byte = static_cast<char>(type);
  std::lock_guard<std::mutex> lock(impl_->send_mu);
  void* socket = impl_->input.handle();
  // Sending may consume the ZMQ_FD signal of a message that arrived meanwhile; the output loop
  // watches that fd, so it is told to look at the socket itself (output_loop.cc).
  struct RingIfReadable {
    void* socket;
    internal::Doorbell* bell;
    ~RingIfReadable() {
      int events = 0;
      size_t size = sizeof(events);
      if (zmq_getsockopt(socket, ZMQ_EVENTS, &events, &size) == 0 && (events & ZMQ_POLLIN)) {
        bell->Ring();
      }
    }
  } ring_if_readable{socket, &impl_->input_bell};
  // ROUTER_MANDATORY makes the identity frame fail with EHOSTUNREACH when the engine has no
  // connection; a multipart message is all-or-nothing, so nothing half-sent can be left over.
  if (zmq_send(socket, identity.data(), identity.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
    const int err = zmq_errno();
    if (err == EHOSTUNREACH) {
      return Status::Unavailable(who + " is not connected to the input socket", StatusStage::kSend);
    }
    return Status::Socket(StatusStage::kSend, "cannot send to " + who + ": " + zmq_strerror(err));
  }
  const int type_flags = frames.empty() ? ZMQ_DONTWAIT : ZMQ_SNDMORE | ZMQ_DONTWAIT;
  if (zmq_send(socket, &type_byte, 1, type_flags) < 0) {
    return Status::Socket(StatusStage::kSend,
                          "cannot send to " + who + ": " + zmq_strerror(zmq_errno()));
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    const int flags = i + 1 < frames.size() ? ZMQ_SNDMORE | ZMQ_DONTWAIT : ZMQ_DONTWAIT;
    if (zmq_send(socket, frames[i].data(), frames[i].size(), flags) < 0) {
      return Status::Socket(StatusStage::kSend,
                            "cannot send to " + who + ": " + zmq_strerror(zmq_errno()));
    }
  }
  return Status::Ok();
}

std::vector<EngineInfo> EngineCoreClient::engines() const {
  const Impl::Phase phase = impl_->phase;
  if (phase != Impl::Phase::kReady && phase != Impl::Phase::kRunning) return {};
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->engines;
}

bool EngineCoreClient::AllEnginesAlive() const {
  const Impl::Phase phase = impl_->phase;
  if (phase != Impl::Phase::kReady && phase != Impl::Phase::kRunning) return false;
  std::lock_guard<std::mutex> lock(impl_->mu);
  return std::all_of(impl_->engines.begin(), impl_->engines.end(),
                     [](const EngineInfo& e) { return e.alive; });
}

uint64_t EngineCoreClient::messages_received() const {
  return impl_->messages.load(std::memory_order_relaxed);
}

std::chrono::steady_clock::duration EngineCoreClient::output_backlog() const {
  const int64_t since = impl_->output_behind_since.load(std::memory_order_relaxed);
  if (since == 0) return {};
  return std::chrono::steady_clock::now() -
         std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(since));
}

uint64_t EngineCoreClient::callback_exceptions() const {
  return impl_->callback_exceptions.load(std::memory_order_relaxed);
}

uint64_t EngineCoreClient::input_messages_dropped() const {
  return impl_->dropped.load(std::memory_order_relaxed);
}

ReadyResponseSummary SummarizeEngines(std::span<const EngineInfo> engines) {
  ReadyResponseSummary s;
  for (const EngineInfo& e : engines) {
    const EngineCoreReadyResponse& rr = e.ready_response;
    if (rr.max_model_len) {
      s.max_model_len =
          s.max_model_len ? std::min(*s.max_model_len, *rr.max_model_len) : *rr.max_model_len;
    }
    // Engines before 2026-04-09 registered with an empty frame and reported blocks on READY.
    if (rr.num_gpu_blocks) {
      s.num_gpu_blocks += *rr.num_gpu_blocks;
    } else if (e.ready && e.ready->num_gpu_blocks) {
      s.num_gpu_blocks += *e.ready->num_gpu_blocks;
    }
    if (rr.block_size) s.block_size = rr.block_size;
    if (!s.kv_cache_size_tokens && rr.kv_cache_size_tokens) {
      s.kv_cache_size_tokens = rr.kv_cache_size_tokens;
    }
    if (!s.kv_cache_max_concurrency && rr.kv_cache_max_concurrency) {
      s.kv_cache_max_concurrency = rr.kv_cache_max_concurrency;
    }
    if (!s.dp_stats_address) {
      if (rr.dp_stats_address) {
        s.dp_stats_address = rr.dp_stats_address;
      } else if (e.ready && e.ready->dp_stats_address) {
        s.dp_stats_address = e.ready->dp_stats_address;
      }
    }
    if (!s.kv_connector && rr.kv_connector && !rr.kv_connector->empty()) {
      s.kv_connector = rr.kv_connector;
      s.kv_role = rr.kv_role;
    }
    if (rr.supports_lora) s.max_loras = std::max(s.max_loras, rr.max_loras);
  }
  return s;
}

}  // namespace vmetrics
