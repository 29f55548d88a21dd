// SPDX-License-Identifier: Apache-2.0
// File: replay_golden_test.cc
//
// Runs `vmetrics replay` on every scenario of tests/golden/scenarios.tsv and compares its stdout
// byte for byte with the golden exposition. The scenarios, their inputs and the goldens are
// written by tools/gen_goldens.py, an independent Python recorder that renders with
// prometheus_client; regenerate them with tools/regen.sh, never by hand.
//
// scenarios.tsv: one scenario per line, `#` lines are comments, tab-separated columns
//   name, input file, expected file (both relative to the source tree), replay arguments
//   (space-separated; the generator guarantees no argument contains a space).
// The binary is started with posix_spawn and an explicit argv: no shell sees the arguments, and
// PROMETHEUS_DISABLE_CREATED_SERIES is removed from its environment (replay honours it, and the
// goldens say themselves whether they carry `_created`).
//
// Exit status: replay prints the exposition either way, and exits 1 when it skipped a message
// that did not decode. So the expected status is 1 when the golden counts a decode error
// (it has no `vmetrics_decode_errors_total{part="message"} 0.0` sample) and 0 otherwise.
//
// `vmetrics decode` says for each KV-connector payload what recording does with it (the
// `outcome`, adopting `_metrics_descriptor` rows on the way). DecodeAgreesWithThePayloadAccounting
// checks that against the same goldens: over the messages that reach the recorder, decode's
// outcomes, counted per (connector, outcome), are the golden's
// vmetrics_kv_connector_payloads_total samples.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "run_binary.h"

namespace {

using vmetrics::cli_test::DescribeWaitStatus;
using vmetrics::cli_test::RunBinary;
using vmetrics::cli_test::RunResult;

constexpr char kScenariosFile[] = "tests/golden/scenarios.tsv";

std::string SourcePath(const std::string& relative) {
  return std::string(VMETRICS_SOURCE_DIR) + "/" + relative;
}

struct Scenario {
  std::string name;
  std::string input;     // relative to the source tree
  std::string expected;  // relative to the source tree
  std::vector<std::string> args;
  std::string load_error;  // set when this entry stands for a scenarios.tsv problem
};

// gtest prints the parameter in test listings (and ctest names); show the scenario name.
void PrintTo(const Scenario& scenario, std::ostream* os) { *os << scenario.name; }

std::vector<std::string> Split(const std::string& text, char separator, bool skip_empty) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream stream(text);
  while (std::getline(stream, part, separator)) {
    if (!skip_empty || !part.empty()) parts.push_back(part);
  }
  return parts;
}

// Reads scenarios.tsv. A problem with the file becomes one failing entry rather than an empty
// test list, so a missing or broken file cannot pass silently.
std::vector<Scenario> LoadScenarios() {
  std::ifstream in(SourcePath(kScenariosFile));
  if (!in) {
    return {Scenario{"scenarios_tsv",
                     "",
                     "",
                     {},
                     "cannot open " + SourcePath(kScenariosFile) + " (run tools/regen.sh)"}};
  }
  std::vector<Scenario> scenarios;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> columns = Split(line, '\t', /*skip_empty=*/false);
    if (columns.size() < 3 || columns.size() > 4 || columns[0].empty()) {
      scenarios.push_back(Scenario{"scenarios_tsv_line_" + std::to_string(number),
                                   "",
                                   "",
                                   {},
                                   "scenarios.tsv line " + std::to_string(number) +
                                       " does not have 3 or 4 tab-separated columns: " + line});
      continue;
    }
    Scenario scenario{columns[0], columns[1], columns[2], {}, ""};
    if (columns.size() == 4) scenario.args = Split(columns[3], ' ', /*skip_empty=*/true);
    scenarios.push_back(std::move(scenario));
  }
  if (scenarios.empty()) {
    return {Scenario{"scenarios_tsv", "", "", {}, "no scenarios in " + SourcePath(kScenariosFile)}};
  }
  return scenarios;
}

bool ReadFile(const std::string& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *contents = buffer.str();
  return true;
}

std::vector<std::string> Lines(const std::string& text) {
  return Split(text, '\n', /*skip_empty=*/false);
}

// A line between bars, so trailing spaces and doubled spaces are visible.
std::string Show(const std::vector<std::string>& lines, size_t index) {
  if (index >= lines.size()) return "<no line>";
  return "|" + lines[index] + "|";
}

// Where two different outputs first part ways, with a few lines of context ("-" expected only,
// "+" actual only, " " both), followed by both outputs in full.
std::string DescribeDifference(const std::string& expected, const std::string& actual) {
  std::vector<std::string> want = Lines(expected);
  std::vector<std::string> got = Lines(actual);
  size_t first = 0;
  while (first < want.size() && first < got.size() && want[first] == got[first]) ++first;

  std::ostringstream out;
  out << "expected " << expected.size() << " bytes in " << want.size() << " lines, got "
      << actual.size() << " bytes in " << got.size() << " lines\n";
  if (first == want.size() && first == got.size()) {
    out << "every line matches; the outputs differ only in their final newline\n";
  } else {
    out << "first difference at line " << first + 1 << ":\n"
        << "  expected: " << Show(want, first) << "\n"
        << "  actual:   " << Show(got, first) << "\n";
    constexpr size_t kContext = 3;
    size_t begin = first > kContext ? first - kContext : 0;
    out << "@@ line " << begin + 1 << " @@\n";
    for (size_t i = begin; i < first; ++i) out << "  " << want[i] << "\n";
    for (size_t i = first; i < std::min(want.size(), first + kContext + 1); ++i) {
      out << "- " << want[i] << "\n";
    }
    for (size_t i = first; i < std::min(got.size(), first + kContext + 1); ++i) {
      out << "+ " << got[i] << "\n";
    }
  }
  out << "===== expected (full) =====\n"
      << expected << "\n===== actual (full) =====\n"
      << actual << "\n===== end =====\n";
  return out.str();
}

std::string JoinArgs(const std::vector<std::string>& argv) {
  std::string joined;
  for (const std::string& arg : argv) joined += (joined.empty() ? "" : " ") + arg;
  return joined;
}

class ReplayGoldenTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(ReplayGoldenTest, StdoutMatchesGoldenByteForByte) {
  const Scenario& scenario = GetParam();
  ASSERT_TRUE(scenario.load_error.empty()) << scenario.load_error;

  std::string expected;
  ASSERT_TRUE(ReadFile(SourcePath(scenario.expected), &expected))
      << "cannot read golden " << SourcePath(scenario.expected);

  std::vector<std::string> argv = {VMETRICS_BINARY, "replay", SourcePath(scenario.input)};
  argv.insert(argv.end(), scenario.args.begin(), scenario.args.end());
  RunResult run = RunBinary(argv);
  ASSERT_TRUE(run.error.empty()) << run.error;
  const bool counts_decode_error =
      expected.find("\nvmetrics_decode_errors_total{part=\"message\"} 0.0\n") == std::string::npos;
  const int expected_exit = counts_decode_error ? 1 : 0;
  ASSERT_TRUE(WIFEXITED(run.wait_status) && WEXITSTATUS(run.wait_status) == expected_exit)
      << JoinArgs(argv) << "\nended with " << DescribeWaitStatus(run.wait_status)
      << ", expected exit status " << expected_exit << "\n----- stderr -----\n"
      << run.err << "\n----- stdout -----\n"
      << run.out;

  if (run.out != expected) {
    ADD_FAILURE() << "stdout of `" << JoinArgs(argv) << "` differs from " << scenario.expected
                  << "\n"
                  << DescribeDifference(expected, run.out) << "----- stderr -----\n"
                  << run.err;
  }
}

// The value of every vmetrics_kv_connector_payloads_total{connector,outcome} sample of a text
// exposition (label values as the goldens have them: no escapes).
std::map<std::pair<std::string, std::string>, double> PayloadAccounting(const std::string& text) {
  std::map<std::pair<std::string, std::string>, double> counts;
  const std::string prefix = "vmetrics_kv_connector_payloads_total{connector=\"";
  for (const std::string& line : Lines(text)) {
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t connector_end = line.find('"', prefix.size());
    const std::string outcome_key = "\",outcome=\"";
    const size_t outcome_begin = connector_end + outcome_key.size();
    const size_t outcome_end = line.find('"', outcome_begin);
    const size_t value_begin = line.find("} ", outcome_end);
    if (connector_end == std::string::npos || outcome_end == std::string::npos ||
        value_begin == std::string::npos) {
      ADD_FAILURE() << "cannot read " << line;
      continue;
    }
    counts[{line.substr(prefix.size(), connector_end - prefix.size()),
            line.substr(outcome_begin, outcome_end - outcome_begin)}] =
        std::stod(line.substr(value_begin + 2));
  }
  return counts;
}

TEST_P(ReplayGoldenTest, DecodeAgreesWithThePayloadAccounting) {
  const Scenario& scenario = GetParam();
  ASSERT_TRUE(scenario.load_error.empty()) << scenario.load_error;
  std::string expected;
  ASSERT_TRUE(ReadFile(SourcePath(scenario.expected), &expected));
  const std::map<std::pair<std::string, std::string>, double> want = PayloadAccounting(expected);

  std::vector<std::string> argv = {VMETRICS_BINARY, "decode", SourcePath(scenario.input)};
  int64_t engines = 1;
  for (size_t i = 0; i + 1 < scenario.args.size(); ++i) {
    if (scenario.args[i] == "--kv-transfer-config") {
      argv.push_back(scenario.args[i]);
      argv.push_back(scenario.args[i + 1]);
    } else if (scenario.args[i] == "--data-parallel-size") {
      engines = std::stoll(scenario.args[i + 1]);
    }
  }
  RunResult run = RunBinary(argv);
  ASSERT_TRUE(run.error.empty()) << run.error;
  ASSERT_TRUE(WIFEXITED(run.wait_status)) << DescribeWaitStatus(run.wait_status);

  std::map<std::pair<std::string, std::string>, double> got;
  for (const std::string& line : Lines(run.out)) {
    if (line.empty()) continue;
    const nlohmann::json message = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(message.is_discarded()) << line;
    // What the recorder skips before it reaches kv_connector_stats.
    const nlohmann::json& stats = message["scheduler_stats"];
    const int64_t engine = message["engine_index"].get<int64_t>();
    if (engine < 0 || engine >= engines || !message["utility_output"].is_null() ||
        stats.is_null() || stats["sleep_state_only"].get<bool>() ||
        stats["kv_connector_stats"].is_null()) {
      continue;
    }
    for (const nlohmann::json& payload : stats["kv_connector_stats"]["payloads"]) {
      got[{payload["connector"].get<std::string>(), payload["outcome"].get<std::string>()}] += 1;
    }
  }
  EXPECT_EQ(got, want) << JoinArgs(argv) << "\n----- stderr -----\n" << run.err;
}

std::string ScenarioName(const ::testing::TestParamInfo<Scenario>& info) {
  std::string name = info.param.name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Golden, ReplayGoldenTest, ::testing::ValuesIn(LoadScenarios()),
                         ScenarioName);

}  // namespace
