// SPDX-License-Identifier: Apache-2.0
#include "float_format.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "vmetrics/exposition.h"

namespace vmetrics {
namespace {

TEST(FormatGoFloat, Specials) {
  EXPECT_EQ(FormatGoFloat(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatGoFloat(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatGoFloat(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(FormatGoFloat(-std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(FormatGoFloat(0.0), "0.0");
  EXPECT_EQ(FormatGoFloat(-0.0), "-0.0");
}

TEST(FormatGoFloat, PythonReprBelowOneMillion) {
  EXPECT_EQ(FormatGoFloat(3), "3.0");
  EXPECT_EQ(FormatGoFloat(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatGoFloat(0.005), "0.005");
  EXPECT_EQ(FormatGoFloat(0.0001), "0.0001");
  EXPECT_EQ(FormatGoFloat(1e-05), "1e-05");
  EXPECT_EQ(FormatGoFloat(1.5e-07), "1.5e-07");
  EXPECT_EQ(FormatGoFloat(5e-324), "5e-324");
  EXPECT_EQ(FormatGoFloat(100000.0), "100000.0");
  EXPECT_EQ(FormatGoFloat(999999.5), "999999.5");
  EXPECT_EQ(FormatGoFloat(123.456), "123.456");
}

TEST(FormatGoFloat, GoExponentFormFromOneMillion) {
  EXPECT_EQ(FormatGoFloat(1e6), "1e+06");
  EXPECT_EQ(FormatGoFloat(1234567.0), "1.234567e+06");
  EXPECT_EQ(FormatGoFloat(2097152.0), "2.097152e+06");
  EXPECT_EQ(FormatGoFloat(1723456789.123456), "1.723456789123456e+09");
  // prometheus_client's "e+0" prefix gives three exponent digits from 1e10 to 1e15.
  EXPECT_EQ(FormatGoFloat(123456789012.0), "1.23456789012e+011");
  EXPECT_EQ(FormatGoFloat(9999999999999998.0), "9.999999999999998e+015");
  // From 1e16 repr is already scientific and Python keeps it.
  EXPECT_EQ(FormatGoFloat(1e16), "1e+16");
  EXPECT_EQ(FormatGoFloat(1e21), "1e+21");
  EXPECT_EQ(FormatGoFloat(1.2345678901234568e+17), "1.2345678901234568e+17");
}

TEST(FormatGoFloat, NegativeValuesKeepPythonRepr) {
  // floatToGoString only rewrites d > 0.
  EXPECT_EQ(FormatGoFloat(-2.5), "-2.5");
  EXPECT_EQ(FormatGoFloat(-1234567.0), "-1234567.0");
  EXPECT_EQ(FormatGoFloat(-123456789012.0), "-123456789012.0");
  EXPECT_EQ(FormatGoFloat(-1e16), "-1e+16");
}

TEST(FormatGoFloat, AppendGoFloatAppends) {
  std::string out = "x=";
  AppendGoFloat(1e6, &out);
  AppendGoFloat(-0.5, &out);
  EXPECT_EQ(out, "x=1e+06-0.5");
}

TEST(FormatGoFloat, LongestOutputFitsTheBuffer) {
  EXPECT_EQ(FormatGoFloat(-2.2250738585072014e-308), "-2.2250738585072014e-308");
  EXPECT_LE(FormatGoFloat(-2.2250738585072014e-308).size(), internal::kMaxGoFloatChars);
}

// Every value of tests/golden/float_format.tsv (tools/gen_float_table.py, prometheus_client's
// own floatToGoString) must format to the same text.
TEST(FormatGoFloat, MatchesPrometheusClientTable) {
  const std::string path = std::string(VMETRICS_GOLDEN_DIR) + "/float_format.tsv";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot open " << path;
  std::string line;
  size_t checked = 0;
  size_t mismatches = 0;
  std::string report;
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    ASSERT_EQ(tab, 16u) << "bad line: " << line;
    uint64_t bits = 0;
    const auto [ptr, ec] = std::from_chars(line.data(), line.data() + 16, bits, 16);
    ASSERT_TRUE(ec == std::errc() && ptr == line.data() + 16) << "bad hex: " << line;
    const std::string expected = line.substr(tab + 1);
    const std::string actual = FormatGoFloat(std::bit_cast<double>(bits));
    ++checked;
    if (actual != expected) {
      if (++mismatches <= 10) {
        report += line.substr(0, 16) + ": expected " + expected + ", got " + actual + "\n";
      }
    }
  }
  EXPECT_GT(checked, 100000u);
  EXPECT_EQ(mismatches, 0u) << "of " << checked << " values; first mismatches:\n" << report;
}

}  // namespace
}  // namespace vmetrics
