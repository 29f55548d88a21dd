// SPDX-License-Identifier: Apache-2.0
// BenchServe: a load run with its header line and report; see bench_serve.h.
#include "loadgen/bench_serve.h"

#include <cstdio>
#include <string>
#include <utility>

namespace vmetrics::loadgen {

Result<LoadReport> BenchServe(BenchServeOptions options,
                              const std::function<void(std::string_view)>& print) {
  LoadOptions& o = options.load;
  if (Status s = CheckHttpUrl(o.url); !s.ok()) {
    return Status::InvalidArgument("--url: " + s.message());
  }
  if (o.requests == 0 && o.duration_s <= 0) {
    return Status::InvalidArgument("give --requests N or --duration S");
  }
  o.prompt_len_min = o.prompt_len_max = options.prompt_len;
  o.max_tokens_min = o.max_tokens_max = options.max_tokens;
  o.ignore_eos = true;
  char rate[32] = "unlimited";
  if (o.rate > 0) std::snprintf(rate, sizeof rate, "%g req/s", o.rate);
  char line[512];
  std::snprintf(line, sizeof line,
                "bench-serve: %s, rate %s, concurrency %d, prompt %lld tokens, max_tokens %lld%s\n",
                o.url.c_str(), rate, o.concurrency, static_cast<long long>(options.prompt_len),
                static_cast<long long>(options.max_tokens),
                o.stream ? "" : ", whole answers (TTFT is the answer's time)");
  print(line);
  LoadReport report = LoadGenerator(o).Run();
  print(FormatLoadReport(report));
  return report;
}

}  // namespace vmetrics::loadgen
