// SPDX-License-Identifier: Apache-2.0
// ErrorLog with a fake clock: each kind written once per interval, the rest counted.
#include "error_log.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace vmetrics::internal {
namespace {

using namespace std::chrono_literals;

struct Fixture {
  std::vector<std::string> lines;
  ErrorLog::Clock::time_point now{};
  ErrorLog log{[this](std::string_view line) { lines.emplace_back(line); }, 10s,
               [this] { return now; }};
};

TEST(ErrorLog, WritesTheFirstOfAKindAndCountsTheRest) {
  Fixture f;
  for (int i = 0; i < 5000; ++i) f.log.Log("bad request", "bad request " + std::to_string(i));
  f.log.Log("timeout", "timeout 1");
  EXPECT_EQ(f.lines, (std::vector<std::string>{"bad request 0", "timeout 1"}));

  f.now += 5s;
  f.log.Flush(/*all=*/false);  // the interval is not over: nothing yet
  EXPECT_EQ(f.lines.size(), 2u);

  f.now += 5s;
  f.log.Flush(/*all=*/false);
  ASSERT_EQ(f.lines.size(), 3u);
  EXPECT_EQ(f.lines[2], "bad request 0 (4999 more like this in the last 10 s)");

  // The next message of the kind opens a new interval and is written.
  f.log.Log("bad request", "bad request again");
  EXPECT_EQ(f.lines.back(), "bad request again");
  EXPECT_EQ(f.log.lines_written(), 4u);
}

TEST(ErrorLog, AMessageAfterTheIntervalWritesTheCountFirst) {
  Fixture f;
  f.log.Log("k", "one");
  f.log.Log("k", "two");
  f.now += 11s;
  f.log.Log("k", "three");
  EXPECT_EQ(f.lines,
            (std::vector<std::string>{"one", "one (1 more like this in the last 10 s)", "three"}));
}

TEST(ErrorLog, FlushAllWritesEveryCount) {
  Fixture f;
  f.log.Log("k", "one");
  f.log.Log("k", "two");
  f.log.Flush(/*all=*/true);
  EXPECT_EQ(f.lines.back(), "one (1 more like this in the last 10 s)");
}

TEST(ErrorLog, ZeroIntervalWritesEveryMessage) {
  std::vector<std::string> lines;
  ErrorLog log([&](std::string_view line) { lines.emplace_back(line); }, 0s);
  for (int i = 0; i < 3; ++i) log.Log("k", "m");
  EXPECT_EQ(lines.size(), 3u);
}

TEST(ErrorLog, AThrowingSinkIsContained) {
  ErrorLog log([](std::string_view) { throw 1; }, 10s);
  log.Log("k", "m");
  EXPECT_EQ(log.lines_written(), 1u);
}

}  // namespace
}  // namespace vmetrics::internal
