// SPDX-License-Identifier: Apache-2.0
#include "escape.h"

#include <string>

#include "gtest/gtest.h"

namespace vmetrics::internal {
namespace {

TEST(Escape, TextHelpEscapesBackslashAndNewlineButNotQuote) {
  std::string out = "# HELP x ";
  AppendEscapedHelpText("back\\slash, \"quotes\" and\nnewline.", &out);
  EXPECT_EQ(out, "# HELP x back\\\\slash, \"quotes\" and\\nnewline.");
}

TEST(Escape, OpenMetricsHelpAlsoEscapesQuote) {
  std::string out;
  AppendEscapedHelpOpenMetrics("back\\slash, \"quotes\" and\nnewline.", &out);
  EXPECT_EQ(out, "back\\\\slash, \\\"quotes\\\" and\\nnewline.");
}

TEST(Escape, LabelValueEscapesAllThree) {
  std::string out;
  AppendEscapedLabelValue("esc\"\\\n", &out);
  EXPECT_EQ(out, "esc\\\"\\\\\\n");
}

TEST(Escape, OtherBytesPassThrough) {
  std::string out;
  AppendEscapedLabelValue("tab\there\r\x01 caf\xc3\xa9", &out);
  EXPECT_EQ(out, "tab\there\r\x01 caf\xc3\xa9");
  out.clear();
  AppendEscapedLabelValue("", &out);
  EXPECT_EQ(out, "");
}

TEST(Escape, EscapedCharactersAtBothEnds) {
  std::string out;
  AppendEscapedHelpText("\\\n\\", &out);
  EXPECT_EQ(out, "\\\\\\n\\\\");
}

}  // namespace
}  // namespace vmetrics::internal
