// SPDX-License-Identifier: Apache-2.0
// Frontend: the engine client, the recorder, the request service and the HTTP server wired
// together; see include/vmetrics/frontend.h.
#include "vmetrics/frontend.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "build_info.h"
#include "engine_control.h"
#include "engine_states.h"
#include "environment.h"
#include "flag_checks.h"
#include "generation_config.h"
#include "http_families.h"
#include "ignored_fields.h"
#include "ingest.h"
#include "json_fields.h"
#include "observability_flags.h"
#include "openai_routes.h"
#include "request_service.h"
#include "vmetrics/engine_core_client.h"
#include "vmetrics/exposition.h"
#include "vmetrics/frontend/log.h"
#include "vmetrics/internal/declared_families.h"
#include "vmetrics/process_metrics.h"
#include "vmetrics/recorder.h"
#include "vmetrics/web_config.h"
#include "vmetrics/wire_decoder.h"

namespace vmetrics {

using frontend::LogError;
using frontend::LogInfo;
using frontend::LogWarning;

Result<std::vector<LoraModule>> ParseLoraModules(const std::vector<std::string>& values) {
  std::vector<LoraModule> modules;
  for (const std::string& value : values) {
    LoraModule m;
    if (!value.empty() && value.front() == '{') {
      auto doc = nlohmann::json::parse(value, nullptr, false);
      if (doc.is_discarded() || !doc.is_object() || !doc.contains("name") ||
          !doc["name"].is_string() || !doc.contains("path") || !doc["path"].is_string()) {
        return Status::InvalidArgument("--lora-modules: " + value +
                                       " is not a JSON object with string name and path");
      }
      m.name = doc["name"].get<std::string>();
      m.path = doc["path"].get<std::string>();
    } else {
      const size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == value.size()) {
        return Status::InvalidArgument("--lora-modules: " + value + " is not name=path");
      }
      m.name = value.substr(0, eq);
      m.path = value.substr(eq + 1);
    }
    modules.push_back(std::move(m));
  }
  return modules;
}

namespace {

// str() of a Python value, for cache_config_info label values.
std::string PyRepr(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return FormatGoFloat(v.get<double>());
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// What Bind reads from the options' JSON and files, for Start.
struct CheckedOptions {
  std::optional<ConnectorConfig> connectors;                   // --kv-transfer-config, when given
  EcConnectorConfig ec_connector;                              // --ec-transfer-config
  bool compute_nans_in_logits = false;                         // VLLM_COMPUTE_NANS_IN_LOGITS
  bool server_dev_mode = false;                                // VLLM_SERVER_DEV_MODE
  CustomHistogramBuckets custom_histogram_buckets;             // --custom-histogram-buckets
  std::optional<std::string> show_hidden_metrics_for_version;  // validated
  const WireGeneration* engine_wire = nullptr;                 // --engine-wire; nullptr = auto
  int64_t num_speculative_tokens = 0;
  frontend::SpecDecodeMetricsLevel spec_decode_metrics{};  // --per-request-spec-decode-metrics
  std::vector<std::pair<std::string, std::string>> cache_config_info;  // --cache-config-info
  std::vector<LoraModule> lora_modules;                                // numbered
  frontend::GenerationConfig generation;  // --generation-config, --eos-token-id
};

Result<CheckedOptions> CheckOptions(FrontendOptions* o) {
  CheckedOptions checked;
  if (o->data_parallel_size < 1 || o->data_parallel_size > 65535) {
    return Status::InvalidArgument("--data-parallel-size must be between 1 and 65535");
  }
  if (o->engine_count < 0 || o->engine_start_index < 0) {
    return Status::InvalidArgument("--engine-count and --engine-start-index must be >= 0");
  }
  if (!(o->engine_ready_timeout_s > 0)) {
    return Status::InvalidArgument("--engine-ready-timeout must be positive");
  }
  if (!(o->engine_stall_timeout_s >= 0 && o->engine_stall_timeout_s <= 3600)) {
    return Status::InvalidArgument(
        "--engine-stall-timeout must be between 0 (off) and 3600 seconds");
  }
  if (!(o->engine_control_timeout_s > 0 && o->engine_control_timeout_s <= 86400)) {
    return Status::InvalidArgument(
        "--engine-control-timeout must be more than 0 and at most 86400 seconds");
  }
  if (!(o->output_backlog_limit_s > 0 && o->output_backlog_limit_s <= 3600)) {
    return Status::InvalidArgument(
        "FrontendOptions::output_backlog_limit_s must be between 0 and 3600 seconds");
  }
  if (o->max_loras < 1) return Status::InvalidArgument("--max-loras must be at least 1");
  Result<const WireGeneration*> wire = ParseEngineWire(o->engine_wire);
  if (!wire.ok()) return wire.status();
  checked.engine_wire = *wire;
  // As vLLM does, LoRA modules need --enable-lora.
  if (!o->lora_modules.empty() && !o->enable_lora) {
    return Status::InvalidArgument("--lora-modules requires --enable-lora");
  }
  if (Status s = frontend::CheckLoraModules(o->lora_modules, o->max_label_value_bytes); !s.ok()) {
    return s;
  }
  checked.lora_modules = o->lora_modules;
  for (size_t i = 0; i < checked.lora_modules.size(); ++i) {
    checked.lora_modules[i].lora_int_id = static_cast<int64_t>(i) + 1;  // vLLM's numbering
  }
  if (!o->kv_transfer_config.empty()) {
    Result<ConnectorConfig> c = ConnectorConfig::FromKvTransferConfigJson(o->kv_transfer_config);
    if (!c.ok()) return c.status();
    checked.connectors = std::move(*c);
  }
  if (!o->ec_transfer_config.empty()) {
    Result<EcConnectorConfig> ec =
        EcConnectorConfig::FromEcTransferConfigJson(o->ec_transfer_config);
    if (!ec.ok()) return ec.status();
    checked.ec_connector = std::move(*ec);
  }
  Result<int64_t> speculative = frontend::ParseNumSpeculativeTokens(o->speculative_config);
  if (!speculative.ok()) return speculative.status();
  checked.num_speculative_tokens = *speculative;
  Result<frontend::SpecDecodeMetricsLevel> spec_metrics = frontend::CheckSpecDecodeMetrics(
      o->per_request_spec_decode_metrics, checked.num_speculative_tokens, checked.engine_wire);
  if (!spec_metrics.ok()) return spec_metrics.status();
  checked.spec_decode_metrics = *spec_metrics;
  if (Status s = frontend::CheckMaxModelLen(o->max_model_len, /*zero_is_from_engines=*/true);
      !s.ok()) {
    return s;
  }
  if (Status s = frontend::CheckMaxLabelValueBytes(o->max_label_value_bytes); !s.ok()) return s;
  if (!o->served_model_name.empty()) {  // empty: serve's default name
    if (Status s = frontend::CheckServedModelName(o->served_model_name, o->max_label_value_bytes);
        !s.ok()) {
      return s;
    }
  }
  Result<bool> nans = frontend::ComputeNansInLogitsFromEnvironment();
  if (!nans.ok()) return nans.status();
  checked.compute_nans_in_logits = *nans;
  Result<bool> dev_mode = frontend::ServerDevModeFromEnvironment();
  if (!dev_mode.ok()) return dev_mode.status();
  checked.server_dev_mode = *dev_mode;
  Result<CustomHistogramBuckets> buckets =
      frontend::ParseCustomHistogramBuckets(o->custom_histogram_buckets);
  if (!buckets.ok()) return buckets.status();
  checked.custom_histogram_buckets = std::move(*buckets);
  if (!o->show_hidden_metrics_for_version.empty()) {
    if (!frontend::IsPep440Version(o->show_hidden_metrics_for_version)) {
      return Status::InvalidArgument("--show-hidden-metrics-for-version: invalid version '" +
                                     o->show_hidden_metrics_for_version + "'");
    }
    checked.show_hidden_metrics_for_version = o->show_hidden_metrics_for_version;
  }
  if (!o->cache_config_info.empty()) {
    auto doc = nlohmann::json::parse(o->cache_config_info, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
      return Status::InvalidArgument("--cache-config-info must be a JSON object");
    }
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      // The keys become label names of vllm:cache_config_info (beside `engine`).
      const std::string& k = it.key();
      const bool label_name = !k.empty() && !k.starts_with("__") && k != "engine" &&
                              (std::isalpha(static_cast<unsigned char>(k[0])) || k[0] == '_') &&
                              std::ranges::all_of(k, [](char c) {
                                return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                              });
      if (!label_name) {
        return Status::InvalidArgument("--cache-config-info: key \"" + k +
                                       "\" is not a usable label name ([a-zA-Z_][a-zA-Z0-9_]*, "
                                       "not engine, not __...)");
      }
      // PyRepr writes lists and dicts with dump(), which recurses once per level.
      if (frontend::JsonNestedDeeperThan(it.value(), frontend::kMaxJsonNestingDepth)) {
        return Status::InvalidArgument(
            "--cache-config-info: the value of \"" + k + "\" is nested more than " +
            std::to_string(frontend::kMaxJsonNestingDepth) + " levels deep");
      }
      checked.cache_config_info.emplace_back(k, PyRepr(it.value()));
    }
  }
  if (!o->generation_config.empty()) {
    Result<frontend::GenerationConfig> g = frontend::LoadGenerationConfig(o->generation_config);
    if (!g.ok()) return g.status();
    checked.generation = std::move(*g);
  }
  if (o->eos_token_id < -1 || o->eos_token_id > INT32_MAX) {
    return Status::InvalidArgument("--eos-token-id must be a token id (or -1 for none)");
  }
  if (o->eos_token_id >= 0) checked.generation.eos_token_id = o->eos_token_id;
  if (o->max_logprobs < -1) return Status::InvalidArgument("--max-logprobs must be >= -1");
  if (!o->web_config_file.empty()) {
    Result<WebConfig> web = LoadWebConfig(o->web_config_file);
    if (!web.ok()) return Status::InvalidArgument(web.status().message());
    o->http.web_config = std::move(*web);
  }
  return checked;
}

EngineCoreClientOptions ClientOptions(const FrontendOptions& a) {
  EngineCoreClientOptions o;
  const auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(a.engine_ready_timeout_s * 1000));
  o.hello_timeout = o.ready_timeout = o.registration_timeout = timeout;
  if (a.engine_count > 0) {
    o.mode = StartupMode::kBootstrapped;
    o.input_address = a.input_address;
    o.output_address = a.output_address;
    o.engine_start_index = a.engine_start_index;
    o.engine_count = a.engine_count;
    return o;
  }
  o.mode = StartupMode::kFrontend;
  o.handshake_address = !a.handshake_address.empty() ? a.handshake_address
                                                     : "tcp://" + a.data_parallel_address + ":" +
                                                           std::to_string(a.data_parallel_rpc_port);
  // Data sockets bind on the handshake's host (ephemeral ports): INIT hands their real
  // endpoints to the engines, which may be on other hosts.
  std::string host = a.data_parallel_address;
  const bool tcp = o.handshake_address.rfind("tcp://", 0) == 0;
  if (tcp) {
    const std::string rest = o.handshake_address.substr(6);
    host = rest.substr(0, rest.rfind(':'));
  }
  o.input_address =
      !a.input_address.empty() ? a.input_address : (tcp ? "tcp://" + host + ":0" : std::string());
  o.output_address =
      !a.output_address.empty() ? a.output_address : (tcp ? "tcp://" + host + ":0" : std::string());
  o.engine_count = a.data_parallel_size;
  o.advertised_host = a.advertise_address;
  return o;
}

// A host no engine can connect to: the wildcards a socket binds to every interface with.
bool IsWildcardHost(std::string_view endpoint) {
  if (!endpoint.starts_with("tcp://")) return false;
  std::string_view rest = endpoint.substr(6);
  const size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos) rest = rest.substr(0, colon);
  return rest == "0.0.0.0" || rest == "*" || rest == "[::]" || rest == "::" || rest == "[*]";
}

// Frontend mode: INIT must name an address the engines can reach.
Status CheckAdvertisedAddress(const EngineCoreClientOptions& o, const FrontendOptions& a) {
  if (o.mode != StartupMode::kFrontend || !a.advertise_address.empty()) {
    if (IsWildcardHost("tcp://" + a.advertise_address + ":0")) {
      return Status::InvalidArgument("--advertise-address " + a.advertise_address +
                                     " is a wildcard, not an address engines can connect to");
    }
    return Status::Ok();
  }
  for (const std::string* endpoint : {&o.input_address, &o.output_address}) {
    if (IsWildcardHost(*endpoint)) {
      return Status::InvalidArgument(
          "the data sockets would bind " + *endpoint +
          " (from --handshake-address/--data-parallel-address or --input-address/"
          "--output-address), a wildcard engines cannot connect to: give --advertise-address "
          "HOST, the address engines on other hosts reach this one at");
    }
  }
  return Status::Ok();
}

// A transport failure as the application's: bad options are the caller's, the rest is the
// peers'. The detail (which socket) carries over.
Status FromTransport(const Status& s, std::string_view prefix = "") {
  return s.Wrapped(s.code() == StatusCode::kInvalidArgument ? StatusCode::kInvalidArgument
                                                            : StatusCode::kUnavailable,
                   prefix);
}

// The engines `serve` waits for, as the options say.
std::vector<int> ExpectedEngines(const FrontendOptions& a) {
  std::vector<int> out;
  if (a.engine_count > 0) {
    for (int i = 0; i < a.engine_count; ++i) out.push_back(a.engine_start_index + i);
  } else {
    for (int i = 0; i < a.data_parallel_size; ++i) out.push_back(i);
  }
  return out;
}

}  // namespace

struct Frontend::Impl {
  FrontendOptions options;
  CheckedOptions checked;  // set by Bind
  std::unique_ptr<EngineCoreClient> client;
  // From Bind on: /metrics renders `registry`, which has the engine states from the first
  // second and the recorder's families once the engines are in.
  std::unique_ptr<Registry> registry;
  // The HTTP server's request families (instrumentator's http_*), recorded from Bind on.
  std::unique_ptr<frontend::HttpFamilies> http_families;
  std::unique_ptr<frontend::EngineStates> states;
  std::unique_ptr<frontend::IgnoredFields> ignored_fields;
  std::unique_ptr<StatsRecorder> recorder;
  std::unique_ptr<frontend::RequestService> requests;  // before `http`: destroyed after it
  // Decoded messages to the requests and the recorder (ingest.h); built with `requests`.
  std::unique_ptr<frontend::Ingest> ingest;
  // Set once Start built `requests`: the routes answer 503 before.
  std::atomic<frontend::RequestService*> requests_ready{nullptr};
  frontend::OpenAiRouteContext api_context;  // what the routes answer from; set before the above
  // VLLM_SERVER_DEV_MODE=1: the engine control routes, answering 503 until `control_ready`.
  std::unique_ptr<frontend::EngineControl> control;
  std::atomic<frontend::EngineControl*> control_ready{nullptr};
  std::unique_ptr<HttpServer> http;
  // Output thread only: the kinds of dropped input messages already logged.
  std::set<std::string> dropped_logged;
  ExpositionOptions expo;
  std::atomic<uint64_t> recorded{0};
  // Each engine's wire generation, and decoding with its table; used by the (single) output
  // thread only, after Start.
  std::unique_ptr<WireDecoder> wire;

  // Start builds the parts below under `lifecycle_mu` once the engines are in, and Stop takes
  // them down under it, so a Stop from another thread (a signal during startup) and Start
  // never touch them at once. After Stop, Start builds nothing.
  std::mutex lifecycle_mu;
  bool stopped = false;

  // For WaitForDeadEngines and WaitForRecorded: engines reported dead (guarded by wait_mu),
  // and the count of recorded messages a waiter wants to be woken at (UINT64_MAX: none), so
  // the output thread takes the mutex only when someone waits for exactly that.
  std::mutex wait_mu;
  std::condition_variable wait_cv;
  // The stall watch: a thread that fences engines silent with requests in flight
  // (RequestService::FenceStalled), every quarter of a second, until Stop.
  std::thread stall_watch;
  bool stall_watch_stop = false;  // guarded by wait_mu

  void WatchStalls(std::chrono::milliseconds bound) {
    std::unique_lock<std::mutex> lock(wait_mu);
    while (!wait_cv.wait_for(lock, std::chrono::milliseconds(250),
                             [this] { return stall_watch_stop; })) {
      lock.unlock();
      // Outputs waiting unread may be the silent engine's: not a silence to fence for.
      if (client->output_backlog() > std::chrono::steady_clock::duration::zero()) {
        lock.lock();
        continue;
      }
      for (const auto& [engine, why] : requests->FenceStalled(bound)) {
        LogWarning(why + "; fenced until it sends again");
        states->SetDead(engine, why);
      }
      lock.lock();
    }
  }
  std::set<int> dead;
  std::atomic<uint64_t> wake_at{UINT64_MAX};

  void OnMessage(std::span<const std::string_view> frames, uint64_t number) {
    // The engine's wire generation decides the table; a message of an engine not recognised
    // yet may be held and recorded with a later one (wire_decoder.h).
    wire->Feed(frames, recorder->decode_context(number), on_decoded, on_failed);
  }

  void OnDecoded(EngineCoreOutputs& message, uint64_t number) {
    if (message.utility_output && control) {
      control->OnUtilityOutput(message.engine_index, *message.utility_output);
    }
    ingest->Message(&message, number);
    // Sequentially consistent with WaitForRecorded's store of wake_at and load of recorded:
    // either the waiter sees this message counted, or this thread sees the waiter's target.
    if (recorded.fetch_add(1) + 1 >= wake_at.load()) {
      std::lock_guard<std::mutex> lock(wait_mu);
      wait_cv.notify_all();
    }
  }

  void OnFailed(const Status& s, const DecodeContext& ctx) const {
    recorder->CountDecodeError();
    Problem p;
    p.message_number = ctx.message_number;
    p.offset = s.offset();
    // The offset goes in p.offset, not in the text: one bad frame after another at different
    // offsets is one problem to the reporter, logged once and counted.
    p.what = std::string("message skipped: ") + StatusCodeName(s.code()) + ": " + s.message();
    recorder->reporter().Report(p);
  }

  const WireDecoder::OnMessage on_decoded = [this](EngineCoreOutputs& m, const DecodeContext& ctx) {
    OnDecoded(m, ctx.message_number);
  };
  const WireDecoder::OnFailure on_failed = [this](const Status& s, const DecodeContext& ctx) {
    OnFailed(s, ctx);
  };

  // During startup (requests == nullptr, the startup thread) and once running (the output
  // thread).
  void OnEngineEvent(const EngineEvent& e) {
    if (e.kind != EngineEventKind::kDead) {
      if (states->state(e.engine_index) != frontend::EngineStates::State::kReady) {
        LogInfo("engine " + std::to_string(e.engine_index) + " " +
                (e.rejoined ? "joined again" : "ready") + " (" +
                std::to_string(states->ready_count() + 1) + " of " +
                std::to_string(ExpectedEngines(options).size()) + ")");
      }
      states->SetReady(e.engine_index);
      if (requests && wire && e.rejoined) {
        // A new life, perhaps of another build: recognised afresh, then routed to again.
        for (const EngineInfo& info : client->engines()) {
          if (info.index != e.engine_index) continue;
          wire->ObserveHandshake(info.index, info.ready_response,
                                 info.ready ? &*info.ready : nullptr);
        }
        requests->OnEngineReady(e.engine_index);
        if (control) control->OnEngineReady(e.engine_index);
      }
      {
        std::lock_guard<std::mutex> lock(wait_mu);
        dead.erase(e.engine_index);
      }
      return;
    }
    LogWarning("engine " + std::to_string(e.engine_index) + " lost: " + e.reason);
    states->SetDead(e.engine_index, e.reason);
    if (requests) requests->OnEngineDead(e.engine_index, e.reason);
    if (control) control->OnEngineDead(e.engine_index, e.reason);
    // Its requests were failed: its request gauges would otherwise keep its last step's counts.
    if (recorder) recorder->ClearEngineRequests(e.engine_index);
    {
      std::lock_guard<std::mutex> lock(wait_mu);
      dead.insert(e.engine_index);
    }
    wait_cv.notify_all();
  }

  // vmetrics_engine_wire_info: the generation an engine's messages are decoded with and the
  // layout its requests are encoded with, each updated when it changes (output thread, or the
  // startup thread before it runs).
  std::map<int64_t, std::pair<std::string, std::string>> wire_names;
  void ReportWire(int64_t engine, std::optional<std::string> generation,
                  std::optional<std::string> requests_layout) {
    auto& [g, r] = wire_names[engine];
    if (generation) g = std::move(*generation);
    if (requests_layout) r = std::move(*requests_layout);
    if (g.empty()) return;  // reported once the engine is recognised
    recorder->SetEngineWire(engine, g, r);
  }

  void OnInputDropped(const DroppedMessage& d) {
    states->CountDropped(d.socket);
    // Once per kind and socket: a flood is counted, not logged line by line.
    if (dropped_logged.insert(std::string(d.socket) + ":" + std::string(d.kind)).second) {
      LogWarning(
          "dropped a message on the " + std::string(d.socket) + " socket (" + d.detail +
          "); further ones of this kind are only counted in " +
          std::string(internal::Declaration(internal::FamilyId::kInputMessagesDropped).name) +
          "_total");
    }
  }

  RecorderOptions RecorderOptionsFor(const std::vector<EngineInfo>& engines) const {
    const FrontendOptions& a = options;
    const ReadyResponseSummary ready = SummarizeEngines(engines);
    RecorderOptions o;
    o.served_model_name = a.served_model_name.empty() ? "model" : a.served_model_name;
    o.engine_indexes.clear();
    for (const EngineInfo& e : engines) o.engine_indexes.push_back(e.index);
    o.max_model_len = a.max_model_len > 0 ? a.max_model_len : ready.max_model_len.value_or(8192);
    o.kv_cache_metrics = a.kv_cache_metrics;
    // vLLM's frontend knows LoRA from its own flags; with headless engines the ready responses
    // tell.
    if (a.enable_lora) {
      o.max_loras = a.max_loras;
    } else if (ready.max_loras > 0) {
      o.max_loras = ready.max_loras;
    }
    // vmetrics_engine_up is EngineStates' (registered before the recorder exists).
    o.track_engine_liveness = false;
    o.report_engine_wire = true;
    o.max_label_values_per_family = a.max_label_values_per_family;
    o.max_label_value_bytes = a.max_label_value_bytes;
    o.log = [](const std::string& line) { LogWarning(line); };
    if (checked.connectors) {
      o.connectors = *checked.connectors;
    } else if (ready.kv_connector) {
      // vLLM's frontend knows its connector from its own config; with headless engines the
      // ready response is where it comes from.
      o.connectors.connector = *ready.kv_connector;
      o.connectors.kv_role = ready.kv_role.value_or("");
    }
    o.compute_nans_in_logits = checked.compute_nans_in_logits;
    o.custom_histogram_buckets = checked.custom_histogram_buckets;
    // The running vLLM is the engines' (their ready responses' vllm_version); none reported
    // counts as a development build, as an unknown build does in vLLM.
    std::string running_version;
    for (const EngineInfo& e : engines) {
      if (!e.ready_response.vllm_version.empty()) {
        running_version = e.ready_response.vllm_version;
        break;
      }
    }
    o.show_hidden_metrics =
        frontend::ShowHiddenMetrics(checked.show_hidden_metrics_for_version, running_version);
    o.num_speculative_tokens = checked.num_speculative_tokens;
    o.diffusion_model = a.diffusion_model;
    o.ec_connector = checked.ec_connector;
    // vllm:cache_config_info: what the ready responses tell (block_size, num_gpu_blocks summed
    // over engines, kv_cache_size_tokens, kv_cache_max_concurrency), plus --cache-config-info.
    auto put = [&o](const std::string& k, const std::string& v) {
      for (auto& [key, value] : o.cache_config) {
        if (key == k) {
          value = v;
          return;
        }
      }
      o.cache_config.emplace_back(k, v);
    };
    if (ready.block_size) put("block_size", std::to_string(*ready.block_size));
    put("num_gpu_blocks", std::to_string(ready.num_gpu_blocks));
    if (ready.kv_cache_size_tokens) {
      put("kv_cache_size_tokens", std::to_string(*ready.kv_cache_size_tokens));
    }
    if (ready.kv_cache_max_concurrency) {
      put("kv_cache_max_concurrency", FormatGoFloat(*ready.kv_cache_max_concurrency));
    }
    for (const auto& [key, value] : checked.cache_config_info) put(key, value);
    return o;
  }
};

Frontend::Frontend(FrontendOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  frontend::SetLogFormat(impl_->options.log_format);
}

Frontend::~Frontend() { Stop(); }

Status Frontend::Bind() {
  Impl& m = *impl_;
  const FrontendOptions& a = m.options;
  Result<CheckedOptions> checked = CheckOptions(&m.options);
  if (!checked.ok()) return checked.status();
  m.checked = std::move(*checked);
  const EngineCoreClientOptions client_options = ClientOptions(a);
  if (Status s = CheckAdvertisedAddress(client_options, a); !s.ok()) return s;
  m.expo.created_series = !(a.disable_created_series || frontend::CreatedDisabledByEnvironment());
  m.registry = std::make_unique<Registry>();
  // vLLM's app registers these when uvicorn first calls it, after the engine client built the
  // vllm: families: render group 1, registered before every vmetrics_ family of that group,
  // puts them after the vllm: families (registered at Start) and before vmetrics' own.
  m.http_families = std::make_unique<frontend::HttpFamilies>(m.registry.get());
  m.states = std::make_unique<frontend::EngineStates>(m.registry.get(), ExpectedEngines(a));
  m.ignored_fields = std::make_unique<frontend::IgnoredFields>(
      m.registry.get(), [](std::string_view line) { LogWarning(line); });
  frontend::RegisterBuildInfo(m.registry.get());

  // HTTP before the engine sockets: a port in use fails before any engine is told where to
  // connect, and /metrics and /health answer while the engines load.
  HttpHandlers handlers;
  handlers.render_metrics = [&m](ExpositionFormat format) {
    // The process families first, where prometheus_client's default registry has them.
    std::string out;
    WriteProcessMetrics(ReadProcessStats(), format, &out);
    if (format == ExpositionFormat::kOpenMetrics) {
      WriteOpenMetrics(*m.registry, m.expo, &out);
    } else {
      WriteText(*m.registry, m.expo, &out);
    }
    return out;
  };
  // 200 only once the token API serves: a probe that saw 200 may send requests at once.
  handlers.health = [&m] {
    HealthReport report = m.states->Health();
    // Acquire: m.client was set before the store.
    if (m.requests_ready.load(std::memory_order_acquire) == nullptr) {
      if (report.healthy) report.body += "starting: the token API is not serving yet\n";
      report.healthy = false;
      return report;
    }
    const double backlog = std::chrono::duration<double>(m.client->output_backlog()).count();
    if (backlog > m.options.output_backlog_limit_s) {
      report.healthy = false;
      char line[96];
      std::snprintf(line, sizeof line,
                    "recording is behind: engine outputs have waited %.1f s to be read\n", backlog);
      report.body += line;
    }
    return report;
  };
  // The request service needs the engines' max_model_len: until Start built it, the routes
  // answer 503.
  for (HttpRoute& route : frontend::OpenAiRoutes([&m]() -> const frontend::OpenAiRouteContext* {
         // Acquire: api_context was filled before the store.
         return m.requests_ready.load(std::memory_order_acquire) != nullptr ? &m.api_context
                                                                            : nullptr;
       })) {
    handlers.routes.push_back(std::move(route));
  }
  if (m.checked.server_dev_mode) {
    LogWarning(
        "SECURITY WARNING: development endpoints are enabled (VLLM_SERVER_DEV_MODE): /sleep, "
        "/wake_up, /pause, /resume, /reset_prefix_cache act on every engine; this should NOT "
        "be used in production");
    for (HttpRoute& route : frontend::EngineControl::Routes(
             [&m] { return m.control_ready.load(std::memory_order_acquire); })) {
      handlers.routes.push_back(std::move(route));
    }
  }
  for (const HttpRoute& route : a.extra_routes) handlers.routes.push_back(route);
  handlers.observe = [families = m.http_families.get()](const HttpRequestRecord& request) {
    families->Record(request);
  };
  handlers.log = [](std::string_view line) {
    LogWarning(std::string("http: ") + std::string(line));
  };
  HttpServerOptions http = a.http;
  if (!http.api_keys.empty() && http.api_key_path_prefixes.empty()) {
    http.api_key_path_prefixes = frontend::ApiKeyPathPrefixes();
    for (std::string& path : frontend::EngineControlPaths()) {
      http.api_key_path_prefixes.push_back(std::move(path));
    }
  }
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(http, std::move(handlers));
  if (!server.ok()) {
    // The server's own words name the host and port; the flags are named here. The detail
    // carries over, so the caller can tell a port in use from the rest.
    const Status& why = server.status();
    const bool address =
        why.detail() == StatusDetail::kHttpPort || why.detail() == StatusDetail::kHttpHost;
    return Status::InvalidArgument((address ? "--host/--port: " : "HTTP: ") + why.message(),
                                   why.detail());
  }
  m.http = std::move(*server);

  m.client = std::make_unique<EngineCoreClient>(client_options);
  if (Status s = m.client->Bind(); !s.ok()) {
    return FromTransport(s, "cannot bind the engine sockets: ");
  }
  return Status::Ok();
}

std::string Frontend::handshake_endpoint() const { return impl_->client->endpoints().handshake; }
std::string Frontend::input_endpoint() const { return impl_->client->endpoints().input; }
std::string Frontend::output_endpoint() const { return impl_->client->endpoints().output; }

Status Frontend::Start() {
  Impl& m = *impl_;
  if (!m.client) return Status::InvalidArgument("Start() needs a successful Bind() first");
  Status waited = m.client->WaitForEngines([&m](const EngineEvent& e) { m.OnEngineEvent(e); });
  if (!waited.ok()) return FromTransport(waited);
  std::lock_guard<std::mutex> lifecycle(m.lifecycle_mu);
  if (m.stopped) return Status::Unavailable("stopped while waiting for the engines");
  const std::vector<EngineInfo> engines = m.client->engines();
  const RecorderOptions o = m.RecorderOptionsFor(engines);

  // The vllm:* families appear on /metrics from here on.
  m.recorder = std::make_unique<StatsRecorder>(m.registry.get(), o);
  for (const EngineInfo& e : engines) {
    LogInfo("engine " + std::to_string(e.index) + " joined (max_model_len " +
            (e.ready_response.max_model_len ? std::to_string(*e.ready_response.max_model_len)
                                            : std::string("unknown")) +
            (e.ready_response.kv_connector ? ", kv_connector " + *e.ready_response.kv_connector
                                           : std::string()) +
            ")");
  }

  frontend::RequestService::Options ro;
  ro.config.max_model_len = o.max_model_len;
  if (m.options.max_model_len <= 0 && !SummarizeEngines(engines).max_model_len) {
    // Engines released before 2026-04-09 register with an empty frame: nothing says how long
    // a context may be, and a guess would let requests past it reach the engine.
    ro.config.max_model_len = 0;
    LogWarning(
        "the engines' handshake does not report max_model_len: token API requests are refused "
        "until vmetrics is started with --max-model-len");
  }
  ro.config.served_model_name = o.served_model_name;
  ro.config.lora_modules = m.checked.lora_modules;
  ro.config.max_logprobs = m.options.max_logprobs;
  ro.config.enable_prompt_tokens_details = m.options.enable_prompt_tokens_details;
  ro.config.enable_per_request_metrics = m.options.enable_per_request_metrics;
  ro.config.enable_force_include_usage = m.options.enable_force_include_usage;
  ro.config.spec_decode_metrics = m.checked.spec_decode_metrics;
  ro.config.generation = m.checked.generation;
  if (!ro.config.generation.eos_token_id) {
    LogWarning(
        "no EOS token (--eos-token-id, --generation-config): engines stop requests at "
        "max_tokens and stop_token_ids only");
  }
  ro.engine_indexes = o.engine_indexes;
  ro.track_nans_in_logits = m.checked.compute_nans_in_logits;
  ro.kv_connector = !o.connectors.connector.empty();
  const auto ro_send = [client = m.client.get()](int engine, EngineCoreRequestType type,
                                                 const std::string& body) {
    const std::string_view frames[] = {body};
    return client->Send(engine, type, frames);
  };
  ro.send = ro_send;
  ro.on_ignored_field = [&m](std::string_view field) { m.ignored_fields->Count(field); };
  m.requests = std::make_unique<frontend::RequestService>(std::move(ro));
  m.ingest = std::make_unique<frontend::Ingest>(m.recorder.get(), m.requests.get());
  m.requests->SetOnEngineBack([&m](int engine) {
    LogInfo("engine " + std::to_string(engine) + " answers again; taking requests again");
    m.states->SetReady(engine);
  });

  if (m.checked.server_dev_mode) {
    frontend::EngineControl::Options co;
    co.send = ro_send;
    co.engine_indexes = o.engine_indexes;
    co.timeout =
        std::chrono::milliseconds(static_cast<int64_t>(m.options.engine_control_timeout_s * 1000));
    co.on_sleep_state = [&m](int64_t engine, bool asleep, int64_t level) {
      m.recorder->SetEngineSleepState(engine, asleep, level);
    };
    m.control = std::make_unique<frontend::EngineControl>(std::move(co));
  }

  // Each engine's wire generation: what its messages are decoded with, and what its requests
  // must be readable by (the candidates its handshake and messages leave).
  WireDecoderOptions wire_options;
  wire_options.forced = m.checked.engine_wire;
  wire_options.log = [](const std::string& line) { LogWarning(line); };
  wire_options.on_recognised = [&m](const WireRecognition& r) {
    (r.ambiguous || r.generation == nullptr ? LogWarning : LogInfo)(DescribeRecognition(r));
    m.ReportWire(r.engine_index, r.name(), std::nullopt);
  };
  wire_options.on_candidates = [&m](int64_t engine, WireCandidates candidates) {
    if (m.control) m.control->SetEngineWire(engine, candidates);
    const frontend::RequestService::EngineWireChoice layout =
        m.requests->SetEngineWire(engine, candidates);
    (layout.refused ? LogWarning : LogInfo)("engine " + std::to_string(engine) +
                                            ": requests encoded as " + layout.description +
                                            " (it may be " + WireCandidateNames(candidates) + ")");
    m.ReportWire(engine, std::nullopt, layout.description);
  };
  m.wire = std::make_unique<WireDecoder>(std::move(wire_options));
  for (const EngineInfo& e : engines) {
    m.wire->ObserveHandshake(e.index, e.ready_response, e.ready ? &*e.ready : nullptr);
  }

  EngineCoreClientCallbacks cb;
  cb.on_message = [&m](std::span<const std::string_view> frames, uint64_t n) {
    m.OnMessage(frames, n);
  };
  cb.on_engine_event = [&m](const EngineEvent& e) { m.OnEngineEvent(e); };
  cb.on_input_dropped = [&m](const DroppedMessage& d) { m.OnInputDropped(d); };
  cb.on_loop_exit = [](const Status& s) {
    if (!s.ok() && s.code() != StatusCode::kStopped) {
      LogError("engine output loop ended: " + s.ToString());
    }
  };
  if (Status ts = m.client->Start(std::move(cb)); !ts.ok()) return FromTransport(ts);
  frontend::OpenAiRouteContext& routes = m.api_context;
  routes.service = m.requests.get();
  routes.server_load_tracking = m.options.enable_server_load_tracking;
  routes.version = frontend::BuildVersion();
  routes.health = [&m] { return m.states->Health(); };
  routes.engines = [&m] {
    std::vector<frontend::EngineVersion> versions;
    for (const EngineInfo& e : m.client->engines()) {
      frontend::EngineVersion v;
      v.engine_index = e.index;
      if (!e.ready_response.vllm_version.empty()) v.vllm_version = e.ready_response.vllm_version;
      versions.push_back(std::move(v));
    }
    return versions;
  };
  routes.kv_event_sources = [&m] {
    // An engine that registered again reports its new life's publisher here.
    std::vector<frontend::KvEventSource> sources;
    for (const EngineInfo& e : m.client->engines()) {
      sources.push_back({e.ready_response.data_parallel_rank, e.ready_response.kv_events_config});
    }
    return sources;
  };
  m.requests_ready.store(m.requests.get(), std::memory_order_release);
  m.control_ready.store(m.control.get(), std::memory_order_release);
  if (m.options.engine_stall_timeout_s > 0) {
    const auto bound =
        std::chrono::milliseconds(static_cast<int64_t>(m.options.engine_stall_timeout_s * 1000));
    m.stall_watch = std::thread([&m, bound] { m.WatchStalls(bound); });
  }
  return Status::Ok();
}

uint16_t Frontend::http_port() const { return impl_->http ? impl_->http->port() : 0; }

std::string Frontend::RenderText() const {
  std::string out;
  if (impl_->registry) WriteText(*impl_->registry, impl_->expo, &out);
  return out;
}

uint64_t Frontend::messages_recorded() const { return impl_->recorded.load(); }

size_t Frontend::live_requests() const {
  return impl_->requests ? impl_->requests->num_live_requests() : 0;
}

size_t Frontend::live_completions() const {
  return impl_->requests ? impl_->requests->num_live_completions() : 0;
}

bool Frontend::WaitForRecorded(uint64_t n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->wait_mu);
  impl_->wake_at.store(n);
  const bool done =
      impl_->wait_cv.wait_for(lock, timeout, [&] { return impl_->recorded.load() >= n; });
  impl_->wake_at.store(UINT64_MAX);
  return done;
}

bool Frontend::WaitForDeadEngines(std::span<const int> engine_indexes,
                                  std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->wait_mu);
  return impl_->wait_cv.wait_for(lock, timeout, [&] {
    for (int e : engine_indexes) {
      if (!impl_->dead.contains(e)) return false;
    }
    return true;
  });
}

void Frontend::Stop() {
  {
    std::lock_guard<std::mutex> lifecycle(impl_->lifecycle_mu);
    impl_->stopped = true;
    // Completions in flight are answered first, so the HTTP server has nothing left waiting.
    if (impl_->requests) impl_->requests->Shutdown();
    if (impl_->control) impl_->control->Shutdown();
    if (impl_->http) impl_->http->Stop();
  }
  {
    std::lock_guard<std::mutex> lock(impl_->wait_mu);
    impl_->stall_watch_stop = true;
  }
  impl_->wait_cv.notify_all();
  if (impl_->stall_watch.joinable()) impl_->stall_watch.join();
  // Outside the lock: this is also what ends a Start that waits for engines.
  if (impl_->client) impl_->client->Stop();
}

}  // namespace vmetrics
