// SPDX-License-Identifier: Apache-2.0
// The response features of the token APIs that vLLM's server turns on with flags or engine
// options, on RequestService fed stand-in engine outputs: the per-request `metrics` object
// (--enable-per-request-metrics), usage forced into completion streams
// (--enable-force-include-usage), and generate's routed_experts and sampling_mask from the
// engine's arrays. Each feature is checked on and off, streamed and not; off, the answers keep
// the shape they have without the feature.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "api_common.h"
#include "request_service.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/engine_request.h"
#include "vmetrics/http_server.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics::frontend {
namespace {

using nlohmann::json;

// What a stand-in engine sends for one engine request in one message.
struct Step {
  std::vector<int64_t> tokens;
  std::vector<EngineCoreEvent> events;
  std::optional<FinishReason> finish;
  std::optional<Tensor> routed_experts;
  std::optional<SamplingMaskLists> sampling_mask;
  std::string spec_decode_metrics;  // RequestSpecDecodeMetrics as msgpack; "" = nil
};

class ResponseFeaturesTest : public ::testing::Test {
 protected:
  void Make(const std::function<void(ServingConfig*)>& tweak = nullptr) {
    RequestService::Options o;
    o.config.max_model_len = 4096;
    o.config.served_model_name = "m";
    if (tweak) tweak(&o.config);
    o.engine_indexes = {0};
    o.send = [](int, EngineCoreRequestType, const std::string&) { return Status::Ok(); };
    o.wall_clock = [] { return 1000.0; };
    // Child i of a parallel-sampling parent is "<i>_<engine id>": the engine id pinned here.
    o.engine_request_id = [](const std::string& external) { return external + "-e"; };
    service_ = std::make_unique<RequestService>(o);
  }
  void TearDown() override {
    if (service_) service_->Shutdown();
  }

  // An exchange that takes a stream: HttpExchange drops writes without a connection, so it
  // gets a stand-in one that is never handed to libmicrohttpd (nothing suspends it: Events
  // reads only what was written).
  std::shared_ptr<HttpExchange> NewExchange() {
    return std::make_shared<HttpExchange>(reinterpret_cast<MHD_Connection*>(&connection_));
  }

  std::shared_ptr<HttpExchange> Completion(const std::string& body) {
    HttpRequest http;
    http.body = body;
    http.headers.emplace_back(std::string(kRequestIdHeader), "r");
    auto exchange = NewExchange();
    service_->HandleCompletion(http, exchange);
    return exchange;
  }
  std::shared_ptr<HttpExchange> Generate(const std::string& body) {
    HttpRequest http;
    http.body = body;
    http.headers.emplace_back(std::string(kRequestIdHeader), "r");
    auto exchange = NewExchange();
    service_->HandleGenerate(http, exchange);
    return exchange;
  }

  // One EngineCoreOutputs message stamped `timestamp` with one output per (engine request id,
  // step).
  void Send(double timestamp, const std::vector<std::pair<std::string, Step>>& outputs) {
    EngineCoreOutputs m;
    m.engine_index = 0;
    m.timestamp = timestamp;
    for (const auto& [id, step] : outputs) {
      ids_.push_back(id);
      EngineCoreOutput o;
      o.request_id = ids_.back();
      o.new_token_ids = step.tokens;
      if (!step.events.empty()) o.events = step.events;
      o.finish_reason = step.finish;
      o.routed_experts = step.routed_experts;
      o.has_routed_experts = step.routed_experts.has_value();
      o.new_sampling_mask = step.sampling_mask;
      o.has_new_sampling_mask = step.sampling_mask.has_value();
      o.spec_decode_metrics = step.spec_decode_metrics;
      m.outputs.push_back(std::move(o));
    }
    service_->OnOutputs(&m, [](const EngineCoreOutputs&, const IterationStats*) {});
  }

  // A message an engine sent (frame 0, no aux frames), decoded as a g20260814 engine's; false
  // when it did not decode or an output in it was skipped.
  bool SendWire(const std::string& frame) {
    frames_.push_back(frame);
    const std::string_view view = frames_.back();
    DecodeContext ctx;
    ctx.wire = FindWireGeneration("g20260814");
    EngineCoreOutputs m;
    if (!DecodeEngineCoreOutputs(std::span<const std::string_view>(&view, 1), ctx, &m).ok() ||
        m.skipped.any()) {
      return false;
    }
    service_->OnOutputs(&m, [](const EngineCoreOutputs&, const IterationStats*) {});
    return true;
  }

  // A request queued at 10.0 and scheduled at 10.5 (engine clock) whose three tokens come at
  // 11.0, 11.25 and 11.5.
  void ThreeTokens(const std::string& id) {
    Send(
        11.0,
        {{id,
          {.tokens = {7}, .events = {{EventType::kQueued, 10.0}, {EventType::kScheduled, 10.5}}}}});
    Send(11.25, {{id, {.tokens = {8}}}});
    Send(11.5, {{id, {.tokens = {9}, .finish = FinishReason::kLength}}});
  }

  static json Body(HttpExchange& exchange) {
    unsigned status = 0;
    std::string type, body;
    EXPECT_EQ(exchange.TakeAnswer(&status, &type, &body), HttpExchange::Phase::kReplied);
    EXPECT_EQ(status, 200U) << body;
    return json::parse(body);
  }
  // The events of a finished stream, [DONE] left out (and required last).
  static std::vector<json> Events(HttpExchange& exchange) {
    std::string all;
    char buf[4096];
    for (size_t left = exchange.unsent_bytes(); left > 0;) {
      const ssize_t n = exchange.ReadStream(buf, std::min(left, sizeof buf));
      if (n <= 0) break;
      all.append(buf, static_cast<size_t>(n));
      left -= static_cast<size_t>(n);
    }
    const std::string done = "data: [DONE]\n\n";
    EXPECT_TRUE(all.size() >= done.size() &&
                all.compare(all.size() - done.size(), done.size(), done) == 0)
        << "the stream did not end: " << all;
    std::vector<json> events;
    for (size_t pos = 0; pos < all.size();) {
      const size_t end = all.find("\n\n", pos);
      EXPECT_NE(end, std::string::npos) << all;
      if (end == std::string::npos) break;
      const std::string data = all.substr(pos + 6, end - pos - 6);  // after "data: "
      if (data != "[DONE]") events.push_back(json::parse(data));
      pos = end + 2;
    }
    return events;
  }

  int connection_ = 0;  // the stand-in connection's address
  std::unique_ptr<RequestService> service_;
  std::deque<std::string> ids_;     // the outputs' request ids point here
  std::deque<std::string> frames_;  // and the decoded messages' views here
};

// build_per_request_timing_metrics' arithmetic on the request of ThreeTokens.
void ExpectThreeTokenTimings(const json& metrics) {
  EXPECT_DOUBLE_EQ(metrics.at("time_to_first_token_ms").get<double>(), (11.0 - 10.5) * 1000);
  EXPECT_DOUBLE_EQ(metrics.at("generation_time_ms").get<double>(), (11.5 - 11.0) * 1000);
  EXPECT_DOUBLE_EQ(metrics.at("queue_time_ms").get<double>(), (10.5 - 10.0) * 1000);
  EXPECT_DOUBLE_EQ(metrics.at("mean_itl_ms").get<double>(), (11.5 - 11.0) / 2 * 1000);
  EXPECT_DOUBLE_EQ(metrics.at("tokens_per_second").get<double>(),
                   3 / ((11.5 - 10.5) * 1000) * 1000);
}

TEST_F(ResponseFeaturesTest, CompletionWithoutTheFlagHasNoMetrics) {
  Make();
  auto ex = Completion(R"({"prompt": [1, 2], "max_tokens": 3})");
  ThreeTokens("cmpl-r-0-e");
  const json body = Body(*ex);
  EXPECT_FALSE(body.contains("metrics")) << body.dump();
  EXPECT_EQ(body.at("choices").at(0).at("token_ids"), json::array({7, 8, 9}));
}

TEST_F(ResponseFeaturesTest, CompletionCarriesPerRequestMetrics) {
  Make([](ServingConfig* c) { c->enable_per_request_metrics = true; });
  auto ex = Completion(R"({"prompt": [1, 2], "max_tokens": 3})");
  ThreeTokens("cmpl-r-0-e");
  const json body = Body(*ex);
  ASSERT_TRUE(body.contains("metrics")) << body.dump();
  ExpectThreeTokenTimings(body.at("metrics"));
}

TEST_F(ResponseFeaturesTest, CompletionMetricsKeepVllmsKeyOrderAndNulls) {
  Make([](ServingConfig* c) { c->enable_per_request_metrics = true; });
  auto ex = Completion(R"({"prompt": [1, 2], "max_tokens": 1})");
  // One token, no SCHEDULED event: the times that need it, and the ITL, are null.
  Send(
      11.0,
      {{"cmpl-r-0-e",
        {.tokens = {7}, .events = {{EventType::kQueued, 10.0}}, .finish = FinishReason::kLength}}});
  unsigned status = 0;
  std::string type, raw;
  ASSERT_EQ(ex->TakeAnswer(&status, &type, &raw), HttpExchange::Phase::kReplied);
  EXPECT_NE(raw.find("\"kv_transfer_params\":null,\"metrics\":{\"time_to_first_token_ms\":null,"
                     "\"generation_time_ms\":0.0,\"queue_time_ms\":null,\"mean_itl_ms\":null,"
                     "\"tokens_per_second\":null}}"),
            std::string::npos)
      << raw;
}

TEST_F(ResponseFeaturesTest, MetricsAreNullForMoreThanOneStream) {
  Make([](ServingConfig* c) { c->enable_per_request_metrics = true; });
  auto ex = Completion(R"({"prompt": [1, 2], "max_tokens": 3, "n": 2})");
  ThreeTokens("0_cmpl-r-0-e");
  ThreeTokens("1_cmpl-r-0-e");
  const json body = Body(*ex);
  ASSERT_TRUE(body.contains("metrics")) << body.dump();
  EXPECT_TRUE(body.at("metrics").is_null());
  auto two = Completion(R"({"prompt": [[1, 2], [3]], "max_tokens": 3})");
  ThreeTokens("cmpl-r-0-e");
  ThreeTokens("cmpl-r-1-e");
  EXPECT_TRUE(Body(*two).at("metrics").is_null());
}

TEST_F(ResponseFeaturesTest, StreamedMetricsRideTheUsageChunkOnly) {
  Make([](ServingConfig* c) { c->enable_per_request_metrics = true; });
  auto ex = Completion(
      R"({"prompt": [1, 2], "max_tokens": 3, "stream": true,
          "stream_options": {"include_usage": true}})");
  ThreeTokens("cmpl-r-0-e");
  const std::vector<json> events = Events(*ex);
  ASSERT_EQ(events.size(), 4U);
  for (size_t i = 0; i < 3; ++i) EXPECT_FALSE(events[i].contains("metrics")) << events[i].dump();
  const json& usage = events[3];
  EXPECT_TRUE(usage.at("choices").empty());
  ASSERT_TRUE(usage.contains("metrics")) << usage.dump();
  ExpectThreeTokenTimings(usage.at("metrics"));
  // Without include_usage there is no usage chunk, so no metrics either (vLLM's placement).
  auto bare = Completion(R"({"prompt": [1, 2], "max_tokens": 3, "stream": true})");
  ThreeTokens("cmpl-r-0-e");
  for (const json& e : Events(*bare)) EXPECT_FALSE(e.contains("metrics")) << e.dump();
}

TEST_F(ResponseFeaturesTest, StreamedMetricsLeaveOutNullFields) {
  Make([](ServingConfig* c) { c->enable_per_request_metrics = true; });
  auto ex = Completion(
      R"({"prompt": [1, 2], "max_tokens": 1, "stream": true,
          "stream_options": {"include_usage": true}})");
  Send(11.0, {{"cmpl-r-0-e", {.tokens = {7}, .finish = FinishReason::kLength}}});
  const std::vector<json> events = Events(*ex);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().at("metrics"), json({{"generation_time_ms", 0.0}}));
}

TEST_F(ResponseFeaturesTest, ForcedUsageFillsEveryCompletionStream) {
  Make([](ServingConfig* c) { c->enable_force_include_usage = true; });
  auto ex = Completion(R"({"prompt": [1, 2], "max_tokens": 3, "stream": true})");
  ThreeTokens("cmpl-r-0-e");
  const std::vector<json> events = Events(*ex);
  ASSERT_EQ(events.size(), 4U);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(events[i].at("usage").at("completion_tokens"), i + 1) << events[i].dump();
  }
  EXPECT_TRUE(events[3].at("choices").empty());
  EXPECT_EQ(events[3].at("usage").at("total_tokens"), 5);
  // Even when the client said no.
  auto no = Completion(
      R"({"prompt": [1, 2], "max_tokens": 3, "stream": true,
          "stream_options": {"include_usage": false}})");
  ThreeTokens("cmpl-r-0-e");
  EXPECT_EQ(Events(*no).size(), 4U);
}

TEST_F(ResponseFeaturesTest, WithoutForcedUsageAStreamHasNone) {
  Make();
  auto ex = Completion(R"({"prompt": [1, 2], "max_tokens": 3, "stream": true})");
  ThreeTokens("cmpl-r-0-e");
  const std::vector<json> events = Events(*ex);
  ASSERT_EQ(events.size(), 3U);
  for (const json& e : events) EXPECT_TRUE(e.at("usage").is_null()) << e.dump();
}

// vLLM's generate endpoint passes False for the flag (serve_tokens_stream_generator at
// 6adad087): its streams are unchanged, and it has no per-request metrics.
TEST_F(ResponseFeaturesTest, GenerateReadsNeitherFlag) {
  Make([](ServingConfig* c) {
    c->enable_force_include_usage = true;
    c->enable_per_request_metrics = true;
  });
  auto ex = Generate(R"({"token_ids": [1, 2], "sampling_params": {"max_tokens": 3},
                         "stream": true})");
  ThreeTokens("generate-tokens-r-e");
  const std::vector<json> events = Events(*ex);
  ASSERT_EQ(events.size(), 3U);
  for (const json& e : events) {
    EXPECT_TRUE(e.at("usage").is_null()) << e.dump();
    EXPECT_FALSE(e.contains("metrics"));
  }
  auto whole = Generate(R"({"token_ids": [1, 2], "sampling_params": {"max_tokens": 3}})");
  ThreeTokens("generate-tokens-r-e");
  EXPECT_FALSE(Body(*whole).contains("metrics"));
}

// ---- routed_experts and sampling_mask: tests/golden/numpy_arrays.json (tools/
// gen_numpy_goldens.py: numpy and msgpack as vLLM's engine and frontend use them) ----

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

json Goldens() {
  std::ifstream in(std::string(VMETRICS_GOLDEN_DIR) + "/numpy_arrays.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str()).at("cases");
}

// The golden frames name the request "generate-tokens-r-e"; a completion's engine request id
// of the same length takes its place.
constexpr std::string_view kGoldenId = "generate-tokens-r-e";
constexpr std::string_view kCompletionId = "cmpl-abcdefghij-0-e";  // X-Request-Id abcdefghij

std::string Renamed(std::string frame, std::string_view to) {
  const size_t at = frame.find(kGoldenId);
  if (at != std::string::npos) frame.replace(at, kGoldenId.size(), to);
  return frame;
}

TEST_F(ResponseFeaturesTest, RoutedExpertsAreVllmsNpyBase64OnBothApis) {
  Make();
  size_t cases = 0;
  for (const json& c : Goldens()) {
    if (c.at("kind") != "routed_experts") continue;
    ++cases;
    SCOPED_TRACE(c.at("name").get<std::string>());
    const std::string answer = c.at("answer");
    auto whole = Generate(R"({"token_ids": [1, 2], "sampling_params": {"max_tokens": 100}})");
    for (const json& f : c.at("frames")) ASSERT_TRUE(SendWire(Unhex(f)));
    const json body = Body(*whole);
    EXPECT_EQ(body.at("choices").at(0).at("routed_experts"), answer);
    EXPECT_FALSE(body.at("choices").at(0).contains("sampling_mask"));

    // Streamed: the chunk that finishes carries it; the ones before carry null.
    auto stream = Generate(
        R"({"token_ids": [1, 2], "sampling_params": {"max_tokens": 100}, "stream": true})");
    for (const json& f : c.at("frames")) ASSERT_TRUE(SendWire(Unhex(f)));
    const std::vector<json> events = Events(*stream);
    ASSERT_EQ(events.size(), c.at("frames").size());
    for (size_t i = 0; i + 1 < events.size(); ++i) {
      EXPECT_TRUE(events[i].at("choices").at(0).at("routed_experts").is_null());
    }
    EXPECT_EQ(events.back().at("choices").at(0).at("routed_experts"), answer);

    // A completion's choice (CompletionResponseChoice.routed_experts).
    HttpRequest http;
    http.body = R"({"prompt": [1, 2], "max_tokens": 100})";
    http.headers.emplace_back(std::string(kRequestIdHeader), "abcdefghij");
    auto completion = NewExchange();
    service_->HandleCompletion(http, completion);
    for (const json& f : c.at("frames")) {
      ASSERT_TRUE(SendWire(Renamed(Unhex(f), kCompletionId)));
    }
    EXPECT_EQ(Body(*completion).at("choices").at(0).at("routed_experts"), answer);
  }
  EXPECT_GE(cases, 5U);
}

TEST_F(ResponseFeaturesTest, SamplingMaskIsVllmsMergedListOnTheWholeGenerateAnswer) {
  Make();
  size_t cases = 0;
  for (const json& c : Goldens()) {
    if (c.at("kind") != "sampling_mask") continue;
    ++cases;
    SCOPED_TRACE(c.at("name").get<std::string>());
    auto whole = Generate(R"({"token_ids": [1, 2], "sampling_params": {"max_tokens": 100}})");
    for (const json& f : c.at("frames")) ASSERT_TRUE(SendWire(Unhex(f)));
    const json choice = Body(*whole).at("choices").at(0);
    EXPECT_EQ(choice.at("sampling_mask"), c.at("answer"));
    EXPECT_TRUE(choice.at("routed_experts").is_null());
    // GenerateResponseStreamChoice's sampling_mask is never set by vLLM's stream: left out.
    auto stream = Generate(
        R"({"token_ids": [1, 2], "sampling_params": {"max_tokens": 100}, "stream": true})");
    for (const json& f : c.at("frames")) ASSERT_TRUE(SendWire(Unhex(f)));
    for (const json& e : Events(*stream)) {
      EXPECT_FALSE(e.at("choices").at(0).contains("sampling_mask")) << e.dump();
    }
  }
  EXPECT_EQ(cases, 3U);
}

TEST_F(ResponseFeaturesTest, AnswersWithoutArraysKeepTheirShape) {
  Make();
  auto whole = Generate(R"({"token_ids": [1, 2], "sampling_params": {"max_tokens": 3}})");
  ThreeTokens("generate-tokens-r-e");
  unsigned status = 0;
  std::string type, raw;
  ASSERT_EQ(whole->TakeAnswer(&status, &type, &raw), HttpExchange::Phase::kReplied);
  EXPECT_NE(raw.find(R"("token_ids":[7,8,9],"routed_experts":null,"stop_reason":null})"),
            std::string::npos)
      << raw;
  auto completion = Completion(R"({"prompt": [1, 2], "max_tokens": 3})");
  ThreeTokens("cmpl-r-0-e");
  EXPECT_FALSE(Body(*completion).at("choices").at(0).contains("routed_experts"));
}

// Routing chunks numpy could not concatenate (another dtype, other trailing dimensions) give
// no routing rather than a wrong one.
TEST_F(ResponseFeaturesTest, ChunksThatDoNotConcatenateGiveNull) {
  Make();
  auto whole = Generate(R"({"token_ids": [1, 2], "sampling_params": {"max_tokens": 3}})");
  const std::string a(6, '\1'), b(4, '\2');
  Send(
      11.0,
      {{"generate-tokens-r-e",
        {.tokens = {7}, .routed_experts = Tensor{.dtype = "|u1", .shape = {1, 3, 2}, .data = a}}}});
  Send(11.5, {{"generate-tokens-r-e",
               {.tokens = {8},
                .finish = FinishReason::kLength,
                .routed_experts = Tensor{.dtype = "|u1", .shape = {1, 2, 2}, .data = b}}}});
  EXPECT_TRUE(Body(*whole).at("choices").at(0).at("routed_experts").is_null());
}

// What the decoder refuses in routed_experts and new_sampling_mask costs that output (skipped
// and counted, as any field of the wrong shape), never the process; every cut and every
// flipped byte of the goldens' frames decodes or is refused.
TEST(NumpyArraysOnTheWire, HostileArraysAreSkippedAndCounted) {
  const WireGeneration* wire = FindWireGeneration("g20260814");
  auto decode = [wire](const std::string& frame, EngineCoreOutputs* m) {
    const std::string_view view = frame;
    DecodeContext ctx;
    ctx.wire = wire;
    return DecodeEngineCoreOutputs(std::span<const std::string_view>(&view, 1), ctx, m);
  };
  std::string routed, mask;
  for (const json& c : Goldens()) {
    if (c.at("name") == "uint8_one_chunk") routed = Unhex(c.at("frames").at(0));
    if (c.at("name") == "two_outputs") mask = Unhex(c.at("frames").at(0));
  }
  ASSERT_FALSE(routed.empty());
  ASSERT_FALSE(mask.empty());
  EngineCoreOutputs m;
  ASSERT_TRUE(decode(routed, &m).ok());
  ASSERT_EQ(m.outputs.size(), 1U);
  ASSERT_TRUE(m.outputs[0].routed_experts.has_value());
  EXPECT_EQ(m.outputs[0].routed_experts->shape, (std::vector<int64_t>{5, 3, 2}));
  auto corrupt = [](std::string frame, std::string_view from, std::string_view to) {
    const size_t at = frame.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) frame.replace(at, from.size(), to);
    return frame;
  };
  struct Case {
    std::string frame;
    const char* why;
  };
  const std::vector<Case> cases = {
      {corrupt(routed, "|u1", "|u3"), "an item size numpy has not"},
      {corrupt(routed, "|u1", "|O8"), "an object array"},
      {corrupt(routed, "|u1", ">u1"), "a byte order on one-byte items"},
      {corrupt(routed, std::string("\x93\x05\x03\x02", 4), std::string("\x93\x06\x03\x02", 4)),
       "a shape the data does not fill"},
      // offsets [0, 3, 4] as int64: [0, 5, 4], then [0, 3, 9].
      {corrupt(mask, std::string("\x03\0\0\0\0\0\0\0\x04", 9),
               std::string("\x05\0\0\0\0\0\0\0\x04", 9)),
       "decreasing offsets"},
      {corrupt(mask, std::string("\x03\0\0\0\0\0\0\0\x04", 9),
               std::string("\x03\0\0\0\0\0\0\0\x09", 9)),
       "offsets past token_ids"},
  };
  for (const Case& c : cases) {
    EngineCoreOutputs bad;
    ASSERT_TRUE(decode(c.frame, &bad).ok()) << c.why;
    EXPECT_EQ(bad.skipped.outputs, 1U) << c.why;
    EXPECT_TRUE(bad.outputs.empty()) << c.why;
  }
  for (const std::string& frame : {routed, mask}) {
    for (size_t cut = 0; cut < frame.size(); ++cut) {
      EngineCoreOutputs out;
      (void)decode(frame.substr(0, cut), &out);
      std::string flipped = frame;
      flipped[cut] = static_cast<char>(flipped[cut] ^ 0x5a);
      (void)decode(flipped, &out);
    }
  }
}

// ---- metrics.speculative_decoding: tests/fixtures/spec_decode_metrics.jsonl
// (tools/gen_spec_decode_goldens.py: the maps as Python's msgpack writes them, the response
// objects as Python computes and serialises them) ----

struct SpecCase {
  std::string msgpack, summary, detailed;
};

std::map<std::string, SpecCase> SpecCases() {
  std::map<std::string, SpecCase> cases;
  std::ifstream in(VMETRICS_SPEC_DECODE_METRICS);
  for (std::string line; std::getline(in, line);) {
    const json c = json::parse(line);
    if (!c.at("valid").get<bool>()) continue;
    cases[c.at("name").get<std::string>()] = {Unhex(c.at("msgpack").get<std::string>()),
                                              c.at("summary").get<std::string>(),
                                              c.at("detailed").get<std::string>()};
  }
  return cases;
}

TEST(SpeculativeDecodingJson, IsPythonsObjectByteForByte) {
  const std::map<std::string, SpecCase> cases = SpecCases();
  ASSERT_EQ(cases.size(), 10U) << "run tools/gen_spec_decode_goldens.py";
  for (const auto& [name, c] : cases) {
    RequestSpecDecodeMetrics m;
    ASSERT_TRUE(DecodeSpecDecodeMetrics(c.msgpack, &m).ok()) << name;
    EXPECT_EQ(DumpJson(SpeculativeDecodingJson(m, false)), c.summary) << name;
    EXPECT_EQ(DumpJson(SpeculativeDecodingJson(m, true)), c.detailed) << name;
  }
}

// The detailed_lists case: 5 steps, 9 of 15 drafts accepted, per-step lists kept.
class SpecDecodeResponseTest : public ResponseFeaturesTest {
 protected:
  void SetUp() override { case_ = SpecCases().at("detailed_lists"); }
  void Finish(const std::string& id, const std::string& spec) {
    Send(
        11.0,
        {{id,
          {.tokens = {7}, .events = {{EventType::kQueued, 10.0}, {EventType::kScheduled, 10.5}}}}});
    Send(11.5,
         {{id, {.tokens = {8}, .finish = FinishReason::kLength, .spec_decode_metrics = spec}}});
  }
  static std::string Raw(HttpExchange& exchange) {
    unsigned status = 0;
    std::string type, body;
    EXPECT_EQ(exchange.TakeAnswer(&status, &type, &body), HttpExchange::Phase::kReplied);
    return body;
  }
  SpecCase case_;
};

TEST_F(SpecDecodeResponseTest, CompletionCarriesSpeculativeDecodingAlone) {
  Make([](ServingConfig* c) { c->spec_decode_metrics = SpecDecodeMetricsLevel::kSummary; });
  auto ex = Completion(R"({"prompt": [1, 2], "max_tokens": 2})");
  Finish("cmpl-r-0-e", case_.msgpack);
  const std::string raw = Raw(*ex);
  // Summary: the engine's per-step lists are left out.
  EXPECT_NE(raw.find(R"("kv_transfer_params":null,"metrics":{"speculative_decoding":)" +
                     case_.summary + "}}"),
            std::string::npos)
      << raw;
}

TEST_F(SpecDecodeResponseTest, DetailedFollowsTheTimingsWhenBothAreAsked) {
  Make([](ServingConfig* c) {
    c->enable_per_request_metrics = true;
    c->spec_decode_metrics = SpecDecodeMetricsLevel::kDetailed;
  });
  auto ex = Completion(R"({"prompt": [1, 2], "max_tokens": 2})");
  Finish("cmpl-r-0-e", case_.msgpack);
  const std::string raw = Raw(*ex);
  EXPECT_NE(raw.find(R"("tokens_per_second":2.0,"speculative_decoding":)" + case_.detailed + "}}"),
            std::string::npos)
      << raw;
}

TEST_F(SpecDecodeResponseTest, WhatTheEngineDidNotSendIsNull) {
  Make([](ServingConfig* c) { c->spec_decode_metrics = SpecDecodeMetricsLevel::kSummary; });
  auto ex = Completion(R"({"prompt": [1, 2], "max_tokens": 2})");
  Finish("cmpl-r-0-e", "");
  EXPECT_EQ(Body(*ex).at("metrics"), json({{"speculative_decoding", nullptr}}));
  auto two = Completion(R"({"prompt": [1, 2], "max_tokens": 2, "n": 2})");
  Finish("0_cmpl-r-0-e", case_.msgpack);
  Finish("1_cmpl-r-0-e", case_.msgpack);
  EXPECT_TRUE(Body(*two).at("metrics").is_null());
}

TEST_F(SpecDecodeResponseTest, WithoutTheFlagTheEnginesMapIsNotReported) {
  Make([](ServingConfig* c) { c->enable_per_request_metrics = true; });
  auto ex = Completion(R"({"prompt": [1, 2], "max_tokens": 2})");
  Finish("cmpl-r-0-e", case_.msgpack);
  EXPECT_FALSE(Body(*ex).at("metrics").contains("speculative_decoding"));
}

TEST_F(SpecDecodeResponseTest, StreamsCarryItOnTheUsageChunk) {
  Make([](ServingConfig* c) { c->spec_decode_metrics = SpecDecodeMetricsLevel::kDetailed; });
  auto ex = Completion(
      R"({"prompt": [1, 2], "max_tokens": 2, "stream": true,
          "stream_options": {"include_usage": true}})");
  Finish("cmpl-r-0-e", case_.msgpack);
  const std::vector<json> events = Events(*ex);
  ASSERT_EQ(events.size(), 3U);
  for (size_t i = 0; i < 2; ++i) EXPECT_FALSE(events[i].contains("metrics")) << events[i].dump();
  EXPECT_EQ(events[2].at("metrics").at("speculative_decoding"), json::parse(case_.detailed));
  // Nothing from the engine: the member is left out, as null members of the usage chunk are.
  auto none = Completion(
      R"({"prompt": [1, 2], "max_tokens": 2, "stream": true,
          "stream_options": {"include_usage": true}})");
  Finish("cmpl-r-0-e", "");
  EXPECT_EQ(Events(*none).back().at("metrics"), json::object());
}

TEST_F(SpecDecodeResponseTest, GenerateCarriesItOnBothShapes) {
  Make([](ServingConfig* c) {
    c->enable_per_request_metrics = true;  // not read by generate
    c->spec_decode_metrics = SpecDecodeMetricsLevel::kSummary;
  });
  auto whole = Generate(R"({"token_ids": [1, 2], "sampling_params": {"max_tokens": 2}})");
  Finish("generate-tokens-r-e", case_.msgpack);
  EXPECT_EQ(Body(*whole).at("metrics"),
            json({{"speculative_decoding", json::parse(case_.summary)}}));
  auto stream = Generate(R"({"token_ids": [1, 2], "sampling_params": {"max_tokens": 2},
                            "stream": true, "stream_options": {"include_usage": true}})");
  Finish("generate-tokens-r-e", case_.msgpack);
  const std::vector<json> events = Events(*stream);
  ASSERT_EQ(events.size(), 3U);
  EXPECT_FALSE(events[0].contains("metrics"));
  EXPECT_TRUE(events[2].at("choices").empty());
  EXPECT_EQ(events[2].at("metrics").at("speculative_decoding"), json::parse(case_.summary));
  auto two = Generate(R"({"token_ids": [1, 2], "sampling_params": {"max_tokens": 2, "n": 2}})");
  Finish("0_generate-tokens-r-e", case_.msgpack);
  Finish("1_generate-tokens-r-e", case_.msgpack);
  EXPECT_TRUE(Body(*two).at("metrics").is_null());
}

}  // namespace
}  // namespace vmetrics::frontend
