// SPDX-License-Identifier: Apache-2.0
// File: wire_generations_test.cc
//
// Replays every capture of tests/fixtures/wire_generations/ (every wire generation of vLLM's
// EngineCoreOutputs stream, encoded by that generation's own classes) through `vmetrics replay`
// with the case's configuration from manifest.json, and compares with the exposition that
// generation's own Python frontend produced:
//  - gnewest-20260924 (the newest generation; its goldens are 6adad087's plus the newest
//    families, tools/gen_goldens.py): stdout is byte-identical to the golden, text and
//    OpenMetrics, once vmetrics' own families (vmetrics_*, appended after vLLM's) are taken out.
//  - older generations, 6adad087 included: every sample line of the golden is in vmetrics'
//    output (vmetrics prints the newest frontend's families, so extra families are allowed),
//    except the lines the manifest's `newest_semantics` says the newest frontend would not print
//    (families removed since, or counted otherwise since).
// Every case is replayed WITHOUT --engine-wire, and replay's stderr must name the case's
// generation for both engines: recognised as it, or as a generation whose table decodes the
// same ("... has the same layout"), or not decided between candidates that include it (a
// statistics-only capture cannot tell apart generations whose outputs differ). With
// --engine-wire forced to a wrong generation, replay must end normally, print an exposition
// and log the mismatch.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "run_binary.h"

namespace {

using Json = nlohmann::json;
using vmetrics::cli_test::DescribeWaitStatus;
using vmetrics::cli_test::RunBinary;
using vmetrics::cli_test::RunResult;

constexpr char kFixtures[] = "tests/fixtures/wire_generations/";
constexpr char kNewestWithGolden[] = "gnewest-20260924";
// The generation whose goldens stand in for a generation without goldens of its own.
constexpr char kFallbackGolden[] = "g20260814-6adad087";
// The goldens pin every `_created` to this time (fixture README, "How the goldens were
// produced").
constexpr char kCreated[] = "1767225600";

std::string FixturePath(const std::string& name) {
  return std::string(VMETRICS_SOURCE_DIR) + "/" + kFixtures + name;
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
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

struct Case {
  std::string name;
  std::string generation;
  Json manifest;       // the case's manifest entry
  std::string format;  // "text" or "openmetrics"
  std::string load_error;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name << "_" << c.format; }

Json LoadManifest(std::string* error) {
  std::string text;
  if (!ReadFile(FixturePath("manifest.json"), &text)) {
    *error = "cannot read " + FixturePath("manifest.json");
    return Json();
  }
  Json manifest = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.contains("cases")) {
    *error = FixturePath("manifest.json") + " is not the fixture manifest";
    return Json();
  }
  return manifest;
}

std::vector<Case> LoadCases(bool both_formats = true) {
  std::string error;
  Json manifest = LoadManifest(&error);
  if (!error.empty()) return {Case{"manifest", "", Json(), "text", error}};
  std::vector<Case> cases;
  for (const Json& c : manifest["cases"]) {
    for (const char* format : {"text", "openmetrics"}) {
      if (!both_formats && std::string(format) != "text") continue;
      cases.push_back(
          Case{c["case"].get<std::string>(), c["generation"].get<std::string>(), c, format, ""});
    }
  }
  if (cases.empty()) return {Case{"manifest", "", Json(), "text", "no cases in the manifest"}};
  return cases;
}

// `vmetrics replay` with the case's configuration.
std::vector<std::string> ReplayArgs(const Json& c, const std::string& format) {
  const Json& config = c["configuration"];
  std::vector<std::string> argv = {VMETRICS_BINARY,
                                   "replay",
                                   FixturePath(c["msgpack"].get<std::string>()),
                                   "--served-model-name",
                                   config["served_model_name"].get<std::string>(),
                                   "--data-parallel-size",
                                   std::to_string(config["data_parallel_size"].get<int>()),
                                   "--max-model-len",
                                   std::to_string(config["max_model_len"].get<int64_t>()),
                                   "--created-timestamp",
                                   kCreated,
                                   "--format",
                                   format};
  if (!config["kv_transfer_config"].is_null()) {
    argv.push_back("--kv-transfer-config");
    argv.push_back(config["kv_transfer_config"].dump());
  }
  if (config.contains("ec_transfer_config") && !config["ec_transfer_config"].is_null()) {
    argv.push_back("--ec-transfer-config");
    argv.push_back(config["ec_transfer_config"].dump());
  }
  if (!config["speculative_config"].is_null()) {
    argv.push_back("--speculative-config");
    argv.push_back(config["speculative_config"].dump());
  }
  if (!c["requests"].is_null()) {
    argv.push_back("--requests");
    argv.push_back(FixturePath(c["requests"].get<std::string>()));
  }
  return argv;
}

std::string Join(const std::vector<std::string>& argv) {
  std::string joined;
  for (const std::string& a : argv) joined += (joined.empty() ? "" : " ") + a;
  return joined;
}

bool IsSample(const std::string& line) { return !line.empty() && line[0] != '#'; }

// The metric or family name a line is about ("# HELP name ...", "# TYPE name ...", a sample).
std::string NameOf(const std::string& line) {
  size_t start = 0;
  if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) start = 7;
  const size_t end = line.find_first_of("{ ", start);
  return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// `text` without vmetrics' own families (vmetrics_*: what the wire lost, never in a Python
// frontend's exposition) and without vllm:cache_config_info's HELP and TYPE (vmetrics declares
// the family; the goldens' frontend path never calls it, so they lack it).
std::string WithoutVmetricsOwnFamilies(const std::string& text) {
  std::string kept;
  for (const std::string& line : Lines(text)) {
    const std::string name = NameOf(line);
    if (name.rfind("vmetrics_", 0) == 0 || name == "vllm:cache_config_info") continue;
    kept += line + "\n";
  }
  return kept;
}

// The golden of the case (or, for a generation without goldens, of the same kind of case of
// kFallbackGolden) for `format`.
std::string GoldenName(const Case& c) {
  const char* key = c.format == "text" ? "golden_text" : "golden_openmetrics";
  if (!c.manifest[key].is_null()) return c.manifest[key].get<std::string>();
  const std::string kind = c.name.substr(c.name.find('_'));  // "_stats_multi"
  return std::string(kFallbackGolden) + kind +
         (c.format == "text" ? ".golden.txt" : ".golden.om.txt");
}

// A golden line without its value ("name{labels} "), for the manifest's lines whose value is
// the placeholder `<ts>` (a `_created` time).
std::string WithoutValue(const std::string& line) { return line.substr(0, line.rfind(' ') + 1); }

// The golden lines the newest frontend would not print (manifest `newest_semantics`); a line
// listed with the value `<ts>` stands for that sample whatever its value, kept as
// WithoutValue(line).
std::set<std::string> NotPrintedByTheNewest(const Case& c) {
  std::set<std::string> lines;
  const Json& ns = c.manifest["newest_semantics"];
  if (!ns.is_object() || !ns.contains(c.format)) return lines;
  const Json& f = ns[c.format];
  if (!f.is_object() || !f.contains("golden_lines_not_printed")) return lines;
  for (const auto& [family, entry] : f["golden_lines_not_printed"].items()) {
    for (const Json& line : entry["lines"]) {
      const std::string text = line.get<std::string>();
      const bool any_value = text.size() > 5 && text.compare(text.size() - 5, 5, " <ts>") == 0;
      lines.insert(any_value ? WithoutValue(text) : text);
    }
  }
  return lines;
}

// The stderr line replay logs for `engine`'s recognition names `generation` acceptably.
::testing::AssertionResult RecognitionNames(const std::string& err, int engine,
                                            const std::string& generation) {
  const std::string prefix = "engine " + std::to_string(engine) + ": wire generation ";
  for (const std::string& line : Lines(err)) {
    const size_t at = line.find(prefix);
    if (at == std::string::npos) continue;
    const std::string rest = line.substr(at + prefix.size());
    if (rest.rfind(generation + " (", 0) == 0) return ::testing::AssertionSuccess();
    // Recognised as a generation that decodes the same, which names this one.
    if (rest.find("AMBIGUOUS") == std::string::npos && rest.find(generation) != std::string::npos &&
        rest.find("same layout") != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
    // Not decided (statistics only), with this generation among the candidates.
    if (rest.rfind("not decided yet", 0) == 0 && rest.find(generation) != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure()
         << "no stderr line says engine " << engine << " is " << generation << ":\n"
         << err;
}

class WireGenerationsTest : public ::testing::TestWithParam<Case> {};

TEST_P(WireGenerationsTest, ReplayMatchesTheGenerationsGolden) {
  const Case& c = GetParam();
  ASSERT_TRUE(c.load_error.empty()) << c.load_error;
  std::string golden;
  ASSERT_TRUE(ReadFile(FixturePath(GoldenName(c)), &golden)) << "cannot read " << GoldenName(c);

  const std::vector<std::string> argv = ReplayArgs(c.manifest, c.format);
  const RunResult run = RunBinary(argv);
  ASSERT_TRUE(run.error.empty()) << run.error;
  ASSERT_TRUE(WIFEXITED(run.wait_status) && WEXITSTATUS(run.wait_status) == 0)
      << Join(argv) << "\nended with " << DescribeWaitStatus(run.wait_status)
      << "\n----- stderr -----\n"
      << run.err;

  if (c.generation == kNewestWithGolden) {
    EXPECT_EQ(WithoutVmetricsOwnFamilies(run.out), golden) << Join(argv) << "\n----- stderr -----\n"
                                                           << run.err;
  } else {
    const std::set<std::string> not_printed = NotPrintedByTheNewest(c);
    const std::vector<std::string> got_lines = Lines(run.out);
    const std::set<std::string> got(got_lines.begin(), got_lines.end());
    size_t compared = 0;
    std::string missing;
    for (const std::string& line : Lines(golden)) {
      if (!IsSample(line) || not_printed.count(line) != 0 ||
          not_printed.count(WithoutValue(line)) != 0) {
        continue;
      }
      ++compared;
      if (got.count(line) == 0) missing += "  " + line + "\n";
    }
    EXPECT_GT(compared, 50u) << "the golden has too few sample lines to compare";
    EXPECT_TRUE(missing.empty()) << Join(argv) << "\ngolden " << GoldenName(c)
                                 << " sample lines missing from the output:\n"
                                 << missing << "----- output -----\n"
                                 << run.out << "----- stderr -----\n"
                                 << run.err;
    // The lines newest_semantics names really are not printed (the translation to the newest
    // frontend's semantics happened, rather than the old frontend's being copied).
    for (const std::string& line : got_lines) {
      EXPECT_TRUE(not_printed.count(line) == 0 && not_printed.count(WithoutValue(line)) == 0)
          << "printed, though the newest frontend does not: " << line;
    }
  }
  for (int engine = 0; engine < c.manifest["configuration"]["data_parallel_size"].get<int>();
       ++engine) {
    EXPECT_TRUE(RecognitionNames(run.err, engine, c.generation));
  }
}

class WireGenerationsForcedTest : public ::testing::TestWithParam<Case> {};

// Forced to a generation whose EngineCoreOutput layout differs: the run ends normally, the
// exposition is printed, the mismatch is logged, and the parts that do not decode are counted
// (never a crash, never silently).
TEST_P(WireGenerationsForcedTest, ForcedToAWrongGenerationIsLoggedNotFatal) {
  const Case& c = GetParam();
  ASSERT_TRUE(c.load_error.empty()) << c.load_error;
  // A generation whose EngineCoreOutput layout conflicts with the case's at position 10 (an
  // int num_cached_tokens where a map is expected, or the reverse).
  const bool sends_num_cached_tokens = c.generation < std::string("g20260712");
  const std::string wrong = sends_num_cached_tokens ? "g20260814-6adad087" : "g20250927-6f5c0931";
  std::vector<std::string> argv = ReplayArgs(c.manifest, c.format);
  argv.push_back("--engine-wire");
  argv.push_back(wrong);
  const RunResult run = RunBinary(argv);
  ASSERT_TRUE(run.error.empty()) << run.error;
  ASSERT_TRUE(WIFEXITED(run.wait_status) && WEXITSTATUS(run.wait_status) <= 1)
      << Join(argv) << "\nended with " << DescribeWaitStatus(run.wait_status)
      << "\n----- stderr -----\n"
      << run.err;
  EXPECT_NE(run.out.find("vllm:num_requests_running{"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find("does not fit --engine-wire " + wrong), std::string::npos) << run.err;
  if (c.manifest["kind"] == "outputs") {
    // Outputs read with another layout do not decode: each is skipped and counted.
    EXPECT_EQ(run.out.find("vmetrics_decode_errors_total{part=\"output\"} 0.0"), std::string::npos)
        << run.out;
  }
}

std::string CaseName(const ::testing::TestParamInfo<Case>& param_info) {
  std::string name = param_info.param.name + "_" + param_info.param.format;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, WireGenerationsTest, ::testing::ValuesIn(LoadCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Fixtures, WireGenerationsForcedTest,
                         ::testing::ValuesIn(LoadCases(/*both_formats=*/false)), CaseName);

}  // namespace
