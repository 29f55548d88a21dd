// SPDX-License-Identifier: Apache-2.0
// The C++ client against tools/stand_in_engine.py: a Python engine that performs the
// handshake as vLLM's EngineCoreProc does and encodes its stats with python3-msgpack.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "engine_liveness.h"
#include "test_support.h"
#include "vmetrics/engine_core_client.h"
#include "vmetrics/simulator.h"

namespace vmetrics {
namespace {

using test::FinishChild;
using test::Hex;
using test::kGenerous;
using test::Recorder;
using test::SpawnStandInEngine;
using test::TempDir;

TEST(PythonStandIn, CompletesTheHandshakeAndItsMessagesArriveIntact) {
  if (!test::PythonAvailable()) GTEST_SKIP() << "/usr/bin/python3 not installed";
  EngineCoreClientOptions o;
  o.handshake_address = "tcp://127.0.0.1:0";
  o.hello_timeout = o.ready_timeout = o.registration_timeout = kGenerous;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(o);
  ASSERT_TRUE(client.Bind().ok());
  test::Child child =
      SpawnStandInEngine({"--handshake-address", client.endpoints().handshake, "--steps", "12",
                          "--connector", "multi", "--seed", "4", "--print-frames"});
  Status s = client.WaitForEngines();
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::vector<EngineInfo> infos = client.engines();
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].hello->headless, true);
  EXPECT_EQ(infos[0].hello->local, false);
  const EngineCoreReadyResponse& rr = infos[0].ready_response;
  EXPECT_EQ(rr.max_model_len, 4096);
  EXPECT_EQ(rr.num_gpu_blocks, 2048);
  EXPECT_EQ(rr.kv_connector, "MultiConnector");
  EXPECT_EQ(rr.kv_cache_max_concurrency, 8.0);
  EXPECT_EQ(rr.instance_id, "stand-in-0");
  EXPECT_TRUE(rr.skipped_keys.empty());  // the unknown nested key was ignored, not skipped

  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  ASSERT_TRUE(rec.WaitForMessages(12));
  int exit_code = -1;
  const std::string out = FinishChild(child, &exit_code);
  ASSERT_EQ(exit_code, 0) << out;
  const nlohmann::json totals = nlohmann::json::parse(out);
  EXPECT_EQ(totals["messages"], 12);
  const std::vector<std::string> frames = rec.Frame0s();
  ASSERT_EQ(frames.size(), 12u);
  ASSERT_EQ(totals["frames"].size(), 12u);
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(Hex(frames[i]), totals["frames"][i].get<std::string>()) << "message " << i;
    EXPECT_EQ(internal::PeekEngineIndex(frames[i]), 0);
  }
  // The process exited: its connections closed.
  ASSERT_TRUE(rec.WaitForDeath(0));
}

TEST(PythonStandIn, BootstrappedOlderRegistrationAndEngineCoreDead) {
  if (!test::PythonAvailable()) GTEST_SKIP() << "/usr/bin/python3 not installed";
  TempDir dir;
  EngineCoreClientOptions o;
  o.mode = StartupMode::kBootstrapped;
  o.input_address = dir.Ipc("in");
  o.output_address = dir.Ipc("out");
  o.engine_count = 2;
  o.registration_timeout = kGenerous;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(o);
  ASSERT_TRUE(client.Bind().ok());
  const std::vector<std::string> common = {"--input-address",
                                           client.endpoints().input,
                                           "--output-address",
                                           client.endpoints().output,
                                           "--steps",
                                           "5",
                                           "--data-parallel-size",
                                           "2"};
  std::vector<std::string> a0 = common, a1 = common;
  a0.insert(a0.end(), {"--engine-index", "0", "--connector", "nixl"});
  a1.insert(a1.end(), {"--engine-index", "1", "--empty-registration", "--die"});
  test::Child c0 = SpawnStandInEngine(a0);
  test::Child c1 = SpawnStandInEngine(a1);
  Status s = client.WaitForEngines();
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::vector<EngineInfo> infos = client.engines();
  EXPECT_FALSE(infos[0].ready_response.empty_registration);
  EXPECT_EQ(infos[0].ready_response.kv_connector, "NixlConnector");
  EXPECT_TRUE(infos[1].ready_response.empty_registration);

  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  ASSERT_TRUE(rec.WaitForMessages(10));
  ASSERT_TRUE(rec.WaitForDeath(1));
  int code0 = -1, code1 = -1;
  const nlohmann::json t0 = nlohmann::json::parse(FinishChild(c0, &code0));
  const nlohmann::json t1 = nlohmann::json::parse(FinishChild(c1, &code1));
  EXPECT_EQ(code0, 0);
  EXPECT_EQ(code1, 0);
  EXPECT_EQ(t0["messages"], 5);
  EXPECT_EQ(t1["messages"], 5);
  for (const EngineEvent& e : rec.events()) {
    if (e.engine_index == 1 && e.kind == EngineEventKind::kDead) {
      EXPECT_EQ(e.reason, "sent ENGINE_CORE_DEAD");
    }
  }
  ASSERT_TRUE(rec.WaitForDeath(0));  // engine 0 just exited
}

// [client_index 0, call_id 123, "get_supported_tasks", []]
const std::string kUtilityCall = std::string("\x94\x00\x7b\xb3", 4) + "get_supported_tasks\x90";

void ExpectSupportedTasksReply(const std::string& frame0, int engine_index) {
  const nlohmann::json m = nlohmann::json::from_msgpack(frame0);
  ASSERT_EQ(m.size(), 8u);
  EXPECT_EQ(m[0], engine_index);
  EXPECT_TRUE(m[1].empty());
  EXPECT_EQ(m[4][0], 123);         // call_id
  EXPECT_TRUE(m[4][1].is_null());  // no failure
  EXPECT_EQ(m[4][2][1], nlohmann::json::array({"generate"}));
}

TEST(PythonStandIn, AnswersUtilityCallsLikeAnEngine) {
  if (!test::PythonAvailable()) GTEST_SKIP() << "/usr/bin/python3 not installed";
  TempDir dir;
  Recorder rec;
  EngineCoreClientOptions o;
  o.handshake_address = dir.Ipc("hs");
  o.hello_timeout = o.ready_timeout = o.registration_timeout = kGenerous;
  EngineCoreClient client(o);
  ASSERT_TRUE(client.Bind().ok());
  test::Child child = SpawnStandInEngine(
      {"--handshake-address", client.endpoints().handshake, "--steps", "0", "--hold"});
  ASSERT_TRUE(client.WaitForEngines().ok());
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  std::string_view frames[] = {kUtilityCall};
  ASSERT_TRUE(client.Send(0, EngineCoreRequestType::kUtility, frames).ok());
  ASSERT_TRUE(rec.WaitForMessages(1));
  ExpectSupportedTasksReply(rec.Frame0s()[0], 0);
  kill(child.pid, SIGTERM);
  int code = -1;
  const nlohmann::json totals = nlohmann::json::parse(FinishChild(child, &code));
  EXPECT_EQ(code, 0);
  EXPECT_EQ(totals["utility_replies"], 1);
}

TEST(Simulator, AnswersUtilityCallsLikeAnEngine) {
  TempDir dir;
  Recorder rec;
  EngineCoreClientOptions o;
  o.mode = StartupMode::kBootstrapped;
  o.input_address = dir.Ipc("in");
  o.output_address = dir.Ipc("out");
  o.engine_start_index = 7;
  o.registration_timeout = kGenerous;
  EngineCoreClient client(o);
  ASSERT_TRUE(client.Bind().ok());
  SimulatorOptions so;
  so.input_address = client.endpoints().input;
  so.output_address = client.endpoints().output;
  so.engine_start_index = 7;
  so.steps = 1;
  so.hold_after_steps = true;
  Simulator sim(so);
  ASSERT_TRUE(sim.Start().ok());
  ASSERT_TRUE(client.WaitForEngines().ok());
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  ASSERT_TRUE(rec.WaitForMessages(1));  // the step
  std::string_view frames[] = {kUtilityCall};
  ASSERT_TRUE(client.Send(7, EngineCoreRequestType::kUtility, frames).ok());
  ASSERT_TRUE(rec.WaitForMessages(2));
  ExpectSupportedTasksReply(rec.Frame0s()[1], 7);
  sim.RequestStop();
  ASSERT_TRUE(sim.Wait().ok());
  EXPECT_EQ(sim.Totals().engines[0].utility_replies, 1u);
}

}  // namespace
}  // namespace vmetrics
