// vmetrics bench-serve: the frontend's own benchmark. Sends token-id completions to a running
// `vmetrics serve` (or any OpenAI-compatible server that takes token-id prompts) at a given
// rate and concurrency, and prints throughput and TTFT / end-to-end latency percentiles.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/load_generator.h"

namespace vmetrics::cli {
namespace {

struct BenchServeArgs {
  std::string url = "http://127.0.0.1:8000/v1/completions";
  LoadOptions load;
  int64_t prompt_len = 128;
  int64_t max_tokens = 64;
};

int RunBenchServe(BenchServeArgs& args) {
  LoadOptions& o = args.load;
  if (!ParseHttpUrl(args.url, &o.url)) {
    std::fprintf(stderr, "vmetrics bench-serve: --url must be http://host[:port]/path\n");
    return 2;
  }
  if (o.requests == 0 && o.duration_s <= 0) {
    std::fprintf(stderr, "vmetrics bench-serve: give --requests N or --duration S\n");
    return 2;
  }
  o.prompt_len_min = o.prompt_len_max = args.prompt_len;
  o.max_tokens_min = o.max_tokens_max = args.max_tokens;
  char rate[32] = "unlimited";
  if (o.rate > 0) std::snprintf(rate, sizeof rate, "%g req/s", o.rate);
  std::printf("bench-serve: %s, rate %s, concurrency %d, prompt %lld tokens, max_tokens %lld\n",
              args.url.c_str(), rate, o.concurrency, static_cast<long long>(args.prompt_len),
              static_cast<long long>(args.max_tokens));
  std::fflush(stdout);
  LoadReport report = LoadGenerator(o).Run();
  std::printf("%s", FormatLoadReport(report).c_str());
  return report.failed > 0 ? 1 : 0;
}

}  // namespace

void AddBenchServeCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<BenchServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench-serve", "Send token-id completions at a rate and report throughput and latency");
  cmd->footer(
      "Examples:\n"
      "  vmetrics bench-serve --url http://127.0.0.1:8000/v1/completions --requests 200 "
      "--rate 20 --concurrency 16\n"
      "  vmetrics bench-serve --duration 30 --rate 0 --concurrency 64");
  cmd->add_option("--url", args->url, "Completions endpoint (plain HTTP)");
  cmd->add_option("--requests", args->load.requests, "Requests to send (0 = until --duration)");
  cmd->add_option("--duration", args->load.duration_s, "Seconds to send for (0 = no limit)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--rate", args->load.rate, "Requests per second, Poisson (0 = no pacing)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--concurrency", args->load.concurrency, "Requests in flight at most")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--prompt-len", args->prompt_len, "Prompt tokens per request")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-tokens", args->max_tokens, "max_tokens per request (ignore_eos is set)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--n", args->load.n, "Samples per prompt")
      ->check(CLI::Range(int64_t{1}, int64_t{128}));
  cmd->add_option("--model", args->load.models,
                  "model field to send; several are sent in turn (default: none)");
  cmd->add_option("--seed", args->load.seed, "Seed of prompts and arrival times");
  cmd->callback([args, exit_code] { *exit_code = RunBenchServe(*args); });
}

}  // namespace vmetrics::cli
