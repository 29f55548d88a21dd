// SPDX-License-Identifier: Apache-2.0
// File: commands.h
//
// The `vmetrics` subcommands. Each lives in its own file and registers itself on the CLI11 app
// with Add<Name>Command; its callback runs the command and stores the process exit status.
#ifndef VMETRICS_CLI_COMMANDS_H_
#define VMETRICS_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace vmetrics::cli {

// Each Add* registers a subcommand whose callback sets *exit_code.
void AddDecodeCommand(CLI::App& app, int* exit_code);
void AddReplayCommand(CLI::App& app, int* exit_code);
void AddServeCommand(CLI::App& app, int* exit_code);
void AddSimulateCommand(CLI::App& app, int* exit_code);
void AddDemoCommand(CLI::App& app, int* exit_code);
void AddMetricsReferenceCommand(CLI::App& app, int* exit_code);
void AddWireReferenceCommand(CLI::App& app, int* exit_code);
void AddDescribeConnectorsCommand(CLI::App& app, int* exit_code);
void AddBenchServeCommand(CLI::App& app, int* exit_code);

// A CLI11 check for an integer flag, on the text as given: decimal digits only (no sign, no
// exponent, no hex, no blanks) and a value from `min` to `max`. CLI11's own conversion clamps
// "1e20" and takes "-1" into an unsigned field; this refuses both, naming the flag (exit 2).
CLI::Validator DecimalInRange(uint64_t min, uint64_t max);

}  // namespace vmetrics::cli

#endif  // VMETRICS_CLI_COMMANDS_H_
