// SPDX-License-Identifier: Apache-2.0
// EngineCoreClient over real sockets: both startup modes with the C++ simulator as the engine,
// hand-driven raw engines for the protocol corners (overlapping READY, older registration,
// unknown identities, timeouts), engine death, malformed frames and Send().
#include "vmetrics/engine_core_client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <thread>

#include "engine_liveness.h"
#include "test_support.h"
#include "vmetrics/simulator.h"
#include "wire_encode.h"

namespace vmetrics {
namespace {

using test::kGenerous;
using test::RawEngine;
using test::Recorder;
using test::TempDir;
using namespace std::string_literals;

constexpr std::chrono::milliseconds kShort{200};

EngineCoreClientOptions FrontendOptions(const std::string& handshake, int engines) {
  EngineCoreClientOptions o;
  o.mode = StartupMode::kFrontend;
  o.handshake_address = handshake;
  o.engine_count = engines;
  o.hello_timeout = o.ready_timeout = o.registration_timeout = kGenerous;
  return o;
}

EngineCoreClientOptions BootstrappedOptions(const std::string& input, const std::string& output,
                                            int start, int count) {
  EngineCoreClientOptions o;
  o.mode = StartupMode::kBootstrapped;
  o.input_address = input;
  o.output_address = output;
  o.engine_start_index = start;
  o.engine_count = count;
  o.registration_timeout = kGenerous;
  return o;
}

std::map<int64_t, int> CountByEngine(const std::vector<std::string>& frame0s) {
  std::map<int64_t, int> counts;
  for (const std::string& f : frame0s) {
    std::optional<int64_t> index = internal::PeekEngineIndex(f);
    counts[index.value_or(-1)] += 1;
  }
  return counts;
}

bool HasEvent(const std::vector<EngineEvent>& events, int engine, EngineEventKind kind) {
  for (const EngineEvent& e : events) {
    if (e.engine_index == engine && e.kind == kind) return true;
  }
  return false;
}

std::string ReasonOf(const std::vector<EngineEvent>& events, int engine, EngineEventKind kind) {
  for (const EngineEvent& e : events) {
    if (e.engine_index == engine && e.kind == kind) return e.reason;
  }
  return "(none)";
}

// A minimal valid EngineCoreOutputs: [engine_index, [], nil, timestamp].
std::string TinyOutputs(int engine_index, double timestamp) {
  internal::SimMessage m;
  m.engine_index = engine_index;
  m.timestamp = timestamp;
  return internal::EncodeEngineCoreOutputs(m, SimConnector::kNone, false);
}

// ---- Frontend mode with the simulator -------------------------------------------------------

void RunFrontendWithSimulator(const EngineCoreClientOptions& options, int engines,
                              SimConnector connector) {
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(options);
  ASSERT_TRUE(client.Bind().ok());
  ASSERT_FALSE(client.endpoints().handshake.empty());

  SimulatorOptions so;
  so.handshake_address = client.endpoints().handshake;
  so.engines = engines;
  so.steps = 10;
  so.seed = 11;
  so.connector = connector;
  so.max_model_len = 4096;
  so.hold_after_steps = true;
  Simulator sim(so);
  ASSERT_TRUE(sim.Start().ok());

  Status s = client.WaitForEngines();
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::vector<EngineInfo> infos = client.engines();
  ASSERT_EQ(infos.size(), static_cast<size_t>(engines));
  for (int i = 0; i < engines; ++i) {
    EXPECT_EQ(infos[static_cast<size_t>(i)].index, i);
    ASSERT_TRUE(infos[static_cast<size_t>(i)].hello.has_value());
    EXPECT_EQ(infos[static_cast<size_t>(i)].hello->headless, true);
    ASSERT_TRUE(infos[static_cast<size_t>(i)].ready.has_value());
    EXPECT_EQ(infos[static_cast<size_t>(i)].ready_response.max_model_len, 4096);
    EXPECT_EQ(infos[static_cast<size_t>(i)].ready_response.data_parallel_rank, i);
  }
  const ReadyResponseSummary summary = SummarizeEngines(infos);
  EXPECT_EQ(summary.max_model_len, 4096);
  EXPECT_EQ(summary.num_gpu_blocks, SimulatorOptions().num_gpu_blocks * engines);
  EXPECT_EQ(summary.block_size, 16);
  if (connector != SimConnector::kNone) {
    EXPECT_EQ(summary.kv_connector, SimConnectorClassName(connector));
  }
  EXPECT_TRUE(client.AllEnginesAlive());

  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  ASSERT_TRUE(rec.WaitForMessages(static_cast<size_t>(10 * engines)));
  const std::map<int64_t, int> counts = CountByEngine(rec.Frame0s());
  for (int i = 0; i < engines; ++i) EXPECT_EQ(counts.at(i), 10) << "engine " << i;
  for (int i = 0; i < engines; ++i) {
    EXPECT_TRUE(HasEvent(rec.events(), i, EngineEventKind::kConnected));
    EXPECT_FALSE(HasEvent(rec.events(), i, EngineEventKind::kDead));
  }
  EXPECT_EQ(client.messages_received(), static_cast<uint64_t>(10 * engines));

  // The engines leave: every one is seen to go.
  sim.RequestStop();
  ASSERT_TRUE(sim.Wait().ok());
  for (int i = 0; i < engines; ++i) ASSERT_TRUE(rec.WaitForDeath(i)) << "engine " << i;
  EXPECT_FALSE(client.AllEnginesAlive());
  client.Stop();
  EXPECT_TRUE(rec.WaitForLoopExit());
  EXPECT_TRUE(rec.exit_status().ok());
}

TEST(FrontendMode, OneEngineOverIpc) {
  TempDir dir;
  EngineCoreClientOptions o = FrontendOptions(dir.Ipc("handshake"), 1);
  o.input_address = dir.Ipc("input");
  o.output_address = dir.Ipc("output");
  RunFrontendWithSimulator(o, 1, SimConnector::kNixl);
}

TEST(FrontendMode, FourEnginesOverTcp) {
  RunFrontendWithSimulator(FrontendOptions("tcp://127.0.0.1:0", 4), 4, SimConnector::kMulti);
}

TEST(FrontendMode, InitCarriesTheBoundEndpointsAndAdvertisedHost) {
  zmq::context_t ctx;
  EngineCoreClientOptions o = FrontendOptions("tcp://127.0.0.1:0", 1);
  o.advertised_host = "10.9.8.7";
  EngineCoreClient client(o);
  ASSERT_TRUE(client.Bind().ok());
  auto waiter = std::async(std::launch::async, [&] { return client.WaitForEngines(); });
  RawEngine e(ctx, 0);
  e.ConnectHandshake(client.endpoints().handshake);
  e.SendHandshake(internal::EncodeHandshakeStatus("HELLO", false, true, std::nullopt));
  Result<HandshakeInit> init = DecodeHandshakeInit(e.ReceiveInit());
  ASSERT_TRUE(init.ok()) << init.status().ToString();
  const std::string port = client.endpoints().input.substr(client.endpoints().input.rfind(':'));
  EXPECT_EQ(init->addresses.inputs.at(0), "tcp://10.9.8.7" + port);
  EXPECT_FALSE(init->addresses.coordinator_input.has_value());
  client.RequestStop();
  EXPECT_EQ(waiter.get().code(), StatusCode::kStopped);
}

// ---- Bootstrapped mode ----------------------------------------------------------------------

void RunBootstrapped(const std::string& input, const std::string& output, int start, int count) {
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(BootstrappedOptions(input, output, start, count));
  ASSERT_TRUE(client.Bind().ok());
  SimulatorOptions so;
  so.input_address = client.endpoints().input;
  so.output_address = client.endpoints().output;
  so.engine_start_index = start;
  so.engines = count;
  so.steps = 5;
  so.seed = 3;
  so.connector = SimConnector::kMooncakeStore;
  so.hold_after_steps = true;
  Simulator sim(so);
  ASSERT_TRUE(sim.Start().ok());
  Status s = client.WaitForEngines();
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::vector<EngineInfo> infos = client.engines();
  ASSERT_EQ(infos.size(), static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    EXPECT_EQ(infos[static_cast<size_t>(i)].index, start + i);
    EXPECT_FALSE(infos[static_cast<size_t>(i)].hello.has_value());
    EXPECT_EQ(infos[static_cast<size_t>(i)].ready_response.kv_connector, "MooncakeStoreConnector");
  }
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  ASSERT_TRUE(rec.WaitForMessages(static_cast<size_t>(5 * count)));
  const std::map<int64_t, int> counts = CountByEngine(rec.Frame0s());
  for (int i = 0; i < count; ++i) EXPECT_EQ(counts.at(start + i), 5);
  sim.RequestStop();
  ASSERT_TRUE(sim.Wait().ok());
}

TEST(BootstrappedMode, OneEngineOverIpc) {
  TempDir dir;
  RunBootstrapped(dir.Ipc("in"), dir.Ipc("out"), 0, 1);
}

TEST(BootstrappedMode, FourEnginesFromStartIndexTwoOverTcp) {
  RunBootstrapped("tcp://127.0.0.1:0", "tcp://127.0.0.1:0", 2, 4);
}

TEST(BootstrappedMode, NeedsBothAddresses) {
  EngineCoreClientOptions o;
  o.mode = StartupMode::kBootstrapped;
  o.input_address = "tcp://127.0.0.1:0";
  EngineCoreClient client(o);
  EXPECT_EQ(client.Bind().code(), StatusCode::kInvalidArgument);
}

TEST(BootstrappedMode, RejectsAnEngineRangeBeyondSixteenBits) {
  EngineCoreClient client(BootstrappedOptions("tcp://127.0.0.1:0", "tcp://127.0.0.1:0", 65535, 2));
  EXPECT_EQ(client.Bind().code(), StatusCode::kInvalidArgument);
}

// ---- Protocol corners with raw engines ------------------------------------------------------

TEST(FrontendMode, AcceptsOverlappingReadyAndOlderEmptyRegistration) {
  TempDir dir;
  zmq::context_t ctx;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(FrontendOptions(dir.Ipc("hs"), 2));
  ASSERT_TRUE(client.Bind().ok());
  auto waiter = std::async(std::launch::async, [&] { return client.WaitForEngines(); });

  // Engine 0 completes alone — its READY arrives while engine 1 has not said HELLO — with the
  // pre-2026-04-09 shape: empty registration, blocks on READY.
  RawEngine e0(ctx, 0);
  e0.ConnectHandshake(client.endpoints().handshake);
  e0.SendHandshake(internal::EncodeHandshakeStatus("HELLO", false, true, std::nullopt));
  Result<HandshakeInit> init = DecodeHandshakeInit(e0.ReceiveInit());
  ASSERT_TRUE(init.ok());
  e0.Register(init->addresses.inputs[0], "");
  e0.ConnectOutput(init->addresses.outputs[0]);
  // {"status": "READY", "local": false, "headless": true, "num_gpu_blocks": 1234,
  //  "dp_stats_address": nil}
  std::string old_ready = "\x85\xa6status\xa5READY\xa5local\xc2\xa8headless\xc3"s;
  old_ready +=
      "\xaenum_gpu_blocks\xcd\x04\xd2\xb0"
      "dp_stats_address\xc0"s;
  e0.SendHandshake(old_ready);

  RawEngine e1(ctx, 1);
  e1.ConnectHandshake(client.endpoints().handshake);
  e1.SendHandshake(internal::EncodeHandshakeStatus("HELLO", false, true, std::nullopt));
  ASSERT_FALSE(e1.ReceiveInit().empty());
  EngineCoreReadyResponse rr;
  rr.max_model_len = 1024;
  rr.num_gpu_blocks = 100;
  e1.Register(init->addresses.inputs[0], internal::EncodeReadyResponse(rr));
  e1.ConnectOutput(init->addresses.outputs[0]);
  e1.SendHandshake(internal::EncodeHandshakeStatus("READY", false, true, std::string("h")));

  Status s = waiter.get();
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::vector<EngineInfo> infos = client.engines();
  EXPECT_TRUE(infos[0].ready_response.empty_registration);
  EXPECT_EQ(infos[0].ready->num_gpu_blocks, 1234);
  const ReadyResponseSummary summary = SummarizeEngines(infos);
  EXPECT_EQ(summary.num_gpu_blocks, 1334);
  EXPECT_EQ(summary.max_model_len, 1024);

  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  ASSERT_TRUE(rec.WaitForEvents(2));
  EXPECT_EQ(ReasonOf(rec.events(), 0, EngineEventKind::kConnected),
            "registered (empty registration: older engine)");
}

TEST(FrontendMode, RejectsAnUnknownIdentity) {
  TempDir dir;
  zmq::context_t ctx;
  EngineCoreClient client(FrontendOptions(dir.Ipc("hs"), 1));
  ASSERT_TRUE(client.Bind().ok());
  auto waiter = std::async(std::launch::async, [&] { return client.WaitForEngines(); });
  RawEngine stranger(ctx, 5);
  stranger.ConnectHandshake(client.endpoints().handshake);
  stranger.SendHandshake(internal::EncodeHandshakeStatus("HELLO", false, true, std::nullopt));
  Status s = waiter.get();
  EXPECT_EQ(s.code(), StatusCode::kProtocol);
  EXPECT_EQ(s.stage(), StatusStage::kHello);
  EXPECT_EQ(s.detail(), StatusDetail::kUnknownEngineIdentity);
  EXPECT_NE(s.message().find("unknown engine identity 05 00"), std::string::npos) << s.ToString();
}

TEST(FrontendMode, RejectsADuplicateHello) {
  TempDir dir;
  zmq::context_t ctx;
  EngineCoreClient client(FrontendOptions(dir.Ipc("hs"), 2));
  ASSERT_TRUE(client.Bind().ok());
  auto waiter = std::async(std::launch::async, [&] { return client.WaitForEngines(); });
  RawEngine e(ctx, 1);
  e.ConnectHandshake(client.endpoints().handshake);
  e.SendHandshake(internal::EncodeHandshakeStatus("HELLO", false, true, std::nullopt));
  e.SendHandshake(internal::EncodeHandshakeStatus("HELLO", false, true, std::nullopt));
  Status s = waiter.get();
  EXPECT_EQ(s.code(), StatusCode::kProtocol);
  EXPECT_NE(s.message().find("duplicate HELLO from engine 1"), std::string::npos) << s.ToString();
}

TEST(FrontendMode, RejectsReadyBeforeHello) {
  TempDir dir;
  zmq::context_t ctx;
  EngineCoreClient client(FrontendOptions(dir.Ipc("hs"), 1));
  ASSERT_TRUE(client.Bind().ok());
  auto waiter = std::async(std::launch::async, [&] { return client.WaitForEngines(); });
  RawEngine e(ctx, 0);
  e.ConnectHandshake(client.endpoints().handshake);
  e.SendHandshake(internal::EncodeHandshakeStatus("READY", false, true, std::nullopt));
  Status s = waiter.get();
  EXPECT_EQ(s.code(), StatusCode::kProtocol);
  EXPECT_NE(s.message().find("READY from engine 0 before its HELLO"), std::string::npos);
}

TEST(BootstrappedMode, RejectsADuplicateRegistration) {
  TempDir dir;
  zmq::context_t ctx;
  EngineCoreClient client(BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 0, 2));
  ASSERT_TRUE(client.Bind().ok());
  auto waiter = std::async(std::launch::async, [&] { return client.WaitForEngines(); });
  RawEngine e(ctx, 0);
  e.Register(client.endpoints().input, "");
  e.input.send(zmq::str_buffer(""), zmq::send_flags::none);
  Status s = waiter.get();
  EXPECT_EQ(s.code(), StatusCode::kProtocol);
  EXPECT_EQ(s.stage(), StatusStage::kInputRegistration);
  EXPECT_NE(s.message().find("duplicate registration from engine 0"), std::string::npos);
}

// ---- Timeouts name their stage ------------------------------------------------------------------

TEST(StartupTimeout, NoHelloNamesTheHelloStage) {
  TempDir dir;
  EngineCoreClientOptions o = FrontendOptions(dir.Ipc("hs"), 2);
  o.hello_timeout = kShort;
  EngineCoreClient client(o);
  Status s = client.Connect();
  EXPECT_EQ(s.code(), StatusCode::kTimeout);
  EXPECT_EQ(s.stage(), StatusStage::kHello);
  EXPECT_EQ(s.ToString(),
            "timeout during HELLO: timed out after 200 ms waiting for HELLO from engine(s) 0, 1 "
            "(0 of 2 said HELLO)");
}

TEST(StartupTimeout, NoReadyNamesTheReadyStage) {
  TempDir dir;
  zmq::context_t ctx;
  EngineCoreClientOptions o = FrontendOptions(dir.Ipc("hs"), 1);
  o.ready_timeout = kShort;
  EngineCoreClient client(o);
  ASSERT_TRUE(client.Bind().ok());
  RawEngine e(ctx, 0);
  e.ConnectHandshake(client.endpoints().handshake);
  e.SendHandshake(internal::EncodeHandshakeStatus("HELLO", false, true, std::nullopt));
  Status s = client.WaitForEngines();  // INIT goes out, READY never comes
  EXPECT_EQ(s.code(), StatusCode::kTimeout);
  EXPECT_EQ(s.stage(), StatusStage::kReady);
  EXPECT_NE(s.message().find("waiting for READY from engine(s) 0 (0 of 1 ready)"),
            std::string::npos)
      << s.ToString();
}

TEST(StartupTimeout, NoRegistrationNamesTheInputRegistrationStage) {
  TempDir dir;
  zmq::context_t ctx;
  EngineCoreClientOptions o = FrontendOptions(dir.Ipc("hs"), 1);
  o.registration_timeout = kShort;
  EngineCoreClient client(o);
  ASSERT_TRUE(client.Bind().ok());
  auto waiter = std::async(std::launch::async, [&] { return client.WaitForEngines(); });
  RawEngine e(ctx, 0);
  e.ConnectHandshake(client.endpoints().handshake);
  e.SendHandshake(internal::EncodeHandshakeStatus("HELLO", false, true, std::nullopt));
  ASSERT_FALSE(e.ReceiveInit().empty());
  e.SendHandshake(internal::EncodeHandshakeStatus("READY", false, true, std::nullopt));
  Status s = waiter.get();
  EXPECT_EQ(s.code(), StatusCode::kTimeout);
  EXPECT_EQ(s.stage(), StatusStage::kInputRegistration);
  EXPECT_NE(s.message().find("input registration (ready response) of engine(s) 0"),
            std::string::npos)
      << s.ToString();
}

TEST(StartupTimeout, BootstrappedRegistrationNamesTheMissingEngines) {
  TempDir dir;
  zmq::context_t ctx;
  EngineCoreClientOptions o = BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 4, 3);
  o.registration_timeout = kShort;
  EngineCoreClient client(o);
  ASSERT_TRUE(client.Bind().ok());
  RawEngine e(ctx, 5);
  e.Register(client.endpoints().input, "");
  Status s = client.WaitForEngines();
  EXPECT_EQ(s.code(), StatusCode::kTimeout);
  EXPECT_NE(s.message().find("engine(s) 4, 6 (1 of 3 registered)"), std::string::npos)
      << s.ToString();
}

// ---- Stopping ----------------------------------------------------------------------------------

TEST(Stop, InterruptsWaitForEngines) {
  TempDir dir;
  EngineCoreClient client(FrontendOptions(dir.Ipc("hs"), 1));
  ASSERT_TRUE(client.Bind().ok());
  auto waiter = std::async(std::launch::async, [&] { return client.WaitForEngines(); });
  client.RequestStop();
  const Status s = waiter.get();
  EXPECT_EQ(s.code(), StatusCode::kStopped);
}

TEST(Stop, EndsTheLoopCleanlyFromAnotherThread) {
  TempDir dir;
  zmq::context_t ctx;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 0, 1));
  ASSERT_TRUE(client.Bind().ok());
  RawEngine e(ctx, 0);
  e.Register(client.endpoints().input, "");
  ASSERT_TRUE(client.WaitForEngines().ok());
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  EXPECT_EQ(client.Start(rec.Callbacks()).code(), StatusCode::kInvalidArgument);
  std::thread stopper([&] { client.Stop(); });
  stopper.join();
  ASSERT_TRUE(rec.WaitForLoopExit());
  EXPECT_TRUE(rec.exit_status().ok());
}

// ---- Output loop
// ----------------------------------------------------------------------------------

TEST(OutputLoop, MalformedFrameIsDeliveredAndTheNextMessageStillArrives) {
  TempDir dir;
  zmq::context_t ctx;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 0, 1));
  ASSERT_TRUE(client.Bind().ok());
  RawEngine e(ctx, 0);
  e.Register(client.endpoints().input, "");
  e.ConnectOutput(client.endpoints().output);
  ASSERT_TRUE(client.WaitForEngines().ok());

  // A decoder that throws on what it cannot read must not stop the loop either.
  rec.on_message_hook = [](const std::vector<std::string>& frames) {
    if (frames[0].starts_with("\xc1")) throw std::runtime_error("cannot decode");
  };
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  const std::string good1 = TinyOutputs(0, 1.0);
  const std::string garbage("\xc1\xff not msgpack at all", 21);
  const std::string good2 = TinyOutputs(0, 2.0);
  e.SendOutput({good1});
  e.SendOutput({garbage});
  e.SendOutput({good2, std::string("aux buffer bytes")});
  e.SendOutput({std::string()});  // an empty frame is a message too
  ASSERT_TRUE(rec.WaitForMessages(4));
  const auto messages = rec.messages();
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0], std::vector<std::string>{good1});
  EXPECT_EQ(messages[1], std::vector<std::string>{garbage});
  EXPECT_EQ(messages[2], (std::vector<std::string>{good2, "aux buffer bytes"}));
  EXPECT_EQ(messages[3], std::vector<std::string>{std::string()});
  EXPECT_EQ(client.callback_exceptions(), 1u);
  EXPECT_TRUE(client.AllEnginesAlive());
}

// ---- Output socket bounds
// ---------------------------------------------------------------------------------

// Polls `done` until it holds or `timeout` passes (for states with no event to wait on).
bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = kGenerous) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(OutputSocket, FramesBeyondTheSizeLimitAreNotKept) {
  TempDir dir;
  zmq::context_t ctx;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClientOptions options = BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 0, 1);
  options.max_output_message_bytes = 64 << 10;
  EngineCoreClient client(options);
  ASSERT_TRUE(client.Bind().ok());
  RawEngine e(ctx, 0);
  e.Register(client.endpoints().input, "");
  e.ConnectOutput(client.endpoints().output);
  ASSERT_TRUE(client.WaitForEngines().ok());
  std::atomic<bool> delivered{false};
  rec.on_message_hook = [&](const std::vector<std::string>&) { delivered = true; };
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  // ZeroMQ closes the connection at the frame's header, before its bytes are kept; the
  // engine's socket connects again and what it sends then arrives.
  e.SendOutput({std::string(size_t{256} << 10, 'x')});
  const std::string small = TinyOutputs(0, 1.0);
  ASSERT_TRUE(PollUntil([&] {
    e.SendOutput({small});
    return delivered.load();
  }));
  for (const std::vector<std::string>& m : rec.messages()) {
    EXPECT_EQ(m, std::vector<std::string>{small}) << "the oversized frame was delivered";
  }
  EXPECT_TRUE(client.AllEnginesAlive());
}

TEST(OutputSocket, BacklogIsHowLongOutputsHaveWaitedUnread) {
  TempDir dir;
  zmq::context_t ctx;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 0, 1));
  ASSERT_TRUE(client.Bind().ok());
  RawEngine e(ctx, 0);
  e.Register(client.endpoints().input, "");
  e.ConnectOutput(client.endpoints().output);
  ASSERT_TRUE(client.WaitForEngines().ok());
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  rec.on_message_hook = [released](const std::vector<std::string>&) { released.wait(); };
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  EXPECT_EQ(client.output_backlog(), std::chrono::steady_clock::duration::zero());
  // The first message holds the output thread (a slow decode); the second waits behind it.
  e.SendOutput({TinyOutputs(0, 1.0)});
  e.SendOutput({TinyOutputs(0, 2.0)});
  ASSERT_TRUE(PollUntil([&] { return client.output_backlog() >= std::chrono::milliseconds(50); }))
      << "the backlog grows while the thread is held";
  release.set_value();
  ASSERT_TRUE(rec.WaitForMessages(2));
  EXPECT_TRUE(PollUntil([&] {
    return client.output_backlog() == std::chrono::steady_clock::duration::zero();
  })) << "read to the end: no backlog";
}

// A socket that cannot be bound is named by the failure's detail, as well as in its words.
TEST(Bind, AnAddressInUseNamesTheSocketThatFailed) {
  // tcp://, not ipc://: binding an ipc:// path that is bound already takes it over.
  EngineCoreClient first(FrontendOptions("tcp://127.0.0.1:0", 1));
  ASSERT_TRUE(first.Bind().ok());
  struct Case {
    std::string input, output, handshake;
    StatusDetail detail;
  };
  const Case cases[] = {
      {first.endpoints().input, "tcp://127.0.0.1:0", "tcp://127.0.0.1:0",
       StatusDetail::kInputSocket},
      {"tcp://127.0.0.1:0", first.endpoints().output, "tcp://127.0.0.1:0",
       StatusDetail::kOutputSocket},
      {"tcp://127.0.0.1:0", "tcp://127.0.0.1:0", first.endpoints().handshake,
       StatusDetail::kHandshakeSocket},
  };
  for (const Case& c : cases) {
    EngineCoreClientOptions options = FrontendOptions(c.handshake, 1);
    options.input_address = c.input;
    options.output_address = c.output;
    EngineCoreClient second(options);
    const Status s = second.Bind();
    EXPECT_EQ(s.code(), StatusCode::kSocket) << s.ToString();
    EXPECT_EQ(s.stage(), StatusStage::kBind) << s.ToString();
    EXPECT_EQ(s.detail(), c.detail) << s.ToString();
  }
}

TEST(OutputSocket, AMessageSizeLimitBelowOneIsRefused) {
  TempDir dir;
  EngineCoreClientOptions options = BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 0, 1);
  options.max_output_message_bytes = 0;
  EngineCoreClient client(options);
  const Status s = client.Bind();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.ToString().find("max_output_message_bytes"), std::string::npos) << s.ToString();
}

// ---- Engine death
// ---------------------------------------------------------------------------------

TEST(EngineDeath, EngineCoreDeadFromOneOfTwoEnginesNamesThatEngine) {
  TempDir dir;
  EngineCoreClientOptions o = FrontendOptions(dir.Ipc("hs"), 2);
  o.input_address = dir.Ipc("in");
  o.output_address = dir.Ipc("out");
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(o);
  ASSERT_TRUE(client.Bind().ok());
  SimulatorOptions so;
  so.handshake_address = client.endpoints().handshake;
  so.engines = 2;
  so.steps = 8;
  so.seed = 5;
  so.die_after = 4;
  so.fault_engine = 1;
  so.hold_after_steps = true;
  Simulator sim(so);
  ASSERT_TRUE(sim.Start().ok());
  ASSERT_TRUE(client.WaitForEngines().ok());
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  ASSERT_TRUE(rec.WaitForDeath(1));
  ASSERT_TRUE(rec.WaitForMessages(12));  // 8 from engine 0, 4 from engine 1
  EXPECT_EQ(ReasonOf(rec.events(), 1, EngineEventKind::kDead), "sent ENGINE_CORE_DEAD");
  EXPECT_FALSE(HasEvent(rec.events(), 0, EngineEventKind::kDead));
  const std::vector<EngineInfo> infos = client.engines();
  EXPECT_TRUE(infos[0].alive);
  EXPECT_FALSE(infos[1].alive);
  EXPECT_EQ(infos[1].death_reason, "sent ENGINE_CORE_DEAD");
  // The dead engine's messages were all delivered, and no ENGINE_CORE_DEAD frame was.
  const std::map<int64_t, int> counts = CountByEngine(rec.Frame0s());
  EXPECT_EQ(counts.at(1), 4);
  EXPECT_EQ(counts.count(-1), 0u);
  // Requests to it are refused.
  std::string_view body[] = {"\x90"};
  EXPECT_EQ(client.Send(1, EngineCoreRequestType::kAbort, body).code(), StatusCode::kUnavailable);
  EXPECT_TRUE(sim.Totals().engines[1].sent_engine_core_dead);
}

TEST(EngineDeath, SingleEngineDeadWithoutAnyOutput) {
  TempDir dir;
  zmq::context_t ctx;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 3, 1));
  ASSERT_TRUE(client.Bind().ok());
  RawEngine e(ctx, 3);
  e.Register(client.endpoints().input, "");
  e.ConnectOutput(client.endpoints().output);
  ASSERT_TRUE(client.WaitForEngines().ok());
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  e.SendOutput({"ENGINE_CORE_DEAD"});
  ASSERT_TRUE(rec.WaitForDeath(3));
  EXPECT_EQ(ReasonOf(rec.events(), 3, EngineEventKind::kDead), "sent ENGINE_CORE_DEAD");
  EXPECT_TRUE(rec.messages().empty());
}

TEST(EngineDeath, SilentlyClosedEngineIsReportedDead) {
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(FrontendOptions("tcp://127.0.0.1:0", 2));
  ASSERT_TRUE(client.Bind().ok());
  SimulatorOptions so;
  so.handshake_address = client.endpoints().handshake;
  so.engines = 2;
  so.steps = 6;
  so.seed = 9;
  so.vanish_after = 3;
  so.fault_engine = 0;
  so.hold_after_steps = true;
  Simulator sim(so);
  ASSERT_TRUE(sim.Start().ok());
  ASSERT_TRUE(client.WaitForEngines().ok());
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  ASSERT_TRUE(rec.WaitForDeath(0));
  EXPECT_EQ(ReasonOf(rec.events(), 0, EngineEventKind::kDead), "input connection closed");
  ASSERT_TRUE(rec.WaitForMessages(9));  // 3 from engine 0, 6 from engine 1
  EXPECT_FALSE(HasEvent(rec.events(), 1, EngineEventKind::kDead));
  EXPECT_TRUE(sim.Totals().engines[0].vanished);
}

TEST(EngineDeath, RawEngineVanishingAfterRegistrationBeforeTheLoop) {
  TempDir dir;
  zmq::context_t ctx;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 0, 2));
  ASSERT_TRUE(client.Bind().ok());
  RawEngine e0(ctx, 0), e1(ctx, 1);
  e0.Register(client.endpoints().input, "");
  e1.Register(client.endpoints().input, "");
  ASSERT_TRUE(client.WaitForEngines().ok());
  e1.Vanish();  // before Start: the death is reported when the loop starts
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  ASSERT_TRUE(rec.WaitForDeath(1));
  const std::vector<EngineEvent> events = rec.events();
  // connected(0), connected(1) come first, in index order.
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0].engine_index, 0);
  EXPECT_EQ(events[1].engine_index, 1);
  EXPECT_EQ(events[1].kind, EngineEventKind::kConnected);
  EXPECT_FALSE(HasEvent(events, 0, EngineEventKind::kDead));
}

// ---- Engines that come back, and what else reaches the input socket -------------------------

TEST(EngineRestart, BootstrappedEngineThatRegistersAgainIsAliveAgain) {
  TempDir dir;
  zmq::context_t ctx;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 0, 2));
  ASSERT_TRUE(client.Bind().ok());
  RawEngine e0(ctx, 0), e1(ctx, 1);
  e0.Register(client.endpoints().input, "");
  e1.Register(client.endpoints().input, "");
  ASSERT_TRUE(client.WaitForEngines().ok());
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  e1.Vanish();
  ASSERT_TRUE(rec.WaitForDeath(1));
  EXPECT_FALSE(client.AllEnginesAlive());

  // The restarted engine 1 registers again: alive, and its outputs arrive as before.
  RawEngine again(ctx, 1);
  again.Register(client.endpoints().input, "");
  again.ConnectOutput(client.endpoints().output);
  ASSERT_TRUE(rec.WaitForEvents(4));  // connected 0, connected 1, dead 1, connected 1
  const std::vector<EngineEvent> events = rec.events();
  EXPECT_EQ(events[3].engine_index, 1);
  EXPECT_EQ(events[3].kind, EngineEventKind::kConnected);
  EXPECT_EQ(events[3].reason, "registered again");
  EXPECT_TRUE(events[3].rejoined);
  EXPECT_FALSE(events[1].rejoined) << "its first life";
  EXPECT_TRUE(client.AllEnginesAlive());
  EXPECT_TRUE(client.engines()[1].alive);
  again.SendOutput({TinyOutputs(1, 1.0)});
  ASSERT_TRUE(rec.WaitForMessages(1));

  // And it can die again.
  again.Vanish();
  ASSERT_TRUE(rec.WaitForEvents(5));
  EXPECT_EQ(rec.events()[4].kind, EngineEventKind::kDead);
  EXPECT_EQ(rec.events()[4].engine_index, 1);
}

TEST(EngineRestart, FrontendEngineThatSaysHelloAgainIsDeadThenAliveAgain) {
  TempDir dir;
  zmq::context_t ctx;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(FrontendOptions(dir.Ipc("hs"), 1));
  ASSERT_TRUE(client.Bind().ok());
  auto join = [&](RawEngine& e) {
    e.ConnectHandshake(client.endpoints().handshake);
    e.SendHandshake(internal::EncodeHandshakeStatus("HELLO", false, true, std::nullopt));
    Result<HandshakeInit> init = DecodeHandshakeInit(e.ReceiveInit());
    ASSERT_TRUE(init.ok());
    EngineCoreReadyResponse rr;
    rr.max_model_len = 1024;
    e.Register(init->addresses.inputs[0], internal::EncodeReadyResponse(rr));
    e.ConnectOutput(init->addresses.outputs[0]);
    e.SendHandshake(internal::EncodeHandshakeStatus("READY", false, true, std::nullopt));
  };
  auto waiter = std::async(std::launch::async, [&] { return client.WaitForEngines(); });
  RawEngine first(ctx, 0);
  join(first);
  ASSERT_TRUE(waiter.get().ok());
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  ASSERT_TRUE(rec.WaitForEvents(1));

  // The process of engine 0 is replaced: the old one vanishes, the new one joins as at
  // startup (HELLO, INIT, registration, READY).
  first.Vanish();
  RawEngine second(ctx, 0);
  join(second);
  ASSERT_TRUE(rec.WaitForEvents(3));
  const std::vector<EngineEvent> events = rec.events();
  EXPECT_EQ(events[1].kind, EngineEventKind::kDead);
  EXPECT_EQ(events[2].kind, EngineEventKind::kConnected);
  EXPECT_EQ(events[2].reason, "registered again");
  EXPECT_TRUE(events[2].rejoined);
  EXPECT_FALSE(events[0].rejoined) << "its first life";
  EXPECT_TRUE(client.AllEnginesAlive());
}

// A running frontend drops what a known engine sends on the handshake socket that is neither
// [identity, message] nor decodable, each named by its kind (the failure's detail).
TEST(HandshakeSocket, WhatArrivesAfterStartupIsDroppedByKind) {
  TempDir dir;
  zmq::context_t ctx;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(FrontendOptions(dir.Ipc("hs"), 1));
  ASSERT_TRUE(client.Bind().ok());
  auto waiter = std::async(std::launch::async, [&] { return client.WaitForEngines(); });
  RawEngine e0(ctx, 0);
  e0.ConnectHandshake(client.endpoints().handshake);
  e0.SendHandshake(internal::EncodeHandshakeStatus("HELLO", false, true, std::nullopt));
  Result<HandshakeInit> init = DecodeHandshakeInit(e0.ReceiveInit());
  ASSERT_TRUE(init.ok());
  e0.Register(init->addresses.inputs[0], "");
  e0.SendHandshake(internal::EncodeHandshakeStatus("READY", false, true, std::nullopt));
  ASSERT_TRUE(waiter.get().ok());
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());

  e0.handshake.send(zmq::str_buffer("a"), zmq::send_flags::sndmore);
  e0.handshake.send(zmq::str_buffer("b"), zmq::send_flags::none);
  e0.SendHandshake("\xc1");  // never used in msgpack
  RawEngine stranger(ctx, 6);
  stranger.ConnectHandshake(client.endpoints().handshake);
  stranger.SendHandshake(internal::EncodeHandshakeStatus("HELLO", false, true, std::nullopt));
  ASSERT_TRUE(rec.WaitForDropped(3));
  const std::vector<std::string> dropped = rec.dropped();
  EXPECT_EQ(std::count(dropped.begin(), dropped.end(), "handshake: not [identity, message]"), 1);
  EXPECT_EQ(std::count(dropped.begin(), dropped.end(), "handshake: undecodable"), 1);
  EXPECT_EQ(std::count(dropped.begin(), dropped.end(), "handshake: unknown engine identity"), 1);
}

TEST(InputSocket, WhatArrivesAfterStartupIsDroppedAndCounted) {
  TempDir dir;
  zmq::context_t ctx;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 0, 1));
  ASSERT_TRUE(client.Bind().ok());
  RawEngine e0(ctx, 0);
  e0.Register(client.endpoints().input, "");
  ASSERT_TRUE(client.WaitForEngines().ok());
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());

  // A stranger's messages, and a second registration from the live engine.
  RawEngine stranger(ctx, 7);
  stranger.Register(client.endpoints().input, "x");
  for (int i = 0; i < 99; ++i) stranger.input.send(zmq::str_buffer("junk"), zmq::send_flags::none);
  e0.input.send(zmq::str_buffer(""), zmq::send_flags::none);
  ASSERT_TRUE(rec.WaitForDropped(101));
  EXPECT_EQ(client.input_messages_dropped(), 101u);
  const std::vector<std::string> dropped = rec.dropped();
  EXPECT_EQ(std::count(dropped.begin(), dropped.end(), "input: unknown engine identity"), 100);
  // The live engine is untouched (in bootstrapped mode a registration over the same
  // connection is no restart) and still receives what is sent to it.
  EXPECT_TRUE(client.AllEnginesAlive());
  std::string_view body[] = {"\x91\xa2r1"};
  ASSERT_TRUE(client.Send(0, EngineCoreRequestType::kAbort, body).ok());
  EXPECT_EQ(e0.ReceiveInput().size(), 2u);
}

TEST(InputSocket, MessagesBeyondTheSizeLimitAreNotKept) {
  TempDir dir;
  zmq::context_t ctx;
  Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClient client(BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 0, 1));
  ASSERT_TRUE(client.Bind().ok());
  RawEngine e0(ctx, 0);
  e0.Register(client.endpoints().input, "");
  ASSERT_TRUE(client.WaitForEngines().ok());
  ASSERT_TRUE(client.Start(rec.Callbacks()).ok());
  // 128 KiB from a stranger (twice kMaxInputMessageBytes): ZeroMQ drops the connection
  // (ZMQ_MAXMSGSIZE), nothing is queued; the stranger's next connection's small message is
  // then dropped and counted as usual.
  RawEngine big(ctx, 9);
  big.Register(client.endpoints().input, std::string(size_t{2 * kMaxInputMessageBytes}, 'x'));
  RawEngine small(ctx, 8);
  small.Register(client.endpoints().input, "y");
  ASSERT_TRUE(rec.WaitForDropped(1));
  EXPECT_EQ(rec.dropped()[0], "input: unknown engine identity");
  EXPECT_TRUE(client.AllEnginesAlive());
}

TEST(WaitForEngines, ReportsEachEngineAsItBecomesReady) {
  TempDir dir;
  zmq::context_t ctx;
  EngineCoreClient client(BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 0, 2));
  ASSERT_TRUE(client.Bind().ok());
  std::promise<EngineEvent> first;
  std::vector<EngineEvent> progress;  // on the waiter's thread until it returns
  auto waiter = std::async(std::launch::async, [&] {
    return client.WaitForEngines([&](const EngineEvent& e) {
      if (progress.empty()) first.set_value(e);
      progress.push_back(e);
    });
  });
  RawEngine e1(ctx, 1);
  e1.Register(client.endpoints().input, "");
  // Engine 1 is reported ready while engine 0 has not registered yet.
  const EngineEvent got = first.get_future().get();
  EXPECT_EQ(got.engine_index, 1);
  EXPECT_EQ(got.kind, EngineEventKind::kConnected);
  RawEngine e0(ctx, 0);
  e0.Register(client.endpoints().input, "");
  ASSERT_TRUE(waiter.get().ok());
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress[1].engine_index, 0);
}

// ---- Send
// ------------------------------------------------------------------------------------------

TEST(Send, DeliversTypeAndFramesToTheEnginesDealer) {
  TempDir dir;
  zmq::context_t ctx;
  EngineCoreClient client(BootstrappedOptions(dir.Ipc("in"), dir.Ipc("out"), 0, 2));
  ASSERT_TRUE(client.Bind().ok());
  std::string_view body[] = {"\x91\xa2r1", "aux"};
  EXPECT_EQ(client.Send(0, EngineCoreRequestType::kAbort, body).code(),
            StatusCode::kInvalidArgument);  // not started
  RawEngine e0(ctx, 0), e1(ctx, 1);
  e0.Register(client.endpoints().input, "");
  e1.Register(client.endpoints().input, "");
  ASSERT_TRUE(client.WaitForEngines().ok());

  ASSERT_TRUE(client.Send(1, EngineCoreRequestType::kAbort, body).ok());
  const std::vector<std::string> got = e1.ReceiveInput();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], std::string("\x01", 1));
  EXPECT_EQ(got[1], "\x91\xa2r1");
  EXPECT_EQ(got[2], "aux");
  EXPECT_EQ(client.Send(2, EngineCoreRequestType::kAbort, body).code(),
            StatusCode::kInvalidArgument);

  // Sends from several threads at once each arrive whole.
  std::vector<std::thread> senders;
  for (int t = 0; t < 4; ++t) {
    senders.emplace_back([&client, t] {
      for (int i = 0; i < 25; ++i) {
        const std::string payload = std::to_string(t) + ":" + std::to_string(i);
        std::string_view frames[] = {payload};
        EXPECT_TRUE(client.Send(0, EngineCoreRequestType::kUtility, frames).ok());
      }
    });
  }
  for (std::thread& t : senders) t.join();
  for (int i = 0; i < 100; ++i) {
    const std::vector<std::string> m = e0.ReceiveInput();
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0], std::string("\x03", 1));
  }
}

// Headless engines tell the frontend about LoRA in their ready responses: max_loras counts only
// for an engine that supports LoRA.
TEST(SummarizeEngines, MaxLorasIsTheLargestOfTheEnginesThatSupportLora) {
  std::vector<EngineInfo> infos(3);
  infos[0].ready_response.max_loras = 8;  // supports_lora false: ignored
  EXPECT_EQ(SummarizeEngines(infos).max_loras, 0);
  infos[1].ready_response.supports_lora = true;
  infos[1].ready_response.max_loras = 2;
  infos[2].ready_response.supports_lora = true;
  infos[2].ready_response.max_loras = 4;
  EXPECT_EQ(SummarizeEngines(infos).max_loras, 4);
}

}  // namespace
}  // namespace vmetrics
