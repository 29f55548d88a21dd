// SPDX-License-Identifier: Apache-2.0
// vmetrics bench-serve: the flags of loadgen::BenchServe (tools/loadgen/bench_serve.h), the
// frontend's own benchmark. Exit 0 when every request completed, 1 when one failed, 2 for
// options that cannot be used.
#include "loadgen/bench_serve.h"

#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"

namespace vmetrics::cli {
namespace {

int RunBenchServe(const loadgen::BenchServeOptions& options) {
  Result<loadgen::LoadReport> report = loadgen::BenchServe(options, [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
  if (!report.ok()) {
    std::fprintf(stderr, "vmetrics bench-serve: %s\n", report.status().message().c_str());
    return 2;
  }
  return report->failed > 0 ? 1 : 0;
}

}  // namespace

void AddBenchServeCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<loadgen::BenchServeOptions>();
  loadgen::LoadOptions& load = options->load;
  CLI::App* cmd = app.add_subcommand(
      "bench-serve", "Send token-id completions at a rate and report throughput and latency");
  cmd->footer(
      "Examples:\n"
      "  vmetrics bench-serve --url http://127.0.0.1:8000/v1/completions --requests 200 "
      "--rate 20 --concurrency 16\n"
      "  vmetrics bench-serve --duration 30 --rate 0 --concurrency 64\n"
      "  vmetrics bench-serve --url https://10.0.0.5:8000/v1/completions --ca-file ca.pem "
      "--user prometheus --password secret --requests 100");
  cmd->add_option("--url", load.url,
                  "Completions endpoint (http:// or https://), or a URL ending in "
                  "/inference/v1/generate for token-in/token-out generate requests");
  cmd->add_option("--ca-file", load.client.ca_file,
                  "PEM certificates that may sign an https:// server's (default: the system's)");
  cmd->add_option("--user", load.client.user, "Basic authentication user");
  cmd->add_option("--password", load.client.password,
                  "Basic authentication password (visible to other local users in the process "
                  "list)");
  cmd->add_option("--requests", load.requests, "Requests to send (0 = until --duration)");
  cmd->add_option("--duration", load.duration_s, "Seconds to send for (0 = no limit)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--rate", load.rate, "Requests per second, Poisson (0 = no pacing)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--concurrency", load.concurrency, "Requests in flight at most")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--prompt-len", options->prompt_len, "Prompt tokens per request")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-tokens", options->max_tokens, "max_tokens per request (ignore_eos is set)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_flag("--no-stream{false}", load.stream,
                "Ask for whole answers (\"stream\": false) instead of streams");
  cmd->add_option("--n", load.n, "Samples per prompt")->check(CLI::Range(int64_t{1}, int64_t{128}));
  cmd->add_option("--model", load.models,
                  "model field to send; several are sent in turn (default: none)");
  cmd->add_option("--seed", load.seed, "Seed of prompts and arrival times");
  cmd->callback([options, exit_code] { *exit_code = RunBenchServe(*options); });
}

}  // namespace vmetrics::cli
