// File: stream.h
//
// Reading the capture format of `decode` and `replay`: concatenated msgpack EngineCoreOutputs
// messages (frame 0 of each ZeroMQ message), from a file or stdin ("-").
#ifndef VMETRICS_CLI_STREAM_H_
#define VMETRICS_CLI_STREAM_H_

#include <functional>
#include <string>
#include <string_view>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/status.h"

namespace vmetrics::cli {

// Reads a whole file ("-" = stdin). Returns false and sets `error` on failure.
bool ReadInput(const std::string& path, std::string* data, std::string* error);

// Splits `data` into messages and calls `fn(message_number, offset, bytes)` for each, in order.
// Returns Ok at the end of the data, or the structural error (truncated or invalid msgpack)
// that makes the next message boundary unknowable (its offset is absolute in `data`).
Status ForEachMessage(std::string_view data,
                      const std::function<void(uint64_t, size_t, std::string_view)>& fn,
                      uint64_t* messages_seen);

// Decodes every message of `data` in order. Good messages go to `on_message`, which may change
// the message (the next one is decoded over it); a message that does not decode is reported on
// stderr ("<who>: message N at byte B: ...") and to `on_error`, then skipped. Returns the number of
// messages that failed, counting a structural error that ends the stream as one.
uint64_t DecodeStream(std::string_view data, const char* who,
                      const std::function<DecodeContext(uint64_t)>& context_for,
                      const std::function<void(EngineCoreOutputs&, uint64_t number, size_t offset,
                                               const DecodeContext&)>& on_message,
                      const std::function<void()>& on_error);

// prometheus_client's own switch: PROMETHEUS_DISABLE_CREATED_SERIES=True turns _created off.
bool CreatedDisabledByEnvironment();

}  // namespace vmetrics::cli

#endif  // VMETRICS_CLI_STREAM_H_
