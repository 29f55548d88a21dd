// SPDX-License-Identifier: Apache-2.0
// The exposition checker against what a peer wrote and against hand-made violations:
//   * every golden exposition of tests/golden/ and tests/fixtures/wire_generations/ (written by
//     prometheus_client, tools/regen.sh) is accepted in its format;
//   * each row of the violation table changes one line of a valid exposition (or deletes,
//     moves or adds one) and must be refused at the expected line with the expected rule — a
//     checker that accepts everything fails every row;
//   * the exposition_check command exits 0 on a golden and 1 on a violation.
#include "tests/support/exposition_grammar.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace vmetrics::test_support {
namespace {

using Format = ExpositionFormat;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The golden expositions and their formats.
std::vector<std::pair<std::filesystem::path, Format>> Goldens() {
  std::vector<std::pair<std::filesystem::path, Format>> out;
  const std::filesystem::path root(VMETRICS_SOURCE_DIR);
  for (const char* dir : {"tests/golden", "tests/fixtures/wire_generations"}) {
    for (const auto& entry : std::filesystem::directory_iterator(root / dir)) {
      const std::string name = entry.path().filename().string();
      if (name.ends_with(".om") || name.ends_with(".om.txt")) {
        out.emplace_back(entry.path(), Format::kOpenMetrics);
      } else if (name.ends_with(".txt") && name != "README.txt") {
        out.emplace_back(entry.path(), Format::kText004);
      }
    }
  }
  return out;
}

// Goldens prometheus_client wrote that break an OpenMetrics value rule (its own parser refuses
// them too): the exposition writer's unit goldens hold a histogram whose _sum is NaN on
// purpose (FormatGoFloat of NaN), and two real vLLM captures have negative prefill and
// inference time sums (docs/recording.md), as has the newest generation's capture, which
// carries the same activity as 6adad087's.
const char* const kNanSumGoldens[] = {"exposition_basic.om", "exposition_no_created.om"};
const char* const kNegativeSumGoldens[] = {"g20250927-6f5c0931_outputs.golden.om.txt",
                                           "g20260814-6adad087_outputs.golden.om.txt",
                                           "gnewest-20260924_outputs.golden.om.txt"};

bool In(const std::string& name, std::span<const char* const> list) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

TEST(ExpositionGrammar, AcceptsEveryGoldenExposition) {
  size_t text = 0, om = 0, nan_sums = 0, negative_sums = 0;
  for (const auto& [path, format] : Goldens()) {
    (format == Format::kText004 ? text : om)++;
    const std::string name = path.filename().string();
    const std::string body = ReadFile(path);
    ASSERT_FALSE(body.empty()) << path;
    const std::optional<GrammarViolation> v =
        CheckExposition(body, format, {.allow_negative_histogram_sum = true});
    if (In(name, kNanSumGoldens)) {
      ++nan_sums;
      ASSERT_TRUE(v.has_value()) << path;
      EXPECT_NE(v->message.find("counter-like sample is NaN"), std::string::npos) << v->ToString();
      EXPECT_NE(v->excerpt.find("_sum"), std::string::npos) << v->ToString();
      continue;
    }
    EXPECT_FALSE(v.has_value()) << path << " (" << FormatName(format)
                                << "): " << (v ? v->ToString() : "");
    const std::optional<GrammarViolation> strict = CheckExposition(body, format);
    if (In(name, kNegativeSumGoldens)) {
      ++negative_sums;
      ASSERT_TRUE(strict.has_value()) << path;
      EXPECT_NE(strict->message.find("negative"), std::string::npos) << strict->ToString();
    } else {
      EXPECT_FALSE(strict.has_value()) << path << ": " << (strict ? strict->ToString() : "");
    }
  }
  // tests/golden has 29 text and 4 OpenMetrics goldens, the wire generations 24 of each.
  EXPECT_GE(text, 53u);
  EXPECT_GE(om, 28u);
  EXPECT_EQ(nan_sums, std::size(kNanSumGoldens));
  EXPECT_EQ(negative_sums, std::size(kNegativeSumGoldens));
}

// A valid exposition in each format, as prometheus_client writes them: a counter with
// _created, a histogram, a gauge with NaN and infinities.
const char kValidOm[] =
    "# HELP vllm:requests Requests \\\"served\\\" \\\\ \\n.\n"                    // 1
    "# TYPE vllm:requests counter\n"                                              // 2
    "vllm:requests_total{engine=\"0\",model_name=\"m\"} 3.0\n"                    // 3
    "vllm:requests_created{engine=\"0\",model_name=\"m\"} 1.7e+09\n"              // 4
    "# HELP vllm:latency_seconds Latency.\n"                                      // 5
    "# TYPE vllm:latency_seconds histogram\n"                                     // 6
    "vllm:latency_seconds_bucket{engine=\"0\",le=\"0.1\"} 1.0\n"                  // 7
    "vllm:latency_seconds_bucket{engine=\"0\",le=\"1.0\"} 2.0\n"                  // 8
    "vllm:latency_seconds_bucket{engine=\"0\",le=\"+Inf\"} 3.0\n"                 // 9
    "vllm:latency_seconds_count{engine=\"0\"} 3.0\n"                              // 10
    "vllm:latency_seconds_sum{engine=\"0\"} 4.5\n"                                // 11
    "vllm:latency_seconds_created{engine=\"0\"} 1.7e+09\n"                        // 12
    "# HELP vllm:running Running.\n"                                              // 13
    "# TYPE vllm:running gauge\n"                                                 // 14
    "vllm:running{engine=\"0\",model_name=\"caf\xc3\xa9 \\\"q\\\" \\\\\"} 1.0\n"  // 15
    "vllm:running{engine=\"1\",model_name=\"m\"} NaN\n"                           // 16
    "vllm:running{engine=\"2\",model_name=\"m\"} -Inf\n"                          // 17
    "# EOF\n";                                                                    // 18

const char kValidText[] =
    "# HELP vllm:requests_total Requests \"served\" \\\\ \\n.\n"                  // 1
    "# TYPE vllm:requests_total counter\n"                                        // 2
    "vllm:requests_total{engine=\"0\",model_name=\"m\"} 3.0\n"                    // 3
    "# HELP vllm:requests_created Requests.\n"                                    // 4
    "# TYPE vllm:requests_created gauge\n"                                        // 5
    "vllm:requests_created{engine=\"0\",model_name=\"m\"} 1.7e+09\n"              // 6
    "# HELP vllm:latency_seconds Latency.\n"                                      // 7
    "# TYPE vllm:latency_seconds histogram\n"                                     // 8
    "vllm:latency_seconds_bucket{engine=\"0\",le=\"0.1\"} 1.0\n"                  // 9
    "vllm:latency_seconds_bucket{engine=\"0\",le=\"1.0\"} 2.0\n"                  // 10
    "vllm:latency_seconds_bucket{engine=\"0\",le=\"+Inf\"} 3.0\n"                 // 11
    "vllm:latency_seconds_count{engine=\"0\"} 3.0\n"                              // 12
    "vllm:latency_seconds_sum{engine=\"0\"} 4.5\n"                                // 13
    "# HELP vllm:running Running.\n"                                              // 14
    "# TYPE vllm:running gauge\n"                                                 // 15
    "vllm:running{engine=\"0\",model_name=\"caf\xc3\xa9 \\\"q\\\" \\\\\"} 1.0\n"  // 16
    "vllm:running{engine=\"1\",model_name=\"m\"} NaN\n"                           // 17
    "vllm:running{engine=\"2\",model_name=\"m\"} +Inf 1395066363000\n";           // 18

struct Violation {
  const char* what;
  Format format;
  size_t line;                             // the line changed (1-based)
  std::optional<std::string> replacement;  // nullopt: delete it; may hold several lines
  size_t expected_line;                    // where the checker must report it
  const char* expected_message;            // a part of the message
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string Apply(const std::string& valid, const Violation& v) {
  std::vector<std::string> lines = Lines(valid);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i + 1 != v.line) {
      out += lines[i] + "\n";
    } else if (v.replacement) {
      out += *v.replacement + "\n";
    }
  }
  return out;
}

const Format kOm = Format::kOpenMetrics;
const Format kText = Format::kText004;

const Violation kViolations[] = {
    // Line grammar.
    {"metric name with a bad character", kOm, 3,
     "vllm:requests-x_total{engine=\"0\",model_name=\"m\"} 3.0", 3, "invalid metric name"},
    {"metric name with a bad character", kText, 3,
     "vllm:requests-x_total{engine=\"0\",model_name=\"m\"} 3.0", 3, "invalid metric name"},
    {"metric name starting with a digit", kText, 17, "1vllm:running{engine=\"1\"} 1.0", 17,
     "invalid metric name"},
    {"label name with a bad character", kOm, 16, "vllm:running{engine=\"1\",model-name=\"m\"} 1.0",
     16, "invalid label name"},
    {"label name with a colon", kText, 17, "vllm:running{engine=\"1\",model:name=\"m\"} 1.0", 17,
     "invalid label name"},
    {"reserved label name", kOm, 16, "vllm:running{__name__=\"1\"} 1.0", 16, "reserved"},
    {"duplicate label name", kText, 17, "vllm:running{engine=\"1\",engine=\"2\"} 1.0", 17,
     "duplicate label name"},
    {"unescaped quote in a label value", kOm, 16,
     "vllm:running{engine=\"1\",model_name=\"a\"b\"} 1.0", 16, "labels not separated"},
    {"unescaped quote in a label value", kText, 17,
     "vllm:running{engine=\"1\",model_name=\"a\"b\"} 1.0", 17, "labels not separated"},
    {"unknown escape in a text label value", kText, 17,
     "vllm:running{engine=\"1\",model_name=\"a\\tb\"} 1.0", 17, "backslash"},
    {"unterminated label value", kOm, 16, "vllm:running{engine=\"1} 1.0", 16, "closing quote"},
    {"invalid UTF-8 in a label value", kOm, 16,
     "vllm:running{engine=\"1\",model_name=\"\xff\xfe\"} 1.0", 16, "invalid UTF-8"},
    {"invalid UTF-8 in a label value", kText, 17,
     "vllm:running{engine=\"1\",model_name=\"\xff\xfe\"} 1.0", 17, "invalid UTF-8"},
    {"overlong UTF-8", kText, 17, "vllm:running{engine=\"1\",model_name=\"\xc0\xaf\"} 1.0", 17,
     "invalid UTF-8"},
    {"UTF-8 surrogate", kOm, 16, "vllm:running{engine=\"1\",model_name=\"\xed\xa0\x80\"} 1.0", 16,
     "invalid UTF-8"},
    {"invalid UTF-8 in HELP", kOm, 13, "# HELP vllm:running R\xe9sum\xe9", 13, "invalid UTF-8"},
    {"comma before the brace in OpenMetrics", kOm, 16, "vllm:running{engine=\"1\",} 1.0", 16,
     "comma"},
    {"value that is not a number", kOm, 16, "vllm:running{engine=\"1\"} 1,5", 16, "invalid value"},
    {"value that is not a number", kText, 17, "vllm:running{engine=\"1\"} one", 17,
     "invalid value"},
    {"value out of float64 range", kText, 17, "vllm:running{engine=\"1\"} 1e400", 17,
     "invalid value"},
    {"signed NaN in OpenMetrics", kOm, 16, "vllm:running{engine=\"1\"} -NaN", 16, "invalid value"},
    {"missing value", kText, 17, "vllm:running{engine=\"1\"}", 17, "without a value"},
    {"text timestamp that is not an int64", kText, 18,
     "vllm:running{engine=\"2\",model_name=\"m\"} 1.0 1.5", 18, "int64"},
    {"OpenMetrics timestamp that is not a number", kOm, 17,
     "vllm:running{engine=\"2\",model_name=\"m\"} 1.0 soon", 17, "invalid timestamp"},
    {"two spaces in OpenMetrics", kOm, 16, "vllm:running{engine=\"1\"}  1.0", 16, "invalid value"},
    {"text HELP with an unknown escape", kText, 14, "# HELP vllm:running R\\unning.", 14,
     "backslash"},
    {"OpenMetrics HELP with an unescaped quote", kOm, 13, "# HELP vllm:running \"Running\".", 13,
     "unescaped double quote"},
    {"unknown TYPE", kText, 15, "# TYPE vllm:running gauges", 15, "unknown TYPE"},
    {"untyped is not an OpenMetrics type", kOm, 14, "# TYPE vllm:running untyped", 14,
     "unknown TYPE"},
    {"an OpenMetrics comment", kOm, 13, "# Running.", 13, "not TYPE, HELP, UNIT or EOF"},
    {"blank line in OpenMetrics", kOm, 12, "vllm:latency_seconds_created{engine=\"0\"} 1.7e+09\n",
     13, "blank line"},
    {"UNIT that is not the name's suffix", kOm, 6,
     "# TYPE vllm:latency_seconds histogram\n# UNIT vllm:latency_seconds bytes", 7, "UNIT"},
    // HELP/TYPE placement and uniqueness, grouping.
    {"sample before its TYPE", kOm, 14,
     "vllm:running{engine=\"0\",model_name=\"m\"} 1.0\n# TYPE vllm:running gauge", 15,
     "after its samples"},
    {"sample before its TYPE", kText, 15,
     "vllm:running{engine=\"9\",model_name=\"m\"} 1.0\n# TYPE vllm:running gauge", 16,
     "after its samples"},
    {"second HELP", kOm, 14, "# TYPE vllm:running gauge\n# HELP vllm:running Again.", 15,
     "more than one HELP"},
    {"second TYPE", kText, 15, "# TYPE vllm:running gauge\n# TYPE vllm:running gauge", 16,
     "more than one TYPE"},
    {"interleaved families", kOm, 17,
     "vllm:running{engine=\"2\",model_name=\"m\"} 1.0\n"
     "vllm:requests_total{engine=\"1\",model_name=\"m\"} 1.0",
     18, "clashes with family vllm:requests"},
    {"interleaved families", kText, 18,
     "vllm:running{engine=\"2\",model_name=\"m\"} 1.0\n"
     "vllm:requests_total{engine=\"1\",model_name=\"m\"} 1.0",
     19, "appears again"},
    {"a family's metadata again later", kOm, 17,
     "vllm:running{engine=\"2\",model_name=\"m\"} 1.0\n# HELP vllm:requests More.", 18,
     "appears again"},
    {"interleaved metrics of a histogram", kText, 13,
     "vllm:latency_seconds_bucket{engine=\"1\",le=\"+Inf\"} 0.0\n"
     "vllm:latency_seconds_sum{engine=\"0\"} 4.5",
     14, "interleaved"},
    {"duplicate series", kOm, 16,
     "vllm:running{engine=\"0\",model_name=\"caf\xc3\xa9 \\\"q\\\" \\\\\"} 2.0", 16,
     "duplicate series"},
    {"duplicate series, labels in another order", kText, 17,
     "vllm:running{model_name=\"caf\xc3\xa9 \\\"q\\\" \\\\\",engine=\"0\"} 2.0", 17,
     "duplicate series"},
    // Counters.
    {"OpenMetrics counter sample without _total", kOm, 3,
     "vllm:requests{engine=\"0\",model_name=\"m\"} 3.0", 3, "appears again"},
    {"negative counter", kOm, 3, "vllm:requests_total{engine=\"0\",model_name=\"m\"} -3.0", 3,
     "negative"},
    {"NaN counter", kOm, 3, "vllm:requests_total{engine=\"0\",model_name=\"m\"} NaN", 3, "NaN"},
    {"_created of a counter outside its family", kOm, 12,
     "vllm:latency_seconds_created{engine=\"0\"} 1.7e+09\n"
     "vllm:requests_created{engine=\"1\",model_name=\"m\"} 1.7e+09",
     13, "clashes"},
    // Histograms.
    {"missing +Inf bucket", kOm, 9, std::nullopt, 12, "+Inf bucket is missing"},
    {"missing +Inf bucket", kText, 11, std::nullopt, 13, "+Inf bucket is missing"},
    {"non-cumulative buckets", kOm, 8, "vllm:latency_seconds_bucket{engine=\"0\",le=\"1.0\"} 0.0",
     8, "cumulative"},
    {"non-cumulative buckets", kText, 10,
     "vllm:latency_seconds_bucket{engine=\"0\",le=\"1.0\"} 0.0", 10, "cumulative"},
    {"buckets out of le order", kText, 10,
     "vllm:latency_seconds_bucket{engine=\"0\",le=\"0.05\"} 2.0", 10, "increasing le"},
    {"bucket without le", kOm, 8, "vllm:latency_seconds_bucket{engine=\"0\"} 2.0", 8, "le label"},
    {"le that is not a number", kText, 10,
     "vllm:latency_seconds_bucket{engine=\"0\",le=\"one\"} 2.0", 10, "invalid le"},
    {"NaN le", kOm, 8, "vllm:latency_seconds_bucket{engine=\"0\",le=\"NaN\"} 2.0", 8, "invalid le"},
    {"_count differs from +Inf", kOm, 10, "vllm:latency_seconds_count{engine=\"0\"} 4.0", 13,
     "_count differs"},
    {"_count differs from +Inf", kText, 12, "vllm:latency_seconds_count{engine=\"0\"} 4.0", 14,
     "_count differs"},
    {"bucket value not an integer", kOm, 7,
     "vllm:latency_seconds_bucket{engine=\"0\",le=\"0.1\"} 0.5", 7, "not an integer"},
    {"_sum without _count", kOm, 10, std::nullopt, 12, "both be present"},
    {"NaN _sum", kOm, 11, "vllm:latency_seconds_sum{engine=\"0\"} NaN", 11, "NaN"},
    {"negative _sum", kOm, 11, "vllm:latency_seconds_sum{engine=\"0\"} -4.5", 11, "negative"},
    {"NaN bucket", kText, 10, "vllm:latency_seconds_bucket{engine=\"0\",le=\"1.0\"} NaN", 10,
     "NaN"},
    // The end.
    {"missing # EOF", kOm, 18, std::nullopt, 18, "missing # EOF"},
    {"line after # EOF", kOm, 18, "# EOF\nvllm:late 1.0", 19, "after # EOF"},
};

TEST(ExpositionGrammar, TheValidExpositionsPass) {
  EXPECT_EQ(CheckExposition(kValidOm, kOm), std::nullopt)
      << CheckExposition(kValidOm, kOm)->ToString();
  EXPECT_EQ(CheckExposition(kValidText, kText), std::nullopt)
      << CheckExposition(kValidText, kText)->ToString();
}

TEST(ExpositionGrammar, RefusesEachViolation) {
  for (const Violation& v : kViolations) {
    const std::string body = Apply(v.format == kOm ? kValidOm : kValidText, v);
    const std::optional<GrammarViolation> found = CheckExposition(body, v.format);
    SCOPED_TRACE(std::string(v.what) + " (" + std::string(FormatName(v.format)) + ")");
    ASSERT_TRUE(found.has_value()) << "accepted:\n" << body;
    EXPECT_EQ(found->line, v.expected_line) << found->ToString();
    EXPECT_NE(found->message.find(v.expected_message), std::string::npos) << found->ToString();
  }
}

TEST(ExpositionGrammar, RefusesAMissingFinalLineFeed) {
  std::string text = kValidText;
  text.pop_back();
  const std::optional<GrammarViolation> v = CheckExposition(text, kText);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->line, 18u);
  // OpenMetrics: `exposition = metricset HASH SP eof [LF]`: "# EOF" alone may lack it.
  std::string om = kValidOm;
  om.pop_back();
  EXPECT_EQ(CheckExposition(om, kOm), std::nullopt);
}

TEST(ExpositionGrammar, TextFormatAllowsBlanksCommentsAndEmptyLines) {
  const char text[] =
      "# A comment\n"
      "\n"
      "  # HELP x  A gauge.\n"
      "# TYPE x\tgauge\n"
      "x { a = \"1\" , } 1 -3982045\n"
      "x{a=\"2\"}\t+Inf   \n"
      "untyped_metric 12.47\n";
  EXPECT_EQ(CheckExposition(text, kText), std::nullopt) << CheckExposition(text, kText)->ToString();
  EXPECT_TRUE(CheckExposition(text, kOm).has_value());
}

TEST(ExpositionGrammar, OpenMetricsTypesAndExemplars) {
  const char om[] =
      "# TYPE a info\n"
      "a_info{version=\"1\"} 1\n"
      "# TYPE s stateset\n"
      "s{s=\"on\"} 1\n"
      "s{s=\"off\"} 0\n"
      "# TYPE q summary\n"
      "q{quantile=\"0.5\"} 1.5\n"
      "q_count 2\n"
      "q_sum 3.0\n"
      "# TYPE g gaugehistogram\n"
      "g_bucket{le=\"-1.0\"} 1 # {trace_id=\"x\"} -1.5 1520879607.789\n"
      "g_bucket{le=\"+Inf\"} 2\n"
      "g_gcount 2\n"
      "g_gsum -3.0\n"
      "# TYPE c_seconds counter\n"
      "# UNIT c_seconds seconds\n"
      "c_seconds_total 1 # {} 0.5\n"
      "# EOF\n";
  EXPECT_EQ(CheckExposition(om, kOm), std::nullopt) << CheckExposition(om, kOm)->ToString();
  std::string bad = om;
  bad.replace(bad.find("a_info{version=\"1\"} 1"), 21, "a_info{version=\"1\"} 2");
  EXPECT_TRUE(CheckExposition(bad, kOm).has_value());
  bad = om;
  bad.replace(bad.find("s{s=\"off\"} 0"), 12, "s{s=\"off\"} 2");
  EXPECT_TRUE(CheckExposition(bad, kOm).has_value());
  bad = om;
  bad.replace(bad.find("q{quantile=\"0.5\"}"), 17, "q{quantile=\"1.5\"}");
  EXPECT_TRUE(CheckExposition(bad, kOm).has_value());
}

int RunCheckCommand(const std::string& args) {
  const int status = std::system((std::string(VMETRICS_EXPOSITION_CHECK) + " " + args).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ExpositionCheckCommand, ExitsZeroOnValidAndOneOnInvalid) {
  const std::string golden = std::string(VMETRICS_SOURCE_DIR) + "/tests/golden/nixl_two_engines";
  EXPECT_EQ(RunCheckCommand("text " + golden + ".txt"), 0);
  EXPECT_EQ(RunCheckCommand("openmetrics " + golden + ".om"), 0);
  // The text golden is no OpenMetrics exposition (no # EOF, _total counter families).
  EXPECT_EQ(RunCheckCommand("openmetrics " + golden + ".txt 2>/dev/null"), 1);
  EXPECT_EQ(RunCheckCommand("text 2>/dev/null"), 2);
}

}  // namespace
}  // namespace vmetrics::test_support
