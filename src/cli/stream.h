// File: stream.h
//
// Reading the capture format of `decode` and `replay`: concatenated msgpack EngineCoreOutputs
// messages (frame 0 of each ZeroMQ message), from a file or stdin ("-").
#ifndef VMETRICS_CLI_STREAM_H_
#define VMETRICS_CLI_STREAM_H_

#include <functional>
#include <string>
#include <string_view>

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

}  // namespace vmetrics::cli

#endif  // VMETRICS_CLI_STREAM_H_
