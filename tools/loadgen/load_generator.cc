// SPDX-License-Identifier: Apache-2.0
// LoadGenerator: Poisson arrivals, a concurrency cap, streamed completions; see load_generator.h.
#include "loadgen/load_generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>
#include <vector>

namespace vmetrics::loadgen {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// p50, p90, p99 (nearest rank) and the mean of `v`.
void Percentiles(std::vector<double> v, double out[4]) {
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  const double ranks[3] = {0.50, 0.90, 0.99};
  for (int i = 0; i < 3; ++i) {
    const auto rank = static_cast<size_t>(std::ceil(ranks[i] * static_cast<double>(v.size())));
    out[i] = v[std::clamp<size_t>(rank, 1, v.size()) - 1];
  }
  double sum = 0;
  for (double x : v) sum += x;
  out[3] = sum / static_cast<double>(v.size());
}

// The token ids of a completion's (or a chunk's) choices, summed; nullopt for a document of
// another shape, which is skipped, never thrown on (nlohmann's value() throws on a non-object).
std::optional<uint64_t> ChoiceTokens(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("choices") || !doc["choices"].is_array()) {
    return std::nullopt;
  }
  uint64_t tokens = 0;
  for (const auto& choice : doc["choices"]) {
    if (choice.is_object()) tokens += choice.value("token_ids", nlohmann::json::array()).size();
  }
  return tokens;
}

// What a response that is not a 200 says about the request.
std::string Failure(const HttpClientResponse& r) {
  return r.status == 0 ? r.error : "HTTP " + std::to_string(r.status) + ": " + r.body;
}

// One request's outcome.
struct Sample {
  bool ok = false;
  std::string error;
  double ttft_ms = 0;
  double e2e_ms = 0;
  uint64_t prompt_tokens = 0;
  uint64_t output_tokens = 0;
};

// Sends one completion and times it. Streamed: the first event carrying tokens is the first
// token; [DONE] ends it. Whole: the answer is the first token and the last.
Sample SendOne(HttpClient& client, const LoadOptions& o, const std::vector<int64_t>& prompt,
               int64_t max_tokens, const std::string* model) {
  // /inference/v1/generate takes the same sampling fields inside sampling_params; its stream
  // chunks carry token_ids per choice as completions' do.
  const std::string_view generate_path = "/inference/v1/generate";
  const bool generate =
      o.url.size() >= generate_path.size() &&
      o.url.compare(o.url.size() - generate_path.size(), generate_path.size(), generate_path) == 0;
  nlohmann::json body;
  if (generate) {
    body = {
        {"token_ids", prompt},
        {"sampling_params", {{"max_tokens", max_tokens}, {"n", o.n}, {"ignore_eos", o.ignore_eos}}},
        {"stream", o.stream}};
  } else {
    body = {{"prompt", prompt},
            {"max_tokens", max_tokens},
            {"n", o.n},
            {"ignore_eos", o.ignore_eos},
            {"stream", o.stream}};
  }
  if (model != nullptr) body["model"] = *model;
  Sample s;
  s.prompt_tokens = prompt.size();
  const Clock::time_point start = Clock::now();
  std::string pending;
  bool done = false;
  if (!o.stream) {
    const HttpClientResponse r = client.Post(o.url, body.dump());
    s.e2e_ms = s.ttft_ms = Ms(Clock::now() - start);
    if (r.status != 200) {
      s.error = Failure(r);
    } else if (std::optional<uint64_t> tokens =
                   ChoiceTokens(nlohmann::json::parse(r.body, nullptr, false))) {
      s.output_tokens = *tokens;
    } else {
      s.error = "not an answer: " + r.body.substr(0, 200);
    }
    s.ok = s.error.empty();
    return s;
  }
  HttpClientResponse r = client.Post(o.url, body.dump(), [&](std::string_view piece) {
    pending.append(piece);
    for (size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
      const std::string event = pending.substr(0, end);
      pending.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0) continue;
      const std::string data = event.substr(6);
      if (data == "[DONE]") {
        done = true;
        continue;
      }
      nlohmann::json chunk = nlohmann::json::parse(data, nullptr, false);
      if (chunk.is_object() && chunk.contains("error")) {
        const nlohmann::json& error = chunk["error"];
        const bool worded =
            error.is_object() && error.contains("message") && error["message"].is_string();
        s.error = worded ? error["message"].get<std::string>() : "error event";
        continue;
      }
      const uint64_t tokens = ChoiceTokens(chunk).value_or(0);
      if (tokens > 0 && s.output_tokens == 0) s.ttft_ms = Ms(Clock::now() - start);
      s.output_tokens += tokens;
    }
    return true;
  });
  s.e2e_ms = Ms(Clock::now() - start);
  if (r.status != 200) {
    s.error = Failure(r);
  } else if (!done && s.error.empty()) {
    s.error = "stream ended without [DONE]" + (r.error.empty() ? "" : ": " + r.error);
  }
  s.ok = s.error.empty();
  return s;
}

}  // namespace

LoadReport LoadGenerator::Run() {
  const LoadOptions& o = options_;
  std::mutex mu;
  std::mt19937_64 rng(o.seed);
  uint64_t sent = 0;
  const Clock::time_point start = Clock::now();
  Clock::time_point next_arrival = start;
  std::vector<Sample> samples;

  auto worker = [&] {
    HttpClient client(o.client);
    for (;;) {
      Clock::time_point at;
      std::vector<int64_t> prompt;
      int64_t max_tokens = 0;
      const std::string* model = nullptr;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stop_.load() || (o.requests > 0 && sent >= o.requests)) return;
        if (o.duration_s > 0 && Clock::now() - start >= std::chrono::duration<double>(o.duration_s))
          return;
        if (!o.models.empty()) model = &o.models[sent % o.models.size()];
        ++sent;
        at = next_arrival;
        if (o.rate > 0) {
          // Exponential gaps: a Poisson process of `rate` requests per second.
          const double u = std::generate_canonical<double, 53>(rng);
          next_arrival += std::chrono::duration_cast<Clock::duration>(
              std::chrono::duration<double>(-std::log(1.0 - u) / o.rate));
        }
        auto draw = [&](int64_t lo, int64_t hi) {
          return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
        };
        prompt.resize(static_cast<size_t>(draw(o.prompt_len_min, o.prompt_len_max)));
        for (int64_t& t : prompt) t = draw(1, 31999);
        max_tokens = draw(o.max_tokens_min, o.max_tokens_max);
      }
      // Pacing the arrivals is the point of a load generator: wait for this one's turn.
      std::this_thread::sleep_until(at);
      if (stop_.load()) return;
      Sample s = SendOne(client, o, prompt, max_tokens, model);
      std::lock_guard<std::mutex> lock(mu);
      samples.push_back(std::move(s));
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < std::max(1, o.concurrency); ++i) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();

  LoadReport r;
  r.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> ttft, e2e, tpot;
  for (const Sample& s : samples) {
    if (!s.ok) {
      ++r.failed;
      if (r.first_error.empty()) r.first_error = s.error;
      continue;
    }
    ++r.completed;
    r.prompt_tokens += s.prompt_tokens;
    r.output_tokens += s.output_tokens;
    ttft.push_back(s.ttft_ms);
    e2e.push_back(s.e2e_ms);
    if (s.output_tokens > 1) {
      tpot.push_back((s.e2e_ms - s.ttft_ms) / static_cast<double>(s.output_tokens - 1));
    }
  }
  Percentiles(ttft, r.ttft_ms);
  Percentiles(e2e, r.e2e_ms);
  double tpot_stats[4] = {0, 0, 0, 0};
  Percentiles(tpot, tpot_stats);
  r.tpot_ms_mean = tpot_stats[3];
  return r;
}

std::string FormatLoadReport(const LoadReport& r) {
  char buf[1024];
  const double d = r.duration_s > 0 ? r.duration_s : 1;
  std::snprintf(buf, sizeof buf,
                "completed requests:     %llu\n"
                "failed requests:        %llu\n"
                "duration:               %.2f s\n"
                "request throughput:     %.2f req/s\n"
                "output token throughput: %.1f tok/s\n"
                "total token throughput: %.1f tok/s\n"
                "TTFT ms  p50 %.2f  p90 %.2f  p99 %.2f  mean %.2f\n"
                "E2E ms   p50 %.2f  p90 %.2f  p99 %.2f  mean %.2f\n"
                "TPOT ms  mean %.2f\n",
                static_cast<unsigned long long>(r.completed),
                static_cast<unsigned long long>(r.failed), r.duration_s,
                static_cast<double>(r.completed) / d, static_cast<double>(r.output_tokens) / d,
                static_cast<double>(r.prompt_tokens + r.output_tokens) / d, r.ttft_ms[0],
                r.ttft_ms[1], r.ttft_ms[2], r.ttft_ms[3], r.e2e_ms[0], r.e2e_ms[1], r.e2e_ms[2],
                r.e2e_ms[3], r.tpot_ms_mean);
  std::string out = buf;
  if (!r.first_error.empty()) out += "first error:            " + r.first_error + "\n";
  return out;
}

}  // namespace vmetrics::loadgen
