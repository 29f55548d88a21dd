// SPDX-License-Identifier: Apache-2.0
// File: run_binary.h
//
// Running the `vmetrics` binary from a test as a user would: posix_spawn with an explicit argv
// (no shell sees the arguments), stdin from /dev/null, stdout and stderr collected apart.
// PROMETHEUS_DISABLE_CREATED_SERIES is removed from the child's environment (replay honours it,
// and the goldens say themselves whether they carry `_created`).
//
// Thread safety: every call is independent.
#ifndef VMETRICS_TESTS_CLI_RUN_BINARY_H_
#define VMETRICS_TESTS_CLI_RUN_BINARY_H_

#include <string>
#include <vector>

namespace vmetrics::cli_test {

struct RunResult {
  std::string error;  // spawning or waiting failed
  int wait_status = 0;
  std::string out;
  std::string err;
};

// Runs argv[0] with argv and waits for it. Both pipes are drained together with poll, so
// neither can fill up and block the child.
RunResult RunBinary(const std::vector<std::string>& argv);

// "exit status 2", "killed by signal 11".
std::string DescribeWaitStatus(int status);

}  // namespace vmetrics::cli_test

#endif  // VMETRICS_TESTS_CLI_RUN_BINARY_H_
