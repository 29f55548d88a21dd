// SPDX-License-Identifier: Apache-2.0
// vmetrics decode FILE: the flags of frontend::DecodeCapture (offline/decode.h); one JSON line
// per message on stdout. Exit 0, or 1 when a message did not decode, or 2 for options that
// cannot be used.
#include "vmetrics/offline/decode.h"

#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "vmetrics/internal/wire_text.h"

namespace vmetrics::cli {
namespace {

int RunDecode(frontend::DecodeCaptureOptions options) {
  options.log = [](std::string_view line) {
    const std::string escaped = internal::EscapeForLog(line);
    std::fprintf(stderr, "vmetrics decode: %s\n", escaped.c_str());
  };
  Result<uint64_t> failed = frontend::DecodeCapture(
      options, [](std::string_view line) { std::fwrite(line.data(), 1, line.size(), stdout); });
  if (!failed.ok()) {
    std::fprintf(stderr, "vmetrics decode: %s\n",
                 internal::EscapeForLog(failed.status().message()).c_str());
    return 2;
  }
  return *failed > 0 ? 1 : 0;
}

}  // namespace

void AddDecodeCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<frontend::DecodeCaptureOptions>();
  CLI::App* cmd = app.add_subcommand(
      "decode", "Print each EngineCoreOutputs message of a capture as one JSON line");
  cmd->footer(
      "Examples:\n"
      "  vmetrics decode tests/fixtures/nixl_stats.msgpack\n"
      "  vmetrics decode - --kv-transfer-config '{\"kv_connector\":\"MooncakeConnector\"}' < cap");
  cmd->add_option("file", options->input, "Concatenated msgpack EngineCoreOutputs ('-' = stdin)")
      ->required();
  cmd->add_option("--kv-transfer-config", options->kv_transfer_config,
                  "vLLM's KVTransferConfig JSON (configured connector)");
  cmd->add_option("--engine-wire", options->engine_wire,
                  "Wire generation of the engines: auto (recognised from the messages), a "
                  "generation (g20260712-370b678a, or g20260712) or a vLLM release");
  cmd->callback([options, exit_code] { *exit_code = RunDecode(*options); });
}

}  // namespace vmetrics::cli
