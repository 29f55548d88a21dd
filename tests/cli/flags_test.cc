// File: flags_test.cc
//
// The `vmetrics` binary's flags from the outside: every subcommand is there with the flags the
// docs, the tests and users rely on, and options that cannot be used end the process at once
// with a message naming the flag and the exit status of today (2 for a usage error the
// subcommand finds, 1 for a serve or demo that cannot start). The work behind the flags is
// tested in tests/frontend and beside it; here only what src/cli adds.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>
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
        "--data-parallel-size",
        "--data-parallel-address",
        "--data-parallel-rpc-port",
        "--handshake-address",
        "--input-address",
        "--output-address",
        "--engine-start-index",
        "--engine-count",
        "--engine-ready-timeout",
        "--speculative-config",
        "--kv-cache-metrics",
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
        "--web-config-file",
        "--log-format"}},
      {"replay",
       {"--served-model-name", "--data-parallel-size", "--kv-transfer-config", "--max-model-len",
        "--speculative-config", "--kv-cache-metrics", "--enable-lora", "--max-loras", "--format",
        "--disable-created-series", "--created-timestamp", "--requests"}},
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
      {{"decode", "-", "--kv-transfer-config", "[]"}, 2, "--kv-transfer-config must be a JSON"},
      {{"demo", "--connector", "bogus"}, 2, "unknown --connector bogus"},
      {{"simulate"}, 2, "give --handshake-address, --input-address/--output-address or --capture"},
      // serve checks what needs no engine before waiting for any.
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--lora-modules",
        "sql=/a"},
       1,
       "--lora-modules requires --enable-lora"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--enable-lora",
        "--lora-modules", "nopath"},
       1,
       "--lora-modules: nopath is not name=path"},
      {{"serve", "--handshake-address", "tcp://127.0.0.1:0", "--port", "0", "--speculative-config",
        "3"},
       1,
       "--speculative-config must be a JSON object"},
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

}  // namespace
