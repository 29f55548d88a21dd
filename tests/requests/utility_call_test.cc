// SPDX-License-Identifier: Apache-2.0
// UTILITY call bodies (utility_call.h) against the bytes Python's msgpack writes for the same
// calls (tests/fixtures/utility_calls.jsonl, tools/gen_utility_call_goldens.py), the engine's
// side of a body, results, and the signatures each generation's engines are called with.
#include "vmetrics/utility_call.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vmetrics/wire_decoder.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics {
namespace {

using json = nlohmann::json;

std::string Hex(std::string_view bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

// The plain argument `j` stands for; nullopt for an object (frontend_test checks those, with
// the JSON-to-msgpack encoding of the request bodies they come from).
std::optional<UtilityArg> ArgOf(const json& j) {
  if (j.is_null()) return nullptr;
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_array()) return j.get<std::vector<std::string>>();
  return std::nullopt;
}

TEST(UtilityCall, BodiesAreTheBytesPythonsMsgpackWrites) {
  std::ifstream in(VMETRICS_UTILITY_CALLS);
  ASSERT_TRUE(in) << VMETRICS_UTILITY_CALLS;
  size_t cases = 0;
  for (std::string line; std::getline(in, line);) {
    const json c = json::parse(line);
    std::vector<UtilityArg> args;
    bool plain = true;
    for (const json& a : c["args"]) {
      const std::optional<UtilityArg> arg = ArgOf(a);
      plain = plain && arg.has_value();
      if (arg) args.push_back(*arg);
    }
    if (!plain) continue;
    const uint64_t call_id = std::stoull(c["call_id"].get<std::string>());
    const std::string body = EncodeUtilityCall(c["client_index"].get<int64_t>(), call_id,
                                               c["method"].get<std::string>(), args);
    EXPECT_EQ(Hex(body), c["hex"].get<std::string>()) << line;
    // The engine's side reads back what was written.
    Result<UtilityCall> read = DecodeUtilityCall(Unhex(c["hex"].get<std::string>()));
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(read->call_id, call_id);
    EXPECT_EQ(read->method, c["method"].get<std::string>());
    EXPECT_EQ(read->args, args);
    ++cases;
  }
  EXPECT_EQ(cases, 17u);
}

TEST(UtilityCall, TheEngineSideRefusesAnyOtherShape) {
  for (const std::string hex : {"93000ba3616263",          // three values
                                "9500 0ba361626390c0",     // five values
                                "9400ffa361626390",        // a negative call id
                                "94000ba3616263a0",        // args not an array
                                "94000ba361626391c1",      // an invalid byte
                                "94000ba361626391c40100",  // a bin argument
                                "94000ba361626390c0"}) {   // bytes after the body
    std::string h = hex;
    std::erase(h, ' ');
    EXPECT_FALSE(DecodeUtilityCall(Unhex(h)).ok()) << hex;
  }
}

TEST(UtilityCall, ResultsAreTheSecondValueOfAUtilityResult) {
  EXPECT_EQ(*DecodeUtilityResult(""), UtilityArg(nullptr));
  EXPECT_EQ(*DecodeUtilityResult(Unhex("92c0c3")), UtilityArg(true));
  // With VLLM_ALLOW_INSECURE_SERIALIZATION the engine adds type information: skipped.
  EXPECT_EQ(*DecodeUtilityResult(Unhex("9292a86275696c74696e73a4626f6f6cc2")), UtilityArg(false));
  EXPECT_EQ(*DecodeUtilityResult(Unhex("92c091a867656e6572617465")),
            UtilityArg(std::vector<std::string>{"generate"}));
  EXPECT_FALSE(DecodeUtilityResult(Unhex("c3")).ok());
  EXPECT_FALSE(DecodeUtilityResult(Unhex("93c0c3c3")).ok());
  EXPECT_FALSE(DecodeUtilityResult(Unhex("92c0c7010200")).ok());  // an ext value
  EXPECT_FALSE(DecodeUtilityResult(Unhex("92c0c3c3")).ok());      // bytes after it
}

TEST(UtilityCall, EachGenerationIsCalledWithItsOwnSignatures) {
  auto calls = [](std::string_view name) {
    const WireGeneration* g = FindWireGeneration(name);
    EXPECT_NE(g, nullptr) << name;
    return g->control;
  };
  // sleep(level), no pause_scheduler, reset_prefix_cache(), no weight transfer (EngineCore at
  // 6f5c0931, 65ac8d8d).
  const EngineControlCalls oldest{.sleep_takes_mode = false,
                                  .pause_scheduler = false,
                                  .reset_prefix_cache_flags = false,
                                  .weight_transfer = 0,
                                  .weight_version = false};
  for (std::string_view name : {"g20250927", "g20251105"}) EXPECT_EQ(calls(name), oldest);
  // reset_prefix_cache(reset_running_requests, reset_connector) from 0565f1fd.
  EngineControlCalls flags = oldest;
  flags.reset_prefix_cache_flags = true;
  for (std::string_view name : {"g20260112", "g20260204"}) EXPECT_EQ(calls(name), flags);
  // sleep(level, mode), the scheduler's pause and the first weight-transfer methods from
  // f72b2097; start/finish from 370b678a; the weight version from f4e9bb01.
  EXPECT_EQ(calls("g20260413"),
            (EngineControlCalls{.weight_transfer = 1, .weight_version = false}));
  EXPECT_EQ(calls("g20260712"),
            (EngineControlCalls{.weight_transfer = 2, .weight_version = false}));
  for (std::string_view name : {"g20260812", "g20260814"}) {
    EXPECT_EQ(calls(name), EngineControlCalls{});
  }
}

TEST(UtilityCall, CandidatesThatDisagreeHaveNoSignatures) {
  auto bit = [](std::string_view name) {
    return WireCandidates{1} << WireGenerationIndex(*FindWireGeneration(name));
  };
  EXPECT_TRUE(ControlCallsFor(bit("g20250927") | bit("g20251105")).ok());
  EXPECT_TRUE(ControlCallsFor(bit("g20260812") | bit("g20260814")).ok());
  Result<EngineControlCalls> split = ControlCallsFor(bit("g20251105") | bit("g20260112"));
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(split.status().message().find("g20260112"), std::string::npos);
}

}  // namespace
}  // namespace vmetrics
