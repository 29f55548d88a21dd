// SPDX-License-Identifier: Apache-2.0
// File: flags_test.cc
//
// The `vmetrics` binary's flags from the outside: every subcommand is there with the flags the
// docs, the tests and users rely on, and options that cannot be used end the process at once
// with a message naming the flag and exit status 2 (a usage error, found by the flag parser or
// by the subcommand; 1 is for a serve or demo that cannot start: its engines or sockets). The work
// behind the flags is tested in tests/frontend and beside it; here only what src/cli adds.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "run_binary.h"

namespace {

using vmetrics::cli_test::DescribeWaitStatus;
using vmetrics::cli_test::RunBinary;
using vmetrics::cli_test::RunResult;

RunResult RunVmetrics(std::vector<std::string> args) {
  args.insert(args.begin(), VMETRICS_BINARY);
  return RunBinary(args);
}

int ExitStatus(const RunResult& r) {
  return WIFEXITED(r.wait_status) ? WEXITSTATUS(r.wait_status) : -1;
}

TEST(Flags, EverySubcommandHasItsFlags) {
  struct Subcommand {
    std::string name;
    std::vector<std::string> flags;
  };
  const std::vector<Subcommand> subcommands = {
      {"serve",
       {"--served-model-name",
        "--kv-transfer-config",
        "--ec-transfer-config",
        "--data-parallel-size",
        "--data-parallel-address",
        "--data-parallel-rpc-port",
        "--handshake-address",
        "--advertise-address",
        "--input-address",
        "--output-address",
        "--engine-start-index",
        "--engine-count",
        "--engine-ready-timeout",
        "--speculative-config",
        "--diffusion-model",
        "--kv-cache-metrics",
        "--custom-histogram-buckets",
        "--show-hidden-metrics-for-version",
        "--max-model-len",
        "--cache-config-info",
        "--disable-created-series",
        "--max-label-values-per-family",
        "--max-label-value-bytes",
        "--enable-lora",
        "--max-loras",
        "--lora-modules",
        "--host",
        "--port",
        "--http-threads",
        "--http-max-connections",
        "--http-max-connections-per-address",
        "--http-scrape-reserve",
        "--http-request-timeout",
        "--http-idle-timeout",
        "--http-max-rendered-bodies",
        "--http-max-stream-unsent-bytes",
        "--http-stream-write-timeout",
        "--http-error-log-interval",
        "--web-config-file",
        "--log-format"}},
      {"replay",
       {"--served-model-name", "--data-parallel-size", "--kv-transfer-config",
        "--ec-transfer-config", "--max-model-len", "--speculative-config", "--diffusion-model",
        "--kv-cache-metrics", "--custom-histogram-buckets", "--show-hidden-metrics-for-version",
        "--enable-lora", "--max-loras", "--format", "--disable-created-series",
        "--created-timestamp", "--requests"}},
      {"decode", {"--kv-transfer-config"}},
      {"simulate",
       {"--handshake-address",
        "--input-address",
        "--output-address",
        "--capture",
        "--engine-start-index",
        "--engines",
        "--steps",
        "--rate",
        "--connector",
        "--legacy-multi-shape",
        "--seed",
        "--max-model-len",
        "--num-speculative-tokens",
        "--stats-only",
        "--serve-requests",
        "--routed-experts-layers",
        "--no-synthetic-requests",
        "--report-totals",
        "--die-after",
        "--vanish-after",
        "--malformed-probability",
        "--truncated-multipart-probability",
        "--fault-engine",
        "--hold",
        "--handshake-timeout-ms"}},
      {"demo",
       {"--engines", "--connector", "--rate", "--duration", "--seed", "--request-rate", "--port",
        "--served-model-name", "--log-format"}},
      {"bench-serve",
       {"--url", "--ca-file", "--user", "--password", "--requests", "--duration", "--rate",
        "--concurrency", "--prompt-len", "--max-tokens", "--n", "--model", "--seed"}},
      {"describe-connectors", {"--compact", "--connector"}},
      {"metrics-reference", {}},
  };
  const RunResult top = RunVmetrics({"--help"});
  ASSERT_EQ(top.error, "");
  EXPECT_EQ(ExitStatus(top), 0) << DescribeWaitStatus(top.wait_status);
  for (const Subcommand& sub : subcommands) {
    EXPECT_NE(top.out.find(sub.name), std::string::npos) << sub.name << " missing:\n" << top.out;
    const RunResult help = RunVmetrics({sub.name, "--help"});
    EXPECT_EQ(ExitStatus(help), 0) << sub.name;
    for (const std::string& flag : sub.flags) {
      EXPECT_NE(help.out.find(flag + " "), std::string::npos)
          << sub.name << " lacks " << flag << ":\n"
          << help.out;
    }
  }
}

TEST(Flags, UnusableOptionsEndAtOnceNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    int exit_status;
    std::string stderr_part;
  };
  const std::vector<Case> cases = {
      {{"bench-serve", "--url", "ftp://127.0.0.1/v1/completions", "--requests", "1"},
       2,
       "vmetrics bench-serve: --url: ftp://127.0.0.1/v1/completions is not an http:// or https:// "
       "URL"},
      {{"bench-serve", "--requests", "0"}, 2, "give --requests N or --duration S"},
      {{"describe-connectors", "--connector", "NoSuchConnector"},
       2,
       "vmetrics describe-connectors: no built-in row answers to NoSuchConnector"},
      {{"replay", "/nonexistent/capture.msgpack"}, 2, "vmetrics replay: cannot open"},
      {{"replay", "-", "--kv-transfer-config", "{"}, 2, "--kv-transfer-config is not valid JSON"},
      {{"replay", "-", "--custom-histogram-buckets", R"({"nixl":[1]})"},
       2,
       "--custom-histogram-buckets: unknown bucket family 'nixl'"},
      {{"replay", "-", "--custom-histogram-buckets", R"({"request_latency":[2,1]})"},
       2,
       "--custom-histogram-buckets['request_latency']: bounds [2,1] must be strictly increasing"},
      {{"replay", "-", "--show-hidden-metrics-for-version", "latest"},
       2,
       "--show-hidden-metrics-for-version: invalid version 'latest'"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0",
        "--custom-histogram-buckets", R"({"request_tokens":[]})"},
       2,
       "--custom-histogram-buckets['request_tokens']: bucket list must not be empty"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0",
        "--show-hidden-metrics-for-version", "0.x"},
       2,
       "--show-hidden-metrics-for-version: invalid version '0.x'"},
      {{"decode", "-", "--kv-transfer-config", "[]"}, 2, "--kv-transfer-config must be a JSON"},
      {{"demo", "--connector", "bogus"}, 2, "unknown --connector bogus"},
      {{"simulate"}, 2, "give --handshake-address, --input-address/--output-address or --capture"},
      {{"simulate", "--capture", "/tmp/x", "--kv-role", "kv_producer"},
       2,
       "--kv-role needs --serve-requests and --connector nixl"},
      {{"simulate", "--capture", "/tmp/x", "--routed-experts-layers", "2"},
       2,
       "--routed-experts-layers needs --serve-requests"},
      {{"simulate", "--capture", "/tmp/x", "--kv-role", "kv_consumer", "--serve-requests",
        "--connector", "nixl", "--echo-kv-transfer-params"},
       2,
       "--kv-role and --echo-kv-transfer-params exclude each other"},
      // serve checks what needs no engine before waiting for any (each of these would wait
      // 600 s for an engine otherwise, and the test time out).
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--lora-modules",
        "sql=/a"},
       2,
       "--lora-modules requires --enable-lora"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--enable-lora",
        "--lora-modules", "nopath"},
       2,
       "--lora-modules: nopath is not name=path"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0",
        "--http-request-timeout", "86401"},
       2,
       "--http-request-timeout"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--http-threads", "4",
        "--http-max-connections", "2"},
       2,
       "--http-max-connections (2) must be at least --http-threads (4)"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--speculative-config",
        "3"},
       2,
       "--speculative-config must be a JSON object"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--kv-transfer-config",
        "{"},
       2,
       "--kv-transfer-config"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--ec-transfer-config",
        R"({"ec_connector":"ECCPUConnector","ec_role":"both"})"},
       2,
       "--ec-transfer-config: ec_role must be ec_producer, ec_consumer or ec_both"},
      {{"replay", "/dev/null", "--ec-transfer-config", "[]"},
       2,
       "--ec-transfer-config: must be a JSON object"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--cache-config-info",
        "[]"},
       2,
       "--cache-config-info must be a JSON object"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--cache-config-info",
        R"({"engine": 1})"},
       2,
       "--cache-config-info: key \"engine\" is not a usable label name"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--cache-config-info",
        R"({"prefix-caching": true})"},
       2,
       "--cache-config-info: key \"prefix-caching\""},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--web-config-file",
        "/nonexistent/web.yml"},
       2,
       "/nonexistent/web.yml"},
      // The flag parser's own usage errors exit 2 too, not CLI11's 105-109.
      {{"serve", "--port", "http"}, 2, "--port"},
      {{"serve", "--no-such-flag"}, 2, "--no-such-flag"},
      {{"serve", "--log-level", "loud"}, 2, "--log-level"},
      {{"serve", "--data-parallel-size", "0"}, 2, "--data-parallel-size"},
      {{"serve", "--handshake-address", "tcp://0.0.0.0:0", "--port", "0"},
       2,
       "give --advertise-address HOST"},
      // Values CLI11 would clamp ("1e20"), take negative, or read as "no limit" ("-1" into an
      // unsigned field), and names that would make /metrics unparsable or huge.
      {{"serve", "--max-model-len", "1e20"}, 2, "--max-model-len"},
      {{"serve", "--max-model-len", "-5"}, 2, "--max-model-len"},
      {{"serve", "--max-model-len", "0"}, 2, "--max-model-len"},
      {{"serve", "--max-model-len", "9223372036854775808"}, 2, "--max-model-len"},
      {{"replay", "-", "--max-model-len", "1e20"}, 2, "--max-model-len"},
      {{"serve", "--max-label-value-bytes", "-1"}, 2, "--max-label-value-bytes"},
      {{"serve", "--max-label-value-bytes", "0"}, 2, "--max-label-value-bytes"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--served-model-name",
        "model\xfe"},
       2,
       "--served-model-name must be valid UTF-8"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--served-model-name",
        std::string(120 * 1024, 'm')},
       2,
       "--served-model-name is 122880 bytes, more than --max-label-value-bytes (1024)"},
      {{"replay", "-", "--served-model-name", "model\xfe"},
       2,
       "--served-model-name must be valid UTF-8"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--speculative-config",
        R"({"num_speculative_tokens":"3"})"},
       2,
       "--speculative-config: num_speculative_tokens must be an integer from 1 to 128"},
      {{"replay", "-", "--speculative-config", R"({"num_speculative_tokens":2.5})"},
       2,
       "--speculative-config: num_speculative_tokens must be an integer"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--enable-lora",
        "--lora-modules", "sql\xfe=/adapters/sql"},
       2,
       "--lora-modules: the name of adapter 1 is not valid UTF-8"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--api-key", " sk"},
       2,
       "--api-key: a key must be non-empty, without control characters or blanks at either end"},
  };
  for (const Case& c : cases) {
    const RunResult r = RunVmetrics(c.args);
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(ExitStatus(r), c.exit_status)
        << c.args[0] << ": " << DescribeWaitStatus(r.wait_status) << "\n"
        << r.err;
    EXPECT_NE(r.err.find(c.stderr_part), std::string::npos) << c.args[0] << ":\n" << r.err;
  }
}

// VLLM_COMPUTE_NANS_IN_LOGITS is read as vLLM's frontend reads it (an integer); anything else
// ends serve and replay at once, naming the variable.
TEST(Flags, ABadNanCheckingSwitchEndsAtOnceNamingTheVariable) {
  ASSERT_EQ(setenv("VLLM_COMPUTE_NANS_IN_LOGITS", "yes", 1), 0);
  const RunResult replay = RunVmetrics({"replay", "/dev/null"});
  const RunResult serve =
      RunVmetrics({"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0"});
  ASSERT_EQ(setenv("VLLM_COMPUTE_NANS_IN_LOGITS", "1", 1), 0);
  const RunResult on = RunVmetrics({"replay", "/dev/null"});
  unsetenv("VLLM_COMPUTE_NANS_IN_LOGITS");
  for (const RunResult* r : {&replay, &serve}) {
    ASSERT_EQ(r->error, "");
    EXPECT_EQ(ExitStatus(*r), 2) << r->err;
    EXPECT_NE(r->err.find("VLLM_COMPUTE_NANS_IN_LOGITS must be an integer"), std::string::npos)
        << r->err;
  }
  EXPECT_EQ(ExitStatus(on), 0) << on.err;
  EXPECT_NE(on.out.find(R"(vllm:corrupted_requests_total{engine="0",model_name="model"} 0.0)"),
            std::string::npos)
      << on.out;
}

// VLLM_API_KEY is the key when --api-key is not given, as in vLLM: it is checked like one.
TEST(Flags, VllmApiKeyFromTheEnvironmentIsCheckedLikeTheFlag) {
  ASSERT_EQ(setenv("VLLM_API_KEY", "sk\x01", 1), 0);
  const RunResult serve =
      RunVmetrics({"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0"});
  unsetenv("VLLM_API_KEY");
  ASSERT_EQ(serve.error, "");
  EXPECT_EQ(ExitStatus(serve), 2) << serve.err;
  EXPECT_NE(serve.err.find("--api-key"), std::string::npos) << serve.err;
}

// An HTTP port in use ends serve at once, naming the flag, before any engine is waited for.
TEST(Flags, ServeWithItsHttpPortInUseEndsAtOnce) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const RunResult r = RunVmetrics({"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port",
                                   std::to_string(ntohs(addr.sin_port))});
  close(fd);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(ExitStatus(r), 2) << DescribeWaitStatus(r.wait_status) << "\n" << r.err;
  EXPECT_NE(r.err.find("--host/--port: "), std::string::npos) << r.err;
}

// The demo's HTTP port in use: it ends at once and suggests an ephemeral port, in both modes
// (the P/D demo's prefill side takes --port).
TEST(Flags, DemoWithItsHttpPortInUseSuggestsPortZero) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  const RunResult single = RunVmetrics({"demo", "--port", port, "--duration", "1"});
  const RunResult pd = RunVmetrics({"demo", "--pd", "--port", port, "--duration", "1"});
  close(fd);
  for (const RunResult* r : {&single, &pd}) {
    ASSERT_EQ(r->error, "");
    EXPECT_EQ(ExitStatus(*r), 1) << DescribeWaitStatus(r->wait_status) << "\n" << r->err;
    EXPECT_NE(r->err.find("cannot bind: --host/--port: cannot serve HTTP"), std::string::npos)
        << r->err;
    EXPECT_NE(r->err.find("(try --port 0)"), std::string::npos) << r->err;
  }
}

// "2026-12-01T18:40:30.123Z vmetrics: ...": digits where the pattern has 'd'. (No std::regex:
// GCC 12 warns inside <regex> at -O1, which the sanitizer builds use with -Werror.)
bool IsTimestampedLine(std::string_view line) {
  constexpr std::string_view kPattern = "dddd-dd-ddTdd:dd:dd.dddZ vmetrics: ";
  if (line.size() < kPattern.size()) return false;
  for (size_t i = 0; i < kPattern.size(); ++i) {
    const bool digit = line[i] >= '0' && line[i] <= '9';
    if (kPattern[i] == 'd' ? !digit : line[i] != kPattern[i]) return false;
  }
  return true;
}

// Text log lines start with their UTC time; --log-level drops the lines below it.
TEST(Flags, ServeLogLinesHaveTimestampsAndTheLevelFilters) {
  const std::vector<std::string> no_engine = {
      "serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--engine-ready-timeout",
      "0.2"};
  const RunResult info = RunVmetrics(no_engine);
  ASSERT_EQ(info.error, "");
  EXPECT_EQ(ExitStatus(info), 1) << info.err;  // no engine came: not a usage error
  std::istringstream lines(info.err);
  int n = 0;
  for (std::string l; std::getline(lines, l); ++n) EXPECT_TRUE(IsTimestampedLine(l)) << l;
  EXPECT_GE(n, 3) << info.err;
  EXPECT_NE(info.err.find("Z vmetrics: waiting for 1 engine(s)"), std::string::npos) << info.err;
  EXPECT_NE(info.err.find("Z vmetrics: error: startup failed: "), std::string::npos) << info.err;

  std::vector<std::string> quiet = no_engine;
  quiet.insert(quiet.end(), {"--log-level", "error"});
  const RunResult errors_only = RunVmetrics(quiet);
  EXPECT_EQ(ExitStatus(errors_only), 1);
  EXPECT_EQ(errors_only.err.find("vmetrics: waiting for"), std::string::npos) << errors_only.err;
  EXPECT_NE(errors_only.err.find("error: startup failed: "), std::string::npos) << errors_only.err;
}

// Every option with a default shows it in --help.
TEST(Flags, ServeHelpShowsTheDefaults) {
  const RunResult help = RunVmetrics({"serve", "--help"});
  for (const char* shown : {"--served-model-name TEXT=model", "=29550", "=127.0.0.1", "=600",
                            "=8000", "--log-level TEXT:{debug,info,warning,error}=info"}) {
    EXPECT_NE(help.out.find(shown), std::string::npos) << shown << ":\n" << help.out;
  }
}

}  // namespace
