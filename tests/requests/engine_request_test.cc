// SPDX-License-Identifier: Apache-2.0
// Tests of EncodeEngineCoreRequest / EncodeAbort (byte-exact against python-msgpack encodings of
// the layout of docs/wire_format.md "The input socket", hex computed with /usr/bin/python3
// msgpack.packb, with the SamplingParams map header as msgspec writes it: map16), the request
// layouts of several candidate generations, CPython's set order, and EngineRouter. The
// captures of each generation's own frontend are tests/frontend/request_captures_test.cc's.
#include "vmetrics/engine_request.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/wire_generation.h"

namespace vmetrics {
namespace {

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

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
  //   False,"ext-1",None,None,False,None]), the map header 85 written de0005
  EXPECT_EQ(
      Hex(EncodeEngineCoreRequest(spec)),
      "dc0015a27231930102cd012cc0de0005a16e02ab74656d7065726174757265cb3fe0000000000000aa69676e"
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
  EXPECT_EQ(
      Hex(EncodeEngineCoreRequest(spec)),
      "dc0015a272329107c0de0000c0cb3ff000000000000097a373716c03a0c0c0c2c2c0c0c0c0000000c0c2c0c0"
      "c0c2c0");
}

TEST(EncodeEngineCoreRequest, MaxTokensNoneIsNil) {
  EngineCoreRequestSpec spec;
  spec.request_id = "r3";
  spec.sampling.max_tokens = std::nullopt;
  EXPECT_EQ(
      Hex(EncodeEngineCoreRequest(spec)),
      "dc0015a2723390c0de0001aa6d61785f746f6b656e73c0c0cb0000000000000000c0c0c0c0c0000000c0c2c0"
      "c0c0c2c0");
}

// What /usr/bin/python3 prints for list(s) after adding the ids to an empty set one by one.
TEST(PythonSetOrder, IteratesAsCPython) {
  EXPECT_EQ(PythonSetOrder({13, 29889, 2}), (std::vector<int64_t>{29889, 2, 13}));
  EXPECT_EQ(PythonSetOrder(
                {100000, 7, 64, 3, 128009, 128001, 128008, 15, 31, 1, 2, 8, 16, 24, 40, 56, 72}),
            (std::vector<int64_t>{100000, 64, 128001, 3, 1, 2, 7, 128008, 128009, 8, 40, 72, 15, 16,
                                  24, 56, 31}));
  std::vector<int64_t> descending;
  for (int64_t v = 40; v > 0; v -= 3) descending.push_back(v * 97);
  EXPECT_EQ(PythonSetOrder(descending),
            (std::vector<int64_t>{97, 3298, 388, 3589, 679, 3880, 970, 1261, 1552, 1843, 2134, 2425,
                                  2716, 3007}));
  EXPECT_EQ(PythonSetOrder({5, 5, 5}), (std::vector<int64_t>{5}));
}

uint32_t Candidates(std::initializer_list<const char*> names) {
  uint32_t set = 0;
  for (const char* name : names) {
    set |= uint32_t{1} << WireGenerationIndex(*FindWireGeneration(name));
  }
  return set;
}

// The four generations a handshake cannot tell apart share g20250927's 15 positions and the
// LoRARequest's first three.
TEST(RequestLayoutFor, TheFourOldGenerationsShareACutLayout) {
  Result<EngineRequestLayout> l =
      RequestLayoutFor(Candidates({"g20250927", "g20251105", "g20260112", "g20260204"}));
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->name,
            "common to g20260204-08e09499, g20260112-0565f1fd, g20251105-65ac8d8d, "
            "g20250927-6f5c0931");
  EXPECT_EQ(l->fields.size(), 15U);
  EXPECT_EQ(l->fields[5], RequestField::kEosTokenId);
  EXPECT_EQ(l->lora.size(), 3U);
  EXPECT_EQ(l->required, 10);
  const RequestLayout view = l->view();
  EXPECT_FALSE(view.Has(SamplingKey::kSkipClone));       // only the newer two have it
  EXPECT_FALSE(view.Has(SamplingKey::kBestOf));          // only the older two have it
  EXPECT_TRUE(view.Has(SamplingKey::kAllStopTokenIds));  // all four
  // Equal tables are one layout, named after the newest.
  Result<EngineRequestLayout> same = RequestLayoutFor(Candidates({"g20260812", "g20260814"}));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->name, "g20260814-6adad087");
  EXPECT_EQ(same->fields.size(), 21U);
}

// EOS at position 5 for one candidate, arrival_time for the other: no array reads alike.
TEST(RequestLayoutFor, NoLayoutWhenACandidateNeedsAPositionPastTheCommonPrefix) {
  Result<EngineRequestLayout> l = RequestLayoutFor(Candidates({"g20260204", "g20260413"}));
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(l.status().message().find("g20260413-f72b2097, g20260204-08e09499"), std::string::npos)
      << l.status().message();
}

TEST(CheckRequestFits, NamesWhatTheEnginesLayoutCannotCarry) {
  EngineCoreRequestSpec spec;
  spec.request_id = "r";
  spec.prompt_token_ids = {1};
  spec.eos_token_id = 2;
  spec.sampling.eos_token_id = 2;
  spec.sampling.skip_clone = true;    // frontend-only: left out where unknown
  spec.external_req_id = "cmpl-r-0";  // likewise
  spec.lora_name = "a";
  spec.lora_int_id = 1;
  spec.lora_base_model_name = "base";  // likewise
  const RequestLayout& old = FindWireGeneration("g20250927")->request;
  EXPECT_TRUE(CheckRequestFits(spec, old).ok()) << CheckRequestFits(spec, old).ToString();
  spec.sampling.thinking_token_budget = 64;
  Status s = CheckRequestFits(spec, old);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("sampling_params.thinking_token_budget"), std::string::npos);
  EXPECT_TRUE(CheckRequestFits(spec, FindWireGeneration("g20260413")->request).ok());
  spec.sampling.thinking_token_budget.reset();
  spec.session_id = "s";
  s = CheckRequestFits(spec, FindWireGeneration("g20260712")->request);
  EXPECT_NE(s.message().find("session_id"), std::string::npos) << s.ToString();
  EXPECT_TRUE(CheckRequestFits(spec, FindWireGeneration("g20260812")->request).ok());
  // A priority past a cut common layout cannot be carried either.
  Result<EngineRequestLayout> cut =
      RequestLayoutFor((uint32_t{1} << WireGenerationIndex(*FindWireGeneration("g20260413"))) |
                       (uint32_t{1} << WireGenerationIndex(*FindWireGeneration("g20260712"))));
  ASSERT_TRUE(cut.ok());
  spec.session_id.reset();
  spec.priority = 5;
  s = CheckRequestFits(spec, cut->view());
  EXPECT_NE(s.message().find("priority"), std::string::npos) << s.ToString();
}

// The strict decoder refuses what msgspec refuses, naming the path.
TEST(DecodeEngineCoreRequest, RefusesAsMsgspecWithThePath) {
  EngineCoreRequestSpec spec;
  spec.request_id = "r";
  spec.prompt_token_ids = {1};
  spec.cache_salt = std::string("\xff", 1);
  Result<EngineCoreRequestSpec> r = DecodeEngineCoreRequest(EncodeEngineCoreRequest(spec));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Invalid UTF-8 - at `$[7]`"), std::string::npos)
      << r.status().message();
  spec.cache_salt.reset();
  spec.sampling.output_kind = 7;  // not a RequestOutputKind
  r = DecodeEngineCoreRequest(EncodeEngineCoreRequest(spec));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("$[3].output_kind"), std::string::npos)
      << r.status().message();
  // Fewer positions than the ones without a default.
  r = DecodeEngineCoreRequest(Unhex("98a1729101c0c0c0cb0000000000000000c0c0"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("at least length 9"), std::string::npos)
      << r.status().message();
}

TEST(EncodeAbort, ArrayOfIds) {
  const std::string ids[] = {"a", "bb"};
  EXPECT_EQ(Hex(EncodeAbort(ids)), "92a161a26262");
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
