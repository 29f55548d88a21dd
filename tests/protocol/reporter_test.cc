// SPDX-License-Identifier: Apache-2.0
// Tests of src/protocol/reporter.cc: a problem is logged once whatever message and byte it
// recurs at, every occurrence is counted, and hostile input that makes every problem different
// cannot grow the reporter without bound.
#include "vmetrics/reporter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vmetrics {
namespace {

TEST(LoggingReporter, AProblemIsLoggedOnceWhateverMessageAndOffsetItRecursAt) {
  std::vector<std::string> lines;
  LoggingReporter reporter([&](const std::string& line) { lines.push_back(line); });
  for (uint64_t m = 1; m <= 100; ++m) {
    Problem p;
    p.message_number = m;
    p.offset = static_cast<int64_t>(m * 7);
    p.what = "message skipped: malformed: expected array";
    reporter.Report(p);
  }
  Problem other;
  other.connector = "NixlConnector";
  other.key = "post_duration";
  other.what = "expected a list of numbers; field skipped";
  reporter.Report(other);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "message 1, byte 7: message skipped: malformed: expected array");
  EXPECT_EQ(lines[1],
            "connector NixlConnector, key 'post_duration': expected a list of numbers; field "
            "skipped");
  EXPECT_EQ(reporter.count(), 101u);
}

TEST(LoggingReporter, PastTheLimitNewProblemsAreCountedWithOneNoticeAndKnownOnesStayQuiet) {
  std::vector<std::string> lines;
  LoggingReporter reporter([&](const std::string& line) { lines.push_back(line); });
  const size_t total = LoggingReporter::kMaxDistinct + 500;
  for (size_t i = 0; i < total; ++i) {
    Problem p;
    p.what = "unknown FinishReason " + std::to_string(i);
    reporter.Report(p);
  }
  ASSERT_EQ(lines.size(), LoggingReporter::kMaxDistinct + 1);
  EXPECT_EQ(lines.back(),
            "1000 distinct problems logged; further new ones are counted, not logged");
  Problem known;
  known.what = "unknown FinishReason 0";
  reporter.Report(known);
  EXPECT_EQ(lines.size(), LoggingReporter::kMaxDistinct + 1) << "already logged: quiet";
  EXPECT_EQ(reporter.count(), total + 1);
}

}  // namespace
}  // namespace vmetrics
