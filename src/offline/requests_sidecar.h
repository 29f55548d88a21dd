// SPDX-License-Identifier: Apache-2.0
// File: requests_sidecar.h
//
// The frontend side of a capture, for `vmetrics replay --requests FILE`: which requests the
// frontend sent (and when), which it aborted, and the frontend clocks at each message. With it,
// replay feeds request outputs through a RequestTracker and records the request and iteration
// families (docs/recording.md "Request sidecar"). Without it replay does not feed them.
//
// Format: JSON lines, applied in file order; blank lines and lines starting with `#` are
// skipped.
//   {"request_id": "r1", "arrival_time": 100.0, "prompt_len": 7, "max_tokens": 16,
//    "n": 1, "parent": "p", "lora": "adapter"}
//       the frontend sends a request: arrival_time (frontend wall clock) and prompt_len are
//       required; max_tokens defaults to 16 (null = None, a pooling request); n (default 1) and
//       parent ("" = none) describe parallel sampling; lora ("" = none).
//   {"abort": ["r1", ...]}
//       the client aborts requests (no statistics; later outputs for them are skipped).
//   {"message": 3, "iteration_timestamp": 101.5, "monotonic": 12.0}
//       message 3 of the capture (1-based) is processed here; iteration_timestamp is the
//       frontend's time.time() when it arrived; monotonic (optional) is the frontend's
//       time.monotonic(), which replaces a message timestamp of 0.0. Message numbers increase.
// A message without a line of its own is processed when reached, with the previous
// iteration_timestamp (0.0 before the first one).
//
// Thread safety: none; one replay owns one sidecar.
//
// Example:
//   Result<RequestSidecar> sidecar = RequestSidecar::Load("capture.requests.jsonl");
//   RequestTracker tracker;
//   RequestSidecar::Clocks clocks = sidecar->Advance(/*message_number=*/1, &tracker);
#ifndef VMETRICS_FRONTEND_REQUESTS_SIDECAR_H_
#define VMETRICS_FRONTEND_REQUESTS_SIDECAR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vmetrics/requests.h"
#include "vmetrics/status.h"

namespace vmetrics::frontend {

class RequestSidecar {
 public:
  struct Clocks {
    double iteration_timestamp = 0;
    double monotonic = 0;
  };

  // Reads and validates the whole file. Fails (Malformed, with the line number in the message)
  // on invalid JSON, an unknown line shape, a field of the wrong type, or message numbers that
  // do not increase.
  static Result<RequestSidecar> Load(const std::string& path);

  // Applies every line up to the one for `message_number` (inclusive) and returns the clocks
  // for that message. Lines for later messages stay pending.
  Clocks Advance(uint64_t message_number, RequestTracker* tracker);

  // Applies the lines after the last message (trailing aborts).
  void Finish(RequestTracker* tracker);

 private:
  struct Line {
    enum class Kind { kAdd, kAbort, kMessage } kind = Kind::kAdd;
    RequestInfo add;
    std::vector<std::string> abort;
    uint64_t message = 0;
    double iteration_timestamp = 0;
    bool has_monotonic = false;
    double monotonic = 0;
  };
  void Apply(const Line& line, RequestTracker* tracker);

  std::vector<Line> lines_;
  size_t next_ = 0;
  Clocks clocks_;
};

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_REQUESTS_SIDECAR_H_
