// SPDX-License-Identifier: Apache-2.0
// Tests of src/protocol/engine_core_outputs.cc on well-formed messages: every fixture's decoded
// values (envelope, outputs, tensors inline and in aux frames, events, finish and stop reasons,
// utility outputs), defaults for short arrays and tolerance of extra trailing positions.
// Bad input lives in engine_core_outputs_bad_input_test.cc, SchedulerStats in
// scheduler_stats_test.cc, kv_connector_stats in connector_payloads_test.cc.
#include "vmetrics/engine_core_outputs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "fixture_util.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics {
namespace {

using ::testing::ElementsAre;
using ::vmetrics::testing::DecodeOne;
using ::vmetrics::testing::Frames;
using ::vmetrics::testing::MapKeys;
using ::vmetrics::testing::ReadFixture;
using ::vmetrics::testing::ReadFramesFixture;
using ::vmetrics::testing::SplitMessages;
using ::vmetrics::testing::TensorValues;
using ::vmetrics::testing::ViewsInto;

EngineCoreOutputs MustDecode(std::string_view frame0) {
  EngineCoreOutputs out;
  Status s = DecodeOne(frame0, {}, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// Decoded views point into the input: a temporary would leave them dangling.
EngineCoreOutputs MustDecode(std::string&& frame0) = delete;

EngineCoreOutputs MustDecode(const Frames& frames) {
  EngineCoreOutputs out;
  Status s = DecodeEngineCoreOutputs(frames.span(), {}, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

std::vector<std::string> Strings(const std::vector<std::string_view>& views) {
  return std::vector<std::string>(views.begin(), views.end());
}

// The LogprobsLists of tools/gen_fixtures.py logprobs_lists(tokens, k): ids 100*t + c,
// logprobs -0.25*(t+1) - c, ranks t%3 + 1, for t < tokens and c <= k.
void ExpectGeneratedLogprobs(const Logprobs& lp, int64_t tokens, int64_t k) {
  ASSERT_EQ(lp.fields.size(), 4u) << "LogprobsLists has four positions";
  ASSERT_TRUE(lp.fields[0].has_value());
  ASSERT_TRUE(lp.fields[1].has_value());
  ASSERT_TRUE(lp.fields[2].has_value());
  EXPECT_FALSE(lp.fields[3].has_value()) << "cu_num_generated_tokens is a plain list";
  const Tensor& ids = *lp.fields[0];
  const Tensor& lps = *lp.fields[1];
  const Tensor& ranks = *lp.fields[2];
  EXPECT_EQ(ids.dtype, "<i8");
  EXPECT_EQ(lps.dtype, "<f4");
  EXPECT_EQ(ranks.dtype, "<i8");
  EXPECT_THAT(ids.shape, ElementsAre(tokens, k + 1));
  EXPECT_THAT(lps.shape, ElementsAre(tokens, k + 1));
  EXPECT_THAT(ranks.shape, ElementsAre(tokens));
  ASSERT_EQ(ids.data.size(), static_cast<size_t>(tokens * (k + 1) * 8));
  ASSERT_EQ(lps.data.size(), static_cast<size_t>(tokens * (k + 1) * 4));
  ASSERT_EQ(ranks.data.size(), static_cast<size_t>(tokens * 8));
  const auto id_values = TensorValues<int64_t>(ids.data);
  const auto lp_values = TensorValues<float>(lps.data);
  const auto rank_values = TensorValues<int64_t>(ranks.data);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t c = 0; c <= k; ++c) {
      const size_t i = static_cast<size_t>(t * (k + 1) + c);
      EXPECT_EQ(id_values[i], 100 * t + c) << "t=" << t << " c=" << c;
      EXPECT_EQ(lp_values[i],
                static_cast<float>(-0.25 * static_cast<double>(t + 1) - static_cast<double>(c)))
          << "t=" << t << " c=" << c;
    }
    EXPECT_EQ(rank_values[static_cast<size_t>(t)], t % 3 + 1);
  }
}

// LogprobsTensors of the prompt-logprobs fixtures (torch dtype names).
void ExpectPromptLogprobs(const Logprobs& lp) {
  ASSERT_EQ(lp.fields.size(), 3u) << "LogprobsTensors has three positions";
  for (const auto& f : lp.fields) ASSERT_TRUE(f.has_value());
  EXPECT_EQ(lp.fields[0]->dtype, "int64");
  EXPECT_EQ(lp.fields[1]->dtype, "float32");
  EXPECT_EQ(lp.fields[2]->dtype, "int64");
  EXPECT_THAT(lp.fields[0]->shape, ElementsAre(3, 2));
  EXPECT_THAT(lp.fields[1]->shape, ElementsAre(3, 2));
  EXPECT_THAT(lp.fields[2]->shape, ElementsAre(3));
  EXPECT_THAT(TensorValues<int64_t>(lp.fields[0]->data), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_THAT(TensorValues<float>(lp.fields[1]->data),
              ElementsAre(-1.0f, -2.0f, -3.0f, -4.0f, -5.0f, -6.0f));
  EXPECT_THAT(TensorValues<int64_t>(lp.fields[2]->data), ElementsAre(1, 1, 2));
}

TEST(EngineCoreOutputs, FinishLengthWithFinishedRequestsDecodes) {
  const std::string data = ReadFixture("outputs_finish_length");
  const EngineCoreOutputs out = MustDecode(data);
  EXPECT_EQ(out.engine_index, 0);
  EXPECT_EQ(out.wire_fields, 8u);
  EXPECT_EQ(out.wire_bytes, data.size());
  EXPECT_EQ(out.timestamp, 0.0);
  EXPECT_FALSE(out.scheduler_stats.has_value());
  EXPECT_FALSE(out.utility_output.has_value());
  EXPECT_FALSE(out.wave_complete.has_value());
  EXPECT_FALSE(out.start_wave.has_value());
  ASSERT_TRUE(out.finished_requests.has_value());
  EXPECT_THAT(Strings(*out.finished_requests), ElementsAre("req-1"));
  ASSERT_EQ(out.outputs.size(), 1u);
  const EngineCoreOutput& o = out.outputs[0];
  EXPECT_EQ(o.request_id, "req-1");
  EXPECT_TRUE(ViewsInto(o.request_id, data)) << "request_id is a view into frame 0";
  EXPECT_THAT(o.new_token_ids, ElementsAre(11, 12));
  ASSERT_TRUE(o.finish_reason.has_value());
  EXPECT_EQ(*o.finish_reason, FinishReason::kLength);
  EXPECT_STREQ(FinishReasonName(*o.finish_reason), "length");
  EXPECT_EQ(o.stop_reason.kind, StopReason::Kind::kNone);
  EXPECT_FALSE(o.new_logprobs.has_value());
  EXPECT_FALSE(o.new_prompt_logprobs_tensors.has_value());
  EXPECT_FALSE(o.has_pooling_output);
  EXPECT_FALSE(o.events.has_value());
  EXPECT_TRUE(o.kv_transfer_params.empty());
  EXPECT_FALSE(o.prefill_stats.has_value());
  EXPECT_FALSE(o.has_routed_experts);
  EXPECT_EQ(o.num_nans_in_logits, 0);
  EXPECT_TRUE(o.mm_cache_miss_hashes.empty());
  EXPECT_FALSE(o.has_new_sampling_mask);
  EXPECT_EQ(o.wire_fields, 16u);
}

TEST(EngineCoreOutputs, SamplingMaskIsNoticed) {
  const std::string data = ReadFixture("outputs_sampling_mask");
  const EngineCoreOutputs out = MustDecode(data);
  ASSERT_EQ(out.outputs.size(), 1u);
  EXPECT_EQ(out.outputs[0].request_id, "req-mask");
  EXPECT_TRUE(out.outputs[0].has_new_sampling_mask);
  ASSERT_TRUE(out.outputs[0].new_sampling_mask.has_value());
  const SamplingMaskLists& mask = *out.outputs[0].new_sampling_mask;
  EXPECT_EQ(mask.token_ids.dtype, "<i8");
  EXPECT_THAT(mask.token_ids.shape, ElementsAre(3));
  EXPECT_THAT(TensorValues<int64_t>(mask.token_ids.data), ElementsAre(1, 0, 1));
  EXPECT_THAT(TensorValues<int64_t>(mask.offsets.data), ElementsAre(0, 3));
  EXPECT_EQ(out.timestamp, 1.0);
}

TEST(EngineCoreOutputs, InlineLogprobTensorsKeepDtypeShapeAndBytes) {
  const std::string data = ReadFixture("logprobs_inline");
  const EngineCoreOutputs out = MustDecode(data);
  ASSERT_EQ(out.outputs.size(), 1u);
  const EngineCoreOutput& o = out.outputs[0];
  EXPECT_EQ(o.request_id, "req-lp");
  EXPECT_THAT(o.new_token_ids, ElementsAre(0, 100));
  ASSERT_TRUE(o.new_logprobs.has_value());
  ExpectGeneratedLogprobs(*o.new_logprobs, 2, 2);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(o.new_logprobs->fields[i]->aux_frame, -1) << "ext 3 data is inline";
    EXPECT_TRUE(ViewsInto(o.new_logprobs->fields[i]->data, data)) << "zero-copy view";
  }
  EXPECT_FALSE(o.new_prompt_logprobs_tensors.has_value());
  EXPECT_EQ(out.timestamp, 3.0);
}

TEST(EngineCoreOutputs, AuxFrameLogprobTensorsResolveToTheirFrames) {
  const Frames frames = ReadFramesFixture("logprobs_aux");
  ASSERT_EQ(frames.views.size(), 4u);
  const EngineCoreOutputs out = MustDecode(frames);
  ASSERT_EQ(out.outputs.size(), 1u);
  const EngineCoreOutput& o = out.outputs[0];
  ASSERT_TRUE(o.new_logprobs.has_value());
  ExpectGeneratedLogprobs(*o.new_logprobs, 2, 2);
  for (int i = 0; i < 3; ++i) {
    const Tensor& t = *o.new_logprobs->fields[i];
    EXPECT_EQ(t.aux_frame, i + 1);
    EXPECT_EQ(t.data.data(), frames.views[i + 1].data()) << "the aux frame itself, not a copy";
    EXPECT_EQ(t.data.size(), frames.views[i + 1].size());
  }
  EXPECT_EQ(out.wire_bytes, frames.views[0].size());
}

TEST(EngineCoreOutputs, MixedInlineAndAuxLogprobTensorsAtTheDefaultThreshold) {
  const Frames frames = ReadFramesFixture("logprobs_mixed");
  ASSERT_EQ(frames.views.size(), 3u);
  const EngineCoreOutputs out = MustDecode(frames);
  ASSERT_EQ(out.outputs.size(), 1u);
  const EngineCoreOutput& o = out.outputs[0];
  EXPECT_EQ(o.request_id, "req-big");
  EXPECT_EQ(o.new_token_ids.size(), 16u);
  ASSERT_TRUE(o.new_logprobs.has_value());
  ExpectGeneratedLogprobs(*o.new_logprobs, 16, 4);
  EXPECT_EQ(o.new_logprobs->fields[0]->aux_frame, 1);   // 640 bytes
  EXPECT_EQ(o.new_logprobs->fields[1]->aux_frame, 2);   // 320 bytes
  EXPECT_EQ(o.new_logprobs->fields[2]->aux_frame, -1);  // 128 bytes: inline
  EXPECT_EQ(o.new_logprobs->fields[0]->data.data(), frames.views[1].data());
  EXPECT_EQ(o.new_logprobs->fields[1]->data.data(), frames.views[2].data());
  EXPECT_TRUE(ViewsInto(o.new_logprobs->fields[2]->data, frames.views[0]));
}

TEST(EngineCoreOutputs, AuxIndexWithoutItsFrameIsMalformedLikePython) {
  const Frames frames = ReadFramesFixture("logprobs_aux");
  EngineCoreOutputs out;
  Status s = DecodeOne(frames.views[0], {}, &out);  // frame 0 alone: aux frame 1 is missing
  EXPECT_EQ(s.code(), StatusCode::kMalformed);
  EXPECT_EQ(s.detail(), StatusDetail::kAuxFrame) << s.ToString();
}

TEST(EngineCoreOutputs, InlinePromptLogprobTensorsUseTorchDtypeNames) {
  const std::string data = ReadFixture("prompt_logprobs_inline");
  const EngineCoreOutputs out = MustDecode(data);
  ASSERT_EQ(out.outputs.size(), 1u);
  const EngineCoreOutput& o = out.outputs[0];
  EXPECT_EQ(o.request_id, "req-plp");
  EXPECT_FALSE(o.new_logprobs.has_value());
  ASSERT_TRUE(o.new_prompt_logprobs_tensors.has_value());
  ExpectPromptLogprobs(*o.new_prompt_logprobs_tensors);
  for (const auto& f : o.new_prompt_logprobs_tensors->fields) EXPECT_EQ(f->aux_frame, -1);
}

TEST(EngineCoreOutputs, AuxFramePromptLogprobTensorsResolveToTheirFrames) {
  const Frames frames = ReadFramesFixture("prompt_logprobs_aux");
  ASSERT_EQ(frames.views.size(), 4u);
  const EngineCoreOutputs out = MustDecode(frames);
  ASSERT_EQ(out.outputs.size(), 1u);
  ASSERT_TRUE(out.outputs[0].new_prompt_logprobs_tensors.has_value());
  const Logprobs& lp = *out.outputs[0].new_prompt_logprobs_tensors;
  ExpectPromptLogprobs(lp);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(lp.fields[i]->aux_frame, i + 1);
    EXPECT_EQ(lp.fields[i]->data.data(), frames.views[i + 1].data());
  }
}

TEST(EngineCoreOutputs, PoolingOutputInAnAuxFrameUnderANineFieldEnvelope) {
  const Frames frames = ReadFramesFixture("pooling_aux_extended");
  ASSERT_EQ(frames.views.size(), 2u);
  const EngineCoreOutputs out = MustDecode(frames);
  EXPECT_EQ(out.wire_fields, 9u);
  EXPECT_EQ(out.timestamp, 6.5);
  ASSERT_EQ(out.outputs.size(), 1u);
  const EngineCoreOutput& o = out.outputs[0];
  EXPECT_EQ(o.request_id, "r-pool");
  EXPECT_TRUE(o.new_token_ids.empty());
  EXPECT_TRUE(o.has_pooling_output);
  ASSERT_TRUE(o.pooling_output.has_value());
  EXPECT_EQ(o.pooling_output->dtype, "<f4");
  EXPECT_THAT(o.pooling_output->shape, ElementsAre(64));
  EXPECT_EQ(o.pooling_output->aux_frame, 1);
  ASSERT_EQ(o.pooling_output->data.size(), 256u);
  const auto values = TensorValues<float>(o.pooling_output->data);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(values[i], 0.5f * static_cast<float>(i));
}

TEST(EngineCoreOutputs, ExtraTrailingFieldsAreIgnored) {
  const std::string data = ReadFixture("outputs_extended");
  const EngineCoreOutputs out = MustDecode(data);
  EXPECT_EQ(out.engine_index, 1);
  EXPECT_EQ(out.wire_fields, 10u) << "8 known + 2 extra positions on the wire";
  EXPECT_EQ(out.timestamp, 6.0);
  EXPECT_FALSE(out.scheduler_stats.has_value());
  EXPECT_FALSE(out.finished_requests.has_value());
  ASSERT_EQ(out.outputs.size(), 1u);
  const EngineCoreOutput& o = out.outputs[0];
  EXPECT_EQ(o.wire_fields, 19u) << "16 known + 3 extra positions on the wire";
  EXPECT_EQ(o.request_id, "req-ext");
  EXPECT_THAT(o.new_token_ids, ElementsAre(1, 2));
  ASSERT_TRUE(o.finish_reason.has_value());
  EXPECT_EQ(*o.finish_reason, FinishReason::kStop);
  EXPECT_EQ(o.stop_reason.kind, StopReason::Kind::kTokenId);
  EXPECT_EQ(o.stop_reason.token_id, 2);
  EXPECT_EQ(o.num_nans_in_logits, 0);
  EXPECT_FALSE(o.has_new_sampling_mask) << "position 15 is nil; the extras come after it";
}

// An engine far newer than every table: positions past the table's capacity (maps here)
// are stepped over, and the output after it decodes as usual.
TEST(EngineCoreOutputs, PositionsPastTheTablesCapacityAreSkipped) {
  const WireGeneration& g = NewestWireGeneration();
  constexpr uint8_t kPositions = 30;
  static_assert(kPositions > kMaxOutputPositions);
  std::string wide("\xdc\x00", 2);
  wide += static_cast<char>(kPositions);
  wide += std::string("\xa1") + "a" + "\x91\x07";  // request_id "a", new_token_ids [7]
  for (size_t p = 2; p < kPositions; ++p) {
    if (p >= g.output_count) {
      wide += "\x81\xa1k\xa1v";  // {"k": "v"}, unknown to every table
    } else if ((AcceptedTypes(g.output_field(p)) & kWireNil) != 0) {
      wide += "\xc0";
    } else {
      wide += std::string("\x00", 1);  // an int field that is never None
    }
  }
  // request_id "b", new_token_ids [8]: a short output, the rest defaults.
  const std::string usual = std::string("\x92\xa1") + "b" + "\x91\x08";
  std::string data("\x98\x00\x92", 3);  // engine 0, two outputs
  data += wide + usual;
  data += "\xc0\xcb\x3f\xf0";  // no stats, timestamp 1.0
  data += std::string(6, '\0');
  data += "\xc0\xc0\xc0\xc0";
  const EngineCoreOutputs out = MustDecode(data);
  ASSERT_EQ(out.outputs.size(), 2u);
  EXPECT_EQ(out.outputs[0].request_id, "a");
  EXPECT_EQ(out.outputs[0].wire_fields, kPositions);
  EXPECT_THAT(out.outputs[0].new_token_ids, ElementsAre(7));
  EXPECT_EQ(out.outputs[1].request_id, "b");
  EXPECT_THAT(out.outputs[1].new_token_ids, ElementsAre(8));
  EXPECT_EQ(out.timestamp, 1.0);
}

TEST(EngineCoreOutputs, ShortEnvelopeAndShortOutputTakeDefaults) {
  const std::string data = ReadFixture("envelope_short");
  const EngineCoreOutputs out = MustDecode(data);
  EXPECT_EQ(out.wire_fields, 2u);
  EXPECT_EQ(out.engine_index, 3);
  EXPECT_EQ(out.timestamp, 0.0);
  EXPECT_FALSE(out.scheduler_stats.has_value());
  EXPECT_FALSE(out.utility_output.has_value());
  EXPECT_FALSE(out.finished_requests.has_value());
  EXPECT_FALSE(out.wave_complete.has_value());
  EXPECT_FALSE(out.start_wave.has_value());
  ASSERT_EQ(out.outputs.size(), 1u);
  const EngineCoreOutput& o = out.outputs[0];
  EXPECT_EQ(o.wire_fields, 2u);
  EXPECT_EQ(o.request_id, "r-short");
  EXPECT_THAT(o.new_token_ids, ElementsAre(7));
  EXPECT_FALSE(o.finish_reason.has_value());
  EXPECT_EQ(o.stop_reason.kind, StopReason::Kind::kNone);
  EXPECT_FALSE(o.events.has_value());
  EXPECT_FALSE(o.prefill_stats.has_value());
  EXPECT_EQ(o.num_nans_in_logits, 0);
  EXPECT_TRUE(o.mm_cache_miss_hashes.empty());
}

TEST(EngineCoreOutputs, EmptyEnvelopeTakesEveryDefault) {
  const std::string empty_array("\x90", 1);
  EngineCoreOutputs out;
  Status s = DecodeOne(empty_array, {}, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out.wire_fields, 0u);
  EXPECT_EQ(out.engine_index, 0);
  EXPECT_TRUE(out.outputs.empty());
  EXPECT_FALSE(out.scheduler_stats.has_value());
  EXPECT_EQ(out.wire_bytes, 1u);
}

// docs/wire_format.md "Worked example": vLLM's example message, 644 bytes.
TEST(EngineCoreOutputs, ReferenceExampleDecodes) {
  const std::string data = ReadFixture("reference_example");
  ASSERT_EQ(data.size(), 644u);
  ASSERT_EQ(data.substr(0, 12), std::string("\x98\x00\x91\xdc\x00\x10\xa2r1\x91\x2a\xc0", 12));
  const EngineCoreOutputs out = MustDecode(data);
  EXPECT_EQ(out.engine_index, 0);
  EXPECT_EQ(out.timestamp, 2.0);
  EXPECT_EQ(out.wire_bytes, 644u);
  ASSERT_EQ(out.outputs.size(), 1u);
  const EngineCoreOutput& o = out.outputs[0];
  EXPECT_EQ(o.request_id, "r1");
  EXPECT_THAT(o.new_token_ids, ElementsAre(42));
  ASSERT_TRUE(o.events.has_value());
  ASSERT_EQ(o.events->size(), 2u);
  EXPECT_EQ((*o.events)[0].type, EventType::kQueued);
  EXPECT_EQ((*o.events)[0].timestamp, 1.5);
  EXPECT_EQ((*o.events)[1].type, EventType::kScheduled);
  EXPECT_EQ((*o.events)[1].timestamp, 1.75);
  ASSERT_TRUE(o.prefill_stats.has_value());
  EXPECT_EQ(o.prefill_stats->num_prompt_tokens, 7);
  EXPECT_EQ(o.prefill_stats->num_computed_tokens, 7);
  EXPECT_EQ(o.prefill_stats->num_cached_tokens, 0);
  EXPECT_EQ(o.prefill_stats->num_cache_creation_tokens, 0);
  ASSERT_TRUE(out.scheduler_stats.has_value());
  const SchedulerStats& s = *out.scheduler_stats;
  EXPECT_EQ(s.num_running_reqs, 1);
  EXPECT_EQ(s.num_waiting_reqs, 0);
  EXPECT_EQ(s.kv_cache_usage, 0.25);
  EXPECT_FALSE(s.iteration_details.has_value());
  EXPECT_EQ(s.prefix_cache_stats.queries, 0);
  EXPECT_TRUE(s.prefix_cache_stats.hits_by_source.empty());
  EXPECT_FALSE(s.connector_prefix_cache_stats.has_value());
  EXPECT_TRUE(s.kv_cache_eviction_events.empty());
  EXPECT_FALSE(s.spec_decoding_stats.has_value());
  EXPECT_FALSE(s.kv_connector_stats.has_value());
  EXPECT_TRUE(s.waiting_lora_adapters.empty());
  EXPECT_TRUE(s.running_lora_adapters.empty());
  EXPECT_FALSE(s.cudagraph_stats.has_value());
  EXPECT_FALSE(s.perf_stats.has_value());
  EXPECT_FALSE(s.sleep_state.has_value());
  EXPECT_FALSE(s.sleep_state_only);
}

TEST(EngineCoreOutputs, EventsKeepTypeTimestampAndOrder) {
  const std::string data = ReadFixture("events");
  const EngineCoreOutputs out = MustDecode(data);
  ASSERT_EQ(out.outputs.size(), 2u);
  const EngineCoreOutput& ev = out.outputs[0];
  EXPECT_EQ(ev.request_id, "r-ev");
  ASSERT_TRUE(ev.events.has_value());
  ASSERT_EQ(ev.events->size(), 4u);
  const EventType types[] = {EventType::kQueued, EventType::kScheduled, EventType::kPreempted,
                             EventType::kScheduled};
  const double stamps[] = {1.0, 1.5, 2.25, 3.0};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*ev.events)[i].type, types[i]) << i;
    EXPECT_EQ((*ev.events)[i].timestamp, stamps[i]) << i;
  }
  EXPECT_EQ(out.outputs[1].request_id, "r-none");
  EXPECT_FALSE(out.outputs[1].events.has_value()) << "nil events stay absent, not empty";
  EXPECT_EQ(out.timestamp, 3.5);
}

TEST(EngineCoreOutputs, EveryFinishReasonAndBothStopReasonKindsDecode) {
  const std::string data = ReadFixture("finish_reasons");
  const EngineCoreOutputs out = MustDecode(data);
  ASSERT_EQ(out.outputs.size(), 5u);
  const FinishReason reasons[] = {FinishReason::kStop, FinishReason::kLength, FinishReason::kAbort,
                                  FinishReason::kError, FinishReason::kRepetition};
  const char* names[] = {"stop", "length", "abort", "error", "repetition"};
  for (size_t i = 0; i < 5; ++i) {
    const EngineCoreOutput& o = out.outputs[i];
    EXPECT_EQ(o.request_id, "f" + std::to_string(i));
    EXPECT_THAT(o.new_token_ids, ElementsAre(static_cast<int64_t>(i)));
    ASSERT_TRUE(o.finish_reason.has_value()) << i;
    EXPECT_EQ(*o.finish_reason, reasons[i]);
    EXPECT_STREQ(FinishReasonName(*o.finish_reason), names[i]);
  }
  EXPECT_EQ(out.outputs[0].stop_reason.kind, StopReason::Kind::kTokenId);
  EXPECT_EQ(out.outputs[0].stop_reason.token_id, 128001);
  EXPECT_EQ(out.outputs[1].stop_reason.kind, StopReason::Kind::kString);
  EXPECT_EQ(out.outputs[1].stop_reason.text, "</s>");
  for (size_t i = 2; i < 5; ++i)
    EXPECT_EQ(out.outputs[i].stop_reason.kind, StopReason::Kind::kNone);
  ASSERT_TRUE(out.finished_requests.has_value());
  EXPECT_THAT(Strings(*out.finished_requests), ElementsAre("f0", "f1", "f2", "f3", "f4"));
}

TEST(EngineCoreOutputs, EveryOutputPositionDecodes) {
  const std::string data = ReadFixture("output_all_fields");
  const EngineCoreOutputs out = MustDecode(data);
  ASSERT_EQ(out.outputs.size(), 1u);
  const EngineCoreOutput& o = out.outputs[0];
  EXPECT_EQ(o.wire_fields, 16u);
  EXPECT_EQ(o.request_id, "r-all");
  EXPECT_THAT(o.new_token_ids, ElementsAre(3, 4, 5));
  EXPECT_TRUE(o.has_pooling_output);
  ASSERT_TRUE(o.pooling_output.has_value());
  EXPECT_EQ(o.pooling_output->dtype, "<f4");
  EXPECT_THAT(o.pooling_output->shape, ElementsAre(2));
  EXPECT_THAT(TensorValues<float>(o.pooling_output->data), ElementsAre(0.5f, -1.5f));
  ASSERT_TRUE(o.finish_reason.has_value());
  EXPECT_EQ(*o.finish_reason, FinishReason::kAbort);
  ASSERT_TRUE(o.events.has_value());
  ASSERT_EQ(o.events->size(), 1u);
  EXPECT_EQ((*o.events)[0].type, EventType::kQueued);
  EXPECT_EQ((*o.events)[0].timestamp, 0.5);
  EXPECT_THAT(MapKeys(o.kv_transfer_params), ElementsAre("do_remote_prefill", "remote_block_ids"));
  EXPECT_TRUE(ViewsInto(o.kv_transfer_params, data));
  EXPECT_THAT(MapKeys(o.ec_transfer_params), ElementsAre("ec"));
  EXPECT_THAT(MapKeys(o.trace_headers), ElementsAre("traceparent"));
  ASSERT_TRUE(o.prefill_stats.has_value());
  EXPECT_EQ(o.prefill_stats->num_prompt_tokens, 100);
  EXPECT_EQ(o.prefill_stats->num_computed_tokens, 60);
  EXPECT_EQ(o.prefill_stats->num_cached_tokens, 40);
  EXPECT_EQ(o.prefill_stats->num_local_cached_tokens, 30);
  EXPECT_EQ(o.prefill_stats->num_external_cached_tokens, 10);
  EXPECT_EQ(o.prefill_stats->num_cache_creation_tokens, 5);
  EXPECT_TRUE(o.has_routed_experts);
  ASSERT_TRUE(o.routed_experts.has_value());
  EXPECT_EQ(o.routed_experts->dtype, "<i4");
  EXPECT_THAT(o.routed_experts->shape, ElementsAre(2, 2));
  EXPECT_THAT(TensorValues<int32_t>(o.routed_experts->data), ElementsAre(0, 3, 1, 2));
  EXPECT_TRUE(ViewsInto(o.routed_experts->data, data));
  EXPECT_EQ(o.num_nans_in_logits, 3);
  EXPECT_THAT(Strings(o.mm_cache_miss_hashes), ElementsAre("h1", "h2"));
  EXPECT_FALSE(o.has_new_sampling_mask);
  EXPECT_EQ(out.timestamp, 5.5);
}

TEST(EngineCoreOutputs, FloatFieldsAcceptInts) {
  const std::string data = ReadFixture("ints_for_floats");
  const EngineCoreOutputs out = MustDecode(data);
  EXPECT_EQ(out.timestamp, 5.0);
  ASSERT_EQ(out.outputs.size(), 1u);
  ASSERT_TRUE(out.outputs[0].events.has_value());
  ASSERT_EQ(out.outputs[0].events->size(), 1u);
  EXPECT_EQ((*out.outputs[0].events)[0].timestamp, 2.0);
  ASSERT_TRUE(out.scheduler_stats.has_value());
  const SchedulerStats& s = *out.scheduler_stats;
  EXPECT_EQ(s.kv_cache_usage, 1.0);
  ASSERT_TRUE(s.iteration_details.has_value());
  EXPECT_EQ(s.iteration_details->elapsed_ms, 4.0);
  ASSERT_EQ(s.kv_cache_eviction_events.size(), 1u);
  EXPECT_EQ(s.kv_cache_eviction_events[0].lifetime_seconds, 3.0);
  EXPECT_EQ(s.kv_cache_eviction_events[0].idle_seconds, 0.0);
  EXPECT_THAT(s.kv_cache_eviction_events[0].reuse_gaps_seconds, ElementsAre(1.0, 2.0));
}

TEST(EngineCoreOutputs, UtilityCallIdUint64MaxIsKeptUnsigned) {
  const std::string data = ReadFixture("utility_call_id_u64_max");
  const EngineCoreOutputs out = MustDecode(data);
  EXPECT_TRUE(out.outputs.empty());
  EXPECT_EQ(out.timestamp, 9.0);
  ASSERT_TRUE(out.utility_output.has_value());
  const UtilityOutput& u = *out.utility_output;
  EXPECT_TRUE(u.call_id_is_u64);
  EXPECT_EQ(u.call_id_u64, std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(u.failure_message.has_value());
  // UtilityResult [nil, ["generate"]], kept raw.
  EXPECT_EQ(u.result, std::string("\x92\xc0\x91\xa8generate", 12));
}

TEST(EngineCoreOutputs, UtilityNegativeCallIdWithFailureMessage) {
  const std::string data = ReadFixture("utility_call_id_minus_one");
  const EngineCoreOutputs out = MustDecode(data);
  ASSERT_TRUE(out.utility_output.has_value());
  const UtilityOutput& u = *out.utility_output;
  EXPECT_FALSE(u.call_id_is_u64);
  EXPECT_EQ(u.call_id, -1);
  ASSERT_TRUE(u.failure_message.has_value());
  EXPECT_EQ(*u.failure_message, "boom");
  EXPECT_TRUE(u.result.empty()) << "nil result";
  EXPECT_EQ(out.timestamp, 9.5);
}

TEST(EngineCoreOutputs, WaveMessagesCarryTheirWave) {
  const std::string data = ReadFixture("wave_messages");
  const auto messages = SplitMessages(data);
  ASSERT_EQ(messages.size(), 2u);
  const EngineCoreOutputs complete = MustDecode(messages[0]);
  EXPECT_EQ(complete.engine_index, 1);
  ASSERT_TRUE(complete.wave_complete.has_value());
  EXPECT_EQ(*complete.wave_complete, 5);
  EXPECT_FALSE(complete.start_wave.has_value());
  const EngineCoreOutputs start = MustDecode(messages[1]);
  ASSERT_TRUE(start.start_wave.has_value());
  EXPECT_EQ(*start.start_wave, 6);
  EXPECT_FALSE(start.wave_complete.has_value());
  EXPECT_EQ(start.timestamp, 2.0);
}

TEST(EngineCoreOutputs, ConcatenatedMessagesDecodeOneAtATime) {
  const std::string data = ReadFixture("stream_dp_engines");
  const auto messages = SplitMessages(data);
  ASSERT_EQ(messages.size(), 3u);
  for (size_t e = 0; e < 3; ++e) {
    const EngineCoreOutputs out = MustDecode(messages[e]);
    EXPECT_EQ(out.engine_index, static_cast<int64_t>(e));
    ASSERT_TRUE(out.scheduler_stats.has_value());
    EXPECT_EQ(out.scheduler_stats->num_running_reqs, static_cast<int64_t>(10 + e));
    EXPECT_TRUE(out.outputs.empty());
  }
  EngineCoreOutputs all;
  EXPECT_FALSE(DecodeOne(data, {}, &all).ok()) << "frame 0 holds exactly one message";
}

TEST(EngineCoreOutputs, ReusingTheOutputClearsThePreviousMessage) {
  EngineCoreOutputs out;
  const std::string full = ReadFixture("scheduler_stats_full");
  ASSERT_TRUE(DecodeOne(full, {}, &out).ok());
  ASSERT_TRUE(out.scheduler_stats.has_value());
  const std::string finish = ReadFixture("outputs_finish_length");
  ASSERT_TRUE(DecodeOne(finish, {}, &out).ok());
  EXPECT_FALSE(out.scheduler_stats.has_value());
  EXPECT_EQ(out.engine_index, 0);
  EXPECT_EQ(out.wire_bytes, finish.size());
  ASSERT_EQ(out.outputs.size(), 1u);
  const std::string short_envelope = ReadFixture("envelope_short");
  ASSERT_TRUE(DecodeOne(short_envelope, {}, &out).ok());
  EXPECT_EQ(out.engine_index, 3);
  EXPECT_FALSE(out.finished_requests.has_value());
  ASSERT_EQ(out.outputs.size(), 1u);
  EXPECT_FALSE(out.outputs[0].finish_reason.has_value()) << "nothing left from the last output";
}

TEST(EngineCoreOutputs, EngineCoreDeadIsRecognisedOnlyAlone) {
  std::string_view dead[] = {"ENGINE_CORE_DEAD"};
  EXPECT_TRUE(IsEngineCoreDead(dead));
  std::string_view with_aux[] = {"ENGINE_CORE_DEAD", "x"};
  EXPECT_FALSE(IsEngineCoreDead(with_aux));
  std::string_view other[] = {"ENGINE_CORE_DEAF"};
  EXPECT_FALSE(IsEngineCoreDead(other));
}

TEST(EngineCoreOutputs, NamesOfEnums) {
  EXPECT_STREQ(FinishReasonName(FinishReason::kRepetition), "repetition");
}

}  // namespace
}  // namespace vmetrics
