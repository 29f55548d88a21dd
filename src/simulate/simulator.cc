// SPDX-License-Identifier: Apache-2.0
#include "vmetrics/simulator.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <zmq.hpp>

#include "engine_model.h"
#include "kv_events_config.h"
#include "msgspec_writer.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/engine_request.h"
#include "vmetrics/handshake.h"
#include "vmetrics/internal/json_from_msgpack.h"
#include "vmetrics/internal/msgpack_reader.h"
#include "vmetrics/internal/zmq_util.h"
#include "vmetrics/utility_call.h"
#include "wire_encode.h"

namespace vmetrics {
namespace {

using Clock = std::chrono::steady_clock;

// Same hash on every engine: a frontend that checks it (MoE data parallel) sees agreement.
constexpr std::string_view kParallelConfigHash = "vmetrics-sim";

struct NamedConnector {
  SimConnector connector;
  const char* name;
  const char* class_name;
};
constexpr NamedConnector kConnectors[] = {
    {SimConnector::kNone, "none", ""},
    {SimConnector::kNixl, "nixl", "NixlConnector"},
    {SimConnector::kMooncakeP2p, "mooncake-p2p", "MooncakeConnector"},
    {SimConnector::kMooncakeStore, "mooncake-store", "MooncakeStoreConnector"},
    {SimConnector::kMulti, "multi", "MultiConnector"},
};

struct NamedKvRole {
  SimKvRole role;
  const char* name;
};
constexpr NamedKvRole kKvRoles[] = {
    {SimKvRole::kNone, "none"},
    {SimKvRole::kProducer, "kv_producer"},
    {SimKvRole::kConsumer, "kv_consumer"},
    {SimKvRole::kBoth, "kv_both"},
};

EngineCoreReadyResponse MakeReadyResponse(const SimulatorOptions& o, int index) {
  EngineCoreReadyResponse r;
  r.max_model_len = o.max_model_len;
  r.num_gpu_blocks = o.num_gpu_blocks;
  r.block_size = o.block_size;
  r.dtype = "bfloat16";
  r.vllm_version = "0.0.0+vmetrics.simulate";
  r.world_size = 1;
  r.data_parallel_size = o.engine_start_index + o.engines;
  r.data_parallel_rank = index;
  r.max_num_seqs = o.max_num_seqs;
  r.max_num_batched_tokens = 8192;
  r.instance_id = "vmetrics-sim-" + std::to_string(index);
  r.kv_cache_size_tokens = o.num_gpu_blocks * o.block_size;
  r.kv_cache_max_concurrency =
      static_cast<double>(o.num_gpu_blocks * o.block_size) / static_cast<double>(o.max_model_len);
  if (o.connector != SimConnector::kNone) {
    r.kv_connector = SimConnectorClassName(o.connector);
    r.kv_role = o.kv_role == SimKvRole::kNone ? "kv_both" : SimKvRoleName(o.kv_role);
    r.kv_engine_id = "vmetrics-sim-engine-" + std::to_string(index);
  }
  if (!o.kv_events_config.empty()) {
    // Validate refused what would fail here before any engine started.
    std::string error;
    if (const std::optional<internal::KvEventsConfig> events =
            internal::ParseKvEventsConfig(o.kv_events_config, &error)) {
      r.kv_events_config =
          internal::KvEventsConfigForRank(*events, r.data_parallel_rank, &error).value_or("");
    }
  }
  return r;
}

// A call as Python prints it: sleep(1, 'abort'), wake_up(None), wake_up(['weights']).
std::string PythonCallText(const UtilityCall& call) {
  std::string out = call.method + "(";
  for (size_t i = 0; i < call.args.size(); ++i) {
    if (i > 0) out += ", ";
    std::visit(
        [&out](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::nullptr_t>) {
            out += "None";
          } else if constexpr (std::is_same_v<T, bool>) {
            out += v ? "True" : "False";
          } else if constexpr (std::is_same_v<T, int64_t>) {
            out += std::to_string(v);
          } else if constexpr (std::is_same_v<T, std::string>) {
            out += "'" + v + "'";
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            out += "[";
            for (size_t k = 0; k < v.size(); ++k) out += (k > 0 ? ", '" : "'") + v[k] + "'";
            out += "]";
          } else {  // anything else as JSON
            Result<nlohmann::ordered_json> j = protocol::MsgpackToJson(v.msgpack);
            out += j.ok() ? j->dump() : "<unreadable>";
          }
        },
        call.args[i]);
  }
  return out + ")";
}

// The types a parameter accepts, as the engine's method signature (and msgspec) would.
enum class Param : uint8_t { kInt, kStr, kBool, kOptionalStrList, kAny };

bool Accepts(Param p, const UtilityArg& arg) {
  switch (p) {
    case Param::kInt:
      return std::holds_alternative<int64_t>(arg);
    case Param::kStr:
      return std::holds_alternative<std::string>(arg);
    case Param::kBool:
      return std::holds_alternative<bool>(arg);
    case Param::kOptionalStrList:
      return std::holds_alternative<std::nullptr_t>(arg) ||
             std::holds_alternative<std::vector<std::string>>(arg);
    case Param::kAny:
      return true;
  }
  return false;
}

// A TypeError unless `call`'s arguments fit `params` (all with defaults, as every control
// method's are).
Status CheckSignature(const UtilityCall& call, std::initializer_list<Param> params) {
  if (call.args.size() > params.size()) {
    return Status::InvalidArgument(
        "TypeError: " + call.method + "() takes " + std::to_string(params.size() + 1) +
        " positional arguments but " + std::to_string(call.args.size() + 1) + " were given");
  }
  size_t i = 0;
  for (Param p : params) {
    if (i < call.args.size() && !Accepts(p, call.args[i])) {
      return Status::InvalidArgument("TypeError: argument " + std::to_string(i + 1) + " of " +
                                     call.method + "() has the wrong type");
    }
    ++i;
  }
  return Status::Ok();
}

// What an engine of generation `g` answers a UTILITY call (EngineCore at the generation's commit;
// docs/design.md §5.5): the result's msgpack, or the failure message. Calls a frontend makes at
// start-up are answered as vLLM's engine does; the control methods change `t` as the engine's
// state would change; a method the generation lacks fails as getattr would.
Result<std::string> ServeUtilityCall(const WireGeneration& g, const UtilityCall& call,
                                     EngineTotals* t) {
  constexpr std::string_view kNone("\xc0", 1);
  constexpr std::string_view kFalse("\xc2", 1);
  constexpr std::string_view kTrue("\xc3", 1);
  const EngineControlCalls& c = g.control;
  const std::string& m = call.method;
  auto fits = [&call](std::initializer_list<Param> params) -> Status {
    return CheckSignature(call, params);
  };
  if (m == "get_supported_tasks") return std::string("\x91\xa8generate", 10);  // ["generate"]
  if (m == "sleep") {
    if (Status s = c.sleep_takes_mode ? fits({Param::kInt, Param::kStr}) : fits({Param::kInt});
        !s.ok()) {
      return s;
    }
    t->sleep_level = call.args.empty() ? 1 : std::get<int64_t>(call.args[0]);
    if (c.sleep_takes_mode) t->scheduler_paused = true;  // sleep pauses the scheduler first
    return std::string(kNone);
  }
  if (m == "wake_up") {
    if (Status s = fits({Param::kOptionalStrList}); !s.ok()) return s;
    t->sleep_level = 0;
    if (c.sleep_takes_mode) t->scheduler_paused = false;
    return std::string(kNone);
  }
  if (m == "is_sleeping") {
    if (Status s = fits({}); !s.ok()) return s;
    const bool sleeping = t->sleep_level != 0 || (c.pause_scheduler && t->scheduler_paused);
    return std::string(sleeping ? kTrue : kFalse);
  }
  if (m == "reset_prefix_cache") {
    if (Status s = c.reset_prefix_cache_flags ? fits({Param::kBool, Param::kBool}) : fits({});
        !s.ok()) {
      return s;
    }
    t->prefix_cache_resets += 1;
    return std::string(c.reset_prefix_cache_flags ? kTrue : kNone);
  }
  if (c.pause_scheduler && m == "pause_scheduler") {
    if (Status s = fits({Param::kStr, Param::kBool}); !s.ok()) return s;
    t->scheduler_paused = true;
    return std::string(kNone);
  }
  if (c.pause_scheduler && m == "resume_scheduler") {
    if (Status s = fits({}); !s.ok()) return s;
    t->scheduler_paused = false;
    return std::string(kNone);
  }
  if (c.pause_scheduler && m == "is_scheduler_paused") {
    if (Status s = fits({}); !s.ok()) return s;
    return std::string(t->scheduler_paused ? kTrue : kFalse);
  }
  if (c.weight_version && m == "set_weight_version") {
    if (Status s = fits({Param::kStr}); !s.ok()) return s;
    if (call.args.size() != 1) return Status::InvalidArgument("TypeError: missing weight_version");
    t->weight_version = std::get<std::string>(call.args[0]);
    return std::string(kNone);
  }
  if (c.weight_version && m == "get_weight_version") {
    if (Status s = fits({}); !s.ok()) return s;
    internal::MsgspecWriter w;
    w.Str(t->weight_version);
    return w.Take();
  }
  if (m == "collective_rpc") {
    // (method, timeout, args, kwargs) to the workers; one worker here, which returns None.
    if (Status s = fits({Param::kStr, Param::kAny, Param::kAny, Param::kAny}); !s.ok()) return s;
    const std::string method =
        call.args.empty() ? std::string() : std::get<std::string>(call.args[0]);
    const bool has = (c.weight_transfer >= 1 &&
                      (method == "init_weight_transfer_engine" || method == "update_weights")) ||
                     (c.weight_transfer >= 2 &&
                      (method == "start_weight_update" || method == "start_draft_weight_update" ||
                       method == "finish_weight_update"));
    if (!has) {
      return Status::InvalidArgument("AttributeError: 'Worker' object has no attribute '" + method +
                                     "'");
    }
    return std::string("\x91\xc0", 2);  // [None]
  }
  if (m == "pause_scheduler" || m == "resume_scheduler" || m == "is_scheduler_paused" ||
      m == "set_weight_version" || m == "get_weight_version") {
    return Status::InvalidArgument("AttributeError: 'EngineCoreProc' object has no attribute '" +
                                   m + "'");
  }
  return std::string(kNone);  // reset_mm_cache and the rest a frontend calls at start-up
}

// Sends the malformed_probability and truncated_multipart_probability faults. Its generator
// is its own, seeded with (seed, engine index), so the engine model's stream is unchanged.
class FaultInjector {
 public:
  struct Sent {
    uint64_t malformed = 0;
    uint64_t truncated_multipart = 0;
  };

  FaultInjector(const SimulatorOptions& o, bool faulty, uint64_t seed, int index)
      : malformed_(faulty ? o.malformed_probability : 0),
        truncated_(faulty ? o.truncated_multipart_probability : 0) {
    std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                      static_cast<uint32_t>(index), 0x6661756cu /* "faul" */};
    rng_.seed(seq);
  }

  // Before a step whose message is `frame`: maybe a strict prefix of it (never decodes: the
  // msgpack value is incomplete), maybe a truncated multipart message.
  Sent BeforeStep(zmq::socket_t& out, std::string_view frame, int index, double timestamp) {
    Sent sent;
    if (malformed_ > 0 && frame.size() > 1 && Chance(malformed_)) {
      const size_t cut = std::uniform_int_distribution<size_t>(1, frame.size() - 1)(rng_);
      out.send(zmq::buffer(frame.substr(0, cut)), zmq::send_flags::none);
      sent.malformed = 1;
    }
    if (truncated_ > 0 && Chance(truncated_)) {
      const std::string frame0 = internal::EncodeAuxFrameMessage(index, timestamp);
      const std::string aux1(internal::kAuxFrameFloats * sizeof(float), '\0');
      out.send(zmq::buffer(frame0), zmq::send_flags::sndmore);
      out.send(zmq::buffer(aux1), zmq::send_flags::none);  // aux frame 2 never follows
      sent.truncated_multipart = 1;
    }
    return sent;
  }

 private:
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  double malformed_;
  double truncated_;
  std::mt19937_64 rng_;
};

}  // namespace

const char* SimConnectorName(SimConnector connector) {
  for (const NamedConnector& c : kConnectors) {
    if (c.connector == connector) return c.name;
  }
  return "none";
}

const char* SimConnectorClassName(SimConnector connector) {
  for (const NamedConnector& c : kConnectors) {
    if (c.connector == connector) return c.class_name;
  }
  return "";
}

const char* SimKvRoleName(SimKvRole role) {
  for (const NamedKvRole& r : kKvRoles) {
    if (r.role == role) return r.name;
  }
  return "none";
}

std::optional<SimKvRole> ParseSimKvRole(std::string_view name) {
  for (const NamedKvRole& r : kKvRoles) {
    if (name == r.name) return r.role;
  }
  return std::nullopt;
}

std::optional<SimConnector> ParseSimConnector(std::string_view name) {
  for (const NamedConnector& c : kConnectors) {
    if (name == c.name) return c.connector;
  }
  return std::nullopt;
}

struct Simulator::Impl {
  explicit Impl(SimulatorOptions o) : options(std::move(o)) {}

  Status Validate() const;
  void RunEngine(size_t slot);
  void RunCapture();
  void Fail(Status status);
  bool IsFaulty(int index) const {
    return options.fault_engine < 0 || options.fault_engine == index;
  }
  // Waits until `until` (or forever when nullopt) while answering input messages; false when
  // a stop was requested.
  bool ServeUntil(zmq::socket_t& in, zmq::socket_t& out, size_t slot,
                  std::optional<Clock::time_point> until);
  void ServeInput(zmq::socket_t& in, zmq::socket_t& out, size_t slot);
  std::string Encode(const internal::SimMessage& message) const {
    return options.wire != nullptr
               ? internal::EncodeEngineCoreOutputs(message, options.connector,
                                                   options.legacy_multi_shape, *options.wire)
               : internal::EncodeEngineCoreOutputs(message, options.connector,
                                                   options.legacy_multi_shape);
  }
  // Runs `f(model)` for engine `slot` under its lock, so Totals() can read while it runs.
  template <typename F>
  auto WithModel(size_t slot, F f) {
    std::lock_guard<std::mutex> lock(*model_mu[slot]);
    return f(*models[slot]);
  }

  SimulatorOptions options;
  uint64_t seed = 0;
  zmq::context_t context{1};
  internal::WakePipe wake;
  std::FILE* capture = nullptr;
  std::vector<std::unique_ptr<internal::EngineModel>> models;
  std::vector<std::unique_ptr<std::mutex>> model_mu;  // one per model
  // Per engine, its own thread only: a refused ADD ended its input, as it ends a vLLM
  // engine's input thread; nothing on the input socket is read after it.
  std::vector<char> input_dead;
  std::vector<std::thread> threads;
  std::mutex mu;
  Status first_error;
  bool started = false;
};

Status Simulator::Impl::Validate() const {
  const SimulatorOptions& o = options;
  const int destinations = (o.handshake_address.empty() ? 0 : 1) +
                           (o.input_address.empty() && o.output_address.empty() ? 0 : 1) +
                           (o.capture_path.empty() ? 0 : 1);
  if (destinations != 1) {
    return Status::InvalidArgument(
        "give exactly one of: a handshake address, an input and output address, a capture file");
  }
  if (!o.input_address.empty() != !o.output_address.empty()) {
    return Status::InvalidArgument("bootstrapped mode needs both an input and an output address");
  }
  if (o.engines < 1 || o.engine_start_index < 0 || o.engine_start_index + o.engines > 65536) {
    return Status::InvalidArgument("engines must be >= 1 and fit the 2-byte identity");
  }
  if (!o.capture_path.empty() && o.steps == 0) {
    return Status::InvalidArgument("a capture needs a number of steps");
  }
  if (!(o.malformed_probability >= 0 && o.malformed_probability <= 1) ||
      !(o.truncated_multipart_probability >= 0 && o.truncated_multipart_probability <= 1)) {
    return Status::InvalidArgument("fault probabilities must be in [0, 1]");
  }
  if (o.rate_hz < 0 || o.block_size < 1 || o.num_gpu_blocks < 1 || o.max_num_seqs < 1 ||
      o.max_model_len < 16 || o.num_speculative_tokens < 0 || o.num_speculative_tokens > 64) {
    return Status::InvalidArgument(
        "need rate >= 0, block size, GPU blocks and max sequences >= 1, max model length >= 16, "
        "0..64 speculative tokens");
  }
  if (o.per_request_spec_decode_metrics != SimulatorOptions::SpecDecodeMetrics::kNone &&
      (o.num_speculative_tokens == 0 || o.wire == nullptr ||
       o.wire->PositionOf(OutputField::kSpecDecodeMetrics) < 0)) {
    return Status::InvalidArgument(
        "per-request spec decode metrics need speculative tokens and a wire generation whose "
        "outputs carry spec_decode_metrics");
  }
  if (o.kv_role != SimKvRole::kNone &&
      (!o.serve_requests || o.connector != SimConnector::kNixl || o.echo_kv_transfer_params)) {
    return Status::InvalidArgument(
        "a kv role needs served requests and the nixl connector, without echoing "
        "kv_transfer_params");
  }
  if (!o.kv_events_config.empty()) {
    std::string error;
    std::optional<internal::KvEventsConfig> events =
        internal::ParseKvEventsConfig(o.kv_events_config, &error);
    for (int i = 0; events && i < o.engines && error.empty(); ++i) {
      (void)internal::KvEventsConfigForRank(*events, o.engine_start_index + i, &error);
    }
    if (!error.empty()) return Status::InvalidArgument(error);
  }
  if (!wake.valid()) return Status::Socket(StatusStage::kNone, "cannot create the wake-up pipe");
  return Status::Ok();
}

void Simulator::Impl::Fail(Status status) {
  std::lock_guard<std::mutex> lock(mu);
  if (first_error.ok()) first_error = std::move(status);
}

void Simulator::Impl::ServeInput(zmq::socket_t& in, zmq::socket_t& out, size_t slot) {
  if (input_dead[slot] != 0) return;
  std::vector<zmq::message_t> frames;
  size_t n = 0;
  while (internal::RecvMultipart(in.handle(), &frames, &n, ZMQ_DONTWAIT) == 1) {
    // The engine's DEALER receives [request_type, body, aux...]. UTILITY calls are always
    // answered (a frontend waits for them at startup); ADD and ABORT with serve_requests.
    if (n < 2 || frames[0].size() != 1) continue;
    const auto type = static_cast<EngineCoreRequestType>(
        static_cast<uint8_t>(*static_cast<const char*>(frames[0].data())));
    const std::string_view body(static_cast<const char*>(frames[1].data()), frames[1].size());
    if (options.serve_requests && type == EngineCoreRequestType::kAdd) {
      const RequestLayout& layout =
          options.wire != nullptr ? options.wire->request : NewestWireGeneration().request;
      Result<EngineCoreRequestSpec> request = DecodeEngineCoreRequest(body, layout);
      if (request.ok() && layout.PositionOf(RequestField::kEosTokenId) >= 0 &&
          !request->sampling.ignore_eos) {
        // Up to g20260204 the engine's EOS stop comes from the request.
        request->sampling.eos_token_id = request->eos_token_id;
      }
      WithModel(slot, [&](internal::EngineModel& m) {
        if (request.ok()) {
          (void)m.AddServedRequest(*request);
        } else {
          m.mutable_totals().requests_rejected += 1;
        }
      });
      if (!request.ok() && options.wire != nullptr) {
        input_dead[slot] = 1;  // what vLLM's process_input_sockets does on a decode error
        return;
      }
      continue;
    }
    if (options.serve_requests && type == EngineCoreRequestType::kAbort) {
      Result<std::vector<std::string>> ids = DecodeAbort(body);
      WithModel(slot, [&](internal::EngineModel& m) {
        if (ids.ok()) {
          m.AbortServedRequests(*ids);
        } else {
          m.mutable_totals().requests_rejected += 1;
        }
      });
      continue;
    }
    if (type != EngineCoreRequestType::kUtility) continue;
    // UTILITY body: [client_index, call_id, method_name, args]. vLLM's input thread unpacks
    // exactly four values; anything else ends it.
    Result<UtilityCall> call = DecodeUtilityCall(body);
    if (!call.ok()) {
      input_dead[slot] = 1;
      return;
    }
    const int index = options.engine_start_index + static_cast<int>(slot);
    const WireGeneration& g = options.wire != nullptr ? *options.wire : NewestWireGeneration();
    const std::string reply = WithModel(slot, [&](internal::EngineModel& m) {
      EngineTotals& t = m.mutable_totals();
      t.utility_replies += 1;
      t.utility_calls.push_back(PythonCallText(*call));
      Result<std::string> result = ServeUtilityCall(g, *call, &t);
      if (!result.ok()) {
        t.utility_failures += 1;
        return internal::EncodeUtilityFailure(index, call->call_id, internal::EngineModel::Now(),
                                              result.status().message());
      }
      return internal::EncodeUtilityReply(index, call->call_id, internal::EngineModel::Now(),
                                          *result);
    });
    out.send(zmq::buffer(reply), zmq::send_flags::none);
  }
}

bool Simulator::Impl::ServeUntil(zmq::socket_t& in, zmq::socket_t& out, size_t slot,
                                 std::optional<Clock::time_point> until) {
  for (;;) {
    long timeout_ms = -1;
    if (until) {
      const Clock::time_point now = Clock::now();
      if (now >= *until) return true;
      timeout_ms =
          static_cast<long>(std::chrono::ceil<std::chrono::milliseconds>(*until - now).count());
    }
    zmq_pollitem_t items[] = {{in.handle(), 0, ZMQ_POLLIN, 0},
                              {nullptr, wake.read_fd(), ZMQ_POLLIN, 0}};
    if (zmq_poll(items, 2, timeout_ms) < 0) {
      if (zmq_errno() == EINTR) continue;
      throw zmq::error_t();
    }
    if (items[1].revents & ZMQ_POLLIN) return false;
    if (items[0].revents & ZMQ_POLLIN) ServeInput(in, out, slot);
  }
}

void Simulator::Impl::RunEngine(size_t slot) {
  const int index = options.engine_start_index + static_cast<int>(slot);
  const std::string identity = EngineIdentity(static_cast<uint16_t>(index));
  const std::string who = "engine " + std::to_string(index);
  const bool frontend = !options.handshake_address.empty();
  try {
    std::string input_address = options.input_address;
    std::string output_address = options.output_address;
    std::optional<zmq::socket_t> hs;
    if (frontend) {
      // 1. HELLO on the handshake DEALER, then wait for INIT (vLLM waits up to 5 minutes).
      hs.emplace(context, zmq::socket_type::dealer);
      hs->set(zmq::sockopt::routing_id, identity);
      internal::ConfigureSocket(*hs, options.handshake_address, internal::kEngineHandshakeLingerMs);
      hs->connect(options.handshake_address);
      hs->send(
          zmq::buffer(internal::EncodeHandshakeStatus(kHandshakeHello, false, true, std::nullopt)),
          zmq::send_flags::none);
      const Clock::time_point deadline = Clock::now() + options.handshake_timeout;
      zmq::message_t init_frame;
      for (;;) {
        const Clock::time_point now = Clock::now();
        if (now >= deadline) {
          hs->set(zmq::sockopt::linger, 0);  // nobody will take the HELLO: do not wait for it
          Fail(Status::Timeout(StatusStage::kInit,
                               who + " got no INIT within " +
                                   std::to_string(options.handshake_timeout.count()) + " ms"));
          return;
        }
        zmq_pollitem_t items[] = {{hs->handle(), 0, ZMQ_POLLIN, 0},
                                  {nullptr, wake.read_fd(), ZMQ_POLLIN, 0}};
        const long ms =
            static_cast<long>(std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count());
        if (zmq_poll(items, 2, ms) < 0) {
          if (zmq_errno() == EINTR) continue;
          throw zmq::error_t();
        }
        if (items[1].revents & ZMQ_POLLIN) {
          hs->set(zmq::sockopt::linger, 0);
          return;
        }
        if ((items[0].revents & ZMQ_POLLIN) && hs->recv(init_frame, zmq::recv_flags::dontwait))
          break;
      }
      Result<HandshakeInit> init = DecodeHandshakeInit(
          std::string_view(static_cast<const char*>(init_frame.data()), init_frame.size()));
      if (!init.ok()) {
        Fail(Status::Protocol(StatusStage::kInit,
                              who + " got a bad INIT: " + init.status().ToString()));
        return;
      }
      input_address = init->addresses.inputs[0];
      output_address = init->addresses.outputs[0];
    }
    // 2. Register on the input socket with the ready response (same identity).
    zmq::socket_t in(context, zmq::socket_type::dealer);
    in.set(zmq::sockopt::routing_id, identity);
    internal::ConfigureSocket(in, input_address, 1000);
    in.connect(input_address);
    const EngineCoreReadyResponse ready = MakeReadyResponse(options, index);
    in.send(zmq::buffer(options.wire != nullptr ? internal::EncodeRegistration(ready, *options.wire)
                                                : internal::EncodeReadyResponse(ready)),
            zmq::send_flags::none);
    // 3. Connect the output PUSH.
    zmq::socket_t out(context, zmq::socket_type::push);
    internal::ConfigureSocket(out, output_address, internal::kEngineOutputLingerMs);
    out.connect(output_address);
    // 4. READY, then the handshake socket is done (its linger still delivers READY).
    if (hs) {
      std::optional<std::string> hash;
      if (options.engine_start_index + options.engines > 1) hash = std::string(kParallelConfigHash);
      const bool old_ready =
          options.wire != nullptr && options.wire->ready_form == ReadyForm::kEmptyRegistration;
      hs->send(
          zmq::buffer(
              old_ready ? internal::EncodeReadyWithBlocks(false, true, hash, options.num_gpu_blocks)
                        : internal::EncodeHandshakeStatus(kHandshakeReady, false, true, hash)),
          zmq::send_flags::none);
      hs->close();
    }

    // 5. Steps.
    const bool faulty = IsFaulty(index);
    // A zero period means "as fast as possible" (a plain duration: g++ 12 misreads an
    // optional<duration> here as maybe-uninitialized at -O2).
    const Clock::duration period = options.rate_hz > 0
                                       ? std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(1.0 / options.rate_hz))
                                       : Clock::duration::zero();
    Clock::time_point next = Clock::now();
    internal::SimMessage message;
    FaultInjector injector(options, faulty, seed, index);
    for (uint64_t step = 1; options.steps == 0 || step <= options.steps; ++step) {
      if (wake.Notified()) return;
      WithModel(slot, [&](internal::EngineModel& m) { m.Step(&message); });
      const std::string frame = Encode(message);
      // Faults go before the step's message, so every engine's stream ends with a valid one.
      const FaultInjector::Sent bad = injector.BeforeStep(out, frame, index, message.timestamp);
      if (bad.malformed + bad.truncated_multipart > 0) {
        WithModel(slot, [&](internal::EngineModel& m) {
          m.mutable_totals().malformed_frames += bad.malformed;
          m.mutable_totals().truncated_multipart += bad.truncated_multipart;
        });
      }
      out.send(zmq::buffer(frame), zmq::send_flags::none);
      if (faulty && options.die_after && step == *options.die_after) {
        // What EngineCoreProc does on a fatal error: the sentinel on every output socket,
        // then exit. The PUSH linger makes sure the frame leaves.
        out.send(zmq::buffer(kEngineCoreDead), zmq::send_flags::none);
        WithModel(slot, [](internal::EngineModel& m) {
          m.mutable_totals().sent_engine_core_dead = true;
        });
        return;  // sockets close on scope exit
      }
      if (faulty && options.vanish_after && step == *options.vanish_after) {
        // A killed process: connections just close, without ENGINE_CORE_DEAD. What was already
        // handed to the sockets still leaves (their linger) — as bytes in a dead process's
        // kernel buffers do — so the registration is never lost and the totals stay exact.
        WithModel(slot, [](internal::EngineModel& m) { m.mutable_totals().vanished = true; });
        return;
      }
      if (period != Clock::duration::zero()) {
        next += period;
        if (!ServeUntil(in, out, slot, next)) return;
      } else {
        ServeInput(in, out, slot);
      }
    }
    if (options.hold_after_steps) ServeUntil(in, out, slot, std::nullopt);
  } catch (const zmq::error_t& e) {
    // ETERM: the simulator is being destroyed; not an engine failure.
    if (e.num() != ETERM) Fail(Status::Socket(StatusStage::kNone, who + ": " + e.what()));
  }
}

void Simulator::Impl::RunCapture() {
  // One thread, engines interleaved step by step: the file is the same for a seed whatever
  // the machine. Faults only end an engine's stream (ENGINE_CORE_DEAD is not msgpack).
  internal::SimMessage message;
  std::vector<bool> done(models.size(), false);
  for (uint64_t step = 1; step <= options.steps; ++step) {
    if (wake.Notified()) break;
    for (size_t slot = 0; slot < models.size(); ++slot) {
      if (done[slot]) continue;
      WithModel(slot, [&](internal::EngineModel& m) { m.Step(&message); });
      const std::string frame = Encode(message);
      if (std::fwrite(frame.data(), 1, frame.size(), capture) != frame.size()) {
        Fail(Status::Socket(StatusStage::kNone,
                            "cannot write the capture file '" + options.capture_path + "'"));
        return;
      }
      const int index = options.engine_start_index + static_cast<int>(slot);
      if (IsFaulty(index) && ((options.die_after && step == *options.die_after) ||
                              (options.vanish_after && step == *options.vanish_after))) {
        done[slot] = true;
      }
    }
  }
}

Simulator::Simulator(SimulatorOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

Simulator::~Simulator() {
  RequestStop();
  (void)Wait();
}

Status Simulator::Start() {
  Impl& s = *impl_;
  if (s.started) return Status::InvalidArgument("Start() called twice");
  if (Status st = s.Validate(); !st.ok()) return st;
  if (s.options.seed) {
    s.seed = *s.options.seed;
  } else {
    std::random_device rd;
    s.seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  const bool deterministic_time = s.options.seed.has_value();
  for (int i = 0; i < s.options.engines; ++i) {
    s.models.push_back(std::make_unique<internal::EngineModel>(
        s.options, s.options.engine_start_index + i, s.seed, deterministic_time));
    s.model_mu.push_back(std::make_unique<std::mutex>());
  }
  s.input_dead.assign(s.models.size(), 0);
  if (!s.options.capture_path.empty()) {
    s.capture = std::fopen(s.options.capture_path.c_str(), "wb");
    if (!s.capture) {
      return Status::Socket(
          StatusStage::kNone,
          "cannot open the capture file '" + s.options.capture_path + "': " + std::strerror(errno));
    }
    s.started = true;
    s.threads.emplace_back([&s] { s.RunCapture(); });
    return Status::Ok();
  }
  s.started = true;
  for (size_t slot = 0; slot < s.models.size(); ++slot) {
    s.threads.emplace_back([&s, slot] { s.RunEngine(slot); });
  }
  return Status::Ok();
}

void Simulator::RequestStop() noexcept { impl_->wake.Notify(); }

Status Simulator::Wait() {
  Impl& s = *impl_;
  for (std::thread& t : s.threads) {
    if (t.joinable()) t.join();
  }
  if (s.capture) {
    if (std::fclose(s.capture) != 0) {
      s.Fail(Status::Socket(StatusStage::kNone,
                            "cannot write the capture file '" + s.options.capture_path + "'"));
    }
    s.capture = nullptr;
  }
  std::lock_guard<std::mutex> lock(s.mu);
  return s.first_error;
}

SimulatorTotals Simulator::Totals() const {
  SimulatorTotals t;
  t.seed = impl_->seed;
  t.connector = impl_->options.connector;
  for (size_t slot = 0; slot < impl_->models.size(); ++slot) {
    t.engines.push_back(
        impl_->WithModel(slot, [](internal::EngineModel& m) { return m.totals(); }));
  }
  return t;
}

}  // namespace vmetrics
