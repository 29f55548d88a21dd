// SPDX-License-Identifier: Apache-2.0
// Serve: a Frontend until SIGINT or SIGTERM; see serve.h.
#include "vmetrics/frontend/serve.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <thread>

#include "vmetrics/frontend/log.h"
#include "vmetrics/frontend/stop_signals.h"

namespace vmetrics::frontend {

Status Serve(const FrontendOptions& options) {
  BlockStopSignals();
  Frontend frontend(options);
  if (Status s = frontend.Bind(); !s.ok()) return s;
  const std::string host = options.http.host;
  LogInfo("serving http://" + host + ":" + std::to_string(frontend.http_port()) +
          "/metrics and /health (engines starting)");
  std::printf("listening on http://%s:%u\n", host.c_str(), frontend.http_port());
  std::fflush(stdout);
  if (options.engine_count > 0) {
    LogInfo("waiting for " + std::to_string(options.engine_count) + " engine(s) on " +
            frontend.input_endpoint() + " (input) and " + frontend.output_endpoint() + " (output)");
  } else {
    LogInfo("waiting for " + std::to_string(options.data_parallel_size) +
            " engine(s) to say HELLO on " + frontend.handshake_endpoint());
  }
  // Startup runs beside the signal wait so that Ctrl-C also ends a wait for engines; a failed
  // startup ends the wait with a SIGTERM of its own.
  Status startup;
  std::thread starter([&] {
    startup = frontend.Start();
    if (!startup.ok()) {
      kill(getpid(), SIGTERM);
      return;
    }
    LogInfo("every engine is ready: recording, /v1/completions open");
  });
  const int sig = WaitForStopSignal(0);
  frontend.Stop();
  starter.join();
  if (!startup.ok()) {
    const std::string message = "startup failed: " + startup.message();
    return startup.code() == StatusCode::kUnavailable ? Status::Unavailable(message)
                                                      : Status::InvalidArgument(message);
  }
  LogInfo(std::string("stopping on ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + " after " +
          std::to_string(frontend.messages_recorded()) + " messages");
  return Status::Ok();
}

}  // namespace vmetrics::frontend
