// SPDX-License-Identifier: Apache-2.0
// vmetrics: vLLM EngineCore statistics as Prometheus metrics. See README.md.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "commands.h"

#ifndef VMETRICS_VERSION
#error "VMETRICS_VERSION comes from the project version (src/cli/CMakeLists.txt)"
#endif

// A function-try-block: an exception that escapes a command (std::bad_alloc, a library's throw
// we did not foresee) ends the process with a message and status 1 instead of std::terminate.
int main(int argc, char** argv) try {
  CLI::App app{"vmetrics: vLLM EngineCore statistics as Prometheus metrics, byte for byte"};
  app.require_subcommand(1);
  app.set_version_flag("--version", VMETRICS_VERSION);
  // Every flag's default in --help (subcommands inherit the option defaults).
  app.option_defaults()->always_capture_default();
  int exit_code = 0;
  vmetrics::cli::AddDecodeCommand(app, &exit_code);
  vmetrics::cli::AddReplayCommand(app, &exit_code);
  vmetrics::cli::AddServeCommand(app, &exit_code);
  vmetrics::cli::AddSimulateCommand(app, &exit_code);
  vmetrics::cli::AddDemoCommand(app, &exit_code);
  vmetrics::cli::AddMetricsReferenceCommand(app, &exit_code);
  vmetrics::cli::AddWireReferenceCommand(app, &exit_code);
  vmetrics::cli::AddDescribeConnectorsCommand(app, &exit_code);
  vmetrics::cli::AddBenchServeCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2 (CLI11's own codes, 105-109, are
    // not what scripts and supervisors expect of a usage error).
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
} catch (const std::exception& e) {
  std::fprintf(stderr, "vmetrics: fatal: %s\n", e.what());
  return 1;
} catch (...) {
  std::fprintf(stderr, "vmetrics: fatal: an unknown exception\n");
  return 1;
}
