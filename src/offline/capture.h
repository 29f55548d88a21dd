// SPDX-License-Identifier: Apache-2.0
// File: capture.h
//
// Reading the capture format of `decode` and `replay`: concatenated msgpack EngineCoreOutputs
// messages (frame 0 of each ZeroMQ message, as `vmetrics simulate --capture` writes them),
// from a file or stdin ("-").
//
// Thread safety: free functions without shared state.
#ifndef VMETRICS_FRONTEND_CAPTURE_H_
#define VMETRICS_FRONTEND_CAPTURE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/status.h"
#include "vmetrics/wire_decoder.h"

namespace vmetrics::frontend {

// ReadCaptureFile
//
// The whole file ("-" = stdin). kInvalidArgument naming the path when it cannot be opened,
// kUnavailable when reading fails.
Result<std::string> ReadCaptureFile(const std::string& path);

// ForEachMessage
//
// Splits `data` into messages and calls `fn(message_number, offset, bytes)` for each, in order
// (numbers from 1). Returns Ok at the end of the data, or the structural error (truncated or
// invalid msgpack) that makes the next message boundary unknowable (its offset is absolute in
// `data`). *messages_seen is the number of messages passed to `fn`.
Status ForEachMessage(std::string_view data,
                      const std::function<void(uint64_t, size_t, std::string_view)>& fn,
                      uint64_t* messages_seen);

// DecodeStream
//
// Decodes every message of `data` through `wire` (wire_decoder.h: each engine's messages with
// its wire generation's table; a message of an engine not recognised yet may be held and
// decoded later, still in its engine's order, at the latest when the stream ends). Good
// messages go to `on_message`, which may change the message (the next one is decoded over it,
// so its vectors keep their capacity). A message that does not decode goes to `on_error`
// ("message N at byte B: <status>; skipped") and is skipped; a structural error ends the stream
// ("message N: <status>; the next message cannot be found, stopping"). Returns the number of
// failures, counting the structural one.
uint64_t DecodeStream(std::string_view data, WireDecoder& wire,
                      const std::function<DecodeContext(uint64_t)>& context_for,
                      const std::function<void(EngineCoreOutputs&, uint64_t number, size_t offset,
                                               const DecodeContext&)>& on_message,
                      const std::function<void(const std::string& what)>& on_error);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_CAPTURE_H_
