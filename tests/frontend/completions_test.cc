// SPDX-License-Identifier: Apache-2.0
// POST /v1/completions end to end: a Frontend (the runtime of `vmetrics serve`, real ZeroMQ,
// real HTTP) against in-process stand-in engines that serve its requests. Each test sends
// completions over HTTP and checks the answer and the request families of the rendered
// /metrics. Nothing sleeps to synchronise: answers arrive when the requests finished (and the
// frontend records a message's IterationStats before it answers), and the few states that
// change after an answer (an ABORT reaching the engine) are polled with a deadline.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "api_error.h"
#include "loadgen/http_client.h"
#include "vmetrics/frontend.h"
#include "vmetrics/simulator.h"

namespace vmetrics {
namespace {

using loadgen::HttpClientResponse;
using loadgen::HttpGet;
using loadgen::HttpPost;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Polls `done` until it holds or `deadline` passes; true when it held.
bool Eventually(const std::function<bool()>& done,
                std::chrono::milliseconds deadline = std::chrono::seconds(20)) {
  const Clock::time_point end = Clock::now() + deadline;
  while (Clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

// The value of the sample `series` (name{labels} exactly as rendered) in a text exposition;
// -1 when absent.
double Sample(const std::string& text, const std::string& series) {
  const std::string prefix = series + " ";
  for (size_t pos = 0; pos < text.size();) {
    const size_t eol = text.find('\n', pos);
    const std::string line = text.substr(pos, eol - pos);
    if (line.rfind(prefix, 0) == 0) return std::stod(line.substr(prefix.size()));
    if (eol == std::string::npos) break;
    pos = eol + 1;
  }
  return -1;
}

std::string Series(const std::string& name, const std::string& extra_labels = "") {
  return name + "{engine=\"0\"," + extra_labels + "model_name=\"model\"}";
}

class CompletionsTest : public ::testing::Test {
 protected:
  void Start(const std::function<void(SimulatorOptions*)>& tweak = nullptr,
             const std::function<void(FrontendOptions*)>& tweak_frontend = nullptr) {
    FrontendOptions options;
    options.handshake_address = "tcp://127.0.0.1:0";
    options.http.port = 0;
    options.engine_ready_timeout_s = 30;
    options.max_model_len = 0;  // from the engine: 8192
    if (tweak_frontend) tweak_frontend(&options);
    frontend_ = std::make_unique<Frontend>(options);
    Status bound = frontend_->Bind();
    ASSERT_TRUE(bound.ok()) << bound.ToString();
    SimulatorOptions so;
    so.handshake_address = frontend_->handshake_endpoint();
    so.steps = 0;
    so.rate_hz = 200;
    so.serve_requests = true;
    so.synthetic_requests = false;
    if (tweak) tweak(&so);
    simulator_ = std::make_unique<Simulator>(so);
    ASSERT_TRUE(simulator_->Start().ok());
    Status started = frontend_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    url_ = "http://127.0.0.1:" + std::to_string(frontend_->http_port()) + "/v1/completions";
  }

  void TearDown() override {
    if (simulator_) simulator_->RequestStop();
    if (frontend_) frontend_->Stop();
    if (simulator_) (void)simulator_->Wait();
  }

  HttpClientResponse Post(const std::string& body) { return HttpPost(url_, body); }
  // A completion sent over a socket of its own, which the test hangs up by closing the fd it
  // returns (-1 when it could not be sent).
  int SendRaw(const std::string& body) const {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(frontend_->http_port());
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const std::string request =
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
            static_cast<ssize_t>(request.size())) {
      close(fd);
      return -1;
    }
    return fd;
  }
  // The one request sent was aborted: the engine got the ABORT, the frontend forgot it, and
  // nothing was recorded as finished (Python records no stats for an abort).
  void ExpectAbortedWithoutStatistics() {
    ASSERT_TRUE(Eventually([&] { return Engine0().requests_aborted == 1; }))
        << "ABORT never reached the engine";
    ASSERT_TRUE(Eventually([&] { return frontend_->live_requests() == 0; }));
    EXPECT_EQ(frontend_->live_completions(), 0u);
    const std::string m = Metrics();
    for (const char* reason : {"length", "stop", "abort", "error"}) {
      EXPECT_EQ(Sample(m, Series("vllm:request_success_total",
                                 std::string("finished_reason=\"") + reason + "\",")),
                0)
          << reason;
    }
  }
  std::string Metrics() const { return frontend_->RenderText(); }
  EngineTotals Engine0() const { return simulator_->Totals().engines.at(0); }

  std::unique_ptr<Frontend> frontend_;
  std::unique_ptr<Simulator> simulator_;
  std::string url_;
};

// vLLM's own check (vllm-project/vllm tests/entrypoints/serve/instrumentator/test_metrics.py):
// N sequential requests of P prompt tokens and max_tokens M give these counts and sums.
TEST_F(CompletionsTest, NonStreamedRequestsFeedEveryRequestFamily) {
  Start();
  constexpr int kN = 3, kP = 7, kM = 4;
  for (int i = 0; i < kN; ++i) {
    HttpClientResponse r =
        Post(R"({"prompt":[1,2,3,4,5,6,7],"max_tokens":4,"ignore_eos":true,"model":"model"})");
    ASSERT_EQ(r.status, 200) << r.body << r.error;
    EXPECT_EQ(r.content_type, "application/json");
    json doc = json::parse(r.body);
    EXPECT_EQ(doc["object"], "text_completion");
    EXPECT_EQ(doc["model"], "model");
    EXPECT_EQ(doc["id"].get<std::string>().rfind("cmpl-", 0), 0u);
    ASSERT_EQ(doc["choices"].size(), 1u);
    EXPECT_EQ(doc["choices"][0]["token_ids"].size(), size_t{kM});
    EXPECT_EQ(doc["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(doc["usage"]["prompt_tokens"], kP);
    EXPECT_EQ(doc["usage"]["completion_tokens"], kM);
    EXPECT_EQ(doc["usage"]["total_tokens"], kP + kM);
  }
  const std::string m = Metrics();
  EXPECT_EQ(Sample(m, Series("vllm:request_success_total", "finished_reason=\"length\",")), kN)
      << m;
  EXPECT_EQ(Sample(m, Series("vllm:prompt_tokens_total")), kN * kP);
  EXPECT_EQ(Sample(m, Series("vllm:generation_tokens_total")), kN * kM);
  EXPECT_EQ(Sample(m, Series("vllm:time_to_first_token_seconds_count")), kN);
  EXPECT_EQ(Sample(m, Series("vllm:e2e_request_latency_seconds_count")), kN);
  EXPECT_EQ(Sample(m, Series("vllm:request_queue_time_seconds_count")), kN);
  EXPECT_EQ(Sample(m, Series("vllm:request_prefill_time_seconds_count")), kN);
  EXPECT_EQ(Sample(m, Series("vllm:request_decode_time_seconds_count")), kN);
  EXPECT_EQ(Sample(m, Series("vllm:request_inference_time_seconds_count")), kN);
  EXPECT_EQ(Sample(m, Series("vllm:inter_token_latency_seconds_count")), kN * (kM - 1));
  EXPECT_EQ(Sample(m, Series("vllm:request_prompt_tokens_sum")), kN * kP);
  EXPECT_EQ(Sample(m, Series("vllm:request_generation_tokens_sum")), kN * kM);
  EXPECT_EQ(Sample(m, Series("vllm:request_params_max_tokens_sum")), kN * kM);
  EXPECT_EQ(Sample(m, Series("vllm:request_params_n_count")), kN);
  EXPECT_EQ(Sample(m, Series("vllm:request_params_n_sum")), kN);
  EXPECT_EQ(Sample(m, Series("vllm:iteration_tokens_total_count")), kN * kM);
  EXPECT_GT(Sample(m, Series("vllm:time_to_first_token_seconds_sum")), 0);
  // Prompt tokens by source add up to the prompt tokens, whatever the cache hits drawn.
  auto by_source = [&](const std::string& source) {
    // Labels render sorted: `source` comes after `model_name`.
    return Sample(m,
                  "vllm:prompt_tokens_by_source_total{engine=\"0\",model_name=\"model\","
                  "source=\"" +
                      source + "\"}");
  };
  EXPECT_EQ(
      by_source("local_compute") + by_source("local_cache_hit") + by_source("external_kv_transfer"),
      kN * kP);
  EXPECT_EQ(frontend_->live_requests(), 0u);
  EXPECT_EQ(Engine0().requests_served, uint64_t{kN});
}

TEST_F(CompletionsTest, StreamedRequestSendsOneChunkPerTokenThenDone) {
  Start();
  std::string stream;
  HttpClientResponse r =
      HttpPost(url_,
               R"({"prompt":[[5,6,7]],"max_tokens":5,"ignore_eos":true,"stream":true,)"
               R"("stream_options":{"include_usage":true}})",
               [&](std::string_view piece) {
                 stream.append(piece);
                 return true;
               });
  ASSERT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(r.content_type, "text/event-stream");
  // Events: "data: <json>\n\n" ... "data: [DONE]\n\n".
  std::vector<std::string> events;
  for (size_t pos = 0; pos < stream.size();) {
    const size_t end = stream.find("\n\n", pos);
    ASSERT_NE(end, std::string::npos) << stream;
    ASSERT_EQ(stream.compare(pos, 6, "data: "), 0) << stream;
    events.push_back(stream.substr(pos + 6, end - pos - 6));
    pos = end + 2;
  }
  ASSERT_GE(events.size(), 3u) << stream;
  EXPECT_EQ(events.back(), "[DONE]");
  size_t tokens = 0;
  std::string last_reason;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    json chunk = json::parse(events[i]);
    ASSERT_EQ(chunk["choices"].size(), 1u);
    tokens += chunk["choices"][0]["token_ids"].size();
    if (!chunk["choices"][0]["finish_reason"].is_null()) {
      last_reason = chunk["choices"][0]["finish_reason"];
      EXPECT_EQ(i + 3, events.size()) << "finish_reason before the last token chunk";
    }
  }
  EXPECT_EQ(tokens, 5u);
  EXPECT_EQ(last_reason, "length");
  json usage = json::parse(events[events.size() - 2]);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 5);
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 3);
  const std::string m = Metrics();
  EXPECT_EQ(Sample(m, Series("vllm:request_success_total", "finished_reason=\"length\",")), 1);
  EXPECT_EQ(Sample(m, Series("vllm:inter_token_latency_seconds_count")), 4);
  EXPECT_EQ(frontend_->live_requests(), 0u);
}

// Parallel sampling: three children, the n histogram gets the parent's n once.
TEST_F(CompletionsTest, ParallelSamplingRecordsTheParentsNOnce) {
  Start();
  HttpClientResponse r = Post(R"({"prompt":[1,2,3,4,5],"max_tokens":4,"n":3,"ignore_eos":true})");
  ASSERT_EQ(r.status, 200) << r.body << r.error;
  json doc = json::parse(r.body);
  ASSERT_EQ(doc["choices"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(doc["choices"][i]["index"], i);
    EXPECT_EQ(doc["choices"][i]["token_ids"].size(), 4u);
  }
  EXPECT_EQ(doc["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(doc["usage"]["completion_tokens"], 12);
  const std::string m = Metrics();
  EXPECT_EQ(Sample(m, Series("vllm:request_params_n_count")), 1) << m;
  EXPECT_EQ(Sample(m, Series("vllm:request_params_n_sum")), 3);
  EXPECT_EQ(Sample(m, Series("vllm:request_max_num_generation_tokens_sum")), 4);
  EXPECT_EQ(Sample(m, Series("vllm:request_success_total", "finished_reason=\"length\",")), 3);
  EXPECT_EQ(Sample(m, Series("vllm:request_prompt_tokens_sum")), 15);
  EXPECT_EQ(Sample(m, Series("vllm:prompt_tokens_total")), 15);
  EXPECT_EQ(Engine0().requests_served, 3u);
  EXPECT_EQ(frontend_->live_requests(), 0u);
}

// The client hangs up after the first token: the frontend aborts the request at the engine
// and forgets it, and nothing is recorded as finished (Python records no stats for an abort).
TEST_F(CompletionsTest, ClientDisconnectAbortsTheRequest) {
  Start();
  HttpClientResponse r = HttpPost(
      url_, R"({"prompt":[1,2,3],"max_tokens":5000,"ignore_eos":true,"stream":true})",
      [](std::string_view piece) { return piece.find("token_ids") == std::string_view::npos; });
  EXPECT_TRUE(r.hung_up) << r.error;
  EXPECT_EQ(r.status, 200);
  // The server notices at its next write; the engine gets the ABORT after that.
  ExpectAbortedWithoutStatistics();
  const std::string m = Metrics();
  EXPECT_EQ(Sample(m, Series("vllm:time_to_first_token_seconds_count")), 1);
}

// A client waiting for a non-streamed answer hangs up: as vLLM's API server does, the frontend
// aborts its request at the engine and records nothing for it.
TEST_F(CompletionsTest, ClientHangingUpOnANonStreamedRequestAbortsIt) {
  Start();
  const int fd = SendRaw(R"({"prompt":[1,2,3],"max_tokens":5000,"ignore_eos":true})");
  ASSERT_GE(fd, 0);
  // Hang up once the engine has the request.
  ASSERT_TRUE(Eventually([&] { return Engine0().requests_arrived == 1; }));
  close(fd);
  ExpectAbortedWithoutStatistics();
}

// A streamed request still queued at its engine (no token written yet) whose client hangs up:
// aborted at the engine within a second, as the non-streamed one is, instead of at the first
// write (the engine steps once every 5 s here, so no token comes before the hang-up).
TEST_F(CompletionsTest, ClientHangingUpOnAStreamBeforeItsFirstTokenAbortsIt) {
  Start([](SimulatorOptions* so) { so->rate_hz = 0.2; });
  const int fd = SendRaw(R"({"prompt":[1,2,3],"max_tokens":50,"ignore_eos":true,"stream":true})");
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(Eventually([&] { return Engine0().requests_arrived == 1; }));
  close(fd);
  EXPECT_TRUE(
      Eventually([&] { return Engine0().requests_aborted == 1; }, std::chrono::milliseconds(1000)))
      << "no ABORT within a second of the hang-up";
  ExpectAbortedWithoutStatistics();
}

// The engine sends ENGINE_CORE_DEAD in the middle of a long request: the request ends with an
// error the client sees, and its state is freed.
TEST_F(CompletionsTest, EngineDeathEndsTheRequestWithAnError) {
  Start([](SimulatorOptions* so) {
    so->rate_hz = 100;
    so->die_after = 300;  // 3 s: long enough to send the request first
  });
  HttpClientResponse r = Post(R"({"prompt":[1,2,3],"max_tokens":5000,"ignore_eos":true})");
  EXPECT_EQ(r.status, 500) << r.body << r.error;
  json doc = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << r.body;
  // vLLM maps an EngineDeadError to 500 InternalServerError (error_response.py).
  EXPECT_EQ(doc["error"]["type"], "InternalServerError");
  EXPECT_NE(doc["error"]["message"].get<std::string>().find("engine 0 died"), std::string::npos)
      << r.body;
  EXPECT_EQ(frontend_->live_requests(), 0u);
  EXPECT_EQ(frontend_->live_completions(), 0u);
  // No engine left: a new request is refused at once.
  HttpClientResponse after = Post(R"({"prompt":[1],"max_tokens":1})");
  EXPECT_EQ(after.status, 503) << after.body;
  const std::string m = Metrics();
  EXPECT_EQ(Sample(m, Series("vllm:request_success_total", "finished_reason=\"length\",")), 0);
  EXPECT_EQ(Sample(m, "vmetrics_engine_up{engine=\"0\"}"), 0) << m;
}

// A killed engine says nothing: its connections just close.
TEST_F(CompletionsTest, VanishedEngineEndsTheRequestWithAnError) {
  Start([](SimulatorOptions* so) {
    so->rate_hz = 100;
    so->vanish_after = 300;
  });
  HttpClientResponse r = Post(R"({"prompt":[1,2,3],"max_tokens":5000,"ignore_eos":true})");
  EXPECT_EQ(r.status, 500) << r.body << r.error;
  EXPECT_NE(r.body.find("engine 0 died"), std::string::npos) << r.body;
  EXPECT_EQ(frontend_->live_requests(), 0u);
}

TEST_F(CompletionsTest, StreamedRequestOnADyingEngineEndsWithAnErrorEvent) {
  Start([](SimulatorOptions* so) {
    so->rate_hz = 100;
    so->die_after = 300;
  });
  std::string stream;
  HttpClientResponse r =
      HttpPost(url_, R"({"prompt":[1,2,3],"max_tokens":5000,"ignore_eos":true,"stream":true})",
               [&](std::string_view piece) {
                 stream.append(piece);
                 return true;
               });
  EXPECT_EQ(r.status, 200) << r.error;
  EXPECT_NE(stream.find(R"("type":"InternalServerError")"), std::string::npos) << stream;
  EXPECT_TRUE(stream.size() >= 14 &&
              stream.compare(stream.size() - 14, 14, "data: [DONE]\n\n") == 0)
      << stream;
  EXPECT_EQ(frontend_->live_requests(), 0u);
}

// A request whose `model` names a --lora-modules adapter runs with it: the answer names the
// adapter, and vllm:lora_requests_info shows it while the request was in flight (the message
// with its first token carries SchedulerStats and leaves it running), then without it.
TEST_F(CompletionsTest, LoraModuleRequestsShowInLoraRequestsInfo) {
  Start(nullptr, [](FrontendOptions* o) {
    o->enable_lora = true;
    o->max_loras = 2;
    Result<std::vector<LoraModule>> modules =
        ParseLoraModules({"sql=/adapters/sql", R"({"name":"chat","path":"/adapters/chat"})"});
    ASSERT_TRUE(modules.ok()) << modules.status().ToString();
    o->lora_modules = *modules;
  });
  HttpClientResponse r =
      Post(R"({"prompt":[1,2,3],"max_tokens":4,"ignore_eos":true,"model":"sql"})");
  ASSERT_EQ(r.status, 200) << r.body << r.error;
  EXPECT_EQ(json::parse(r.body)["model"], "sql");
  HttpClientResponse base = Post(R"({"prompt":[1,2,3],"max_tokens":2,"model":"model"})");
  ASSERT_EQ(base.status, 200) << base.body << base.error;
  EXPECT_EQ(json::parse(base.body)["model"], "model");
  EXPECT_EQ(Post(R"({"prompt":[1],"model":"sq"})").status, 404);
  const std::string m = Metrics();
  const std::string info = "vllm:lora_requests_info{max_lora=\"2\",";
  EXPECT_GT(Sample(m, info + "running_lora_adapters=\"sql\",waiting_lora_adapters=\"sql\"}"), 1e9)
      << m;
  // Once it finished the adapter is forgotten: the base request's steps name no adapter.
  EXPECT_GT(Sample(m, info + "running_lora_adapters=\"\",waiting_lora_adapters=\"\"}"), 1e9) << m;
  EXPECT_EQ(m.find("chat"), std::string::npos) << m;
}

// --lora-modules is read as vLLM reads it, and checked (it needs --enable-lora) before any
// engine is waited for.
TEST(FrontendOptionsCheck, LoraModulesRequireLoraAndNameEqualsPath) {
  struct Case {
    std::string module;
    std::string error_part;
  };
  const Case cases[] = {
      {"nopath", "is not name=path"},
      {"=/a", "is not name=path"},
      {"a=", "is not name=path"},
      {R"({"name":"x"})", "is not a JSON object with string name and path"},
  };
  for (const Case& c : cases) {
    Result<std::vector<LoraModule>> modules = ParseLoraModules({c.module});
    ASSERT_FALSE(modules.ok()) << c.module;
    EXPECT_EQ(modules.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(modules.status().message().find("--lora-modules: " + c.module + " " + c.error_part),
              std::string::npos)
        << modules.status().message();
  }
  FrontendOptions options;
  options.handshake_address = "tcp://127.0.0.1:0";
  options.lora_modules = {{"sql", "/a"}};
  Frontend frontend(options);
  Status s = frontend.Bind();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--lora-modules requires --enable-lora"), std::string::npos)
      << s.ToString();
}

// Bad requests: 4xx with a JSON error naming the problem; nothing reaches the engine.
TEST_F(CompletionsTest, BadRequestsAreRefusedWithClearMessages) {
  Start();
  struct Case {
    std::string body;
    int status;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"not json", 400, "not valid JSON"},
      {"[1,2]", 400, "must be a JSON object"},
      {"{}", 400, "Either prompt or prompt_embeds must be provided"},
      {R"({"prompt":"hello"})", 400, "tokenization is not part of vmetrics"},
      {R"({"prompt":["hello","world"]})", 400, "tokenization is not part of vmetrics"},
      {R"({"prompt":[]})", 400, "prompt must not be empty"},
      {R"({"prompt":[1.5]})", 400, "token ids must be integers"},
      {R"({"prompt":[-1]})", 400, "between 0 and"},
      {R"({"prompt":[[1],2]})", 400, "must not mix"},
      {R"({"prompt":{"a":1}})", 400, "list of token ids"},
      {R"({"prompt":[1],"max_tokens":0})", 400, "max_tokens must be at least 1"},
      {R"({"prompt":[1],"max_tokens":"5"})", 400, "max_tokens must be an integer"},
      {R"({"prompt":[1],"n":0})", 400, "n must be at least 1, got 0."},
      {R"({"prompt":[1],"n":1000})", 400, "n must be at most 128, got 1000."},
      {R"({"prompt":[1],"n":1.5})", 400, "n must be an integer"},
      {R"({"prompt":[[1],[1],[1],[1],[1],[1],[1],[1],[1]],"n":128})", 400,
       "this request makes 1152 engine requests (prompts x n); at most 1024"},
      {R"({"prompt":[1],"temperature":-1})", 400, "temperature must be non-negative"},
      {R"({"prompt":[1],"temperature":"hot"})", 400, "temperature must be a number"},
      {R"({"prompt":[1],"stream":"yes"})", 400, "stream must be a boolean"},
      {R"({"prompt":[1],"ignore_eos":1})", 400, "ignore_eos must be a boolean"},
      {R"({"prompt":[1,2,3],"max_tokens":8190})", 400, "maximum context length is 8192"},
      {R"({"prompt":[1],"model":"other"})", 404, "The model `other` does not exist."},
      {std::string(2 << 20, ' '), 413, "request body larger than"},
  };
  for (const Case& c : cases) {
    HttpClientResponse r = Post(c.body);
    const std::string what = c.body.substr(0, 60);
    EXPECT_EQ(r.status, c.status) << what << ": " << r.body << r.error;
    EXPECT_EQ(r.content_type, "application/json") << what;
    json doc = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << what << ": " << r.body;
    EXPECT_EQ(doc["error"]["code"], c.status) << what;
    EXPECT_EQ(doc["error"]["type"], frontend::ErrorType(c.status)) << what;
    EXPECT_NE(doc["error"]["message"].get<std::string>().find(c.message_part), std::string::npos)
        << what << ": " << r.body;
  }
  HttpClientResponse wrong_method = HttpGet(url_);
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_EQ(frontend_->live_requests(), 0u);
  EXPECT_EQ(Engine0().requests_served, 0u);
}

// JSON nested 58,000 deep in a field that goes to the engine (117 kB: it overflowed the stack of
// a recursive encoder) is a 400 naming the field and the server carries on; a value at the
// documented limit (64 levels) reaches the engine.
TEST_F(CompletionsTest, DeeplyNestedTransferParamsAreRefusedAndTheServerCarriesOn) {
  Start();
  auto nested = [](size_t depth) {
    return "{\"a\":" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
  };
  const std::string generate_url =
      "http://127.0.0.1:" + std::to_string(frontend_->http_port()) + "/inference/v1/generate";
  struct Case {
    std::string url, body, param;
  };
  const std::vector<Case> cases = {
      {url_, R"({"prompt":[1],"kv_transfer_params":)" + nested(58000) + "}", "kv_transfer_params"},
      {url_, R"({"prompt":[1],"ec_transfer_params":)" + nested(58000) + "}", "ec_transfer_params"},
      {generate_url, R"({"token_ids":[1],"sampling_params":{"extra_args":)" + nested(58000) + "}}",
       "sampling_params.extra_args"},
      {url_, R"({"prompt":[1],"kv_transfer_params":)" + nested(65) + "}", "kv_transfer_params"},
  };
  for (const Case& c : cases) {
    HttpClientResponse r = HttpPost(c.url, c.body);
    EXPECT_EQ(r.status, 400) << c.param << ": " << r.error;
    json doc = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << r.body;
    EXPECT_EQ(doc["error"]["param"], c.param) << r.body;
  }
  EXPECT_EQ(Engine0().requests_served, 0u);
  HttpClientResponse at_limit =
      Post(R"({"prompt":[1],"max_tokens":1,"kv_transfer_params":)" + nested(64) + "}");
  EXPECT_EQ(at_limit.status, 200) << at_limit.body << at_limit.error;
  EXPECT_EQ(Post(R"({"prompt":[1],"max_tokens":1})").status, 200);
  EXPECT_EQ(Engine0().requests_served, 2u);
}

// Sends `request` (raw bytes, which should ask for `Connection: close`) to 127.0.0.1:`port` and
// returns everything the server sent until it closed.
std::string RawExchange(uint16_t port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string got;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, n);
  }
  close(fd);
  return got;
}

// A request's text: `method target`, Host, the given header lines (each ending in \r\n), and
// `body` with its Content-Length (none for an empty GET).
std::string RawRequest(const std::string& method, const std::string& target,
                       const std::string& headers, const std::string& body = "") {
  return method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + headers +
         (method == "GET" ? std::string()
                          : "Content-Length: " + std::to_string(body.size()) + "\r\n") +
         "\r\n" + body;
}

// POSTs `body` to /v1/completions with `X-Request-Id: <id>` (bytes as given).
std::string PostWithRequestId(uint16_t port, const std::string& id, const std::string& body) {
  return RawExchange(port,
                     RawRequest("POST", "/v1/completions", "X-Request-Id: " + id + "\r\n", body));
}

// X-Request-Id becomes the engine's request_id: one that is not valid UTF-8 (a vLLM engine's
// msgspec decoder refuses such a str, and the error ends its input thread), longer than 512
// bytes, or holding control characters never reaches an engine: a 400 naming the header. At
// 512 bytes it is the answer's id.
TEST_F(CompletionsTest, RequestIdHeaderThatAnEngineCouldNotDecodeIsRefused) {
  Start();
  const std::string body = R"({"prompt":[1],"max_tokens":1})";
  for (const std::string& id : {std::string("bad\xff\xfe"), std::string("a\xc3"),
                                std::string("\xed\xa0\x80"), std::string(513, 'a')}) {
    const std::string reply = PostWithRequestId(frontend_->http_port(), id, body);
    ASSERT_EQ(reply.rfind("HTTP/1.1 400 ", 0), 0u) << reply;
    const json doc = json::parse(reply.substr(reply.find("\r\n\r\n") + 4), nullptr, false);
    ASSERT_TRUE(doc.is_object()) << reply;
    EXPECT_EQ(doc["error"]["param"], "X-Request-Id") << reply;
  }
  EXPECT_EQ(Engine0().requests_arrived, 0u);
  const std::string id(512, 'i');
  const std::string reply = PostWithRequestId(frontend_->http_port(), id, body);
  ASSERT_EQ(reply.rfind("HTTP/1.1 200 ", 0), 0u) << reply;
  const json doc = json::parse(reply.substr(reply.find("\r\n\r\n") + 4), nullptr, false);
  ASSERT_TRUE(doc.is_object()) << reply;
  EXPECT_EQ(doc["id"], "cmpl-" + id);
  EXPECT_EQ(Engine0().requests_arrived, 1u);
}

// --api-key as vLLM's: the API paths need `Authorization: Bearer <key>` (401 with vLLM's
// {"error":"Unauthorized"} otherwise, nothing sent to the engine), and so does /abort_requests,
// which vLLM serves only in its development modes; /metrics, /health, /ping and /version do not.
TEST_F(CompletionsTest, ApiKeyGuardsTheApiAndAbortRequestsButNotMetricsOrHealth) {
  Start(nullptr, [](FrontendOptions* o) { o->http.api_keys = {"sk-test"}; });
  const uint16_t port = frontend_->http_port();
  const std::string completion = R"({"prompt":[1],"max_tokens":1})";
  const std::string generate = R"({"token_ids":[1],"sampling_params":{"max_tokens":1}})";
  const std::string abort = R"({"request_ids":["cmpl-x-0"]})";
  struct Case {
    std::string method, target, body;
  };
  const std::vector<Case> guarded = {
      {"POST", "/v1/completions", completion}, {"POST", "/inference/v1/generate", generate},
      {"POST", "/abort_requests", abort},      {"GET", "/v1/models", ""},
      {"GET", "/kv_event_sources", ""},        {"POST", "/v1/chat/completions", completion}};
  for (const Case& c : guarded) {
    for (const std::string& auth : {std::string(), std::string("Authorization: Bearer sk-bad\r\n"),
                                    std::string("Authorization: Basic c2stdGVzdA==\r\n")}) {
      const std::string reply = RawExchange(port, RawRequest(c.method, c.target, auth, c.body));
      EXPECT_EQ(reply.rfind("HTTP/1.1 401 ", 0), 0u) << c.target << " " << auth << reply;
      EXPECT_NE(reply.find("\r\n\r\n{\"error\":\"Unauthorized\"}"), std::string::npos) << reply;
    }
  }
  EXPECT_EQ(Engine0().requests_arrived, 0u);
  const std::string key = "Authorization: Bearer sk-test\r\n";
  EXPECT_EQ(RawExchange(port, RawRequest("POST", "/v1/completions", key, completion))
                .rfind("HTTP/1.1 200 ", 0),
            0u);
  EXPECT_EQ(RawExchange(port, RawRequest("POST", "/inference/v1/generate", key, generate))
                .rfind("HTTP/1.1 200 ", 0),
            0u);
  EXPECT_EQ(RawExchange(port, RawRequest("POST", "/abort_requests", key, abort))
                .rfind("HTTP/1.1 200 ", 0),
            0u);
  EXPECT_EQ(Engine0().requests_arrived, 2u);
  const std::string sources = RawExchange(port, RawRequest("GET", "/kv_event_sources", key, ""));
  EXPECT_EQ(sources.rfind("HTTP/1.1 200 ", 0), 0u) << sources;
  EXPECT_NE(sources.find("\r\n\r\n{}"), std::string::npos) << sources;
  for (const char* open : {"/metrics", "/health", "/ping", "/version"}) {
    EXPECT_EQ(RawExchange(port, RawRequest("GET", open, "")).rfind("HTTP/1.1 200 ", 0), 0u) << open;
  }
}

}  // namespace
}  // namespace vmetrics
