// SPDX-License-Identifier: Apache-2.0
// The engine control routes (engine_control.h): an RL trainer's cycle (generate, sleep, wake
// up, reset the prefix cache, generate) against stand-in engines of every wire generation, each
// getting the UTILITY calls its own generation's frontend makes (vllm/v1/engine/async_llm.py and
// core_client.py at each generation's commit); vllm:engine_sleep_state following the answers;
// what a generation cannot serve refused before anything is sent; guards and bounds. The
// EngineControl unit tests use a send function that records, and answer by hand.
#include "engine_control.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "environment.h"
#include "http_test_client.h"
#include "json_fields.h"
#include "msgpack_from_json.h"
#include "vmetrics/frontend.h"
#include "vmetrics/simulator.h"
#include "vmetrics/utility_call.h"
#include "vmetrics/wire_decoder.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics {
namespace {

using http_test::Exchange;
using http_test::HttpResponse;
using http_test::Request;
using json = nlohmann::json;

// VLLM_SERVER_DEV_MODE for one test (each test runs in a process of its own).
class DevMode {
 public:
  explicit DevMode(const char* value) { setenv("VLLM_SERVER_DEV_MODE", value, 1); }
  ~DevMode() { unsetenv("VLLM_SERVER_DEV_MODE"); }
  DevMode(const DevMode&) = delete;
  DevMode& operator=(const DevMode&) = delete;
};

class EngineControlServeTest : public ::testing::Test {
 protected:
  // A frontend in development mode with `engines` stand-ins of generation `wire` (nullptr:
  // the newest), the frontend told the generation when `force_wire`.
  void Start(const WireGeneration* wire, int engines = 1, bool force_wire = true,
             const std::vector<std::string>& api_keys = {}) {
    FrontendOptions options;
    options.handshake_address = "tcp://127.0.0.1:0";
    options.http.port = 0;
    options.http.api_keys = api_keys;
    options.engine_ready_timeout_s = 30;
    options.max_model_len = 1024;
    options.data_parallel_size = engines;
    if (wire != nullptr && force_wire) options.engine_wire = std::string(wire->name);
    frontend_ = std::make_unique<Frontend>(options);
    Status bound = frontend_->Bind();
    ASSERT_TRUE(bound.ok()) << bound.ToString();
    SimulatorOptions so;
    so.handshake_address = frontend_->handshake_endpoint();
    so.engines = engines;
    so.steps = 0;
    so.rate_hz = 2000;
    so.serve_requests = true;
    so.synthetic_requests = false;
    so.wire = wire;
    simulator_ = std::make_unique<Simulator>(so);
    ASSERT_TRUE(simulator_->Start().ok());
    Status started = frontend_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    port_ = frontend_->http_port();
  }

  void TearDown() override {
    if (simulator_) simulator_->RequestStop();
    if (frontend_) frontend_->Stop();
    if (simulator_) (void)simulator_->Wait();
  }

  HttpResponse Call(const std::string& method, const std::string& target,
                    const std::vector<std::pair<std::string, std::string>>& headers = {}) const {
    return Exchange(port_, Request(method, target, headers));
  }
  json CallOk(const std::string& method, const std::string& target) const {
    HttpResponse r = Call(method, target);
    EXPECT_EQ(r.status, 200) << target << " -> " << r.body;
    EXPECT_EQ(r.Header("content-type"), "application/json") << target;
    return json::parse(r.body, nullptr, false);
  }
  void GenerateOk() const {
    const std::string body = R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":2}})";
    HttpResponse r = Exchange(port_, Request("POST", "/inference/v1/generate",
                                             {{"Content-Type", "application/json"},
                                              {"Content-Length", std::to_string(body.size())}}) +
                                         body);
    EXPECT_EQ(r.status, 200) << r.body;
  }
  std::string Metrics() const { return http_test::Get(port_, "/metrics").body; }
  EngineTotals Engine(size_t i) const { return simulator_->Totals().engines.at(i); }

  std::unique_ptr<Frontend> frontend_;
  std::unique_ptr<Simulator> simulator_;
  uint16_t port_ = 0;
};

// The sleep-state gauge line of engine 0 for `state`.
std::string SleepLine(const std::string& state, int value) {
  return "vllm:engine_sleep_state{engine=\"0\",model_name=\"model\",sleep_state=\"" + state +
         "\"} " + std::to_string(value) + ".0";
}

// The RL cycle against every generation: the calls each engine got are its own frontend's.
TEST_F(EngineControlServeTest, AnRlCycleCallsEachGenerationAsItsOwnFrontendDoes) {
  DevMode dev("1");
  for (const WireGeneration& g : WireGenerations()) {
    SCOPED_TRACE(g.name);
    Start(&g);
    GenerateOk();
    json slept = CallOk("POST", "/sleep?level=1");
    EXPECT_EQ(slept["status"], "sleeping");
    EXPECT_EQ(slept["engines"], json::array({0}));
    EXPECT_EQ(Engine(0).sleep_level, 1);
    const std::string asleep = Metrics();
    EXPECT_NE(asleep.find(SleepLine("awake", 0)), std::string::npos) << asleep;
    EXPECT_NE(asleep.find(SleepLine("weights_offloaded", 1)), std::string::npos);
    EXPECT_EQ(CallOk("GET", "/is_sleeping")["is_sleeping"], true);
    EXPECT_EQ(CallOk("POST", "/wake_up")["status"], "awake");
    EXPECT_EQ(CallOk("GET", "/is_sleeping")["is_sleeping"], false);
    EXPECT_NE(Metrics().find(SleepLine("awake", 1)), std::string::npos);
    EXPECT_EQ(CallOk("POST", "/reset_prefix_cache")["success"], true);
    GenerateOk();

    std::vector<std::string> expected;
    if (g.control.sleep_takes_mode) {
      expected = {"sleep(1, 'abort')"};
    } else if (g.control.reset_prefix_cache_flags) {
      expected = {"reset_prefix_cache(False, False)", "sleep(1)"};
    } else {
      expected = {"reset_prefix_cache()", "sleep(1)"};
    }
    expected.emplace_back("is_sleeping()");
    expected.emplace_back("wake_up(None)");
    expected.emplace_back("is_sleeping()");
    expected.emplace_back(g.control.reset_prefix_cache_flags ? "reset_prefix_cache(False, False)"
                                                             : "reset_prefix_cache()");
    const EngineTotals e = Engine(0);
    EXPECT_EQ(e.utility_calls, expected);
    EXPECT_EQ(e.utility_failures, 0u);
    EXPECT_EQ(e.requests_arrived, 2u);
    TearDown();
    frontend_.reset();
    simulator_.reset();
  }
}

// Level 2, wake-up tags and the sleep mode reach the engine as given.
TEST_F(EngineControlServeTest, LevelModeAndTagsReachTheEngine) {
  DevMode dev("1");
  Start(nullptr);
  EXPECT_EQ(CallOk("POST", "/sleep?level=2&mode=wait")["level"], 2);
  EXPECT_NE(Metrics().find(SleepLine("discard_all", 1)), std::string::npos);
  CallOk("POST", "/wake_up?tags=weights&tags=kv_cache");
  EXPECT_EQ(Engine(0).utility_calls,
            (std::vector<std::string>{"sleep(2, 'wait')", "wake_up(['weights', 'kv_cache'])"}));
}

TEST_F(EngineControlServeTest, PauseAndResumeUseTheEnginesScheduler) {
  DevMode dev("1");
  Start(nullptr);
  EXPECT_EQ(CallOk("POST", "/pause?mode=keep&clear_cache=false")["status"], "paused");
  EXPECT_EQ(CallOk("GET", "/is_paused")["is_paused"], true);
  EXPECT_EQ(CallOk("POST", "/resume")["status"], "resumed");
  EXPECT_EQ(CallOk("GET", "/is_paused")["is_paused"], false);
  // The deprecated wait_for_inflight_requests=true is mode "wait".
  CallOk("POST", "/pause?wait_for_inflight_requests=true");
  EXPECT_EQ(Engine(0).utility_calls,
            (std::vector<std::string>{"pause_scheduler('keep', False)", "is_scheduler_paused()",
                                      "resume_scheduler()", "is_scheduler_paused()",
                                      "pause_scheduler('wait', True)"}));
}

// What an older engine cannot do as meant is refused with a 400 naming why, and nothing is
// sent to it.
TEST_F(EngineControlServeTest, WhatAGenerationCannotServeIsRefusedBeforeAnythingIsSent) {
  DevMode dev("1");
  Start(FindWireGeneration("g20250927"));
  for (const std::string target :
       {"/pause", "/resume", "/sleep?mode=abort", "/reset_prefix_cache?reset_external=true"}) {
    HttpResponse r = Call("POST", target);
    EXPECT_EQ(r.status, 400) << target << " -> " << r.body;
    EXPECT_NE(r.body.find("engine 0: its generation"), std::string::npos) << r.body;
  }
  EXPECT_EQ(Call("GET", "/is_paused").status, 400);
  EXPECT_TRUE(Engine(0).utility_calls.empty());
}

TEST_F(EngineControlServeTest, BadQueryParametersAre400sNamingThem) {
  DevMode dev("1");
  Start(nullptr);
  for (const std::string target :
       {"/sleep?level=one", "/sleep?mode=later", "/pause?mode=x", "/pause?clear_cache=maybe",
        "/reset_prefix_cache?reset_running_requests=2"}) {
    HttpResponse r = Call("POST", target);
    EXPECT_EQ(r.status, 400) << target;
    const json doc = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << r.body;
    EXPECT_NE(doc["error"]["message"].get<std::string>().find("query parameter"), std::string::npos)
        << r.body;
  }
  // Python's int() and FastAPI's booleans.
  EXPECT_EQ(CallOk("POST", "/sleep?level=%20%2B1_0%20")["level"], 10);
  CallOk("POST", "/reset_prefix_cache?reset_running_requests=YES&reset_external=off");
  EXPECT_EQ(Engine(0).utility_calls,
            (std::vector<std::string>{"sleep(10, 'abort')", "reset_prefix_cache(True, False)"}));
}

// X-data-parallel-rank names the one engine to call.
TEST_F(EngineControlServeTest, TheRankHeaderCallsOneEngine) {
  DevMode dev("1");
  Start(nullptr, 2);
  HttpResponse r = Call("POST", "/sleep", {{"X-data-parallel-rank", "1"}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["engines"], json::array({1}));
  EXPECT_TRUE(Engine(0).utility_calls.empty());
  EXPECT_EQ(Engine(1).sleep_level, 1);
  const json flags = CallOk("GET", "/is_sleeping");
  EXPECT_EQ(flags["is_sleeping"], false);  // the first engine's, as vLLM's DP client
  EXPECT_EQ(flags["engines"][1]["is_sleeping"], true);
  EXPECT_EQ(Call("POST", "/sleep", {{"X-data-parallel-rank", "7"}}).status, 400);
}

TEST_F(EngineControlServeTest, TheRoutesExistOnlyInDevelopmentMode) {
  Start(nullptr);
  EXPECT_EQ(Call("POST", "/sleep").status, 404);
  EXPECT_EQ(Call("GET", "/is_sleeping").status, 404);
  EXPECT_TRUE(Engine(0).utility_calls.empty());
}

TEST_F(EngineControlServeTest, AnApiKeyGuardsTheRoutes) {
  DevMode dev("1");
  Start(nullptr, 1, true, {"sk-test"});
  EXPECT_EQ(Call("POST", "/sleep").status, 401);
  EXPECT_EQ(Call("GET", "/is_paused").status, 401);
  EXPECT_TRUE(Engine(0).utility_calls.empty());
  EXPECT_EQ(Call("POST", "/sleep", {{"Authorization", "Bearer sk-test"}}).status, 200);
}

// The collective_rpc calls of the weight-transfer routes, whose keyword arguments are a request
// body's JSON object: the bytes Python's msgpack writes for the same call
// (tests/fixtures/utility_calls.jsonl).
TEST(EngineControlWire, CollectiveRpcBodiesAreTheBytesPythonWrites) {
  std::ifstream in(VMETRICS_UTILITY_CALLS);
  ASSERT_TRUE(in) << VMETRICS_UTILITY_CALLS;
  size_t cases = 0;
  for (std::string line; std::getline(in, line);) {
    const frontend::Json c = frontend::Json::parse(line);
    if (c["method"] != "collective_rpc") continue;
    std::vector<UtilityArg> args;
    for (const frontend::Json& a : c["args"]) {
      if (a.is_null()) {
        args.emplace_back(nullptr);
      } else if (a.is_string()) {
        args.emplace_back(a.get<std::string>());
      } else {
        args.emplace_back(UtilityRaw{frontend::MsgpackFromJson(a)});
      }
    }
    const std::string body =
        EncodeUtilityCall(0, std::stoull(c["call_id"].get<std::string>()), "collective_rpc", args);
    std::string hex;
    for (unsigned char ch : body) {
      static const char* kDigits = "0123456789abcdef";
      hex += kDigits[ch >> 4];
      hex += kDigits[ch & 15];
    }
    EXPECT_EQ(hex, c["hex"].get<std::string>()) << line;
    ++cases;
  }
  EXPECT_EQ(cases, 3u);
}

// The weight-transfer routes: each a collective_rpc to the workers (or a weight-version call),
// refused for a generation whose engines lack the method.
TEST_F(EngineControlServeTest, WeightTransferRoutesCallTheWorkers) {
  DevMode dev("1");
  Start(nullptr);
  auto post = [this](const std::string& target, const std::string& body) {
    return Exchange(port_, Request("POST", target,
                                   {{"Content-Type", "application/json"},
                                    {"Content-Length", std::to_string(body.size())}}) +
                               body);
  };
  HttpResponse init = post("/init_weight_transfer_engine",
                           R"({"init_info":{"master_address":"10.0.0.1","world_size":2}})");
  EXPECT_EQ(init.status, 200) << init.body;
  EXPECT_EQ(json::parse(init.body)["message"], "Weight transfer initialized");
  EXPECT_EQ(post("/start_weight_update", "").status, 200);
  EXPECT_EQ(post("/update_weights", R"({"update_info":{"names":["w"],"shapes":[[2,2]]}})").status,
            200);
  EXPECT_EQ(post("/finish_weight_update", R"({"weight_version":"v2"})").status, 200);
  EXPECT_EQ(CallOk("GET", "/weight_info")["weight_version"], "v2");
  HttpResponse version = post("/update_weight_version", R"({"new_version":"v3"})");
  EXPECT_EQ(json::parse(version.body), json::parse(R"({"success":true,"new_version":"v3"})"));
  EXPECT_EQ(Engine(0).weight_version, "v3");
  // Upstream's refusals.
  EXPECT_EQ(post("/update_weights", R"({"names":["w"]})").status, 400);
  EXPECT_EQ(post("/init_weight_transfer_engine", "{").status, 400);
  EXPECT_EQ(post("/update_weight_version", "{}").status, 400);
  EXPECT_EQ(
      Engine(0).utility_calls,
      (std::vector<std::string>{
          R"(collective_rpc('init_weight_transfer_engine', None, [], {"init_info":{"master_address":"10.0.0.1","world_size":2}}))",
          "collective_rpc('start_weight_update', None, [], None)",
          R"(collective_rpc('update_weights', None, [], {"update_info":{"names":["w"],"shapes":[[2,2]]}}))",
          "collective_rpc('finish_weight_update', None, [], None)", "set_weight_version('v2')",
          "get_weight_version()", "set_weight_version('v3')"}));
}

TEST_F(EngineControlServeTest, WeightTransferRoutesAnOlderGenerationLacksAreRefused) {
  DevMode dev("1");
  Start(FindWireGeneration("g20260413"));
  EXPECT_EQ(Call("POST", "/start_weight_update").status, 400);
  EXPECT_EQ(Call("GET", "/weight_info").status, 400);
  EXPECT_TRUE(Engine(0).utility_calls.empty());
}

TEST(EngineControlEnvironment, DevModeIsReadAsPythonReadsIt) {
  {
    DevMode dev(" 0 ");
    EXPECT_FALSE(*frontend::ServerDevModeFromEnvironment());
  }
  {
    DevMode dev("2");
    EXPECT_TRUE(*frontend::ServerDevModeFromEnvironment());
  }
  DevMode dev("yes");
  Result<bool> bad = frontend::ServerDevModeFromEnvironment();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("VLLM_SERVER_DEV_MODE"), std::string::npos);
  FrontendOptions options;
  options.handshake_address = "tcp://127.0.0.1:0";
  options.http.port = 0;
  Frontend f(options);
  Status bound = f.Bind();
  EXPECT_FALSE(bound.ok());
  EXPECT_NE(bound.message().find("VLLM_SERVER_DEV_MODE"), std::string::npos);
}

// EngineControl alone: a recording send function and answers given by hand.
class EngineControlUnitTest : public ::testing::Test {
 protected:
  struct Sent {
    int engine;
    UtilityCall call;
  };
  void Make(std::vector<int64_t> engines, std::chrono::milliseconds timeout) {
    frontend::EngineControl::Options o;
    o.engine_indexes = std::move(engines);
    o.timeout = timeout;
    o.send = [this](int engine, EngineCoreRequestType type, const std::string& body) {
      EXPECT_EQ(type, EngineCoreRequestType::kUtility);
      Result<UtilityCall> call = DecodeUtilityCall(body);
      EXPECT_TRUE(call.ok());
      std::lock_guard<std::mutex> lock(mu_);
      sent_.push_back({engine, *call});
      return Status::Ok();
    };
    control_ = std::make_unique<frontend::EngineControl>(std::move(o));
  }
  // Runs a one-call plan and returns a future of its answers.
  std::future<std::vector<frontend::EngineControl::EngineAnswer>> RunIsSleeping() {
    auto promise =
        std::make_shared<std::promise<std::vector<frontend::EngineControl::EngineAnswer>>>();
    auto future = promise->get_future();
    control_->Run(
        std::nullopt,
        [](const EngineControlCalls&) -> Result<std::vector<frontend::EngineControl::Call>> {
          return std::vector<frontend::EngineControl::Call>{{"is_sleeping", {}}};
        },
        [promise](std::vector<frontend::EngineControl::EngineAnswer> a) {
          promise->set_value(std::move(a));
        });
    return future;
  }
  static UtilityOutput Answer(uint64_t call_id, std::optional<std::string_view> failure,
                              std::string_view result) {
    UtilityOutput o;
    o.call_id_is_u64 = true;
    o.call_id_u64 = call_id;
    o.failure_message = failure;
    o.result = result;
    return o;
  }

  std::mutex mu_;
  std::vector<Sent> sent_;
  std::unique_ptr<frontend::EngineControl> control_;
};

TEST_F(EngineControlUnitTest, EachEngineIsSettledByItsAnswerItsDeathOrTheTimeout) {
  Make({0, 1, 2}, std::chrono::milliseconds(200));
  auto answers = RunIsSleeping();
  ASSERT_EQ(sent_.size(), 3u);
  // A reply naming another engine, or an unknown call id, settles nothing.
  control_->OnUtilityOutput(1, Answer(sent_[0].call.call_id, std::nullopt, "\x92\xc0\xc3"));
  control_->OnUtilityOutput(0, Answer(sent_[0].call.call_id + 999, std::nullopt, "\x92\xc0\xc3"));
  control_->OnUtilityOutput(0, Answer(sent_[0].call.call_id, std::nullopt, "\x92\xc0\xc3"));
  control_->OnEngineDead(1, "its process exited");
  // Engine 2 stays silent: the timeout settles it.
  ASSERT_EQ(answers.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const auto a = answers.get();
  ASSERT_EQ(a.size(), 3u);
  EXPECT_TRUE(a[0].ok);
  EXPECT_EQ(std::get<bool>(a[0].value), true);
  EXPECT_FALSE(a[1].ok);
  EXPECT_EQ(a[1].error, "engine 1 died: its process exited");
  EXPECT_FALSE(a[2].ok);
  EXPECT_EQ(a[2].status, 503u);
  EXPECT_NE(a[2].error.find("--engine-control-timeout"), std::string::npos) << a[2].error;
  // A dead engine gets nothing until it is ready again.
  auto again = RunIsSleeping();
  EXPECT_EQ(sent_.size(), 5u);  // engines 0 and 2
  control_->OnUtilityOutput(0, Answer(sent_[3].call.call_id, "boom", ""));
  control_->OnUtilityOutput(2, Answer(sent_[4].call.call_id, std::nullopt, ""));
  const auto b = again.get();
  EXPECT_EQ(b[0].error, "engine 0: boom");
  EXPECT_EQ(b[0].status, 500u);
  EXPECT_EQ(b[1].error, "engine 1 is dead");
  EXPECT_TRUE(b[2].ok);  // an empty result is None
}

// An engine whose generation is not decided between candidates whose methods differ gets no
// call: 503 naming the candidates and --engine-wire.
TEST_F(EngineControlUnitTest, AnUndecidedEngineGetsNoCall) {
  Make({0, 1}, std::chrono::minutes(5));
  auto bit = [](std::string_view name) {
    return WireCandidates{1} << WireGenerationIndex(*FindWireGeneration(name));
  };
  control_->SetEngineWire(1, bit("g20251105") | bit("g20260112"));
  auto answers = RunIsSleeping();
  ASSERT_EQ(answers.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const auto a = answers.get();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].status, 503u);
  EXPECT_NE(a[0].error.find("engine 1: the engine may be g20260112-0565f1fd, g20251105-65ac8d8d"),
            std::string::npos)
      << a[0].error;
  EXPECT_NE(a[0].error.find("--engine-wire"), std::string::npos);
  EXPECT_TRUE(sent_.empty());
}

TEST_F(EngineControlUnitTest, ShutdownAnswersWhatWaits) {
  Make({0}, std::chrono::minutes(5));
  auto answers = RunIsSleeping();
  control_->Shutdown();
  ASSERT_EQ(answers.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const auto a = answers.get();
  EXPECT_EQ(a[0].status, 503u);
  EXPECT_EQ(a[0].error, "the server is stopping");
}

}  // namespace
}  // namespace vmetrics
