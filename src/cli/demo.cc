// vmetrics demo: a stand-in engine and the server in one process on loopback, for a first look.
#include <cstdio>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/frontend.h"
#include "cli/log.h"
#include "vmetrics/simulator.h"

namespace vmetrics::cli {
namespace {

struct DemoArgs {
  FrontendArgs frontend;
  int engines = 2;
  std::string connector = "multi";
  double rate_hz = 20;
  double duration_s = 0;
  uint64_t seed = 1;
};

// The lines of the exposition worth showing first: connector families with data.
std::string Excerpt(const std::string& text) {
  std::istringstream in(text);
  std::string out;
  int shown = 0;
  for (std::string line; std::getline(in, line) && shown < 40;) {
    const bool interesting =
        (line.rfind("vllm:nixl_xfer_time_seconds_count", 0) == 0 ||
         line.rfind("vllm:nixl_bytes_transferred_sum", 0) == 0 ||
         line.rfind("vllm:nixl_num_failed_transfers_total", 0) == 0 ||
         line.rfind("vllm:mooncake_xfer_time_seconds_count", 0) == 0 ||
         line.rfind("vllm:mooncake_num_kv_expired_reqs_total", 0) == 0 ||
         line.rfind("vllm:mooncake_store_operation_total", 0) == 0 ||
         line.rfind("vllm:num_requests_running", 0) == 0 ||
         line.rfind("vllm:kv_cache_usage_perc", 0) == 0 ||
         line.rfind("vmetrics_kv_connector_payloads_total", 0) == 0);
    if (interesting) {
      out += "  " + line + "\n";
      ++shown;
    }
  }
  return out;
}

int RunDemo(DemoArgs args) {
  BlockStopSignals();
  FrontendArgs& f = args.frontend;
  f.handshake_address = "tcp://127.0.0.1:0";
  f.data_parallel_size = args.engines;
  if (f.served_model_name.empty()) f.served_model_name = "demo-model";
  SimulatorOptions so;
  so.engines = args.engines;
  so.steps = 0;  // until stopped
  so.rate_hz = args.rate_hz;
  so.seed = args.seed;
  std::optional<SimConnector> c = ParseSimConnector(args.connector);
  if (!c) {
    LogError("unknown --connector " + args.connector);
    return 2;
  }
  so.connector = *c;
  // Configure the frontend as vLLM's would be for this connector setup, so the connector
  // families are registered at startup with zero children (Python semantics).
  switch (*c) {
    case SimConnector::kNixl: f.kv_transfer_config = R"({"kv_connector":"NixlConnector"})"; break;
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
    case SimConnector::kNone: break;
  }
  Frontend frontend(f);
  std::string error;
  if (!frontend.Bind(&error)) {
    LogError("cannot bind: " + error);
    return 1;
  }
  so.handshake_address = frontend.handshake_endpoint();
  Simulator simulator(so);
  if (TransportStatus s = simulator.Start(); !s.ok()) {
    LogError("stand-in engine: " + s.ToString());
    return 1;
  }
  if (!frontend.Start(&error)) {
    if (f.port != 0 && error.find("HTTP") != std::string::npos) {
      LogError(error + " (try --port 0)");
    } else {
      LogError(error);
    }
    simulator.RequestStop();
    (void)simulator.Wait();
    return 1;
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(frontend.http_port()) + "/metrics";
  std::printf("vmetrics demo: %d stand-in engine(s) (%s) -> %s\n", args.engines,
              args.connector.c_str(), url.c_str());
  std::fflush(stdout);
  // Let a few steps arrive, then show what /metrics holds.
  int sig = WaitForStopSignal(args.duration_s > 0 && args.duration_s < 2 ? args.duration_s : 2);
  std::printf("after %llu messages, %s shows (excerpt):\n%s",
              static_cast<unsigned long long>(frontend.messages_recorded()), url.c_str(),
              Excerpt(frontend.RenderText()).c_str());
  std::printf("curl %s for everything; Ctrl-C to stop.\n", url.c_str());
  std::fflush(stdout);
  if (sig == 0) sig = WaitForStopSignal(args.duration_s > 0 ? std::max(args.duration_s - 2, 0.001) : 0);
  simulator.RequestStop();
  (void)simulator.Wait();
  frontend.Stop();
  std::printf("vmetrics demo: stopped after %llu messages\n",
              static_cast<unsigned long long>(frontend.messages_recorded()));
  return 0;
}

}  // namespace

void AddDemoCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<DemoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "Run stand-in engines and the server on loopback and show /metrics");
  cmd->footer("Examples:\n  vmetrics demo\n  vmetrics demo --connector nixl --duration 10 --port 0");
  cmd->add_option("--engines", args->engines, "Stand-in engines")->check(CLI::Range(1, 64));
  cmd->add_option("--connector", args->connector, "nixl, mooncake-p2p, mooncake-store, multi, none");
  cmd->add_option("--rate", args->rate_hz, "Steps per second per engine")->check(CLI::PositiveNumber);
  cmd->add_option("--duration", args->duration_s, "Seconds to run (0 = until Ctrl-C)");
  cmd->add_option("--seed", args->seed, "Simulator seed");
  cmd->add_option("--port", args->frontend.port, "HTTP port (0 = ephemeral)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--served-model-name", args->frontend.served_model_name, "model_name label");
  cmd->add_option("--log-format", args->frontend.log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([args, exit_code] { *exit_code = RunDemo(*args); });
}

}  // namespace vmetrics::cli
