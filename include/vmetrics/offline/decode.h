// SPDX-License-Identifier: Apache-2.0
// File: decode.h
//
// DecodeCapture: what `vmetrics decode` does. Each EngineCoreOutputs message of a capture
// (capture.h) becomes one JSON line showing every decoded field; for kv_connector_stats, which
// connector each payload was recognised as, how (class name, shape, descriptor) and what
// recording does with it (the outcome StatsRecorder::ResolveConnector gives it, and the
// samples per family), so a payload can be debugged without a scrape.
//
// Thread safety: free function without shared state.
//
// Example:
//   DecodeCaptureOptions o;
//   o.input = "tests/fixtures/kv_nixl.msgpack";
//   Result<uint64_t> failed =
//       DecodeCapture(o, [](std::string_view line) { std::fwrite(line.data(), 1, line.size(),
//                                                                stdout); });
#ifndef VMETRICS_FRONTEND_DECODE_H_
#define VMETRICS_FRONTEND_DECODE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "vmetrics/status.h"

namespace vmetrics::frontend {

struct DecodeCaptureOptions {
  // The capture ("-" = stdin). Required.
  std::string input;
  // vLLM's KVTransferConfig JSON: the configured connector, as `replay` would have it.
  std::string kv_transfer_config;
  // --engine-wire: "auto", a wire generation or a vLLM release (wire_decoder.h). Each line
  // says the engine's generation (`wire_generation`, null while undecided, with
  // `wire_candidates`) and the table it was decoded with (`decoded_as`).
  std::string engine_wire = "auto";
  // Where the messages that do not decode and once-logged recording problems go, one line
  // each without a newline. nullptr = dropped.
  std::function<void(std::string_view)> log;
};

// DecodeCapture
//
// Passes one JSON document per message, ending in '\n', to `out`, in order. Returns the number
// of messages that did not decode (skipped and logged). Failure (kInvalidArgument) for bad
// kv_transfer_config JSON, an unknown --engine-wire or an unreadable capture.
Result<uint64_t> DecodeCapture(const DecodeCaptureOptions& args,
                               const std::function<void(std::string_view line)>& out);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_DECODE_H_
