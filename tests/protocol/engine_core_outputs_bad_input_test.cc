// SPDX-License-Identifier: Apache-2.0
// Tests of src/protocol/engine_core_outputs.cc on bad input: every fixture cut at every byte
// length, hostile 32-bit lengths (an error, and no allocation sized by them), refused pickle
// ext types, the wrong msgpack type where a value is required, and byte offsets in errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "alloc_tracker.h"
#include "fixture_util.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics {
namespace {

using ::vmetrics::testing::DecodeOne;
using ::vmetrics::testing::FixtureNames;
using ::vmetrics::testing::Frames;
using ::vmetrics::testing::ReadFixture;
using ::vmetrics::testing::ReadFramesFixture;
using ::vmetrics::testing::ScopedAllocTracker;

// No allocation made while decoding a hostile message may be sized by its lengths. The
// largest fixture-driven allocation is a few KB; 1 MiB leaves room and still catches a
// reserve(0xffffffff) of anything.
constexpr size_t kMaxSaneAllocation = 1 << 20;

// The cut points tried for a frame of `size` bytes: all of them for small frames. Large ones
// (the 100 000-deep nesting) get the first 1024, the last 64 and 64 spread in between: each cut
// costs a decode of its length, and every cut would take minutes under ASan.
std::vector<size_t> CutPoints(size_t size) {
  std::vector<size_t> cuts;
  if (size <= 8192) {
    for (size_t i = 0; i < size; ++i) cuts.push_back(i);
    return cuts;
  }
  for (size_t i = 0; i < 1024; ++i) cuts.push_back(i);
  for (size_t i = 1; i < 64; ++i) cuts.push_back(1024 + (size - 1088) * i / 64);
  for (size_t i = size - 64; i < size; ++i) cuts.push_back(i);
  return cuts;
}

class TruncatedSingleFrameFixture : public ::testing::TestWithParam<std::string> {};

// A strict prefix of one message is never a message; a prefix of concatenated messages is one
// only when it ends exactly after the first message. Either way decode never crashes.
TEST_P(TruncatedSingleFrameFixture, EveryPrefixFailsOrIsExactlyTheFirstMessage) {
  const std::string data = ReadFixture(GetParam());
  ASSERT_FALSE(data.empty());
  size_t first = data.size();
  const bool first_is_msgpack = protocol::ValidateOne(data, &first).ok();
  for (size_t cut : CutPoints(data.size())) {
    // A copy of exactly `cut` bytes, so ASan catches a read past the end.
    const std::string prefix = data.substr(0, cut);
    EngineCoreOutputs out;
    Status s = DecodeOne(prefix, {}, &out);
    if (s.ok()) {
      EXPECT_TRUE(first_is_msgpack && cut == first)
          << GetParam() << ": a " << cut << "-byte prefix of a " << data.size()
          << "-byte file decoded";
      EXPECT_EQ(out.wire_bytes, cut);
    } else {
      EXPECT_NE(s.code(), StatusCode::kOk);
      EXPECT_LE(s.offset(), static_cast<int64_t>(cut)) << "an error offset inside the input";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TruncatedSingleFrameFixture,
                         ::testing::ValuesIn(FixtureNames(".msgpack")),
                         [](const ::testing::TestParamInfo<std::string>& fixture) {
                           return fixture.param;
                         });

class TruncatedMultiFrameFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(TruncatedMultiFrameFixture, EveryPrefixOfFrameZeroFailsWithTheAuxFramesIntact) {
  const Frames frames = ReadFramesFixture(GetParam());
  ASSERT_GE(frames.views.size(), 2u);
  const std::string_view frame0 = frames.views[0];
  for (size_t cut : CutPoints(frame0.size())) {
    const std::string prefix(frame0.substr(0, cut));
    std::vector<std::string_view> cut_frames = frames.views;
    cut_frames[0] = prefix;
    EngineCoreOutputs out;
    EXPECT_FALSE(DecodeEngineCoreOutputs(cut_frames, {}, &out).ok())
        << GetParam() << ": frame 0 cut at " << cut << " of " << frame0.size();
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TruncatedMultiFrameFixture,
                         ::testing::ValuesIn(FixtureNames(".frames")),
                         [](const ::testing::TestParamInfo<std::string>& fixture) {
                           return fixture.param;
                         });

Status DecodeFixtureStatus(std::string_view name, size_t* largest_allocation = nullptr) {
  const std::string data = ReadFixture(name);
  EngineCoreOutputs out;
  ScopedAllocTracker tracker;
  Status s = DecodeOne(data, {}, &out);
  if (largest_allocation != nullptr) *largest_allocation = tracker.largest();
  return s;
}

// Decodes a fixture whose bad part is skipped (salvaged): the message decodes, and `out` says
// what was skipped.
Status DecodeFixtureSalvaged(std::string_view name, EngineCoreOutputs* out,
                             size_t* largest_allocation = nullptr) {
  const std::string data = ReadFixture(name);
  ScopedAllocTracker tracker;
  Status s = DecodeOne(data, {}, out);
  if (largest_allocation != nullptr) *largest_allocation = tracker.largest();
  return s;
}

void ExpectHostileLengthRefused(std::string_view name, int64_t offset) {
  size_t largest = 0;
  Status s = DecodeFixtureStatus(name, &largest);
  EXPECT_FALSE(s.ok()) << name;
  EXPECT_TRUE(s.code() == StatusCode::kMalformed || s.code() == StatusCode::kLimitExceeded)
      << name << ": " << s.ToString();
  EXPECT_EQ(s.offset(), offset) << name << ": " << s.ToString();
  EXPECT_LT(largest, kMaxSaneAllocation) << name << ": an allocation sized by a hostile length";
}

TEST(EngineCoreOutputsBadInput, Array32ClaimingFourBillionElementsIsRefusedWithoutAllocating) {
  ExpectHostileLengthRefused("hostile_array32_huge", 2);
}

TEST(EngineCoreOutputsBadInput, Map32ClaimingFourBillionPairsIsRefusedWithoutAllocating) {
  ExpectHostileLengthRefused("hostile_map32_huge", 3);
}

TEST(EngineCoreOutputsBadInput, Str32ClaimingFourGigabytesIsRefusedWithoutAllocating) {
  ExpectHostileLengthRefused("hostile_str32_huge", 4);
}

TEST(EngineCoreOutputsBadInput, Bin32ClaimingFourGigabytesIsRefusedWithoutAllocating) {
  ExpectHostileLengthRefused("hostile_bin32_huge", 13);
}

TEST(EngineCoreOutputsBadInput, Ext32ClaimingFourGigabytesIsRefusedWithoutAllocating) {
  ExpectHostileLengthRefused("hostile_ext32_huge", 16);
}

// Fills the stack below the caller with 0xff, so a local the decoder reads before writing
// (an uninitialized count) holds a huge value instead of whatever the last call left there.
[[gnu::noinline]] void DirtyTheStack() {
  volatile unsigned char junk[1 << 16];
  for (size_t i = 0; i < sizeof junk; ++i) junk[i] = 0xff;
}

// Decodes with a dirtied stack; an escaping exception (bad_alloc, length_error) is a failure.
Status DecodeOnDirtyStack(const std::string& data, size_t* largest) {
  EngineCoreOutputs out;
  DirtyTheStack();
  ScopedAllocTracker tracker;
  try {
    Status s = DecodeOne(data, {}, &out);
    *largest = tracker.largest();
    return s;
  } catch (const std::exception& e) {
    *largest = tracker.largest();
    ADD_FAILURE() << "decode threw: " << e.what();
    return Status::Malformed("threw");
  }
}

TEST(EngineCoreOutputsBadInput, FinishedRequestsArray32ClaimingFourBillionIdsIsRefused) {
  ExpectHostileLengthRefused("hostile_finished_requests_array32_huge", 14);
  size_t largest = 0;
  Status s = DecodeOnDirtyStack(ReadFixture("hostile_finished_requests_array32_huge"), &largest);
  EXPECT_EQ(s.offset(), 14) << s.ToString();
  EXPECT_LT(largest, kMaxSaneAllocation) << "a reserve() sized by a count that was never read";
}

// A finished_requests that is not an array is skipped and counted; the message still decodes.
TEST(EngineCoreOutputsBadInput, FinishedRequestsThatIsAStrIsSkippedWithoutAllocating) {
  size_t largest = 0;
  EngineCoreOutputs out;
  Status s = DecodeFixtureSalvaged("hostile_finished_requests_str", &out, &largest);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out.skipped.finished_requests, 1u);
  EXPECT_FALSE(out.finished_requests.has_value());
  EXPECT_LT(largest, kMaxSaneAllocation) << "a reserve() sized by a count that was never read";
}

// The outputs count passes the header check (each element takes at least one byte), yet no
// output follows: the first element is nil. Sizing the vector by the claim allocates
// count * sizeof(EngineCoreOutput), hundreds of times the input, for nothing.
TEST(EngineCoreOutputsBadInput, OutputsCountClaimDoesNotSizeAnAllocation) {
  const std::string data = ReadFixture("hostile_outputs_count_claim");
  size_t largest = 0;
  EngineCoreOutputs out;
  Status s = DecodeFixtureSalvaged("hostile_outputs_count_claim", &out, &largest);
  // Every claimed element that is not an output is skipped and counted, one by one.
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(out.outputs.empty());
  EXPECT_GT(out.skipped.outputs, 0u);
  EXPECT_LT(largest, kMaxSaneAllocation)
      << "decoding " << data.size() << " bytes allocated " << largest << " bytes at once";
}

TEST(EngineCoreOutputsBadInput, EvictionEventsCountClaimDoesNotSizeAnAllocation) {
  const std::string data = ReadFixture("hostile_eviction_events_count_claim");
  EngineCoreOutputs out;
  size_t largest = 0;
  Status s;
  {
    ScopedAllocTracker tracker;
    s = DecodeOne(data, {}, &out);
    largest = tracker.largest();
  }
  ASSERT_TRUE(s.ok()) << "a wrong-typed stats key is skipped: " << s.ToString();
  ASSERT_TRUE(out.scheduler_stats.has_value());
  EXPECT_EQ(out.scheduler_stats->num_running_reqs, 2);
  EXPECT_TRUE(out.scheduler_stats->kv_cache_eviction_events.empty());
  EXPECT_LT(largest, kMaxSaneAllocation)
      << "decoding " << data.size() << " bytes allocated " << largest << " bytes at once";
}

TEST(EngineCoreOutputsBadInput, PickleExtInsideAnOutputIsUnsupported) {
  Status s = DecodeFixtureStatus("hostile_pickle_ext");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.ToString();
}

TEST(EngineCoreOutputsBadInput, CloudpickleExtInAUtilityResultIsUnsupported) {
  Status s = DecodeFixtureStatus("hostile_cloudpickle_utility");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.ToString();
}

TEST(EngineCoreOutputsBadInput, UnknownExtTypeIsUnsupported) {
  Status s = DecodeFixtureStatus("hostile_unknown_ext");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.ToString();
}

TEST(EngineCoreOutputsBadInput, ByteC1IsMalformedAtItsOffset) {
  Status s = DecodeFixtureStatus("hostile_c1");
  EXPECT_EQ(s.code(), StatusCode::kMalformed) << s.ToString();
  EXPECT_EQ(s.offset(), 2);
}

TEST(EngineCoreOutputsBadInput, EnvelopeThatIsAMapIsMalformed) {
  Status s = DecodeFixtureStatus("hostile_envelope_map");
  EXPECT_EQ(s.code(), StatusCode::kMalformed) << s.ToString();
  EXPECT_EQ(s.offset(), 0);
}

// A malformed EngineCoreOutput entry is skipped and counted (part "output"); the message
// decodes. A reporter hears of it with the entry's offset.
void ExpectOutputSkipped(std::string_view name, int64_t offset = -1) {
  const std::string data = ReadFixture(name);
  testing::RecordingReporter reporter;
  DecodeContext ctx;
  ctx.reporter = &reporter;
  EngineCoreOutputs out;
  Status s = DecodeOne(data, ctx, &out);
  ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
  EXPECT_EQ(out.skipped.outputs, 1u) << name;
  EXPECT_TRUE(out.outputs.empty()) << name;
  ASSERT_EQ(reporter.problems.size(), 1u) << name;
  EXPECT_NE(reporter.problems[0].what.find("skipped, the rest of the message is recorded"),
            std::string::npos)
      << reporter.problems[0].what;
  if (offset >= 0) {
    EXPECT_EQ(reporter.problems[0].offset, offset) << name;
  }
}

TEST(EngineCoreOutputsBadInput, OutputWithoutItsRequiredTokenIdsIsSkipped) {
  ExpectOutputSkipped("hostile_output_one_position");
}

TEST(EngineCoreOutputsBadInput, RequestIdThatIsAnIntIsSkippedAndReportedAtItsOffset) {
  ExpectOutputSkipped("hostile_request_id_int", 4);
}

TEST(EngineCoreOutputsBadInput, FinishReasonThatIsAStrIsSkipped) {
  ExpectOutputSkipped("hostile_finish_reason_str");
}

TEST(EngineCoreOutputsBadInput, FloatTokenIdIsSkipped) {
  ExpectOutputSkipped("hostile_token_float");
}

TEST(EngineCoreOutputsBadInput, DeepNestingInAnIgnoredPositionDoesNotCrash) {
  const std::string data = ReadFixture("hostile_deep_nesting");
  EngineCoreOutputs out;
  Status s = DecodeOne(data, {}, &out);
  // Skipping is iterative, so the extra position is simply ignored; a depth limit would be
  // acceptable too, as long as it is a clean LimitExceeded.
  EXPECT_TRUE(s.ok() || s.code() == StatusCode::kLimitExceeded) << s.ToString();
  if (s.ok()) {
    EXPECT_EQ(out.wire_fields, 9u);
    EXPECT_TRUE(out.outputs.empty());
  }
}

TEST(EngineCoreOutputsBadInput, TrailingBytesAfterTheMessageFail) {
  std::string data = ReadFixture("reference_example");
  data.push_back('\xc0');
  EngineCoreOutputs out;
  Status s = DecodeOne(data, {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kMalformed) << s.ToString();
  EXPECT_EQ(s.offset(), 644);
}

TEST(EngineCoreOutputsBadInput, NoFramesIsAnError) {
  EngineCoreOutputs out;
  EXPECT_FALSE(DecodeEngineCoreOutputs({}, {}, &out).ok());
  std::string_view empty[] = {std::string_view{}};
  EXPECT_FALSE(DecodeEngineCoreOutputs(empty, {}, &out).ok());
}

TEST(EngineCoreOutputsBadInput, EngineCoreDeadIsNotAnEngineCoreOutputs) {
  EngineCoreOutputs out;
  std::string_view dead[] = {kEngineCoreDead};
  EXPECT_FALSE(DecodeEngineCoreOutputs(dead, {}, &out).ok())
      << "callers check IsEngineCoreDead first";
}

TEST(EngineCoreOutputsBadInput, ScalarWhereTheEnvelopeBelongsIsMalformed) {
  for (std::string_view frame :
       {std::string_view("\x05", 1), std::string_view("\xc0", 1), std::string_view("\xa1x", 2)}) {
    EngineCoreOutputs out;
    Status s = DecodeOne(frame, {}, &out);
    EXPECT_EQ(s.code(), StatusCode::kMalformed) << s.ToString();
  }
}

TEST(EngineCoreOutputsBadInput, FailedDecodeIsFollowedByAGoodOne) {
  EngineCoreOutputs out;
  const std::string hostile = ReadFixture("hostile_str32_huge");
  EXPECT_FALSE(DecodeOne(hostile, {}, &out).ok());
  const std::string good = ReadFixture("outputs_finish_length");
  ASSERT_TRUE(DecodeOne(good, {}, &out).ok());
  ASSERT_EQ(out.outputs.size(), 1u);
  EXPECT_EQ(out.outputs[0].request_id, "req-1");
}

// Every well-formed fixture decodes with a bounded peak allocation too (no reserve sized by a
// count larger than the input).
TEST(EngineCoreOutputsBadInput, NoFixtureAllocatesMoreThanItsSizeCanJustify) {
  for (const std::string& name : FixtureNames(".msgpack")) {
    const std::string data = ReadFixture(name);
    for (std::string_view message : ::vmetrics::testing::SplitMessagesLenient(data)) {
      EngineCoreOutputs out;
      ScopedAllocTracker tracker;
      (void)DecodeOne(message, {}, &out);
      EXPECT_LT(tracker.largest(), std::max<size_t>(64 * message.size(), 4096) + 65536) << name;
    }
  }
}

}  // namespace
}  // namespace vmetrics
