// SPDX-License-Identifier: Apache-2.0
// The simulator: its bytes are msgspec's (checked against the committed fixture and against
// python3-msgpack re-encoding), a seed makes a capture reproducible, and the totals it reports
// are exactly what its messages carry.
#include "vmetrics/simulator.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine_model.h"
#include "kv_events_config.h"
#include "test_support.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/internal/json_from_msgpack.h"
#include "vmetrics/internal/msgpack_reader.h"
#include "wire_encode.h"

namespace vmetrics {
namespace {

using test::TempDir;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Splits a capture (concatenated msgpack values) into its messages.
std::vector<std::string> SplitCapture(const std::string& data) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t len = 0;
    const Status s = protocol::ValidateOne(std::string_view(data).substr(pos), &len);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok()) break;
    out.push_back(data.substr(pos, len));
    pos += len;
  }
  return out;
}

std::string Capture(const TempDir& dir, const std::string& name, SimulatorOptions o) {
  o.capture_path = dir.path() + "/" + name;
  Simulator sim(o);
  Status s = sim.Start();
  EXPECT_TRUE(s.ok()) << s.ToString();
  s = sim.Wait();
  EXPECT_TRUE(s.ok()) << s.ToString();
  return ReadFile(o.capture_path);
}

SimulatorOptions Busy(SimConnector connector, uint64_t seed) {
  SimulatorOptions o;
  o.engines = 2;
  o.steps = 300;
  o.seed = seed;
  o.connector = connector;
  o.num_speculative_tokens = 3;
  return o;
}

TEST(SimulatorEncoding, ReferenceExampleIsByteForByteTheFixture) {
  // vLLM's worked example (docs/wire_format.md), generated with the msgspec mirror types by
  // tools/gen_fixtures.py.
  const std::string fixture =
      ReadFile(std::string(VMETRICS_SOURCE_DIR) + "/tests/fixtures/reference_example.msgpack");
  if (fixture.empty()) GTEST_SKIP() << "fixture not generated yet";
  internal::SimMessage m;
  m.engine_index = 0;
  internal::SimOutput out;
  out.request_id = "r1";
  out.new_token_ids = {42};
  out.events = {{1, 1.5}, {2, 1.75}};
  internal::SimPrefillStats prefill;
  prefill.num_prompt_tokens = 7;
  prefill.num_computed_tokens = 7;
  out.prefill_stats = prefill;
  m.outputs.push_back(out);
  m.scheduler_stats.num_running_reqs = 1;
  m.scheduler_stats.kv_cache_usage = 0.25;
  m.timestamp = 2.0;
  const std::string bytes = internal::EncodeEngineCoreOutputs(m, SimConnector::kNone, false);
  EXPECT_EQ(bytes.size(), 644u);
  EXPECT_EQ(test::Hex(bytes), test::Hex(fixture));
}

TEST(SimulatorEncoding, EveryMessageHasTheMsgspecShape) {
  TempDir dir;
  const std::vector<std::string> messages =
      SplitCapture(Capture(dir, "c.msgpack", Busy(SimConnector::kMulti, 1)));
  ASSERT_EQ(messages.size(), 600u);
  const std::vector<std::string_view> keys = {"num_running_reqs",
                                              "num_waiting_reqs",
                                              "num_skipped_waiting_reqs",
                                              "step_counter",
                                              "current_wave",
                                              "kv_cache_usage",
                                              "iteration_details",
                                              "prefix_cache_stats",
                                              "connector_prefix_cache_stats",
                                              "kv_cache_eviction_events",
                                              "spec_decoding_stats",
                                              "kv_connector_stats",
                                              "waiting_lora_adapters",
                                              "running_lora_adapters",
                                              "cudagraph_stats",
                                              "perf_stats"};
  for (const std::string& msg : messages) {
    protocol::MsgpackReader r(msg);
    uint32_t n = 0;
    ASSERT_TRUE(r.ReadArrayHeader(&n).ok());
    ASSERT_EQ(n, 8u);  // array_like: every field, always
    ASSERT_TRUE(r.Skip().ok());
    uint32_t outputs = 0;
    ASSERT_TRUE(r.ReadArrayHeader(&outputs).ok());
    for (uint32_t i = 0; i < outputs; ++i) {
      uint32_t fields = 0;
      ASSERT_TRUE(r.ReadArrayHeader(&fields).ok());
      ASSERT_EQ(fields, 16u);
      for (uint32_t f = 0; f < fields; ++f) ASSERT_TRUE(r.Skip().ok());
    }
    uint32_t stats = 0;
    ASSERT_TRUE(r.ReadMapHeader(&stats).ok());
    ASSERT_EQ(stats, 16u);  // a dataclass: every field, definition order
    for (std::string_view want : keys) {
      std::string_view key;
      ASSERT_TRUE(r.ReadStr(&key).ok());
      ASSERT_EQ(key, want);
      ASSERT_TRUE(r.Skip().ok());
    }
    protocol::MsgpackType t;
    ASSERT_TRUE(r.PeekType(&t).ok());
    EXPECT_EQ(t, protocol::MsgpackType::kFloat);  // timestamp: always float64
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(r.Skip().ok());
    EXPECT_TRUE(r.at_end());
  }
}

TEST(SimulatorEncoding, PythonMsgpackReencodesEveryMessageIdentically) {
  if (!test::PythonAvailable()) GTEST_SKIP() << "/usr/bin/python3 not installed";
  TempDir dir;
  SimulatorOptions o = Busy(SimConnector::kMulti, 2);
  o.legacy_multi_shape = true;
  Capture(dir, "c.msgpack", o);
  // msgspec and python3-msgpack agree on every value kind the engine sends (smallest ints,
  // float64, str, maps in insertion order), so a byte-identical re-encoding means msgspec
  // would have produced these bytes from the same Python values.
  const std::string script =
      "import sys, msgpack\n"
      "data = open(sys.argv[1], 'rb').read()\n"
      "u = msgpack.Unpacker(raw=False, strict_map_key=False)\n"
      "u.feed(data)\n"
      "out = b''.join(msgpack.packb(m, use_bin_type=True) for m in u)\n"
      "print('same' if out == data else 'different', len(data))\n";
  test::Child child = test::SpawnPython({"-c", script, dir.path() + "/c.msgpack"});
  int code = -1;
  const std::string out = test::FinishChild(child, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out.substr(0, 5), "same ") << out;
}

TEST(SimulatorDeterminism, ASeedGivesTheSameCapture) {
  TempDir dir;
  const std::string a = Capture(dir, "a", Busy(SimConnector::kNixl, 42));
  const std::string b = Capture(dir, "b", Busy(SimConnector::kNixl, 42));
  const std::string c = Capture(dir, "c", Busy(SimConnector::kNixl, 43));
  EXPECT_GT(a.size(), 10000u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// Adds up what the messages of a capture carry, per engine, the way a frontend records it.
struct Recount {
  uint64_t messages = 0, outputs = 0, generation_tokens = 0, scheduled = 0, prompt_tokens = 0;
  std::map<std::string, uint64_t> finished;
  uint64_t prefix_requests = 0, prefix_queries = 0, prefix_hits = 0, preempted_requests = 0;
  uint64_t connector_requests = 0, connector_queries = 0, connector_hits = 0;
  uint64_t drafts = 0, draft_tokens = 0, accepted = 0;
  uint64_t kv_messages = 0;
  std::map<std::string, uint64_t> payloads;
  std::map<std::string, std::map<std::string, FieldTotals>> fields;
  std::map<std::pair<std::string, std::string>, StoreTotals> store;
};

void AddPayload(const std::string& cls, const nlohmann::json& p, Recount* r) {
  r->payloads[cls] += 1;
  if (cls == "MooncakeStoreConnector") {
    for (const auto& [op, records] : p.items()) {
      for (const nlohmann::json& rec : records) {
        StoreTotals& t = r->store[{op, rec["status"].get<std::string>()}];
        t.records += 1;
        t.duration_seconds_sum += rec["duration_seconds"].get<double>();
        t.num_keys += rec["num_keys"].get<uint64_t>();
        t.num_bytes += rec["num_bytes"].get<uint64_t>();
        t.num_failed_keys += rec["num_failed_keys"].get<uint64_t>();
      }
    }
    return;
  }
  for (const auto& [field, values] : p.items()) {
    FieldTotals& f = r->fields[cls][field];
    for (const nlohmann::json& v : values) {
      f.count += 1;
      f.sum += v.get<double>();
    }
  }
}

void CheckTotalsMatchCapture(SimulatorOptions o, const char* bare_class) {
  TempDir dir;
  o.capture_path = dir.path() + "/c.msgpack";
  Simulator sim(o);
  ASSERT_TRUE(sim.Start().ok());
  ASSERT_TRUE(sim.Wait().ok());
  const SimulatorTotals totals = sim.Totals();
  std::map<int64_t, Recount> counts;
  for (const std::string& bytes : SplitCapture(ReadFile(o.capture_path))) {
    const nlohmann::json m = nlohmann::json::from_msgpack(bytes);
    Recount& r = counts[m[0].get<int64_t>()];
    r.messages += 1;
    for (const nlohmann::json& out : m[1]) {
      r.outputs += 1;
      r.generation_tokens += out[1].size();
      if (!out[5].is_null()) r.finished[out[5].get<int>() == 0 ? "stop" : "length"] += 1;
      if (!out[11].is_null()) {
        r.scheduled += 1;
        r.prompt_tokens += out[11]["num_prompt_tokens"].get<uint64_t>();
      }
    }
    const nlohmann::json& s = m[2];
    r.prefix_requests += s["prefix_cache_stats"]["requests"].get<uint64_t>();
    r.prefix_queries += s["prefix_cache_stats"]["queries"].get<uint64_t>();
    r.prefix_hits += s["prefix_cache_stats"]["hits"].get<uint64_t>();
    r.preempted_requests += s["prefix_cache_stats"]["preempted_requests"].get<uint64_t>();
    if (!s["connector_prefix_cache_stats"].is_null()) {
      r.connector_requests += s["connector_prefix_cache_stats"]["requests"].get<uint64_t>();
      r.connector_queries += s["connector_prefix_cache_stats"]["queries"].get<uint64_t>();
      r.connector_hits += s["connector_prefix_cache_stats"]["hits"].get<uint64_t>();
    }
    if (!s["spec_decoding_stats"].is_null()) {
      r.drafts += s["spec_decoding_stats"]["num_drafts"].get<uint64_t>();
      r.draft_tokens += s["spec_decoding_stats"]["num_draft_tokens"].get<uint64_t>();
      r.accepted += s["spec_decoding_stats"]["num_accepted_tokens"].get<uint64_t>();
    }
    const nlohmann::json& kv = s["kv_connector_stats"];
    if (kv.is_null()) continue;
    r.kv_messages += 1;
    if (bare_class) {
      AddPayload(bare_class, kv, &r);
    } else {
      for (const auto& [cls, child] : kv.items()) {
        AddPayload(cls, o.legacy_multi_shape ? child["data"] : child, &r);
      }
    }
  }
  ASSERT_EQ(totals.engines.size(), static_cast<size_t>(o.engines));
  for (const EngineTotals& e : totals.engines) {
    SCOPED_TRACE("engine " + std::to_string(e.engine_index));
    const Recount& r = counts[e.engine_index];
    EXPECT_EQ(e.messages, r.messages);
    EXPECT_EQ(e.steps, o.steps);
    EXPECT_EQ(e.outputs, r.outputs);
    EXPECT_EQ(e.generation_tokens, r.generation_tokens);
    EXPECT_EQ(e.requests_scheduled, r.scheduled);
    EXPECT_EQ(e.prompt_tokens, r.prompt_tokens);
    EXPECT_EQ(e.finished, r.finished);
    EXPECT_EQ(e.prefix_cache.requests, r.prefix_requests);
    EXPECT_EQ(e.prefix_cache.queries, r.prefix_queries);
    EXPECT_EQ(e.prefix_cache.hits, r.prefix_hits);
    EXPECT_EQ(e.prefix_cache.preempted_requests, r.preempted_requests);
    EXPECT_EQ(e.connector_prefix_cache.requests, r.connector_requests);
    EXPECT_EQ(e.connector_prefix_cache.queries, r.connector_queries);
    EXPECT_EQ(e.connector_prefix_cache.hits, r.connector_hits);
    EXPECT_EQ(e.spec_num_drafts, r.drafts);
    EXPECT_EQ(e.spec_num_draft_tokens, r.draft_tokens);
    EXPECT_EQ(e.spec_num_accepted_tokens, r.accepted);
    EXPECT_EQ(e.kv_connector_messages, r.kv_messages);
    EXPECT_EQ(e.connector_payloads, r.payloads);
    for (const auto& [cls, fields] : e.connector_fields) {
      for (const auto& [field, t] : fields) {
        const FieldTotals& got = counts[e.engine_index].fields[cls][field];
        EXPECT_EQ(t.count, got.count) << cls << "." << field;
        EXPECT_EQ(t.sum, got.sum) << cls << "." << field;  // bit-identical: same order
      }
    }
    ASSERT_EQ(e.store.size(), r.store.size());
    for (const auto& [key, t] : e.store) {
      const StoreTotals& got = r.store.at(key);
      EXPECT_EQ(t.records, got.records) << key.first << "/" << key.second;
      EXPECT_EQ(t.duration_seconds_sum, got.duration_seconds_sum);
      EXPECT_EQ(t.num_keys, got.num_keys);
      EXPECT_EQ(t.num_bytes, got.num_bytes);
      EXPECT_EQ(t.num_failed_keys, got.num_failed_keys);
    }
    // The run is busy enough to exercise every path the totals describe.
    EXPECT_GT(r.outputs, 0u);
    EXPECT_GT(r.prefix_hits, 0u);
    if (o.num_speculative_tokens > 0) {
      EXPECT_GT(r.accepted, 0u);
    }
    if (o.connector != SimConnector::kNone) {
      EXPECT_GT(r.kv_messages, 0u);
    }
  }
}

TEST(SimulatorTotals, MultiTotalsMatchTheCapture) {
  CheckTotalsMatchCapture(Busy(SimConnector::kMulti, 7), nullptr);
}

TEST(SimulatorTotals, LegacyMultiShapeTotalsMatchTheCapture) {
  SimulatorOptions o = Busy(SimConnector::kMulti, 8);
  o.legacy_multi_shape = true;
  CheckTotalsMatchCapture(o, nullptr);
}

TEST(SimulatorTotals, BareConnectorsTotalsMatchTheCapture) {
  CheckTotalsMatchCapture(Busy(SimConnector::kNixl, 9), "NixlConnector");
  CheckTotalsMatchCapture(Busy(SimConnector::kMooncakeP2p, 10), "MooncakeConnector");
  CheckTotalsMatchCapture(Busy(SimConnector::kMooncakeStore, 11), "MooncakeStoreConnector");
}

TEST(SimulatorTotals, MultiSendsEveryChildAndStoreStatus) {
  SimulatorOptions o = Busy(SimConnector::kMulti, 12);
  o.engines = 1;
  o.steps = 3000;
  TempDir dir;
  o.capture_path = dir.path() + "/c.msgpack";
  Simulator sim(o);
  ASSERT_TRUE(sim.Start().ok());
  ASSERT_TRUE(sim.Wait().ok());
  const SimulatorTotals totals = sim.Totals();
  const EngineTotals& e = totals.engines[0];
  EXPECT_GT(e.connector_payloads.at("NixlConnector"), 0u);
  EXPECT_GT(e.connector_payloads.at("MooncakeConnector"), 0u);
  EXPECT_GT(e.connector_payloads.at("MooncakeStoreConnector"), 0u);
  for (const char* op : {"lookup_exists", "save_exists", "save_put"}) {
    EXPECT_GT(e.store.count({op, "ok"}), 0u) << op;
  }
  EXPECT_GT(e.store.count({"save_put", "partial_failure"}) + e.store.count({"save_put", "error"}),
            0u);
  EXPECT_GT(e.connector_fields.at("NixlConnector").at("num_failed_transfers").count, 0u);
  EXPECT_GT(e.connector_fields.at("NixlConnector").at("num_kv_expired_reqs").count, 0u);
  EXPECT_GT(e.connector_fields.at("MooncakeConnector").at("num_failed_recvs").count, 0u);
  // Byte sizes and descriptor counts stay in their ranges.
  const FieldTotals& bytes = e.connector_fields.at("NixlConnector").at("bytes_transferred");
  EXPECT_GE(bytes.sum / static_cast<double>(bytes.count), 64.0 * 1024);
  EXPECT_LE(bytes.sum / static_cast<double>(bytes.count), 64.0 * 1024 * 1024);
}

TEST(SimulatorTotals, StatsOnlySendsNoOutputsAndJsonHasTheEngines) {
  SimulatorOptions o = Busy(SimConnector::kNone, 13);
  o.request_outputs = false;
  TempDir dir;
  const std::vector<std::string> messages = SplitCapture(Capture(dir, "c.msgpack", o));
  for (const std::string& bytes : messages) {
    const nlohmann::json m = nlohmann::json::from_msgpack(bytes);
    EXPECT_TRUE(m[1].empty());
    EXPECT_TRUE(m[2]["kv_connector_stats"].is_null());
    EXPECT_TRUE(m[2]["connector_prefix_cache_stats"].is_null());
  }
  o.capture_path = dir.path() + "/d.msgpack";
  Simulator sim(o);
  ASSERT_TRUE(sim.Start().ok());
  ASSERT_TRUE(sim.Wait().ok());
  const nlohmann::json doc = nlohmann::json::parse(sim.Totals().ToJson());
  EXPECT_EQ(doc["seed"], 13);
  EXPECT_EQ(doc["connector"], "none");
  ASSERT_EQ(doc["engines"].size(), 2u);
  EXPECT_EQ(doc["engines"][1]["engine_index"], 1);
  EXPECT_EQ(doc["engines"][1]["messages"], 300);
  EXPECT_EQ(doc["engines"][1]["outputs"], 0);
}

TEST(SimulatorOptions, BadOptionsAreRefused) {
  SimulatorOptions none;  // no destination
  EXPECT_EQ(Simulator(none).Start().code(), StatusCode::kInvalidArgument);
  SimulatorOptions two;
  two.handshake_address = "tcp://127.0.0.1:1";
  two.capture_path = "/tmp/x";
  EXPECT_EQ(Simulator(two).Start().code(), StatusCode::kInvalidArgument);
  SimulatorOptions endless;
  endless.capture_path = "/tmp/x";
  endless.steps = 0;
  EXPECT_EQ(Simulator(endless).Start().code(), StatusCode::kInvalidArgument);
  SimulatorOptions half;
  half.input_address = "tcp://127.0.0.1:1";
  EXPECT_EQ(Simulator(half).Start().code(), StatusCode::kInvalidArgument);
  SimulatorOptions wide;
  wide.capture_path = "/tmp/x";
  wide.engine_start_index = 65535;
  wide.engines = 2;
  EXPECT_EQ(Simulator(wide).Start().code(), StatusCode::kInvalidArgument);
  // A kv role needs served requests and NIXL, and replaces the echo.
  SimulatorOptions role;
  role.handshake_address = "tcp://127.0.0.1:1";
  role.kv_role = SimKvRole::kProducer;
  role.connector = SimConnector::kNixl;
  EXPECT_EQ(Simulator(role).Start().code(), StatusCode::kInvalidArgument);
  role.serve_requests = true;
  role.connector = SimConnector::kMooncakeP2p;
  EXPECT_EQ(Simulator(role).Start().code(), StatusCode::kInvalidArgument);
  role.connector = SimConnector::kNixl;
  role.echo_kv_transfer_params = true;
  EXPECT_EQ(Simulator(role).Start().code(), StatusCode::kInvalidArgument);
  SimulatorOptions odds;
  odds.capture_path = "/tmp/x";
  odds.malformed_probability = 1.5;
  EXPECT_EQ(Simulator(odds).Start().code(), StatusCode::kInvalidArgument);
  odds.malformed_probability = 0;
  odds.truncated_multipart_probability = -0.1;
  EXPECT_EQ(Simulator(odds).Start().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSimConnector("mooncake-p2p"), SimConnector::kMooncakeP2p);
  EXPECT_FALSE(ParseSimConnector("lmcache").has_value());
  EXPECT_EQ(ParseSimKvRole("kv_consumer"), SimKvRole::kConsumer);
  EXPECT_STREQ(SimKvRoleName(SimKvRole::kProducer), "kv_producer");
  EXPECT_FALSE(ParseSimKvRole("producer").has_value());
}

// Runs one engine against a client in bootstrapped mode over ipc:// and returns every message
// the client received, in order, once all that the engine sent (by its totals) arrived.
std::vector<std::vector<std::string>> RunAndReceive(SimulatorOptions so, EngineTotals* totals) {
  TempDir dir;
  test::Recorder rec;  // outlives the client, whose thread calls into it
  EngineCoreClientOptions o;
  o.mode = StartupMode::kBootstrapped;
  o.input_address = dir.Ipc("in");
  o.output_address = dir.Ipc("out");
  o.engine_count = 1;
  o.registration_timeout = test::kGenerous;
  EngineCoreClient client(o);
  EXPECT_TRUE(client.Bind().ok());
  so.input_address = client.endpoints().input;
  so.output_address = client.endpoints().output;
  Simulator sim(so);
  EXPECT_TRUE(sim.Start().ok());
  EXPECT_TRUE(client.WaitForEngines().ok());
  EXPECT_TRUE(client.Start(rec.Callbacks()).ok());
  EXPECT_TRUE(sim.Wait().ok());  // every step sent
  *totals = sim.Totals().engines.at(0);
  EXPECT_TRUE(rec.WaitForMessages(totals->messages + totals->utility_replies +
                                  totals->malformed_frames + totals->truncated_multipart));
  client.Stop();
  return rec.messages();
}

// kv_events_config as a vLLM engine with a ZmqEventPublisher reports it (48fc2e279): every
// KVEventsConfig field in its order, endpoints offset by the rank (offset_endpoint_port).
TEST(SimulatorKvEventsConfig, ResolvedForEachRankAsVllmsPublisher) {
  std::string error;
  std::optional<internal::KvEventsConfig> c =
      internal::ParseKvEventsConfig(R"({"enable_kv_cache_events":true,"endpoint":"tcp://*:5557",)"
                                    R"("replay_endpoint":"inproc://replay","hwm":7})",
                                    &error);
  ASSERT_TRUE(c.has_value()) << error;
  std::optional<std::string> rank2 = internal::KvEventsConfigForRank(*c, 2, &error);
  ASSERT_TRUE(rank2.has_value()) << error;
  Result<nlohmann::ordered_json> doc = protocol::MsgpackToJson(*rank2);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->dump(),
            R"({"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5559",)"
            R"("replay_endpoint":"inproc://replay_dp2","buffer_steps":10000,"hwm":7,)"
            R"("max_queue_size":100000,"topic":""})");
  // Rank 0 keeps the endpoints as given; a missing replay endpoint is nil.
  c = internal::ParseKvEventsConfig(R"({"enable_kv_cache_events":true})", &error);
  ASSERT_TRUE(c.has_value()) << error;
  doc = protocol::MsgpackToJson(internal::KvEventsConfigForRank(*c, 0, &error).value_or(""));
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["endpoint"], "tcp://*:5557");
  EXPECT_TRUE((*doc)["replay_endpoint"].is_null());
}

// No publisher (events off, or the "null" publisher): nil, as NullEventPublisher reports.
TEST(SimulatorKvEventsConfig, NoPublisherReportsNothing) {
  std::string error;
  for (const char* json : {"{}", R"({"enable_kv_cache_events":false,"publisher":"zmq"})",
                           R"({"enable_kv_cache_events":true,"publisher":"null"})"}) {
    std::optional<internal::KvEventsConfig> c = internal::ParseKvEventsConfig(json, &error);
    ASSERT_TRUE(c.has_value()) << json << ": " << error;
    EXPECT_EQ(internal::KvEventsConfigForRank(*c, 1, &error), std::string()) << json;
  }
}

TEST(SimulatorKvEventsConfig, WhatVllmRefusesIsRefused) {
  std::string error;
  for (const char* json : {"[]", "not json", R"({"publisher":"redis"})", R"({"hwm":"7"})",
                           R"({"endpoint":null})", R"({"unknown":1})"}) {
    EXPECT_FALSE(internal::ParseKvEventsConfig(json, &error).has_value()) << json;
    EXPECT_FALSE(error.empty()) << json;
  }
  // offset_endpoint_port's ValueError (no tcp, no inproc) and int() of a port, past rank 0.
  for (const char* json : {R"({"enable_kv_cache_events":true,"endpoint":"ipc:///tmp/kv"})",
                           R"({"enable_kv_cache_events":true,"endpoint":"tcp://*:port"})"}) {
    std::optional<internal::KvEventsConfig> c = internal::ParseKvEventsConfig(json, &error);
    ASSERT_TRUE(c.has_value()) << json;
    error.clear();
    EXPECT_TRUE(internal::KvEventsConfigForRank(*c, 0, &error).has_value()) << json;
    EXPECT_FALSE(internal::KvEventsConfigForRank(*c, 1, &error).has_value()) << json;
    EXPECT_FALSE(error.empty()) << json;
    SimulatorOptions so;
    so.capture_path = "/tmp/x";
    so.engines = 2;
    so.kv_events_config = json;
    EXPECT_EQ(Simulator(so).Start().code(), StatusCode::kInvalidArgument) << json;
  }
}

TEST(SimulatorSockets, InjectedFaultsNeverDecodeAndLeaveTheValidStreamUnchanged) {
  SimulatorOptions so;
  so.steps = 300;
  so.seed = 5;
  so.connector = SimConnector::kMulti;
  so.request_outputs = false;
  EngineTotals clean_totals, totals;
  const auto clean = RunAndReceive(so, &clean_totals);
  so.malformed_probability = 0.2;
  so.truncated_multipart_probability = 0.1;
  const auto got = RunAndReceive(so, &totals);
  const uint64_t malformed = totals.malformed_frames, truncated = totals.truncated_multipart;
  EXPECT_GT(malformed, 20u);
  EXPECT_GT(truncated, 10u);
  std::vector<std::string> valid;
  uint64_t refused = 0, two_frame_refused = 0;
  for (const std::vector<std::string>& frames : got) {
    std::vector<std::string_view> views(frames.begin(), frames.end());
    EngineCoreOutputs out;
    if (DecodeEngineCoreOutputs(views, {}, &out).ok()) {
      valid.push_back(frames[0]);
    } else {
      ++refused;
      two_frame_refused += frames.size() == 2;
    }
  }
  EXPECT_EQ(refused, malformed + truncated);
  EXPECT_EQ(two_frame_refused, truncated);
  EXPECT_EQ(clean_totals.malformed_frames + clean_totals.truncated_multipart, 0u);
  ASSERT_EQ(clean.size(), 300u);
  ASSERT_EQ(valid.size(), 300u);
  for (size_t i = 0; i < valid.size(); ++i) {
    ASSERT_EQ(valid[i], clean[i][0]) << "message " << i << " differs from the fault-free run";
  }
}

TEST(SimulatorSockets, HandshakeTimesOutWithoutAFrontend) {
  TempDir dir;
  SimulatorOptions o;
  o.handshake_address = dir.Ipc("nobody");
  o.handshake_timeout = std::chrono::milliseconds(200);
  Simulator sim(o);
  ASSERT_TRUE(sim.Start().ok());
  const Status s = sim.Wait();
  EXPECT_EQ(s.code(), StatusCode::kTimeout);
  EXPECT_EQ(s.stage(), StatusStage::kInit);
}

}  // namespace
}  // namespace vmetrics

namespace vmetrics {
namespace {

// serve_requests: the frontend's requests go through the same engine model as the synthetic
// ones (tests/frontend/completions_test.cc drives them over real sockets).
// An engine model that serves only the frontend's requests (no synthetic ones), with
// deterministic time.
internal::EngineModel ServingModel() {
  SimulatorOptions o;
  o.capture_path = "unused";
  o.synthetic_requests = false;
  o.serve_requests = true;
  return internal::EngineModel(o, 0, /*seed=*/3, /*deterministic_time=*/true);
}

TEST(SimulatorServedRequests, AServedRequestIsQueuedScheduledDecodedAndFinishedByLength) {
  internal::EngineModel model = ServingModel();
  EngineCoreRequestSpec add;
  add.request_id = "r1";
  add.prompt_token_ids.assign(40, 5);
  add.sampling.max_tokens = 3;
  add.sampling.ignore_eos = true;
  ASSERT_TRUE(model.AddServedRequest(add));
  EXPECT_FALSE(model.AddServedRequest(add)) << "an id already live is refused";
  std::vector<internal::SimOutput> outputs;
  internal::SimMessage message;
  for (int step = 0; step < 10; ++step) {
    model.Step(&message);
    for (internal::SimOutput& out : message.outputs) outputs.push_back(std::move(out));
  }
  ASSERT_EQ(outputs.size(), 3u);
  ASSERT_GE(outputs[0].events.size(), 2u);
  EXPECT_EQ(outputs[0].events.front().type, 1);  // QUEUED
  EXPECT_EQ(outputs[0].events.back().type, 2);   // SCHEDULED
  ASSERT_TRUE(outputs[0].prefill_stats.has_value());
  EXPECT_EQ(outputs[0].prefill_stats->num_prompt_tokens, 40);
  EXPECT_FALSE(outputs[1].prefill_stats.has_value());
  EXPECT_EQ(outputs[2].finish_reason, std::optional<int>(1));  // length
  const EngineTotals& t = model.totals();
  EXPECT_EQ(t.requests_served, 1u);
  EXPECT_EQ(t.requests_rejected, 1u);
  EXPECT_EQ(t.requests_arrived, 1u);
  EXPECT_EQ(t.generation_tokens, 3u);
  EXPECT_EQ(t.prompt_tokens, 40u);
  EXPECT_EQ(t.finished.at("length"), 1u);
}

TEST(SimulatorServedRequests, AnAbortDropsTheRequestWithoutAnOutput) {
  internal::EngineModel model = ServingModel();
  EngineCoreRequestSpec add;
  add.request_id = "r1";
  add.prompt_token_ids = {1, 2, 3};
  add.sampling.max_tokens = 100;
  add.sampling.ignore_eos = true;
  ASSERT_TRUE(model.AddServedRequest(add));
  internal::SimMessage message;
  model.Step(&message);
  ASSERT_EQ(message.outputs.size(), 1u);
  const std::string ids[] = {"r1", "never-sent"};
  model.AbortServedRequests(ids);
  for (int step = 0; step < 5; ++step) {
    model.Step(&message);
    EXPECT_TRUE(message.outputs.empty());
    EXPECT_EQ(message.scheduler_stats.num_running_reqs, 0);
  }
  EXPECT_EQ(model.totals().requests_aborted, 1u);
  EXPECT_TRUE(model.totals().finished.empty());
}

}  // namespace
}  // namespace vmetrics
