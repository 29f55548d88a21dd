// SPDX-License-Identifier: Apache-2.0
// RunDemo: stand-in engines, a Frontend and a load generator in one process; see demo.h.
#include "vmetrics/demo.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "loadgen/load_generator.h"
#include "vmetrics/frontend.h"
#include "vmetrics/frontend/log.h"
#include "vmetrics/frontend/stop_signals.h"
#include "vmetrics/simulator.h"

namespace vmetrics::demo {

using frontend::BlockStopSignals;
using frontend::WaitForStopSignal;

namespace {

// The lines of the exposition worth showing first: request and connector families with data.
std::string Excerpt(const std::string& text) {
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

}  // namespace

Status RunDemo(const DemoOptions& args) {
  BlockStopSignals();
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
  if (Status s = frontend.Bind(); !s.ok())
    return Status::Unavailable("cannot bind: " + s.message());
  so.handshake_address = frontend.handshake_endpoint();
  Simulator simulator(so);
  if (TransportStatus s = simulator.Start(); !s.ok()) {
    return Status::Unavailable("stand-in engine: " + s.ToString());
  }
  if (Status s = frontend.Start(); !s.ok()) {
    simulator.RequestStop();
    (void)simulator.Wait();
    if (f.http.port != 0 && s.message().rfind("HTTP", 0) == 0) {
      return Status::Unavailable(s.message() + " (try --port 0)");
    }
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
