// SPDX-License-Identifier: Apache-2.0
// Wire generations (wire_generation.h) and the per-engine recognition and salvage of
// wire_decoder.h / engine_core_outputs.h. Whole captures of every generation are replayed by
// tests/cli/wire_generations_test.cc; these are the rules one by one, on hand-built messages.
#include "vmetrics/wire_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixture_util.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/handshake.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics {
namespace {

using testing::DecodeOne;
using testing::RecordingReporter;

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}
std::string Str(std::string_view v) {  // fixstr
  return static_cast<char>(0xa0 | v.size()) + std::string(v);
}
// EngineCoreOutputs [engine, outputs, stats, 2.0, nil, nil, nil, nil].
std::string Message(int engine, const std::vector<std::string>& outputs, const std::string& stats) {
  std::string m = Bytes({0x98, engine});
  m.push_back(static_cast<char>(0x90 | outputs.size()));
  for (const std::string& o : outputs) m += o;
  m += stats;
  m += Bytes({0xcb, 0x40, 0, 0, 0, 0, 0, 0, 0, 0xc0, 0xc0, 0xc0, 0xc0});
  return m;
}
// An EngineCoreOutput of `length` positions: "r1", [42], nils, then `tail` (its last
// `tail_values` positions).
std::string Output(size_t length, const std::string& tail, size_t tail_values = 1) {
  std::string o = length < 16 ? Bytes({0x90 | static_cast<int>(length)})
                              : Bytes({0xdc, 0, static_cast<int>(length)});
  o += Str("r1") + Bytes({0x91, 0x2a});
  for (size_t i = 2; i + tail_values < length; ++i) o.push_back(static_cast<char>(0xc0));
  return o + tail;
}
const std::string kStats = Bytes({0x81}) + Str("num_running_reqs") + Bytes({0x03});

TEST(WireGenerations, TablesNameEveryGenerationOldestFirst) {
  const auto gens = WireGenerations();
  ASSERT_EQ(gens.size(), 9u);
  EXPECT_EQ(gens.front().name, "g20250927-6f5c0931");
  EXPECT_EQ(NewestWireGeneration().name, "gnewest-20260924");
  const WireGeneration* g = FindWireGeneration("g20260712");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->name, "g20260712-370b678a");
  EXPECT_EQ(g->output_field(10), OutputField::kPrefillStats);
  EXPECT_EQ(FindWireGeneration("g20260814-6adad087")->output_count, 16);
  EXPECT_EQ(FindWireGeneration("g20260413")->PositionOf(OutputField::kNumExternalComputedTokens),
            11);
  EXPECT_EQ(FindWireGeneration("g20991231"), nullptr);
  // Same EngineCoreOutput layout: g20250927 and g20251105; 6adad087 extends g20260812.
  EXPECT_TRUE(LayoutsAgree(*FindWireGeneration("g20250927"), *FindWireGeneration("g20251105")));
  EXPECT_TRUE(LayoutsAgree(*FindWireGeneration("g20260812"), *FindWireGeneration("g20260814")));
  EXPECT_FALSE(LayoutsAgree(*FindWireGeneration("g20260112"), *FindWireGeneration("g20260413")));
}

TEST(WireGenerations, EngineWireFlagAcceptsAutoAndGenerationsAndNamesItselfOtherwise) {
  EXPECT_EQ(*ParseEngineWire("auto"), nullptr);
  EXPECT_EQ((*ParseEngineWire("g20260712"))->name, "g20260712-370b678a");
  Result<const WireGeneration*> bad = ParseEngineWire("0.99.0");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--engine-wire"), std::string::npos);
  EXPECT_NE(bad.status().message().find("g20250927-6f5c0931"), std::string::npos);
}

// The same bytes mean different fields in different generations: the table decides.
TEST(WireGenerations, OneDecoderReadsEachGenerationsPositionsThroughItsTable) {
  // 12 positions: trace_headers nil, num_cached_tokens 7, num_nans_in_logits 2 (g20260112).
  const std::string out = Output(12, Bytes({0x07, 0x02}), 2);
  const std::string frame = Message(0, {out}, Bytes({0xc0}));
  DecodeContext ctx;
  ctx.wire = FindWireGeneration("g20260112");
  EngineCoreOutputs m;
  ASSERT_TRUE(DecodeOne(frame, ctx, &m).ok());
  ASSERT_EQ(m.outputs.size(), 1u);
  EXPECT_TRUE(m.outputs[0].has_num_cached_tokens);
  EXPECT_EQ(m.outputs[0].num_cached_tokens, 7);
  EXPECT_EQ(m.outputs[0].num_nans_in_logits, 2);
  // The newest table reads position 10 as trace_headers: an int there does not decode.
  ctx.wire = nullptr;
  ASSERT_TRUE(DecodeOne(frame, ctx, &m).ok());
  EXPECT_TRUE(m.outputs.empty());
  EXPECT_EQ(m.skipped.outputs, 1u);
}

// Salvage: a malformed output entry costs that entry only, never the message's other outputs
// or its SchedulerStats; a malformed SchedulerStats costs itself only.
TEST(WireSalvage, AMalformedOutputKeepsTheOtherOutputsAndTheStatistics) {
  const std::string good2 = Bytes({0x92}) + Str("r2") + Bytes({0x91, 0x2b});
  const std::string bad = Bytes({0x92, 0x05, 0x90});  // request_id an int
  RecordingReporter reporter;
  DecodeContext ctx;
  ctx.reporter = &reporter;
  EngineCoreOutputs m;
  Status s = DecodeOne(Message(0, {good2, bad, good2}, kStats), ctx, &m);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(m.outputs.size(), 2u);
  EXPECT_EQ(m.skipped.outputs, 1u);
  ASSERT_TRUE(m.scheduler_stats.has_value());
  EXPECT_EQ(m.scheduler_stats->num_running_reqs, 3);
  ASSERT_FALSE(reporter.problems.empty());
  EXPECT_EQ(reporter.problems[0].key, "output");
}

TEST(WireSalvage, AMalformedSchedulerStatsKeepsTheOutputs) {
  const std::string good = Bytes({0x92}) + Str("r2") + Bytes({0x91, 0x2b});
  EngineCoreOutputs m;
  Status s = DecodeOne(Message(0, {good}, Bytes({0x07})), {}, &m);  // stats an int
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(m.outputs.size(), 1u);
  EXPECT_FALSE(m.scheduler_stats.has_value());
  EXPECT_EQ(m.skipped.scheduler_stats, 1u);
  EXPECT_EQ(m.skipped.outputs, 0u);
}

TEST(WireRecognizer, AnEmptyRegistrationLeavesTheGenerationsBeforeTheReadyResponse) {
  WireRecognizer rec(0, nullptr);
  EngineCoreReadyResponse ready;
  ready.empty_registration = true;
  HandshakeMessage ready_msg;
  ready_msg.num_gpu_blocks = 1000;
  rec.ObserveHandshake(ready, &ready_msg);
  EXPECT_FALSE(rec.recognition().recognised);
  EXPECT_EQ(WireCandidateNames(rec.recognition().candidates),
            "g20260204-08e09499, g20260112-0565f1fd, g20251105-65ac8d8d, g20250927-6f5c0931");
  // 13 positions, num_cached_tokens 5 at 10, routed_experts nil, num_nans_in_logits 0:
  // g20260204 (g20260712's 13 positions hold a prefill_stats map or nil at 10).
  EXPECT_TRUE(
      rec.ObserveMessage(Message(0, {Output(13, Bytes({0x05, 0xc0, 0x00}), 3)}, Bytes({0xc0})), 1));
  ASSERT_TRUE(rec.recognition().recognised);
  EXPECT_EQ(rec.recognition().name(), "g20260204-08e09499");
  EXPECT_FALSE(rec.observing()) << "one candidate left: observation ends";
}

TEST(WireRecognizer, StructureDecidesAndSameLayoutCandidatesAreNotAmbiguous) {
  // 11 positions, num_cached_tokens an int: g20250927 or g20251105, which decode the same.
  WireRecognizer rec(3, nullptr);
  EXPECT_TRUE(rec.ObserveMessage(Message(3, {Output(11, Bytes({0x05}))}, Bytes({0xc0})), 1));
  const WireRecognition& r = rec.recognition();
  ASSERT_TRUE(r.recognised);
  EXPECT_FALSE(r.ambiguous);
  EXPECT_EQ(r.name(), "g20251105-65ac8d8d");
  EXPECT_NE(DescribeRecognition(r).find("g20250927-6f5c0931 has the same layout"),
            std::string::npos)
      << DescribeRecognition(r);
}

// Bytes that rule out the generation an engine was recognised as win; when what they fit
// decodes differently, the engine is decided again between those candidates, as ambiguous and
// logged with the flag, never left on a generation outside them.
TEST(WireRecognizer, BytesThatRuleOutTheRecognisedGenerationDecideAgainAsAmbiguous) {
  WireRecognizer rec(0, nullptr);
  // 11 positions, num_cached_tokens an int: g20250927 or g20251105.
  EXPECT_TRUE(rec.ObserveMessage(Message(0, {Output(11, Bytes({0x05}))}, Bytes({0xc0})), 1));
  EXPECT_EQ(rec.recognition().name(), "g20251105-65ac8d8d");
  (void)rec.TakeNotes();
  // 11 positions with nil at position 10: only the generations since g20260712, which do not
  // all decode the same.
  EXPECT_TRUE(rec.ObserveMessage(Message(0, {Output(11, Bytes({0xc0}))}, Bytes({0xc0})), 2));
  const WireRecognition& r = rec.recognition();
  ASSERT_TRUE(r.recognised);
  EXPECT_TRUE(r.ambiguous);
  EXPECT_EQ(WireCandidateNames(r.candidates),
            "gnewest-20260924, g20260814-6adad087, g20260812-f4e9bb01, g20260712-370b678a");
  EXPECT_EQ(r.name(), std::string(NewestWireGeneration().name));
  bool named_flag = false;
  for (const std::string& line : rec.TakeNotes()) {
    named_flag |= line.find("ambiguous") != std::string::npos &&
                  line.find("--engine-wire") != std::string::npos;
  }
  EXPECT_TRUE(named_flag);
}

// Outputs that fit generations which decode differently are held, not guessed at; at the end
// of the stream the newest is taken and the ambiguity logged with the flag to use.
TEST(WireDecoder, AmbiguousOutputsAreHeldThenDecidedAndLoggedNeverLost) {
  std::vector<std::string> log;
  WireDecoderOptions options;
  options.log = [&log](const std::string& line) { log.push_back(line); };
  WireDecoder wire(std::move(options));
  // Two positions only (request_id, new_token_ids): every generation accepts it.
  const std::string frame = Message(0, {Bytes({0x92}) + Str("r2") + Bytes({0x91, 0x2b})}, kStats);
  const std::string_view frames[] = {frame};
  int delivered = 0;
  const WireDecoder::OnMessage on_message = [&](EngineCoreOutputs& m, const DecodeContext&) {
    ++delivered;
    EXPECT_EQ(m.outputs.size(), 1u);
  };
  const WireDecoder::OnFailure on_failure = [](const Status& s, const DecodeContext&) {
    ADD_FAILURE() << s.ToString();
  };
  DecodeContext ctx;
  ctx.message_number = 1;
  wire.Feed(frames, ctx, on_message, on_failure);
  EXPECT_EQ(delivered, 0) << "held until the engine is recognised";
  wire.Finish(on_message, on_failure);
  EXPECT_EQ(delivered, 1);
  const WireRecognition* r = wire.recognition(0);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->ambiguous);
  EXPECT_EQ(r->name(), std::string(NewestWireGeneration().name));
  bool named_flag = false;
  for (const std::string& line : log) named_flag |= line.find("--engine-wire") != std::string::npos;
  EXPECT_TRUE(named_flag);
}

TEST(WireDecoder, ForcedGenerationThatDoesNotFitIsLoggedAndPartsCounted) {
  std::vector<std::string> log;
  WireDecoderOptions options;
  options.forced = FindWireGeneration("g20250927");
  options.log = [&log](const std::string& line) { log.push_back(line); };
  WireDecoder wire(std::move(options));
  // A 6adad087 output: position 10 trace_headers nil, where g20250927 wants an int.
  const std::string frame = Message(0, {Output(16, Bytes({0xc0}))}, kStats);
  const std::string_view frames[] = {frame};
  uint32_t skipped = 0;
  wire.Feed(
      frames, {},
      [&](EngineCoreOutputs& m, const DecodeContext&) {
        skipped += m.skipped.outputs;
        EXPECT_TRUE(m.scheduler_stats.has_value());
      },
      nullptr);
  EXPECT_EQ(skipped, 1u);
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log[0].find("does not fit --engine-wire g20250927-6f5c0931"), std::string::npos)
      << log[0];
}

}  // namespace
}  // namespace vmetrics
