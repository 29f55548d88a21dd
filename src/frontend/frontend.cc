#include "cli/frontend.h"

#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/log.h"
#include "cli/request_service.h"
#include "cli/stream.h"
#include "vmetrics/engine_core_client.h"
#include "vmetrics/exposition.h"
#include "vmetrics/http_server.h"
#include "vmetrics/recorder.h"
#include "vmetrics/web_config.h"

namespace vmetrics::cli {

void AddFrontendFlags(CLI::App* cmd, FrontendArgs* a) {
  cmd->add_option("--served-model-name", a->served_model_name, "model_name label (default: model)");
  cmd->add_option("--kv-transfer-config", a->kv_transfer_config,
                  "vLLM's KVTransferConfig JSON; default: the engines' kv_connector");
  cmd->add_option("--data-parallel-size", a->data_parallel_size,
                  "Engines to wait for in frontend mode")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--data-parallel-address", a->data_parallel_address,
                  "Handshake address engines connect to (vLLM's flag)");
  cmd->add_option("--data-parallel-rpc-port", a->data_parallel_rpc_port,
                  "Handshake port engines connect to (vLLM's flag)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--handshake-address", a->handshake_address,
                  "Full ZeroMQ handshake endpoint (overrides the two above), e.g. ipc:///tmp/hs");
  cmd->add_option("--input-address", a->input_address, "Bootstrapped mode: input ROUTER address");
  cmd->add_option("--output-address", a->output_address, "Bootstrapped mode: output PULL address");
  cmd->add_option("--engine-start-index", a->engine_start_index, "Bootstrapped mode: first engine")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--engine-count", a->engine_count,
                  "Bootstrapped mode: engines to wait for (selects bootstrapped mode)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--engine-ready-timeout", a->engine_ready_timeout_s,
                  "Seconds to wait for each startup stage")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--speculative-config", a->speculative_config,
                  "vLLM's speculative config JSON (num_speculative_tokens)");
  cmd->add_flag("--kv-cache-metrics", a->kv_cache_metrics,
                "Register KV block residency histograms");
  cmd->add_option("--max-model-len", a->max_model_len,
                  "Override the engines' max_model_len for the token buckets");
  cmd->add_option("--cache-config-info", a->cache_config_info,
                  "JSON object of CacheConfig labels for vllm:cache_config_info");
  cmd->add_flag("--disable-created-series", a->disable_created_series, "Omit _created samples");
  cmd->add_option("--max-label-values-per-family", a->max_label_values_per_family,
                  "Children a family may grow from label values engines send (Mooncake store "
                  "operation/status, connector names); past it samples are dropped and counted "
                  "in vmetrics_label_values_dropped_total. 0 = no limit")
      ->capture_default_str();
  cmd->add_flag("--enable-lora", a->enable_lora,
                "LoRA is enabled: register vllm:lora_requests_info (also on when the engines "
                "report LoRA support)");
  cmd->add_option("--max-loras", a->max_loras,
                  "Max LoRA adapters per batch (the max_lora label; vLLM's default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--lora-modules", a->lora_modules,
                  "LoRA adapters a request's `model` may name: name=path or "
                  "'{\"name\":...,\"path\":...}' (requires --enable-lora)");
  cmd->add_option("--host", a->host, "HTTP bind address (loopback by default)");
  cmd->add_option("--port", a->port, "HTTP port (0 = ephemeral)")->check(CLI::Range(0, 65535));
  cmd->add_option("--http-threads", a->http_threads, "HTTP worker threads")
      ->check(CLI::Range(1u, 64u));
  cmd->add_option("--web-config-file", a->web_config_file,
                  "Prometheus exporter-toolkit web config (TLS, basic auth)");
  cmd->add_option("--log-format", a->log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
}

namespace {

// vLLM's --lora-modules items: "name=path" or a JSON object with "name" and "path". Modules are
// numbered 1, 2, ... in order (vLLM's lora_int_id).
bool ParseLoraModules(const std::vector<std::string>& items, std::vector<LoraModule>* out,
                      std::string* error) {
  for (const std::string& item : items) {
    LoraModule m;
    if (!item.empty() && item.front() == '{') {
      auto doc = nlohmann::json::parse(item, nullptr, false);
      if (doc.is_discarded() || !doc.is_object() || !doc.contains("name") ||
          !doc["name"].is_string() || !doc.contains("path") || !doc["path"].is_string()) {
        *error = "--lora-modules: " + item + " is not a JSON object with string name and path";
        return false;
      }
      m.name = doc["name"].get<std::string>();
      m.path = doc["path"].get<std::string>();
    } else {
      const size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
        *error = "--lora-modules: " + item + " is not name=path";
        return false;
      }
      m.name = item.substr(0, eq);
      m.path = item.substr(eq + 1);
    }
    m.lora_int_id = static_cast<int64_t>(out->size()) + 1;
    out->push_back(std::move(m));
  }
  return true;
}

std::string PyRepr(const nlohmann::json& v) {
  // str() of a Python value, for cache_config_info label values.
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    return FormatGoFloat(v.get<double>());
  }
  return v.dump();
}

}  // namespace

struct Frontend::Impl {
  FrontendArgs args;
  std::vector<LoraModule> lora_modules;  // --lora-modules, parsed by Bind
  std::unique_ptr<EngineCoreClient> client;
  std::unique_ptr<Registry> registry;
  std::unique_ptr<StatsRecorder> recorder;
  std::unique_ptr<RequestService> requests;  // before `http`: destroyed after it
  std::unique_ptr<HttpServer> http;
  ExpositionOptions expo;
  std::atomic<uint64_t> recorded{0};
  EngineCoreOutputs scratch;  // reused by the (single) output thread
  // For WaitForDeadEngines and WaitForRecorded: engines reported dead (guarded by wait_mu),
  // and the count of recorded messages a waiter wants to be woken at (UINT64_MAX: none), so
  // the output thread takes the mutex only when someone waits for exactly that.
  std::mutex wait_mu;
  std::condition_variable wait_cv;
  std::set<int> dead;
  std::atomic<uint64_t> wake_at{UINT64_MAX};

  void OnMessage(std::span<const std::string_view> frames, uint64_t number) {
    Status s = DecodeEngineCoreOutputs(frames, recorder->decode_context(number), &scratch);
    if (!s.ok()) {
      recorder->CountDecodeError();
      Problem p;
      p.message_number = number;
      p.offset = s.offset();
      // The offset goes in p.offset, not in the text: one bad frame after another at different
      // offsets is one problem to the reporter, logged once and counted.
      p.what = std::string("message skipped: ") + StatusCodeName(s.code()) + ": " + s.message();
      recorder->reporter().Report(p);
      return;
    }
    // Python records a message's SchedulerStats, then its IterationStats.
    requests->OnOutputs(&scratch, [&](const EngineCoreOutputs& m, const IterationStats* it) {
      recorder->Record(m);
      if (it != nullptr) recorder->RecordIteration(*it, m.engine_index);
    });
    // Sequentially consistent with WaitForRecorded's store of wake_at and load of recorded:
    // either the waiter sees this message counted, or this thread sees the waiter's target.
    if (recorded.fetch_add(1) + 1 >= wake_at.load()) {
      std::lock_guard<std::mutex> lock(wait_mu);
      wait_cv.notify_all();
    }
  }

  HealthReport Health() const {
    HealthReport r;
    if (client == nullptr) return r;
    for (const EngineInfo& e : client->engines()) {
      if (!e.alive) {
        r.healthy = false;
        r.body += "engine " + std::to_string(e.index) + " is dead: " + e.death_reason + "\n";
      }
    }
    return r;
  }
};

Frontend::Frontend(FrontendArgs args) : impl_(std::make_unique<Impl>()) {
  impl_->args = std::move(args);
  LogFormat f;
  if (ParseLogFormat(impl_->args.log_format, &f)) SetLogFormat(f);
}

Frontend::~Frontend() { Stop(); }

bool Frontend::Bind(std::string* error) {
  const FrontendArgs& a = impl_->args;
  // Flags that need no engine are checked before waiting for any (as vLLM does, LoRA modules
  // need --enable-lora).
  if (!a.lora_modules.empty() && !a.enable_lora) {
    *error = "--lora-modules requires --enable-lora";
    return false;
  }
  if (!ParseLoraModules(a.lora_modules, &impl_->lora_modules, error)) return false;
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
  } else {
    o.mode = StartupMode::kFrontend;
    o.handshake_address =
        !a.handshake_address.empty()
            ? a.handshake_address
            : "tcp://" + a.data_parallel_address + ":" + std::to_string(a.data_parallel_rpc_port);
    // Data sockets bind on the handshake's host (ephemeral ports): INIT hands their real
    // endpoints to the engines, which may be on other hosts.
    std::string host = a.data_parallel_address;
    if (o.handshake_address.rfind("tcp://", 0) == 0) {
      const std::string rest = o.handshake_address.substr(6);
      host = rest.substr(0, rest.rfind(':'));
    }
    const bool tcp = o.handshake_address.rfind("tcp://", 0) == 0;
    o.input_address =
        !a.input_address.empty() ? a.input_address : (tcp ? "tcp://" + host + ":0" : std::string());
    o.output_address = !a.output_address.empty() ? a.output_address
                                                 : (tcp ? "tcp://" + host + ":0" : std::string());
    o.engine_count = a.data_parallel_size;
  }
  impl_->client = std::make_unique<EngineCoreClient>(o);
  TransportStatus s = impl_->client->Bind();
  if (!s.ok()) {
    *error = s.ToString();
    return false;
  }
  return true;
}

std::string Frontend::handshake_endpoint() const { return impl_->client->endpoints().handshake; }
std::string Frontend::input_endpoint() const { return impl_->client->endpoints().input; }
std::string Frontend::output_endpoint() const { return impl_->client->endpoints().output; }

bool Frontend::Start(std::string* error) {
  Impl& m = *impl_;
  const FrontendArgs& a = m.args;
  TransportStatus ts = m.client->WaitForEngines();
  if (!ts.ok()) {
    *error = ts.ToString();
    return false;
  }
  std::vector<EngineInfo> engines = m.client->engines();
  ReadyResponseSummary ready = SummarizeEngines(engines);

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
  o.track_engine_liveness = true;
  o.max_label_values_per_family = a.max_label_values_per_family;
  o.log = [](const std::string& line) { LogWarning(line); };
  if (!a.kv_transfer_config.empty()) {
    Result<ConnectorConfig> c = ConnectorConfig::FromKvTransferConfigJson(a.kv_transfer_config);
    if (!c.ok()) {
      *error = c.status().message();
      return false;
    }
    o.connectors = *c;
  } else if (ready.kv_connector) {
    // vLLM's frontend knows its connector from its own config; with headless engines the ready
    // response is where it comes from.
    o.connectors.connector = *ready.kv_connector;
  }
  if (!a.speculative_config.empty()) {
    auto doc = nlohmann::json::parse(a.speculative_config, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
      *error = "--speculative-config must be a JSON object";
      return false;
    }
    if (doc.contains("num_speculative_tokens") &&
        doc["num_speculative_tokens"].is_number_integer()) {
      o.num_speculative_tokens = doc["num_speculative_tokens"].get<int64_t>();
    }
  }
  // vllm:cache_config_info: what the ready responses tell (block_size, num_gpu_blocks summed
  // over engines, kv_cache_size_tokens, kv_cache_max_concurrency), plus --cache-config-info.
  std::vector<std::pair<std::string, std::string>> cache;
  auto put = [&](const std::string& k, const std::string& v) {
    for (auto& [key, value] : cache) {
      if (key == k) {
        value = v;
        return;
      }
    }
    cache.emplace_back(k, v);
  };
  if (ready.block_size) put("block_size", std::to_string(*ready.block_size));
  put("num_gpu_blocks", std::to_string(ready.num_gpu_blocks));
  if (ready.kv_cache_size_tokens)
    put("kv_cache_size_tokens", std::to_string(*ready.kv_cache_size_tokens));
  if (ready.kv_cache_max_concurrency) {
    put("kv_cache_max_concurrency", FormatGoFloat(*ready.kv_cache_max_concurrency));
  }
  if (!a.cache_config_info.empty()) {
    auto doc = nlohmann::json::parse(a.cache_config_info, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
      *error = "--cache-config-info must be a JSON object";
      return false;
    }
    for (auto it = doc.begin(); it != doc.end(); ++it) put(it.key(), PyRepr(it.value()));
  }
  o.cache_config = cache;

  m.registry = std::make_unique<Registry>();
  m.recorder = std::make_unique<StatsRecorder>(m.registry.get(), o);
  m.expo.created_series = !(a.disable_created_series || CreatedDisabledByEnvironment());
  for (const EngineInfo& e : engines) {
    LogInfo("engine " + std::to_string(e.index) + " joined (max_model_len " +
            (e.ready_response.max_model_len ? std::to_string(*e.ready_response.max_model_len)
                                            : std::string("unknown")) +
            (e.ready_response.kv_connector ? ", kv_connector " + *e.ready_response.kv_connector
                                           : std::string()) +
            ")");
  }

  RequestService::Options ro;
  ro.limits.max_model_len = o.max_model_len;
  ro.limits.served_model_name = o.served_model_name;
  ro.limits.lora_modules = m.lora_modules;
  ro.engine_indexes = o.engine_indexes;
  ro.send = [client = m.client.get()](int engine, EngineCoreRequestType type, std::string body) {
    const std::string_view frames[] = {body};
    return client->Send(engine, type, frames);
  };
  m.requests = std::make_unique<RequestService>(std::move(ro));

  EngineCoreClientCallbacks cb;
  cb.on_message = [this](std::span<const std::string_view> frames, uint64_t n) {
    impl_->OnMessage(frames, n);
  };
  cb.on_engine_event = [this](const EngineEvent& e) {
    if (e.kind == EngineEventKind::kDead) {
      LogWarning("engine " + std::to_string(e.engine_index) + " lost: " + e.reason);
      impl_->recorder->SetEngineUp(e.engine_index, false);
      impl_->requests->OnEngineDead(e.engine_index, e.reason);
      {
        std::lock_guard<std::mutex> lock(impl_->wait_mu);
        impl_->dead.insert(e.engine_index);
      }
      impl_->wait_cv.notify_all();
    } else {
      impl_->recorder->SetEngineUp(e.engine_index, true);
    }
  };
  cb.on_loop_exit = [](const TransportStatus& s) {
    if (!s.ok() && s.code() != TransportCode::kStopped) {
      LogError("engine output loop ended: " + s.ToString());
    }
  };
  ts = m.client->Start(std::move(cb));
  if (!ts.ok()) {
    *error = ts.ToString();
    return false;
  }

  HttpServerOptions h;
  h.host = a.host;
  h.port = static_cast<uint16_t>(a.port);
  h.threads = a.http_threads;
  if (!a.web_config_file.empty()) {
    Result<WebConfig> web = LoadWebConfig(a.web_config_file);
    if (!web.ok()) {
      *error = web.status().message();
      return false;
    }
    h.web_config = std::move(*web);
  }
  HttpHandlers handlers;
  handlers.render_metrics = [this](ExpositionFormat format) {
    std::string out;
    if (format == ExpositionFormat::kOpenMetrics) {
      WriteOpenMetrics(*impl_->registry, impl_->expo, &out);
    } else {
      WriteText(*impl_->registry, impl_->expo, &out);
    }
    return out;
  };
  handlers.health = [this] { return impl_->Health(); };
  HttpRoute completions;
  completions.method = "POST";
  completions.path = "/v1/completions";
  completions.handler = [this](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    impl_->requests->HandleCompletion(std::move(request.body), std::move(exchange));
  };
  completions.error_reply = [](unsigned status, std::string_view message) {
    return HttpReply{status, "application/json",
                     ErrorJson(ApiError{status, ErrorType(status), std::string(message)})};
  };
  handlers.routes.push_back(std::move(completions));
  handlers.log = [](std::string_view line) {
    LogWarning(std::string("http: ") + std::string(line));
  };
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(h, std::move(handlers));
  if (!server.ok()) {
    *error = "HTTP: " + server.status().ToString();
    return false;
  }
  m.http = std::move(*server);
  return true;
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
      if (impl_->dead.count(e) == 0) return false;
    }
    return true;
  });
}

void Frontend::Stop() {
  // Completions in flight are answered first, so the HTTP server has nothing left waiting.
  if (impl_->requests) impl_->requests->Shutdown();
  if (impl_->http) impl_->http->Stop();
  if (impl_->client) impl_->client->Stop();
}

void BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForStopSignal(double timeout_s) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (timeout_s <= 0) {
    int sig = 0;
    sigwait(&set, &sig);
    return sig;
  }
  timespec ts;
  ts.tv_sec = static_cast<time_t>(timeout_s);
  ts.tv_nsec = static_cast<long>((timeout_s - static_cast<double>(ts.tv_sec)) * 1e9);
  const int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

}  // namespace vmetrics::cli
