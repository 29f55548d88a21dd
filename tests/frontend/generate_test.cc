// SPDX-License-Identifier: Apache-2.0
// POST /inference/v1/generate end to end: a Frontend (real HTTP, real ZeroMQ) against a stand-in
// engine that serves its requests. The cases follow vLLM's own tests of the endpoint
// (vllm-project/vllm tests/entrypoints/scale_out/token_in_token_out/: test_serving_tokens.py at
// 01f8f3e1, test_generate_stream.py at e7a47b82, test_protocol.py at 868e313d,
// test_stop_reason.py at 0220c46b), rewritten for a server without a tokenizer; and the
// kv_transfer_params pass-through both ways (request JSON -> EngineCoreRequest msgpack ->
// the engine's final output -> response JSON), which prefill/decode routers depend on.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "loadgen/http_client.h"
#include "numpy_arrays.h"
#include "vmetrics/frontend.h"
#include "vmetrics/simulator.h"

namespace vmetrics {
namespace {

using loadgen::HttpClientResponse;
using loadgen::HttpGet;
using loadgen::HttpPost;
using json = nlohmann::ordered_json;

class GenerateTest : public ::testing::Test {
 protected:
  void Start(const std::function<void(SimulatorOptions*)>& tweak = nullptr,
             const std::function<void(FrontendOptions*)>& tweak_frontend = nullptr) {
    FrontendOptions options;
    options.handshake_address = "tcp://127.0.0.1:0";
    options.http.port = 0;
    options.engine_ready_timeout_s = 30;
    options.max_model_len = 1024;  // as upstream's test server (--max-model-len 1024)
    if (tweak_frontend) tweak_frontend(&options);
    frontend_ = std::make_unique<Frontend>(options);
    Status bound = frontend_->Bind();
    ASSERT_TRUE(bound.ok()) << bound.ToString();
    SimulatorOptions so;
    so.handshake_address = frontend_->handshake_endpoint();
    so.steps = 0;
    so.rate_hz = 2000;
    so.serve_requests = true;
    so.synthetic_requests = false;
    so.served_stop = SimulatorOptions::ServedStop::kEarliest;
    so.echo_kv_transfer_params = true;
    if (tweak) tweak(&so);
    simulator_ = std::make_unique<Simulator>(so);
    ASSERT_TRUE(simulator_->Start().ok());
    Status started = frontend_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    base_ = "http://127.0.0.1:" + std::to_string(frontend_->http_port());
  }

  void TearDown() override {
    if (simulator_) simulator_->RequestStop();
    if (frontend_) frontend_->Stop();
    if (simulator_) (void)simulator_->Wait();
  }

  HttpClientResponse Complete(const std::string& body) {
    return HttpPost(base_ + "/v1/completions", body);
  }
  HttpClientResponse Generate(const std::string& body) {
    return HttpPost(base_ + "/inference/v1/generate", body);
  }
  // A 200 answer of /v1/completions.
  json CompleteOk(const std::string& body) {
    HttpClientResponse r = Complete(body);
    EXPECT_EQ(r.status, 200) << body << " -> " << r.body << r.error;
    json doc = json::parse(r.body, nullptr, false);
    EXPECT_TRUE(doc.is_object()) << r.body;
    return doc;
  }
  // A 200 answer's JSON.
  json GenerateOk(const std::string& body) {
    HttpClientResponse r = Generate(body);
    EXPECT_EQ(r.status, 200) << body << " -> " << r.body << r.error;
    EXPECT_EQ(r.content_type, "application/json");
    json doc = json::parse(r.body, nullptr, false);
    EXPECT_TRUE(doc.is_object()) << r.body;
    return doc;
  }
  // The data events of a stream, [DONE] last when it came.
  std::vector<std::string> Stream(const std::string& body) {
    std::string text;
    HttpClientResponse r =
        HttpPost(base_ + "/inference/v1/generate", body, [&](std::string_view piece) {
          text.append(piece);
          return true;
        });
    EXPECT_EQ(r.status, 200) << r.error;
    EXPECT_EQ(r.content_type, "text/event-stream");
    std::vector<std::string> events;
    for (size_t pos = 0; pos < text.size();) {
      const size_t end = text.find("\n\n", pos);
      EXPECT_NE(end, std::string::npos) << text;
      if (end == std::string::npos) break;
      const std::string event = text.substr(pos, end - pos);
      EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
      events.push_back(event.substr(6));
      pos = end + 2;
    }
    return events;
  }
  // A 4xx answer's error object, checked for vLLM's shape.
  json Refused(const std::string& body, int status = 400, bool completions = false) {
    HttpClientResponse r = completions ? Complete(body) : Generate(body);
    EXPECT_EQ(r.status, status) << body << " -> " << r.body;
    json doc = json::parse(r.body, nullptr, false);
    EXPECT_TRUE(doc.is_object() && doc.contains("error")) << r.body;
    if (!doc.is_object() || !doc.contains("error")) return json::object();
    EXPECT_EQ(doc["error"]["code"], status);
    return doc["error"];
  }

  std::unique_ptr<Frontend> frontend_;
  std::unique_ptr<Simulator> simulator_;
  std::string base_;
};

// test_generate_endpoint: GenerateResponse with every key (nulls included), the sampling mask
// absent; usage counts the prompt and the tokens.
TEST_F(GenerateTest, AnswersWithVllmsGenerateResponse) {
  Start();
  json doc = GenerateOk(
      R"({"model":"model","token_ids":[1,2,3],"sampling_params":{"max_tokens":5},"stream":false})");
  EXPECT_EQ(doc["request_id"].get<std::string>().rfind("generate-tokens-", 0), 0u) << doc;
  EXPECT_EQ(doc["model"], "model");
  EXPECT_TRUE(doc["created"].is_number_integer());
  ASSERT_EQ(doc["choices"].size(), 1u);
  const json& c = doc["choices"][0];
  EXPECT_FALSE(c.contains("sampling_mask"));
  EXPECT_EQ(c["index"], 0);
  EXPECT_EQ(c["token_ids"].size(), 5u);
  EXPECT_EQ(c["finish_reason"], "length");
  EXPECT_TRUE(c["logprobs"].is_null());
  EXPECT_TRUE(c.contains("stop_reason"));
  EXPECT_TRUE(c.contains("routed_experts"));
  EXPECT_EQ(doc["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(doc["usage"]["completion_tokens"], 5);
  EXPECT_EQ(doc["usage"]["total_tokens"], 8);
  EXPECT_TRUE(doc["prompt_logprobs"].is_null());
  EXPECT_TRUE(doc["kv_transfer_params"].is_null());
  // The body's request_id names the answer, as vLLM's X-Request-Id / request_id do.
  json named =
      GenerateOk(R"({"request_id":"42","token_ids":[1],"sampling_params":{"max_tokens":1}})");
  EXPECT_EQ(named["request_id"], "generate-tokens-42");
}

// An engine run with --enable-return-routed-experts (the stand-in's routed_experts_layers):
// its chunks, a row per forwarded token (the prompt, then each sampled token but the last),
// come back concatenated as np.save's .npy in base64 on generate's choice and on a
// completion's, and per-request metrics and forced usage ride the completion's stream.
TEST_F(GenerateTest, RoutedExpertsAndPerRequestFeaturesEndToEnd) {
  Start([](SimulatorOptions* so) { so->routed_experts_layers = 3; },
        [](FrontendOptions* o) {
          o->enable_per_request_metrics = true;
          o->enable_force_include_usage = true;
        });
  std::string expected_bytes;
  for (int64_t row = 0; row < 3 + 4 - 1; ++row) {
    for (int64_t layer = 0; layer < 3; ++layer) {
      for (int64_t k = 0; k < 2; ++k) {
        expected_bytes.push_back(static_cast<char>((row * 31 + layer * 7 + k) % 256));
      }
    }
  }
  const std::string expected =
      frontend::Base64(frontend::NpyFile("|u1", {6, 3, 2}, expected_bytes));
  json doc = GenerateOk(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":4}})");
  EXPECT_EQ(doc["choices"][0]["routed_experts"], expected) << doc;
  EXPECT_FALSE(doc.contains("metrics"));  // generate reads neither flag at 6adad087
  HttpClientResponse completion = Complete(R"({"prompt":[1,2,3],"max_tokens":4})");
  ASSERT_EQ(completion.status, 200) << completion.body;
  json c = json::parse(completion.body);
  EXPECT_EQ(c["choices"][0]["routed_experts"], expected);
  ASSERT_TRUE(c["metrics"].is_object()) << c;
  EXPECT_GT(c["metrics"]["tokens_per_second"].get<double>(), 0);
  EXPECT_GE(c["metrics"]["time_to_first_token_ms"].get<double>(), 0);
  EXPECT_GE(c["metrics"]["queue_time_ms"].get<double>(), 0);
  HttpClientResponse stream = Complete(R"({"prompt":[1,2,3],"max_tokens":4,"stream":true})");
  ASSERT_EQ(stream.status, 200) << stream.body;
  // Forced usage: a usage chunk (choices empty) with the metrics before [DONE].
  const size_t last = stream.body.rfind("data: {");
  ASSERT_NE(last, std::string::npos) << stream.body;
  json usage = json::parse(stream.body.substr(last + 6, stream.body.find("\n\n", last) - last - 6));
  EXPECT_TRUE(usage["choices"].empty()) << usage;
  EXPECT_EQ(usage["usage"]["completion_tokens"], 4);
  EXPECT_TRUE(usage["metrics"].contains("tokens_per_second")) << usage;
}

// test_generate_defaults_max_tokens_when_omitted (and test_protocol.py): no max_tokens is the
// rest of the context, not SamplingParams' 16.
TEST_F(GenerateTest, OmittedMaxTokensIsTheRestOfTheContext) {
  Start(nullptr, [](FrontendOptions* o) { o->max_model_len = 40; });
  json doc = GenerateOk(
      R"({"token_ids":[1,2,3],"sampling_params":{"temperature":0.0,"ignore_eos":true}})");
  EXPECT_EQ(doc["choices"][0]["token_ids"].size(), 37u);
  EXPECT_EQ(doc["choices"][0]["finish_reason"], "length");
}

// test_generate_returns_all_choices_when_n_greater_than_one.
TEST_F(GenerateTest, ReturnsEveryChoiceOfN) {
  Start();
  json doc = GenerateOk(
      R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":5,"temperature":1.0,"n":4}})");
  std::vector<int> indexes;
  for (const json& c : doc["choices"]) {
    indexes.push_back(c["index"].get<int>());
    EXPECT_EQ(c["token_ids"].size(), 5u);
  }
  std::sort(indexes.begin(), indexes.end());
  EXPECT_EQ(indexes, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(doc["usage"]["completion_tokens"], 20);
}

// test_generate_stream and test_stream_basic: every chunk one choice with new tokens, the last
// with its finish reason, then [DONE]; as many tokens as a non-streamed request gets.
TEST_F(GenerateTest, StreamsTokenChunksThenDone) {
  Start();
  const std::vector<std::string> events =
      Stream(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":5},"stream":true})");
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  size_t tokens = 0;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json chunk = json::parse(events[i]);
    ASSERT_EQ(chunk["choices"].size(), 1u) << events[i];
    EXPECT_FALSE(chunk["choices"][0]["token_ids"].empty()) << events[i];
    tokens += chunk["choices"][0]["token_ids"].size();
    EXPECT_EQ(chunk["choices"][0]["finish_reason"].is_null(), i + 2 < events.size()) << events[i];
  }
  EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "length");
  json whole =
      GenerateOk(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":5,"temperature":0}})");
  EXPECT_EQ(tokens, whole["choices"][0]["token_ids"].size());
}

// test_stream_include_usage and test_stream_continuous_usage.
TEST_F(GenerateTest, StreamUsageAsStreamOptionsAsk) {
  Start();
  std::vector<std::string> events =
      Stream(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":2},"stream":true,)"
             R"("stream_options":{"include_usage":true}})");
  ASSERT_GE(events.size(), 3u);
  json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty()) << usage;
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 2);
  EXPECT_EQ(usage["usage"]["total_tokens"], 5);

  events = Stream(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":2},"stream":true,)"
                  R"("stream_options":{"include_usage":true,"continuous_usage_stats":true}})");
  int64_t completion = 0;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json chunk = json::parse(events[i]);
    if (chunk["choices"].empty()) continue;
    completion += static_cast<int64_t>(chunk["choices"][0]["token_ids"].size());
    EXPECT_EQ(chunk["usage"]["prompt_tokens"], 3) << events[i];
    EXPECT_EQ(chunk["usage"]["completion_tokens"], completion) << events[i];
    EXPECT_EQ(chunk["usage"]["total_tokens"], 3 + completion) << events[i];
  }
  EXPECT_EQ(completion, 2);
  // stream_options without stream is refused by name.
  EXPECT_EQ(
      Refused(R"({"token_ids":[1],"sampling_params":{},"stream_options":{"include_usage":true}})")
          ["param"],
      "stream_options");
}

// test_generate_logprobs x {0, 1, 5} and test_stream_with_logprobs: one entry per token, its
// own logprob, max(k, 1) alternatives, tokens "token_id:<id>"; decoded from the engine's
// LogprobsLists.
TEST_F(GenerateTest, LogprobsAsVllmReturnsThem) {
  Start();
  for (int k : {0, 1, 5}) {
    json doc = GenerateOk(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":5,)"
                          R"("temperature":0,"logprobs":)" +
                          std::to_string(k) + "}}");
    const json& c = doc["choices"][0];
    ASSERT_FALSE(c["logprobs"].is_null()) << doc;
    const json& content = c["logprobs"]["content"];
    ASSERT_EQ(content.size(), c["token_ids"].size());
    for (size_t i = 0; i < content.size(); ++i) {
      EXPECT_EQ(content[i]["token"],
                "token_id:" + std::to_string(c["token_ids"][i].get<int64_t>()));
      EXPECT_TRUE(content[i]["logprob"].is_number());
      EXPECT_LE(content[i]["logprob"].get<double>(), 0.0);
      EXPECT_GT(content[i]["logprob"].get<double>(), -9999.0) << "not decoded: " << content[i];
      ASSERT_EQ(content[i]["top_logprobs"].size(), static_cast<size_t>(std::max(k, 1)));
      EXPECT_EQ(content[i]["top_logprobs"][0]["token"], content[i]["token"]);
      for (const json& top : content[i]["top_logprobs"]) {
        EXPECT_EQ(top["token"].get<std::string>().rfind("token_id:", 0), 0u);
      }
    }
  }
  const std::vector<std::string> events = Stream(
      R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":3,"logprobs":1},"stream":true})");
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json chunk = json::parse(events[i]);
    const json& c = chunk["choices"][0];
    EXPECT_EQ(c["logprobs"]["content"].size(), c["token_ids"].size()) << events[i];
    EXPECT_EQ(c["logprobs"]["content"][0]["token"].get<std::string>().rfind("token_id:", 0), 0u);
  }
  // Prompt logprobs: position 0 has none; each other position's map holds the prompt token.
  json doc =
      GenerateOk(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":1,"prompt_logprobs":2}})");
  const json& prompt = doc["prompt_logprobs"];
  ASSERT_EQ(prompt.size(), 3u) << doc;
  EXPECT_TRUE(prompt[0].is_null());
  for (int i = 1; i < 3; ++i) {
    ASSERT_TRUE(prompt[i].is_object()) << prompt;
    EXPECT_TRUE(prompt[i].contains(std::to_string(i + 1))) << prompt[i];
    EXPECT_GE(prompt[i].size(), 2u);
  }
  // Above --max-logprobs: vLLM's 400.
  EXPECT_EQ(Refused(R"({"token_ids":[1],"sampling_params":{"logprobs":21}})")["param"],
            "sampling_params.logprobs");
}

// Stop tokens are honoured: stop_token_ids end a request after min_tokens with that token as
// stop_reason (test_stop_reason.py); the EOS of --eos-token-id ends it with stop_reason null,
// unless ignore_eos.
TEST_F(GenerateTest, StopTokensEndRequestsAsVllmsCheckStopDoes) {
  Start(nullptr, [](FrontendOptions* o) { o->eos_token_id = 2; });
  json doc = GenerateOk(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":50,)"
                        R"("stop_token_ids":[77],"min_tokens":3,"ignore_eos":true}})");
  const json& c = doc["choices"][0];
  EXPECT_EQ(c["finish_reason"], "stop") << doc;
  EXPECT_EQ(c["stop_reason"], 77);
  ASSERT_EQ(c["token_ids"].size(), 4u) << doc;  // min_tokens, then the stop token
  EXPECT_EQ(c["token_ids"].back(), 77);

  doc = GenerateOk(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":50}})");
  EXPECT_EQ(doc["choices"][0]["finish_reason"], "stop") << doc;
  EXPECT_TRUE(doc["choices"][0]["stop_reason"].is_null());
  EXPECT_EQ(doc["choices"][0]["token_ids"].back(), 2);

  doc = GenerateOk(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":6,"ignore_eos":true}})");
  EXPECT_EQ(doc["choices"][0]["finish_reason"], "length") << doc;
  EXPECT_EQ(doc["choices"][0]["token_ids"].size(), 6u);
}

// test_stop_string_workflow: stop strings need detokenization, which a tokens-only server does
// not do: refused by name; `stop: null` is fine.
TEST_F(GenerateTest, StopStringsAreRefusedByName) {
  Start();
  json e = Refused(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":24,"temperature":0,)"
                   R"("detokenize":false,"stop":["27 member"]}})");
  EXPECT_EQ(e["param"], "sampling_params.stop");
  EXPECT_EQ(e["type"], "BadRequestError");
  EXPECT_NE(e["message"].get<std::string>().find("stop strings are not supported"),
            std::string::npos);
  GenerateOk(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":4,"temperature":0,)"
             R"("detokenize":false,"stop":null}})");
}

// A key vLLM's models do not declare, inside sampling_params or at the top, is ignored as vLLM
// ignores it, and counted by name; features vmetrics cannot honour are a 400 naming them.
TEST_F(GenerateTest, UndeclaredFieldsAreIgnoredAndCountedUnsupportedOnesRefusedByName) {
  Start();
  GenerateOk(R"({"token_ids":[1],"sampling_params":{"max_tokens":2,"frobnicate":1}})");
  GenerateOk(R"({"token_ids":[1],"sampling_params":{"max_tokens":2},"frobnicate":1})");
  CompleteOk(R"({"prompt":[1],"max_tokens":2,"best_of":1,"frobnicate":true})");
  const std::string metrics = HttpGet(base_ + "/metrics").body;
  for (const char* sample :
       {"vmetrics_request_fields_ignored_total{field=\"sampling_params.frobnicate\"} 1.0\n",
        "vmetrics_request_fields_ignored_total{field=\"frobnicate\"} 2.0\n",
        "vmetrics_request_fields_ignored_total{field=\"best_of\"} 1.0\n"}) {
    EXPECT_NE(metrics.find(sample), std::string::npos) << sample << metrics;
  }
  EXPECT_EQ(Refused(R"({"token_ids":[1],"sampling_params":{"bad_words":["x"]}})")["param"],
            "sampling_params.bad_words");
  EXPECT_EQ(Refused(R"({"token_ids":[1],"sampling_params":{},"features":{}})")["param"],
            "features");
  EXPECT_EQ(Refused(R"({"token_ids":[],"sampling_params":{}})")["param"], "token_ids");
  EXPECT_EQ(Refused(R"({"token_ids":[1]})")["param"], "sampling_params");
  EXPECT_EQ(Refused(R"({"token_ids":[1],"sampling_params":{"max_tokens":"5"}})")["param"],
            "sampling_params.max_tokens");
  EXPECT_EQ(Refused(R"({"token_ids":[1],"sampling_params":{},"model":"other"})", 404)["type"],
            "NotFoundError");
  EXPECT_EQ(Refused(R"({"token_ids":[1],"sampling_params":{},"cache_salt":""})")["param"],
            "cache_salt");
}

// test_generate_rejects_unbounded_max_tokens and test_generate_max_tokens_boundary: 400 for
// what cannot fit the context (prompt 3, max_model_len 1024), and the server still serves.
TEST_F(GenerateTest, MaxTokensBeyondTheContextIsA400) {
  Start();
  for (const char* x : {"2147483647", "2147483648", "9223372036854775808", "1e18"}) {
    json e = Refused(std::string(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":)") + x +
                     R"(,"temperature":0}})");
    EXPECT_EQ(e["param"], "sampling_params.max_tokens") << x << ": " << e;
  }
  GenerateOk(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":5}})");
  json doc = GenerateOk(
      R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":1021,"ignore_eos":true}})");
  EXPECT_EQ(doc["choices"][0]["token_ids"].size(), 1021u);
  Refused(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":1022}})");
}

// test_generate_with_lora_adapter: the modules are listed by /v1/models and `model` picks one.
TEST_F(GenerateTest, LoraModulesAreListedAndServed) {
  Start(nullptr, [](FrontendOptions* o) {
    o->enable_lora = true;
    o->max_loras = 2;
    o->lora_modules = {{"Alice", "/adapters/alice"}, {"Bob", "/adapters/bob"}};
  });
  HttpClientResponse models = HttpGet(base_ + "/v1/models");
  ASSERT_EQ(models.status, 200) << models.body;
  json list = json::parse(models.body);
  EXPECT_EQ(list["object"], "list");
  std::vector<std::string> ids;
  for (const json& card : list["data"]) ids.push_back(card["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"model", "Alice", "Bob"}));
  EXPECT_EQ(list["data"][1]["root"], "/adapters/alice");
  EXPECT_EQ(list["data"][1]["parent"], "model");
  EXPECT_TRUE(list["data"][1]["max_model_len"].is_null());
  EXPECT_EQ(list["data"][0]["max_model_len"], 1024);
  json doc =
      GenerateOk(R"({"model":"Alice","token_ids":[1,2,3],"sampling_params":{"max_tokens":3}})");
  EXPECT_EQ(doc["model"], "Alice");
  EXPECT_EQ(doc["choices"].size(), 1u);
}

// kv_transfer_params both ways, exactly: the request's JSON reaches the engine as msgpack in
// sampling_params.extra_args["kv_transfer_params"] (the stand-in sends those bytes back in its
// final output, as a connector's request_finished returns its own), and the response carries
// the engine's value as JSON: nested maps in order, lists, ints apart from floats, bools, null,
// strings, large and negative ints.
TEST_F(GenerateTest, KvTransferParamsPassThroughExactly) {
  Start();
  const std::string kv =
      R"({"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,)"
      R"("remote_block_ids":[[1,2],[3]],"remote_host":"10.0.0.1","remote_port":5600,)"
      R"("ratio":1.0,"half":0.5,"neg":-7,"big":9223372036854775807,)"
      R"("nested":{"z":{"a":[true,null,"x",2.25,{}]},"a":[]},"tp_size":1})";
  json doc = GenerateOk(R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":2},)"
                        R"("kv_transfer_params":)" +
                        kv + "}");
  EXPECT_EQ(doc["kv_transfer_params"].dump(), json::parse(kv).dump()) << doc;
  // Streamed: the last chunk carries nothing extra (vLLM's stream has no kv_transfer_params);
  // the request still completes.
  const std::vector<std::string> events =
      Stream(R"({"token_ids":[1],"sampling_params":{"max_tokens":2},"stream":true,)"
             R"("kv_transfer_params":{"a":1}})");
  EXPECT_EQ(events.back(), "[DONE]");
  // Not an object: refused by name.
  EXPECT_EQ(Refused(R"({"token_ids":[1],"sampling_params":{},"kv_transfer_params":[1]})")["param"],
            "kv_transfer_params");
  // Without kv_transfer_params the engine sends none and the answer has null.
  json plain = GenerateOk(R"({"token_ids":[1],"sampling_params":{"max_tokens":1}})");
  EXPECT_TRUE(plain["kv_transfer_params"].is_null());
}

// /load as vLLM's: the requests being answered with --enable-server-load-tracking, 0 without.
TEST_F(GenerateTest, LoadCountsTheRequestsBeingAnsweredWhenTracked) {
  Start([](SimulatorOptions* so) { so->rate_hz = 50; },
        [](FrontendOptions* o) { o->enable_server_load_tracking = true; });
  auto load = [&] { return json::parse(HttpGet(base_ + "/load").body)["server_load"]; };
  EXPECT_EQ(load(), 0);
  std::thread client([&] {
    (void)HttpPost(base_ + "/inference/v1/generate",
                   R"({"request_id":"7","token_ids":[1],)"
                   R"("sampling_params":{"max_tokens":1000,"ignore_eos":true},"stream":true})",
                   [](std::string_view) { return true; });
  });
  for (int i = 0; i < 4000 && frontend_->live_completions() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(load(), 1);
  (void)HttpPost(base_ + "/abort_requests", R"({"request_ids":["generate-tokens-7"]})");
  client.join();
  // The answer's last bytes may reach the client just before the request is forgotten.
  for (int i = 0; i < 4000 && load() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(load(), 0);
}

TEST_F(GenerateTest, LoadIsZeroWithoutTracking) {
  Start();
  HttpClientResponse r = HttpGet(base_ + "/load");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, R"({"server_load":0})");
}

// /abort_requests: the external ids ("generate-tokens-<id>") end their requests with
// finish_reason "abort"; the answer is 200 with an empty body; bad bodies are vLLM's 400s.
TEST_F(GenerateTest, AbortRequestsEndsRunningRequests) {
  Start([](SimulatorOptions* so) { so->rate_hz = 50; });
  std::string text;
  HttpClientResponse streamed;
  std::thread client([&] {
    streamed = HttpPost(base_ + "/inference/v1/generate",
                        R"({"request_id":"42","token_ids":[1,2,3],)"
                        R"("sampling_params":{"max_tokens":1000,"ignore_eos":true},"stream":true})",
                        [&](std::string_view piece) {
                          text.append(piece);
                          return true;
                        });
  });
  // Abort once the request is live (polling the live count, not sleeping blindly).
  for (int i = 0; i < 4000 && frontend_->live_requests() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(frontend_->live_requests(), 1u);
  HttpClientResponse abort =
      HttpPost(base_ + "/abort_requests", R"({"request_ids":["generate-tokens-42"]})");
  EXPECT_EQ(abort.status, 200) << abort.body;
  EXPECT_EQ(abort.body, "");
  client.join();
  EXPECT_NE(text.find(R"("finish_reason":"abort")"), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 14), "data: [DONE]\n\n");
  EXPECT_EQ(frontend_->live_requests(), 0u);

  HttpClientResponse bad = HttpPost(base_ + "/abort_requests", R"({"ids":[]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("Missing 'request_ids' in request body"), std::string::npos);
  EXPECT_EQ(HttpPost(base_ + "/abort_requests", "{").status, 400);
}

// GET /version, GET and POST /ping (vLLM's /health answer, for SageMaker).
TEST_F(GenerateTest, VersionAndPing) {
  Start();
  HttpClientResponse version = HttpGet(base_ + "/version");
  ASSERT_EQ(version.status, 200);
  json v = json::parse(version.body);
  EXPECT_TRUE(v["version"].is_string());
  ASSERT_EQ(v["engines"].size(), 1u) << v;
  EXPECT_EQ(v["engines"][0]["engine_index"], 0);
  EXPECT_TRUE(v["engines"][0].contains("vllm_version"));
  EXPECT_EQ(HttpGet(base_ + "/ping").status, 200);
  EXPECT_EQ(HttpPost(base_ + "/ping", "").status, 200);
}

// GET /kv_event_sources: each rank's publisher as its engine's ready response reported it
// (vLLM's KVEventsConfig, endpoints offset by the rank), keyed by the rank.
TEST_F(GenerateTest, KvEventSourcesListsEachRanksPublisher) {
  Start(
      [](SimulatorOptions* so) {
        so->engines = 2;
        so->kv_events_config =
            R"({"enable_kv_cache_events":true,"endpoint":"tcp://127.0.0.1:5557",)"
            R"("replay_endpoint":"tcp://127.0.0.1:5567","topic":"kv-events"})";
      },
      [](FrontendOptions* o) { o->data_parallel_size = 2; });
  HttpClientResponse r = HttpGet(base_ + "/kv_event_sources");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(json::parse(r.body), json::parse(R"({
    "0": {"enable_kv_cache_events": true, "publisher": "zmq",
          "endpoint": "tcp://127.0.0.1:5557", "replay_endpoint": "tcp://127.0.0.1:5567",
          "buffer_steps": 10000, "hwm": 100000, "max_queue_size": 100000, "topic": "kv-events"},
    "1": {"enable_kv_cache_events": true, "publisher": "zmq",
          "endpoint": "tcp://127.0.0.1:5558", "replay_endpoint": "tcp://127.0.0.1:5568",
          "buffer_steps": 10000, "hwm": 100000, "max_queue_size": 100000, "topic": "kv-events"}
  })"))
      << r.body;
}

// Engines that publish no events (kv_events_config nil): an empty table.
TEST_F(GenerateTest, KvEventSourcesIsEmptyWhenNoEnginePublishes) {
  Start([](SimulatorOptions* so) {
    so->kv_events_config = R"({"enable_kv_cache_events":false,"endpoint":"tcp://*:5557"})";
  });
  HttpClientResponse r = HttpGet(base_ + "/kv_event_sources");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "{}");
}

// /v1/completions never ignores a parameter: each of CompletionRequest's fields reaches the
// engine (and is honoured by the stand-in) or is a 400 naming it.
using CompletionsFieldsTest = GenerateTest;

TEST_F(CompletionsFieldsTest, LogprobsAndEchoComeBackAsTokenIds) {
  Start();
  json doc = CompleteOk(R"({"prompt":[1,2,3],"max_tokens":3,"logprobs":2,"echo":true,)"
                        R"("ignore_eos":true})");
  const json& c = doc["choices"][0];
  EXPECT_EQ(c["prompt_token_ids"], json::parse("[1,2,3]")) << doc;
  ASSERT_EQ(c["token_ids"].size(), 3u);
  const json& lp = c["logprobs"];
  // The prompt's positions first (echo), then the output's; tokens as "token_id:<id>".
  ASSERT_EQ(lp["tokens"].size(), 6u) << lp;
  EXPECT_EQ(lp["tokens"][0], "token_id:1");
  EXPECT_EQ(lp["tokens"][3], "token_id:" + std::to_string(c["token_ids"][0].get<int64_t>()));
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());  // the first prompt token has none
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["text_offset"].size(), 6u);
  for (size_t i = 1; i < 6; ++i) {
    EXPECT_TRUE(lp["token_logprobs"][i].is_number()) << lp;
    const json& top = lp["top_logprobs"][i];
    EXPECT_TRUE(top.contains(lp["tokens"][i].get<std::string>())) << top;  // the token's own
    EXPECT_GE(top.size(), 2u);
    EXPECT_LE(top.size(), 3u);  // logprobs 2, plus the token itself when not among them
  }
  // max_tokens null is 16 (CompletionRequest.normalize_null_max_tokens).
  doc = CompleteOk(R"({"prompt":[1,2,3],"max_tokens":null,"ignore_eos":true})");
  EXPECT_EQ(doc["choices"][0]["token_ids"].size(), 16u);
}

TEST_F(CompletionsFieldsTest, StopTokensAndMinTokensAreHonoured) {
  Start(nullptr, [](FrontendOptions* o) { o->eos_token_id = 2; });
  json doc = CompleteOk(R"({"prompt":[1,2,3],"max_tokens":40,"stop_token_ids":[50],)"
                        R"("min_tokens":5,"ignore_eos":true,"top_p":0.5,"seed":7})");
  const json& c = doc["choices"][0];
  EXPECT_EQ(c["finish_reason"], "stop") << doc;
  EXPECT_EQ(c["stop_reason"], 50);
  ASSERT_EQ(c["token_ids"].size(), 6u);
  EXPECT_EQ(c["token_ids"].back(), 50);
  // A seed makes the same tokens.
  json again = CompleteOk(R"({"prompt":[1,2,3],"max_tokens":40,"stop_token_ids":[50],)"
                          R"("min_tokens":5,"ignore_eos":true,"top_p":0.5,"seed":7})");
  EXPECT_EQ(again["choices"][0]["token_ids"], c["token_ids"]);
  // The EOS of --eos-token-id stops a request that does not ignore it.
  doc = CompleteOk(R"({"prompt":[1,2,3],"max_tokens":40})");
  EXPECT_EQ(doc["choices"][0]["finish_reason"], "stop") << doc;
  EXPECT_EQ(doc["choices"][0]["token_ids"].back(), 2);
  EXPECT_TRUE(doc["choices"][0]["stop_reason"].is_null());
}

TEST_F(CompletionsFieldsTest, WhatCannotBeHonouredIsRefusedByName) {
  Start();
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({"prompt":[1],"stop":["x"]})", "stop"},
      {R"({"prompt":[1],"stop":"x"})", "stop"},
      {R"({"prompt":[1],"suffix":"x"})", "suffix"},
      {R"({"prompt":[1],"logprobs":-1})", "logprobs"},
      {R"({"prompt":[1],"bad_words":["x"]})", "bad_words"},
      {R"({"prompt":[1],"use_beam_search":true})", "use_beam_search"},
      {R"({"prompt":[1],"logprobs":-2})", "logprobs"},
      {R"({"prompt":[1],"logprobs":21})", "logprobs"},
      {R"({"prompt":[1],"top_p":0})", "top_p"},
      {R"({"prompt":[1],"min_tokens":5,"max_tokens":2})", "min_tokens"},
      {R"({"prompt":[1],"stream_options":{"include_usage":true}})", "stream_options"},
      {R"({"prompt":[1],"kv_transfer_params":"x"})", "kv_transfer_params"},
  };
  for (const Case& c : cases) {
    json e = Refused(c.body, 400, /*completions=*/true);
    EXPECT_EQ(e["param"], c.param) << c.body << " -> " << e;
    EXPECT_EQ(e["type"], "BadRequestError") << c.body;
  }
  // stop: null and [] are no stop strings: accepted.
  CompleteOk(R"({"prompt":[1],"max_tokens":1,"stop":null})");
  CompleteOk(R"({"prompt":[1],"max_tokens":1,"stop":[]})");
}

// kv_transfer_params through /v1/completions too (vLLM's CompletionRequest has it).
TEST_F(CompletionsFieldsTest, KvTransferParamsPassThrough) {
  Start();
  const std::string kv = R"({"remote_block_ids":[1,2],"ratio":2.0,"ok":true,"none":null})";
  json doc = CompleteOk(R"({"prompt":[1,2],"max_tokens":1,"kv_transfer_params":)" + kv + "}");
  EXPECT_EQ(doc["kv_transfer_params"].dump(), json::parse(kv).dump()) << doc;
}

}  // namespace
}  // namespace vmetrics
