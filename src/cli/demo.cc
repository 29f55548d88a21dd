// SPDX-License-Identifier: Apache-2.0
// vmetrics demo: the flags of demo::RunDemo (include/vmetrics/demo.h): stand-in engines, the server
// and a load generator on loopback, and an excerpt of /metrics.
#include "vmetrics/demo.h"

#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "vmetrics/frontend/log.h"

namespace vmetrics::cli {
namespace {

struct DemoFlags {
  demo::DemoOptions options;
  std::string connector = "multi";
  int port = 8000;
  std::string log_format = "text";
};

int RunDemo(const DemoFlags& flags) {
  demo::DemoOptions options = flags.options;
  const std::optional<SimConnector> connector = ParseSimConnector(flags.connector);
  if (!connector) {
    frontend::LogError("unknown --connector " + flags.connector);
    return 2;
  }
  options.connector = *connector;
  options.port = static_cast<uint16_t>(flags.port);
  (void)frontend::ParseLogFormat(flags.log_format, &options.log_format);  // checked by CLI11
  if (Status s = demo::RunDemo(options); !s.ok()) {
    frontend::LogError(s.message());
    return 1;
  }
  return 0;
}

}  // namespace

void AddDemoCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<DemoFlags>();
  demo::DemoOptions& o = flags->options;
  CLI::App* cmd = app.add_subcommand(
      "demo", "Run stand-in engines and the server on loopback and show /metrics");
  cmd->footer(
      "Examples:\n  vmetrics demo\n  vmetrics demo --connector nixl --duration 10 --port 0\n"
      "  vmetrics demo --pd --duration 10 --port 0");
  cmd->add_option("--engines", o.engines, "Stand-in engines")->check(CLI::Range(1, 64));
  cmd->add_option("--connector", flags->connector,
                  "nixl, mooncake-p2p, mooncake-store, multi, none");
  cmd->add_option("--rate", o.rate_hz, "Steps per second per engine")->check(CLI::PositiveNumber);
  cmd->add_option("--duration", o.duration_s, "Seconds to run (0 = until Ctrl-C)");
  cmd->add_option("--seed", o.seed, "Simulator seed");
  cmd->add_option("--request-rate", o.request_rate,
                  "Completions per second sent to /v1/completions (0 = none; the engines then "
                  "make up their own requests)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--port", flags->port, "HTTP port (0 = ephemeral)")->check(CLI::Range(0, 65535));
  cmd->add_option("--served-model-name", o.served_model_name, "model_name label");
  cmd->add_flag("--pd", o.pd,
                "Prefill/decode disaggregation: a prefill and a decode serve (HTTP on --port and "
                "--port + 1) with stand-in NIXL engines behind an in-process router");
  cmd->add_option("--log-format", flags->log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([flags, exit_code] { *exit_code = RunDemo(*flags); });
}

}  // namespace vmetrics::cli
