// SPDX-License-Identifier: Apache-2.0
// Process logging (src/frontend/log.cc): a message quoting hostile wire bytes comes out as one
// line, without control characters, and as valid JSON in the JSON format (nlohmann's dump
// would otherwise throw on invalid UTF-8 and end the process).
#include "vmetrics/frontend/log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace vmetrics::frontend {
namespace {

constexpr const char kHostile[] = "connector 'Nixl\xfe\n# forged\x1b[2J': refused";

// Other tests in this binary log from many servers: each test here starts with a full budget.
void FreshLog(LogFormat format) {
  SetLogLineBudget(kLogLinesPerSecond, kLogLineBurst);
  SetLogFormat(format);
}

TEST(Log, TextLinesEscapeControlCharactersAndInvalidBytes) {
  FreshLog(LogFormat::kText);
  testing::internal::CaptureStderr();
  LogWarning(kHostile);
  const std::string out = testing::internal::GetCapturedStderr();
  // After the timestamp ("2026-12-01T18:40:30.123Z "), which log_test does not pin.
  const size_t start = out.find("vmetrics: ");
  ASSERT_NE(start, std::string::npos) << out;
  EXPECT_EQ(out.substr(start),
            "vmetrics: warning: connector 'Nixl\\xfe\\x0a# forged\\x1b[2J': refused\n");
}

TEST(Log, JsonLinesStayValidJson) {
  FreshLog(LogFormat::kJson);
  testing::internal::CaptureStderr();
  LogError(kHostile);
  const std::string out = testing::internal::GetCapturedStderr();
  SetLogFormat(LogFormat::kText);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
  const nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["level"], "error");
  EXPECT_EQ(j["msg"], "connector 'Nixl\\xfe\\x0a# forged\\x1b[2J': refused");
}

TEST(Log, ALongMessageIsCutAndSaysHowMuchWasLeftOut) {
  FreshLog(LogFormat::kText);
  // 1,023 ASCII bytes, then "é" (2 bytes) across the cut, then 100 kB more.
  const std::string raw =
      std::string(kMaxLogMessageBytes - 1, 'a') + "\xc3\xa9" + std::string(100'000, 'b');
  testing::internal::CaptureStderr();
  LogWarning(raw);
  const std::string out = testing::internal::GetCapturedStderr();
  const size_t start = out.find("vmetrics: warning: ");
  ASSERT_NE(start, std::string::npos) << out.substr(0, 200);
  // Cut before the "é", never inside it.
  EXPECT_EQ(out.substr(start), "vmetrics: warning: " + std::string(kMaxLogMessageBytes - 1, 'a') +
                                   "... (100002 more bytes)\n");
}

TEST(LineBudget, ABurstThenTheRateAndTheLinesLeftOutAreCounted) {
  using Clock = LineBudget::Clock;
  LineBudget budget(/*lines_per_second=*/2, /*burst=*/3);
  const Clock::time_point t0 = Clock::now();
  uint64_t left_out = 99;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(budget.Take(t0, &left_out)) << i;
    EXPECT_EQ(left_out, 0u);
  }
  // The burst is spent: the next lines in the same instant are refused and counted.
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(budget.Take(t0, &left_out));
  EXPECT_FALSE(budget.Take(t0 + std::chrono::milliseconds(400), &left_out)) << "0.8 of a line";
  // Later there is a line's worth: written, first saying six were left out.
  ASSERT_TRUE(budget.Take(t0 + std::chrono::milliseconds(600), &left_out));
  EXPECT_EQ(left_out, 6u);
  // An hour later, the burst again (not an hour's worth of lines).
  const Clock::time_point later = t0 + std::chrono::hours(1);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(budget.Take(later, &left_out)) << i;
    EXPECT_EQ(left_out, 0u);
  }
  EXPECT_FALSE(budget.Take(later, &left_out));
}

}  // namespace
}  // namespace vmetrics::frontend
