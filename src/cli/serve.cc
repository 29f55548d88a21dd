// vmetrics serve: the engine-core client plus /metrics and /health (docs/design.md §5, §8).
#include <atomic>
#include <csignal>
#include <cstdio>
#include <thread>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/frontend.h"
#include "cli/log.h"

namespace vmetrics::cli {
namespace {

int RunServe(const FrontendArgs& args) {
  BlockStopSignals();
  Frontend frontend(args);
  std::string error;
  if (!frontend.Bind(&error)) {
    LogError("cannot bind the engine sockets: " + error);
    return 1;
  }
  if (args.engine_count > 0) {
    LogInfo("waiting for " + std::to_string(args.engine_count) + " engine(s) on " +
            frontend.input_endpoint() + " (input) and " + frontend.output_endpoint() + " (output)");
  } else {
    LogInfo("waiting for " + std::to_string(args.data_parallel_size) +
            " engine(s) to say HELLO on " + frontend.handshake_endpoint());
  }
  // Startup runs beside the signal wait so that Ctrl-C also ends a wait for engines.
  std::atomic<int> startup{0};  // 0 running, 1 ok, 2 failed
  std::thread starter([&] {
    std::string err;
    if (frontend.Start(&err)) {
      LogInfo("serving http://" + args.host + ":" + std::to_string(frontend.http_port()) +
              "/metrics and /health");
      std::printf("listening on http://%s:%u\n", args.host.c_str(), frontend.http_port());
      std::fflush(stdout);
      startup = 1;
    } else {
      error = err;
      startup = 2;
      kill(getpid(), SIGTERM);
    }
  });
  const int sig = WaitForStopSignal(0);
  frontend.Stop();
  starter.join();
  if (startup == 2) {
    LogError("startup failed: " + error);
    return 1;
  }
  LogInfo(std::string("stopping on ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + " after " +
          std::to_string(frontend.messages_recorded()) + " messages");
  return 0;
}

}  // namespace

void AddServeCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<FrontendArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Meet vLLM engines over ZeroMQ, record their statistics, serve /metrics");
  cmd->footer(
      "Examples:\n"
      "  # next to `vllm serve M --headless --data-parallel-address 10.0.0.5 "
      "--data-parallel-rpc-port 29550`:\n"
      "  vmetrics serve --data-parallel-address 10.0.0.5 --data-parallel-rpc-port 29550 "
      "--served-model-name M --host 0.0.0.0 --port 8000\n"
      "  # addresses fixed by a supervisor:\n"
      "  vmetrics serve --input-address tcp://127.0.0.1:5555 --output-address "
      "tcp://127.0.0.1:5556 --engine-start-index 0 --engine-count 2");
  AddFrontendFlags(cmd, args.get());
  cmd->callback([args, exit_code] { *exit_code = RunServe(*args); });
}

}  // namespace vmetrics::cli
