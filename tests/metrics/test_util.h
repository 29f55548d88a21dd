// SPDX-License-Identifier: Apache-2.0
// Helpers for metrics tests: fixture loading, decode+record, rendering.
#ifndef VMETRICS_TESTS_METRICS_TEST_UTIL_H_
#define VMETRICS_TESTS_METRICS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/exposition.h"
#include "vmetrics/internal/msgpack_reader.h"
#include "vmetrics/recorder.h"

namespace vmetrics::testing {

inline std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::string(VMETRICS_FIXTURE_DIR) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Decodes and records every message of a single-frame fixture stream. Fails the test on a
// decode error.
inline void RecordFixture(StatsRecorder& rec, const std::string& name) {
  const std::string data = ReadFixture(name);
  ASSERT_FALSE(data.empty()) << "missing fixture " << name;
  size_t offset = 0;
  uint64_t number = 0;
  while (offset < data.size()) {
    size_t len = 0;
    ASSERT_TRUE(protocol::ValidateOne(std::string_view(data).substr(offset), &len).ok());
    std::string_view frames[] = {std::string_view(data).substr(offset, len)};
    EngineCoreOutputs msg;
    Status s = DecodeEngineCoreOutputs(frames, rec.decode_context(++number), &msg);
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
    rec.Record(msg);
    offset += len;
  }
}

inline std::string Render(const Registry& reg) {
  std::string out;
  WriteText(reg, ExpositionOptions{}, &out);
  return out;
}

// EXPECT that `text` contains `line` as a whole line, printing the rendering if not.
#define EXPECT_HAS_LINE(text, line)                                                   \
  EXPECT_NE(("\n" + (text)).find("\n" + std::string(line) + "\n"), std::string::npos) \
      << "missing line: " << (line) << "\nin rendering:\n"                            \
      << (text)

#define EXPECT_LACKS(text, fragment)                         \
  EXPECT_EQ((text).find(fragment), std::string::npos)        \
      << "unexpected: " << (fragment) << "\nin rendering:\n" \
      << (text)

}  // namespace vmetrics::testing

#endif  // VMETRICS_TESTS_METRICS_TEST_UTIL_H_
