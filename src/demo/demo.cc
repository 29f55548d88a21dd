// SPDX-License-Identifier: Apache-2.0
// RunDemo: stand-in engines, a Frontend and a load generator in one process; see demo.h.
#include "vmetrics/demo.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "loadgen/http_client.h"
#include "loadgen/load_generator.h"
#include "vmetrics/frontend.h"
#include "vmetrics/frontend/log.h"
#include "vmetrics/frontend/stop_signals.h"
#include "vmetrics/simulator.h"

namespace vmetrics::demo {

using frontend::BlockStopSignals;
using frontend::WaitForStopSignal;

namespace {

// What to suggest when binding failed: another port, where the HTTP port was taken (the
// frontend starts its HTTP server in Bind()).
std::string PortHint(const Status& bind_failure, int port) {
  return port != 0 && bind_failure.detail() == StatusDetail::kHttpPort ? " (try --port 0)" : "";
}

// The lines of the exposition worth showing first: request and connector families with data.
// `pd` adds the NIXL transfer sizes, which the P/D demo is about.
std::string Excerpt(const std::string& text, bool pd = false) {
  static const char* const kShown[] = {
      "vllm:num_requests_running{",
      "vllm:kv_cache_usage_perc{",
      "vllm:prompt_tokens_by_source_total{",
      "vllm:generation_tokens_total{",
      "vllm:request_success_total{",
      "vllm:time_to_first_token_seconds_count{",
      "vllm:inter_token_latency_seconds_count{",
      "vllm:e2e_request_latency_seconds_sum{",
      "vllm:request_queue_time_seconds_sum{",
      "vllm:request_prefill_time_seconds_sum{",
      "vllm:request_decode_time_seconds_sum{",
      "vllm:request_inference_time_seconds_sum{",
      "vllm:request_prompt_tokens_sum{",
      "vllm:request_generation_tokens_sum{",
      "vllm:request_params_max_tokens_sum{",
      "vllm:request_params_n_count{",
      "vllm:iteration_tokens_total_sum{",
      "vllm:lora_requests_info{",
      "vllm:nixl_xfer_time_seconds_count{",
      "vllm:mooncake_xfer_time_seconds_count{",
      "vllm:mooncake_store_operation_total{",
      "vmetrics_kv_connector_payloads_total{",
  };
  std::istringstream in(text);
  std::string out;
  int shown = 0;
  for (std::string line; std::getline(in, line) && shown < 72;) {
    bool interesting = false;
    for (const char* prefix : kShown) interesting = interesting || line.rfind(prefix, 0) == 0;
    for (const char* prefix :
         {"vllm:nixl_bytes_transferred_sum{", "vllm:nixl_num_descriptors_sum{"})
      interesting = interesting || (pd && line.rfind(prefix, 0) == 0);
    // Finish reasons and connector outcomes that never happened are noise here.
    if (interesting && line.size() > 4 && line.compare(line.size() - 4, 4, " 0.0") == 0 &&
        (line.rfind("vllm:request_success_total", 0) == 0 ||
         line.rfind("vmetrics_kv_connector_payloads_total", 0) == 0)) {
      interesting = false;
    }
    if (interesting) {
      out += "  " + line + "\n";
      ++shown;
    }
  }
  return out;
}

// Ordered, so the params print in the order the engine sent them.
using Json = nlohmann::ordered_json;

// One request through prefill and decode, as vLLM's NIXL toy proxy routes it
// (tests/v1/kv_connector/nixl_integration/toy_proxy_server.py at vllm-project/vllm 030ea52e):
// to the prefill instance with kv_transfer_params {do_remote_decode: true, ...}, max_tokens 1,
// no stream and no min_tokens; then the original request with the params the prefill answer
// carried to the decode instance. Both legs carry the same request_id (the proxy's
// X-Request-Id). Returns the decode answer's status and the params the prefill returned.
struct Routed {  // NOLINT(bugprone-exception-escape): a null json() never allocates
  int status = 0;
  Json prefill_params;
};

Routed RoutePd(loadgen::HttpClient* client, const std::string& prefill, const std::string& decode,
               const std::string& path, Json body) {
  const bool generate = path == "/inference/v1/generate";
  Json p = body;
  p["kv_transfer_params"] = {{"do_remote_decode", true},    {"do_remote_prefill", false},
                             {"remote_engine_id", nullptr}, {"remote_block_ids", nullptr},
                             {"remote_host", nullptr},      {"remote_port", nullptr}};
  p["stream"] = false;
  p.erase("stream_options");
  Json& params = generate ? p["sampling_params"] : p;
  params["max_tokens"] = 1;
  params.erase("min_tokens");
  Routed routed;
  const loadgen::HttpClientResponse first = client->Post(prefill + path, p.dump());
  if (first.status == 200) {
    const Json answer = Json::parse(first.body, nullptr, false);
    if (answer.is_object() && answer.contains("kv_transfer_params") &&
        answer["kv_transfer_params"].is_object()) {
      routed.prefill_params = answer["kv_transfer_params"];
      body["kv_transfer_params"] = routed.prefill_params;
    }
  }
  routed.status = client->Post(decode + path, body.dump()).status;
  return routed;
}

// The P/D demo: a prefill and a decode Frontend, each with a stand-in engine in the NIXL
// producer or consumer role, and the router above sending completions and generate requests
// alternately.
Status RunPdDemo(const DemoOptions& args) {
  const std::string model = args.served_model_name.empty() ? "demo-model" : args.served_model_name;
  struct Side {
    const char* name;
    SimKvRole role;
    std::unique_ptr<Frontend> frontend;
    std::unique_ptr<Simulator> simulator;
    std::string url;
  };
  Side sides[2] = {{"prefill", SimKvRole::kProducer, nullptr, nullptr, ""},
                   {"decode", SimKvRole::kConsumer, nullptr, nullptr, ""}};
  auto stop_all = [&sides] {
    for (Side& side : sides) {
      if (side.simulator) {
        side.simulator->RequestStop();
        (void)side.simulator->Wait();
      }
      if (side.frontend) side.frontend->Stop();
    }
  };
  for (int i = 0; i < 2; ++i) {
    Side& side = sides[i];
    FrontendOptions f;
    f.handshake_address = "tcp://127.0.0.1:0";
    f.data_parallel_size = 1;
    f.served_model_name = model;
    // Prefill on --port, decode on the next one (both ephemeral with --port 0).
    f.http.port = args.port == 0 ? 0 : static_cast<uint16_t>(args.port + i);
    f.log_format = args.log_format;
    f.kv_transfer_config = R"({"kv_connector":"NixlConnector","kv_role":"kv_both"})";
    side.frontend = std::make_unique<Frontend>(f);
    if (Status s = side.frontend->Bind(); !s.ok()) {
      stop_all();
      return Status::Unavailable("cannot bind: " + s.message() + PortHint(s, args.port));
    }
    SimulatorOptions so;
    so.handshake_address = side.frontend->handshake_endpoint();
    so.engines = 1;
    so.steps = 0;
    so.rate_hz = args.rate_hz;
    so.seed = args.seed + static_cast<uint64_t>(i);
    so.serve_requests = true;
    so.synthetic_requests = false;
    so.connector = SimConnector::kNixl;
    so.kv_role = side.role;
    so.kv_engine_id = std::string(side.name) + "-engine";
    side.simulator = std::make_unique<Simulator>(so);
    if (Status s = side.simulator->Start(); !s.ok()) {
      side.simulator.reset();
      stop_all();
      return Status::Unavailable("stand-in engine: " + s.ToString());
    }
    if (Status s = side.frontend->Start(); !s.ok()) {
      stop_all();
      return s;
    }
    side.url = "http://127.0.0.1:" + std::to_string(side.frontend->http_port());
    std::printf("vmetrics demo --pd: %s instance, stand-in engine %s -> %s/metrics\n", side.name,
                SimKvRoleName(side.role), side.url.c_str());
  }
  std::fflush(stdout);
  // The router: completions and generate requests in turn, prompts of 16 to 256 tokens, 4 to
  // 32 output tokens, at --request-rate (a few a second by default).
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> routed{0};
  std::mutex example_mu;
  Json example;
  std::thread router([&] {
    loadgen::HttpClient client;
    std::mt19937_64 rng(args.seed);
    const double rate = args.request_rate > 0 ? args.request_rate : 4;
    const auto gap = std::chrono::duration<double>(1.0 / rate);
    auto next = std::chrono::steady_clock::now();
    for (uint64_t n = 0; !stop.load(); ++n) {
      const int64_t prompt_len = 16 + static_cast<int64_t>(rng() % 241);
      const int64_t max_tokens = 4 + static_cast<int64_t>(rng() % 29);
      Json prompt = Json::array();
      for (int64_t t = 0; t < prompt_len; ++t) prompt.push_back(3 + rng() % 30000);
      const bool generate = n % 2 == 1;
      Json body = {{"model", model}, {"request_id", "pd-demo-" + std::to_string(n)}};
      if (generate) {
        body["token_ids"] = std::move(prompt);
        body["sampling_params"] = {{"max_tokens", max_tokens}};
      } else {
        body["prompt"] = std::move(prompt);
        body["max_tokens"] = max_tokens;
      }
      const Routed r =
          RoutePd(&client, sides[0].url, sides[1].url,
                  generate ? "/inference/v1/generate" : "/v1/completions", std::move(body));
      if (r.status == 200) routed.fetch_add(1);
      if (!r.prefill_params.is_null()) {
        std::lock_guard<std::mutex> lock(example_mu);
        if (example.is_null()) example = r.prefill_params;
      }
      next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(gap);
      while (!stop.load() && std::chrono::steady_clock::now() < next) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  });
  const double first_look = 4;
  int sig = WaitForStopSignal(args.duration_s > 0 && args.duration_s < first_look ? args.duration_s
                                                                                  : first_look);
  {
    std::lock_guard<std::mutex> lock(example_mu);
    std::printf(
        "routed %llu requests prefill -> decode; a prefill answer's kv_transfer_params:\n"
        "  %s\n",
        static_cast<unsigned long long>(routed.load()), example.dump().c_str());
  }
  for (const Side& side : sides) {
    std::printf("%s %s/metrics shows (excerpt):\n%s", side.name, side.url.c_str(),
                Excerpt(side.frontend->RenderText(), /*pd=*/true).c_str());
  }
  std::printf("curl either /metrics for everything; Ctrl-C to stop.\n");
  std::fflush(stdout);
  if (sig == 0) {
    sig =
        WaitForStopSignal(args.duration_s > 0 ? std::max(args.duration_s - first_look, 0.001) : 0);
  }
  stop.store(true);
  router.join();  // the request in flight finishes first: the engines are still up
  stop_all();
  std::printf("vmetrics demo --pd: stopped after %llu routed requests\n",
              static_cast<unsigned long long>(routed.load()));
  return Status::Ok();
}

}  // namespace

Status RunDemo(const DemoOptions& args) {
  BlockStopSignals();
  if (args.pd) return RunPdDemo(args);
  FrontendOptions f;
  f.handshake_address = "tcp://127.0.0.1:0";
  f.data_parallel_size = args.engines;
  f.served_model_name = args.served_model_name.empty() ? "demo-model" : args.served_model_name;
  f.http.port = args.port;
  f.log_format = args.log_format;
  f.enable_lora = true;
  f.max_loras = 2;
  f.lora_modules = {{"sql-adapter", "/adapters/sql"}, {"chat-adapter", "/adapters/chat"}};
  // An EOS token for the requests (as the model's tokenizer would give it): the stand-in engines
  // stop some of them there, so the demo shows "stop" finishes beside "length" ones.
  f.eos_token_id = 2;
  SimulatorOptions so;
  so.engines = args.engines;
  so.steps = 0;  // until stopped
  so.rate_hz = args.rate_hz;
  so.seed = args.seed;
  // The engines serve the demo's completions; without traffic they make up their own load.
  so.serve_requests = true;
  so.synthetic_requests = args.request_rate <= 0;
  so.connector = args.connector;
  // Configure the frontend as vLLM's would be for this connector setup, so the connector
  // families are registered at startup with zero children (Python semantics).
  switch (args.connector) {
    case SimConnector::kNixl:
      f.kv_transfer_config = R"({"kv_connector":"NixlConnector"})";
      break;
    case SimConnector::kMooncakeP2p:
      f.kv_transfer_config = R"({"kv_connector":"MooncakeConnector"})";
      break;
    case SimConnector::kMooncakeStore:
      f.kv_transfer_config = R"({"kv_connector":"MooncakeStoreConnector"})";
      break;
    case SimConnector::kMulti:
      f.kv_transfer_config =
          R"({"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[)"
          R"({"kv_connector":"NixlConnector"},{"kv_connector":"MooncakeStoreConnector"},)"
          R"({"kv_connector":"MooncakeConnector"}]}})";
      break;
    case SimConnector::kNone:
      break;
  }
  Frontend frontend(f);
  if (Status s = frontend.Bind(); !s.ok()) {
    return Status::Unavailable("cannot bind: " + s.message() + PortHint(s, f.http.port));
  }
  so.handshake_address = frontend.handshake_endpoint();
  Simulator simulator(so);
  if (Status s = simulator.Start(); !s.ok()) {
    return Status::Unavailable("stand-in engine: " + s.ToString());
  }
  if (Status s = frontend.Start(); !s.ok()) {
    simulator.RequestStop();
    (void)simulator.Wait();
    return s;
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(frontend.http_port()) + "/metrics";
  std::printf("vmetrics demo: %d stand-in engine(s) (%s) -> %s\n", args.engines,
              SimConnectorName(args.connector), url.c_str());
  std::fflush(stdout);
  // Completions through the HTTP endpoint, as clients would send them: prompts of 16 to 1024
  // tokens, 4 to 48 output tokens, EOS allowed (so both "stop" and "length" finishes).
  std::unique_ptr<loadgen::LoadGenerator> load;
  std::thread load_thread;
  if (args.request_rate > 0) {
    loadgen::LoadOptions lo;
    lo.url = "http://127.0.0.1:" + std::to_string(frontend.http_port()) + "/v1/completions";
    lo.requests = 0;  // until stopped
    lo.rate = args.request_rate;
    lo.concurrency = 32;
    lo.prompt_len_min = 16;
    lo.prompt_len_max = 1024;
    lo.max_tokens_min = 4;
    lo.max_tokens_max = 48;
    lo.ignore_eos = false;
    lo.seed = args.seed;
    lo.models = {f.served_model_name, "sql-adapter", "chat-adapter"};
    load = std::make_unique<loadgen::LoadGenerator>(lo);
    load_thread = std::thread([&load] { (void)load->Run(); });
  }
  // Let requests finish, then show what /metrics holds.
  const double first_look = 4;
  int sig = WaitForStopSignal(args.duration_s > 0 && args.duration_s < first_look ? args.duration_s
                                                                                  : first_look);
  std::printf("after %llu messages, %s shows (excerpt):\n%s",
              static_cast<unsigned long long>(frontend.messages_recorded()), url.c_str(),
              Excerpt(frontend.RenderText()).c_str());
  std::printf("curl %s for everything; Ctrl-C to stop.\n", url.c_str());
  std::fflush(stdout);
  if (sig == 0) {
    sig =
        WaitForStopSignal(args.duration_s > 0 ? std::max(args.duration_s - first_look, 0.001) : 0);
  }
  if (load) {
    load->RequestStop();
    load_thread.join();  // requests in flight finish first: the engines are still up
  }
  simulator.RequestStop();
  (void)simulator.Wait();
  frontend.Stop();
  std::printf("vmetrics demo: stopped after %llu messages\n",
              static_cast<unsigned long long>(frontend.messages_recorded()));
  return Status::Ok();
}

}  // namespace vmetrics::demo
