// SPDX-License-Identifier: Apache-2.0
// Exact accounting under faults (docs/reliability.md §4): a real Frontend (engine-core client over
// real ZeroMQ, recorder, HTTP endpoint) takes a stream of stats-only messages from four simulated
// engines while /metrics is scraped over HTTP, with
//   * malformed frames (strict prefixes of a message) injected at random positions,
//   * truncated multipart messages (frame 0 refers to an aux frame that never comes),
//   * engine 2 sending ENGINE_CORE_DEAD part way, engine 3 going silent (sockets closed
//     without a word) part way; engines 0 and 1 stay connected.
// Afterwards every counter on /metrics equals the sum the simulators report they sent,
// vmetrics_decode_errors_total equals the number of bad frames injected, and /health reports
// the dead engines. Synchronisation is on events (simulator threads joined, engines declared
// dead after their connections were read to the end, the frontend's count of recorded
// messages reaching the number sent), never on sleeps.
//
// The message count is VMETRICS_ACCOUNTING_MESSAGES (the build sets 1,000,000, or fewer in
// sanitizer builds); the environment variable of the same name overrides it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http_test_client.h"
#include "test_support.h"
#include "vmetrics/connector_catalog.h"
#include "vmetrics/frontend.h"
#include "vmetrics/simulator.h"

namespace vmetrics {
namespace {

using http_test::Get;
using test::TempDir;

constexpr int kSpecTokens = 2;

uint64_t MessageCount() {
  if (const char* env = std::getenv("VMETRICS_ACCOUNTING_MESSAGES")) {
    return std::strtoull(env, nullptr, 10);
  }
  return VMETRICS_ACCOUNTING_MESSAGES;
}

// Every sample of a text exposition: "name{labels}" -> value.
std::map<std::string, double> ParseSamples(const std::string& text) {
  std::map<std::string, double> samples;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    samples[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return samples;
}

// Compares what /metrics shows with what the simulators sent; each mismatch is one failure.
class Ledger {
 public:
  explicit Ledger(std::map<std::string, double> samples) : samples_(std::move(samples)) {}

  void Expect(const std::string& series, double want, bool exact = true) {
    ++checked_;
    auto it = samples_.find(series);
    if (it == samples_.end()) {
      ADD_FAILURE() << "missing series " << series << " (want " << want << ")";
      return;
    }
    if (exact) {
      EXPECT_EQ(it->second, want) << series;
    } else {
      EXPECT_NEAR(it->second, want, 1e-9 * std::max(1.0, std::abs(want))) << series;
    }
  }
  size_t checked() const { return checked_; }

 private:
  std::map<std::string, double> samples_;
  size_t checked_ = 0;
};

std::string Labels(const EngineTotals& e) {
  return "{engine=\"" + std::to_string(e.engine_index) + "\",model_name=\"m\"}";
}

// What one engine sent, as the series it must have produced. A dead engine's request gauges
// are 0: its requests were failed with it.
void ExpectEngine(Ledger& ledger, const EngineTotals& e, bool dead) {
  ledger.Expect("vllm:prefix_cache_queries_total" + Labels(e), e.prefix_cache.queries);
  ledger.Expect("vllm:prefix_cache_hits_total" + Labels(e), e.prefix_cache.hits);
  ledger.Expect("vllm:external_prefix_cache_queries_total" + Labels(e),
                e.connector_prefix_cache.queries);
  ledger.Expect("vllm:external_prefix_cache_hits_total" + Labels(e), e.connector_prefix_cache.hits);
  ledger.Expect("vllm:spec_decode_num_drafts_total" + Labels(e), e.spec_num_drafts);
  ledger.Expect("vllm:spec_decode_num_draft_tokens_total" + Labels(e), e.spec_num_draft_tokens);
  ledger.Expect("vllm:spec_decode_num_accepted_tokens_total" + Labels(e),
                e.spec_num_accepted_tokens);
  for (size_t pos = 0; pos < e.spec_accepted_per_pos.size(); ++pos) {
    ledger.Expect("vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"" +
                      std::to_string(e.engine_index) + "\",model_name=\"m\",position=\"" +
                      std::to_string(pos) + "\"}",
                  e.spec_accepted_per_pos[pos]);
  }
  ledger.Expect("vllm:num_requests_running" + Labels(e), dead ? 0 : e.last_num_running_reqs);
  ledger.Expect("vllm:kv_cache_usage_perc" + Labels(e), e.last_kv_cache_usage);
  // Connector fields, through the catalog rows: counters got the values' sum, histograms
  // one observation per value.
  for (const auto& [cls, fields] : e.connector_fields) {
    const ConnectorRow* row = ConnectorCatalog::BuiltIn().FindByClassName(cls);
    ASSERT_NE(row, nullptr) << cls;
    for (const auto& [field, sent] : fields) {
      for (const MetricDef& m : row->metrics) {
        if (m.samples_path != field) continue;
        if (m.type == MetricType::kCounter) {
          ledger.Expect(m.name + "_total" + Labels(e), sent.sum * m.scale, m.scale == 1.0);
        } else if (m.type == MetricType::kHistogram) {
          ledger.Expect(m.name + "_count" + Labels(e), static_cast<double>(sent.count));
          ledger.Expect(m.name + "_sum" + Labels(e), sent.sum * m.scale, m.scale == 1.0);
        }
      }
    }
  }
  for (const auto& [key, t] : e.store) {
    // Labels render sorted by name: operation and status come after model_name.
    const std::string labels = "{engine=\"" + std::to_string(e.engine_index) +
                               "\",model_name=\"m\",operation=\"" + key.first + "\",status=\"" +
                               key.second + "\"}";
    ledger.Expect("vllm:mooncake_store_operation_total" + labels, t.records);
    ledger.Expect("vllm:mooncake_store_operation_keys_total" + labels, t.num_keys);
    ledger.Expect("vllm:mooncake_store_operation_bytes_total" + labels, t.num_bytes);
    ledger.Expect("vllm:mooncake_store_operation_failed_keys_total" + labels, t.num_failed_keys);
    ledger.Expect("vllm:mooncake_store_operation_time_seconds_count" + labels, t.records);
    ledger.Expect("vllm:mooncake_store_operation_time_seconds_sum" + labels,
                  t.duration_seconds_sum);
  }
}

SimulatorOptions EngineOptions(const std::string& handshake, int start, int engines, uint64_t steps,
                               uint64_t seed) {
  SimulatorOptions o;
  o.handshake_address = handshake;
  o.engine_start_index = start;
  o.engines = engines;
  o.steps = steps;
  o.seed = seed;
  o.connector = SimConnector::kMulti;
  o.request_outputs = false;  // stats-only: the cheapest message, so a million fit in a test
  o.num_speculative_tokens = kSpecTokens;
  o.handshake_timeout = test::kGenerous;
  return o;
}

// Scrapes /metrics back to back (paced by a short wait that a stop ends at once) until
// stopped, checking every answer is a 200 and no counter ever goes down.
class Scraper {
 public:
  explicit Scraper(uint16_t port) : thread_([this, port] { Run(port); }) {}
  ~Scraper() { Stop(); }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  uint64_t scrapes() const { return scrapes_; }
  std::string failure() const { return failure_; }

 private:
  void Run(uint16_t port) {
    double last_queries = 0;
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(5), [this] { return stop_; })) {
      lock.unlock();
      const http_test::HttpResponse r = Get(port, "/metrics");
      lock.lock();
      if (r.status != 200) {
        failure_ = "scrape answered " + std::to_string(r.status);
        return;
      }
      const auto samples = ParseSamples(r.body);
      auto it = samples.find(R"(vllm:prefix_cache_queries_total{engine="0",model_name="m"})");
      const double queries = it == samples.end() ? -1 : it->second;
      if (queries < last_queries) {
        failure_ = "a counter went down between scrapes";
        return;
      }
      last_queries = queries;
      ++scrapes_;
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<uint64_t> scrapes_{0};
  std::string failure_;
  std::thread thread_;
};

TEST(AccountingUnderFaults, EveryValidMessageCountsAndEveryBadFrameIsADecodeError) {
  const uint64_t total = MessageCount();
  // Engines 2 and 3 stop after kFaultySteps each, sent at kFaultyRate: below their fair share
  // of the output socket even when a TSan build on a loaded machine reads under 1,000 messages
  // a second, so little of their stream is still queued when they close (a closing engine's
  // socket delivers for its linger time, 4 s, then drops the rest — so does a real engine
  // process, ENGINE_CORE_DEAD included). Engines 0 and 1 send the rest as fast as they can.
  constexpr uint64_t kFaultySteps = 1000;
  constexpr double kFaultyRate = 100;
  ASSERT_GE(total, 4 * kFaultySteps);
  const uint64_t healthy_steps = (total - 2 * kFaultySteps) / 2;
  const uint64_t valid = 2 * healthy_steps + 2 * kFaultySteps;
  const auto t0 = std::chrono::steady_clock::now();

  TempDir dir;
  FrontendOptions options;
  options.handshake_address = dir.Ipc("handshake");
  options.input_address = dir.Ipc("input");
  options.output_address = dir.Ipc("output");
  options.data_parallel_size = 4;
  options.served_model_name = "m";
  options.speculative_config = R"({"num_speculative_tokens": 2})";
  options.engine_ready_timeout_s = 60;
  options.http.port = 0;
  options.log_format = LogFormat::kText;
  Frontend frontend(options);
  Status bound = frontend.Bind();
  ASSERT_TRUE(bound.ok()) << bound.ToString();

  // Engines 0 and 1: the bulk of the stream, with bad frames injected at random positions;
  // they stay connected after their last step, so they stay alive.
  SimulatorOptions healthy = EngineOptions(frontend.handshake_endpoint(), 0, 2, healthy_steps, 11);
  healthy.malformed_probability = 0.001;
  healthy.truncated_multipart_probability = 0.0005;
  healthy.hold_after_steps = true;
  // Engine 2 dies (ENGINE_CORE_DEAD), with bad frames too; engine 3 goes silent.
  SimulatorOptions dying = EngineOptions(frontend.handshake_endpoint(), 2, 1, 0, 12);
  dying.die_after = kFaultySteps;
  dying.rate_hz = kFaultyRate;
  dying.malformed_probability = 0.01;
  SimulatorOptions silent = EngineOptions(frontend.handshake_endpoint(), 3, 1, 0, 13);
  silent.vanish_after = kFaultySteps;
  silent.rate_hz = kFaultyRate;
  silent.truncated_multipart_probability = 0.01;

  Simulator sim_healthy(healthy), sim_dying(dying), sim_silent(silent);
  ASSERT_TRUE(sim_healthy.Start().ok());
  ASSERT_TRUE(sim_dying.Start().ok());
  ASSERT_TRUE(sim_silent.Start().ok());
  testing::internal::CaptureStderr();  // the log: each kind of bad frame said once
  Status started = frontend.Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  const uint16_t port = frontend.http_port();
  Scraper scraper(port);

  // The faulty engines end first; each is declared dead only once its connections were read
  // to the end.
  ASSERT_TRUE(sim_dying.Wait().ok());
  ASSERT_TRUE(sim_silent.Wait().ok());
  const int faulty[] = {2, 3};
  ASSERT_TRUE(frontend.WaitForDeadEngines(faulty, std::chrono::seconds(60)));
  // Every valid message recorded: each engine's bad frames went before its last valid
  // message on the same connection, so they were all read too.
  ASSERT_TRUE(frontend.WaitForRecorded(valid, std::chrono::seconds(600)))
      << frontend.messages_recorded() << " of " << valid << " recorded";
  scraper.Stop();
  EXPECT_EQ(scraper.failure(), "");

  const http_test::HttpResponse health = Get(port, "/health");
  EXPECT_EQ(health.status, 503);
  EXPECT_NE(health.body.find("engine 2 is dead: sent ENGINE_CORE_DEAD"), std::string::npos)
      << health.body;
  EXPECT_NE(health.body.find("engine 3 is dead: input connection closed"), std::string::npos)
      << health.body;
  EXPECT_EQ(health.body.find("engine 0"), std::string::npos) << health.body;
  EXPECT_EQ(health.body.find("engine 1"), std::string::npos) << health.body;

  const http_test::HttpResponse metrics = Get(port, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  Ledger ledger(ParseSamples(metrics.body));
  uint64_t messages = 0, bad_frames = 0, malformed = 0, truncated = 0;
  std::map<std::string, uint64_t> payloads;
  for (const Simulator* sim : {&sim_healthy, &sim_dying, &sim_silent}) {
    for (const EngineTotals& e : sim->Totals().engines) {
      ExpectEngine(ledger, e, /*dead=*/e.engine_index >= 2);
      messages += e.messages + e.utility_replies;
      malformed += e.malformed_frames;
      truncated += e.truncated_multipart;
      for (const auto& [cls, n] : e.connector_payloads) payloads[cls] += n;
    }
  }
  bad_frames = malformed + truncated;
  for (const auto& [cls, n] : payloads) {
    ledger.Expect(
        R"(vmetrics_kv_connector_payloads_total{connector=")" + cls + R"(",outcome="recorded"})",
        n);
  }
  ledger.Expect("vmetrics_decode_errors_total{part=\"message\"}", bad_frames);
  ledger.Expect("vmetrics_unknown_engine_messages_total", 0);
  for (int e = 0; e < 4; ++e) {
    ledger.Expect("vmetrics_engine_up{engine=\"" + std::to_string(e) + "\"}", e < 2 ? 1 : 0);
  }
  EXPECT_EQ(messages, valid);
  EXPECT_EQ(frontend.messages_recorded(), messages);
  // The faults really happened (the probabilities above give hundreds of each).
  EXPECT_GT(malformed, 0u);
  EXPECT_GT(truncated, 0u);
  EXPECT_TRUE(sim_dying.Totals().engines[0].sent_engine_core_dead);
  // ... with requests running when they went, so the 0 above was set, not left.
  EXPECT_GT(sim_dying.Totals().engines[0].last_num_running_reqs +
                sim_silent.Totals().engines[0].last_num_running_reqs,
            0);
  EXPECT_TRUE(sim_silent.Totals().engines[0].vanished);
  EXPECT_GT(scraper.scrapes(), 0u);

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "accounting: %llu messages (+%llu malformed, %llu truncated multipart) in %.1f s "
      "(%.0f msg/s), %zu series checked, %llu scrapes during the stream\n",
      static_cast<unsigned long long>(messages), static_cast<unsigned long long>(malformed),
      static_cast<unsigned long long>(truncated), seconds, static_cast<double>(messages) / seconds,
      ledger.checked(), static_cast<unsigned long long>(scraper.scrapes()));
  sim_healthy.RequestStop();
  frontend.Stop();
  // Hundreds of bad frames, cut at different bytes, are a handful of distinct problems: the log
  // says each once (the counter above has them all).
  const std::string log = testing::internal::GetCapturedStderr();
  size_t skipped_lines = 0;
  for (size_t at = log.find("message skipped"); at != std::string::npos;
       at = log.find("message skipped", at + 1)) {
    ++skipped_lines;
  }
  EXPECT_GT(skipped_lines, 0u);
  EXPECT_LE(skipped_lines, 10u) << "of " << bad_frames << " bad frames\n" << log.substr(0, 4000);
}

}  // namespace
}  // namespace vmetrics
