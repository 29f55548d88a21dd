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

TEST(Log, TextLinesEscapeControlCharactersAndInvalidBytes) {
  SetLogFormat(LogFormat::kText);
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
  SetLogFormat(LogFormat::kJson);
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

}  // namespace
}  // namespace vmetrics::frontend
