// SPDX-License-Identifier: Apache-2.0
// Tests of EncodeEngineCoreRequest / EncodeAbort (byte-exact against python-msgpack encodings of
// the layout of docs/wire_format.md "The input socket", hex computed with /usr/bin/python3
// msgpack.packb) and EngineRouter.
#include "vmetrics/engine_request.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vmetrics {
namespace {

std::string Hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

TEST(EncodeEngineCoreRequest, NonDefaultSamplingKeysOnlyInDefinitionOrder) {
  EngineCoreRequestSpec spec;
  spec.request_id = "r1";
  spec.prompt_token_ids = {1, 2, 300};
  spec.sampling.n = 2;
  spec.sampling.temperature = 0.5;
  spec.sampling.ignore_eos = true;
  spec.sampling.max_tokens = 8;
  spec.sampling.output_kind = 1;
  spec.arrival_time = 1700000000.5;
  spec.external_req_id = "ext-1";
  // python: msgpack.packb(["r1",[1,2,300],None,{"n":2,"temperature":0.5,"ignore_eos":True,
  //   "max_tokens":8,"output_kind":1},None,1700000000.5,None,None,None,None,None,0,0,0,None,
  //   False,"ext-1",None,None,False,None])
  EXPECT_EQ(Hex(EncodeEngineCoreRequest(spec)),
            "dc0015a27231930102cd012cc085a16e02ab74656d7065726174757265cb3fe0000000000000aa69676e"
            "6f72655f656f73c3aa6d61785f746f6b656e7308ab6f75747075745f6b696e6401c0cb41d954fc402000"
            "00c0c0c0c0c0000000c0c2a56578742d31c0c0c2c0");
}

TEST(EncodeEngineCoreRequest, DefaultsGiveAnEmptyMapAndLoraIsASevenArray) {
  EngineCoreRequestSpec spec;
  spec.request_id = "r2";
  spec.prompt_token_ids = {7};
  spec.arrival_time = 1.0;
  spec.lora_name = "sql";
  spec.lora_int_id = 3;
  spec.sampling.max_tokens = 16;  // equal to the default: omitted, as msgspec does
  EXPECT_EQ(Hex(EncodeEngineCoreRequest(spec)),
            "dc0015a272329107c080c0cb3ff000000000000097a373716c03a0c0c0c2c2c0c0c0c0000000c0c2c0c0"
            "c0c2c0");
}

TEST(EncodeEngineCoreRequest, MaxTokensNoneIsNil) {
  EngineCoreRequestSpec spec;
  spec.request_id = "r3";
  spec.sampling.max_tokens = std::nullopt;
  EXPECT_EQ(Hex(EncodeEngineCoreRequest(spec)),
            "dc0015a2723390c081aa6d61785f746f6b656e73c0c0cb0000000000000000c0c0c0c0c0000000c0c2c0"
            "c0c0c2c0");
}

TEST(EncodeAbort, ArrayOfIds) {
  const std::string ids[] = {"a", "bb"};
  EXPECT_EQ(Hex(EncodeAbort(ids)), "92a161a26262");
}

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

TEST(DecodeEngineCoreRequest, ReadsWhatPythonEncoded) {
  // The python-msgpack body of NonDefaultSamplingKeysOnlyInDefinitionOrder.
  Result<EngineCoreRequestSpec> r = DecodeEngineCoreRequest(
      Unhex("dc0015a27231930102cd012cc085a16e02ab74656d7065726174757265cb3fe0000000000000aa69676e"
            "6f72655f656f73c3aa6d61785f746f6b656e7308ab6f75747075745f6b696e6401c0cb41d954fc402000"
            "00c0c0c0c0c0000000c0c2a56578742d31c0c0c2c0"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->request_id, "r1");
  EXPECT_EQ(r->prompt_token_ids, (std::vector<int64_t>{1, 2, 300}));
  EXPECT_EQ(r->sampling.n, 2);
  EXPECT_EQ(r->sampling.temperature, 0.5);
  EXPECT_TRUE(r->sampling.ignore_eos);
  EXPECT_EQ(r->sampling.max_tokens, std::optional<int64_t>(8));
  EXPECT_EQ(r->sampling.output_kind, 1);
  EXPECT_EQ(r->arrival_time, 1700000000.5);
  EXPECT_EQ(r->external_req_id, "ext-1");
}

TEST(DecodeEngineCoreRequest, RoundTripsTheEncoderWithLoraAndDefaults) {
  EngineCoreRequestSpec spec;
  spec.request_id = "0_cmpl-1-0";
  spec.prompt_token_ids = {7};
  spec.sampling.max_tokens = std::nullopt;
  spec.sampling.seed = 3;
  spec.lora_name = "adapter";
  spec.lora_int_id = 4;
  spec.lora_path = "/adapters/a";
  Result<EngineCoreRequestSpec> r = DecodeEngineCoreRequest(EncodeEngineCoreRequest(spec));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->request_id, spec.request_id);
  EXPECT_EQ(r->sampling.max_tokens, std::nullopt);
  EXPECT_EQ(r->sampling.seed, std::optional<int64_t>(3));
  EXPECT_EQ(r->sampling.n, 1);
  EXPECT_EQ(r->lora_name, "adapter");
  EXPECT_EQ(r->lora_int_id, 4);
  EXPECT_EQ(r->lora_path, "/adapters/a");
}

TEST(DecodeEngineCoreRequest, RefusesShortAndTruncatedBodies) {
  EXPECT_EQ(DecodeEngineCoreRequest(Unhex("93a1780000")).status().code(), StatusCode::kMalformed);
  EngineCoreRequestSpec spec;
  spec.request_id = "r";
  spec.prompt_token_ids = {1, 2, 3};
  const std::string body = EncodeEngineCoreRequest(spec);
  for (size_t cut = 0; cut < body.size(); ++cut) {
    EXPECT_FALSE(DecodeEngineCoreRequest(body.substr(0, cut)).ok()) << cut;
  }
  // A list count beyond the bytes left is refused before anything is reserved.
  EXPECT_FALSE(DecodeEngineCoreRequest(Unhex("dc0015a172ddffffffff")).ok());
}

TEST(DecodeAbort, IdsOrMalformed) {
  const std::string ids[] = {"a", "b"};
  Result<std::vector<std::string>> r = DecodeAbort(EncodeAbort(ids));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(DecodeAbort(Unhex("9201")).ok());
  EXPECT_FALSE(DecodeAbort(Unhex("a161")).ok());
}

TEST(EngineRouter, RoundRobinWithoutStatsThenLeastLoaded) {
  EngineRouter router({0, 1, 2});
  EXPECT_EQ(router.Choose(), 0);
  EXPECT_EQ(router.Choose(), 1);
  EXPECT_EQ(router.Choose(), 2);
  SchedulerStats busy;
  busy.num_running_reqs = 5;
  busy.num_waiting_reqs = 2;
  SchedulerStats idle;
  router.ObserveStats(0, busy);
  router.ObserveStats(1, busy);
  router.ObserveStats(2, idle);
  EXPECT_EQ(router.Choose(), 2);
  router.Assign("x", 2);
  EXPECT_EQ(router.EngineOf("x"), 2);
  router.ObserveStats(2, busy);
  SchedulerStats light;
  light.num_skipped_waiting_reqs = 1;
  router.ObserveStats(1, light);
  EXPECT_EQ(router.Choose(), 1);
}

TEST(EngineRouter, DeadEngineHandsBackItsRequestsAndIsSkipped) {
  EngineRouter router({0, 1});
  router.Assign("a", 0);
  router.Assign("b", 1);
  router.Assign("c", 0);
  EXPECT_EQ(router.MarkDead(0), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(router.EngineOf("a"), -1);
  EXPECT_EQ(router.Choose(), 1);
  EXPECT_EQ(router.Choose(), 1);
  router.MarkDead(1);
  EXPECT_EQ(router.Choose(), -1);
  EXPECT_EQ(router.num_assigned(), 0u);
}

}  // namespace
}  // namespace vmetrics
