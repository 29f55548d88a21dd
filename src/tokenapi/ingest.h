// SPDX-License-Identifier: Apache-2.0
// File: ingest.h
//
// Ingest: the one path a decoded EngineCoreOutputs message takes to /metrics, in `serve`
// (frontend.cc, on the engine client's output thread) and `replay` (replay.cc) alike:
//
//   decoded message (WireDecoder; each caller has its own framing)
//     -> IngestBookkeeping::Track: the requests the message concerns (RequestTracker, and in
//        `serve` the HTTP requests waiting for their tokens); returns its IterationStats
//     -> StatsRecorder::Record, then RecordIteration (the order of Python's output handler,
//        vllm/v1/engine/async_llm.py, output_handler, at 6adad087)
//     -> IngestBookkeeping::Settle: the requests the message finished are answered
//
// Recording runs between the two bookkeeping steps and holds none of the bookkeeping's locks:
// it is never serialised with HTTP submission, and a message's records are in /metrics before
// any request it finishes is answered (a client that has its answer finds its request there).
//
// Thread safety: an Ingest and its bookkeeping's Track and Settle are used by one thread at a
// time (the output thread, or the replaying thread). StatsRecorder::Record is safe against
// concurrent scrapes (recorder.h).
//
// Example:
//   Ingest ingest(&recorder, &request_service);  // or nullptr: nothing but the stats
//   ingest.Message(&decoded, context.message_number);
#ifndef VMETRICS_FRONTEND_INGEST_H_
#define VMETRICS_FRONTEND_INGEST_H_

#include <cstdint>
#include <optional>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/iteration_stats.h"

namespace vmetrics {
class StatsRecorder;  // recorder.h: the request service's header needs no registry
}  // namespace vmetrics

namespace vmetrics::frontend {

// The request side of ingestion: RequestService in `serve`, the requests sidecar in `replay`.
class IngestBookkeeping {
 public:
  virtual ~IngestBookkeeping() = default;

  // Track
  //
  // Before the message is recorded: its outputs go to their requests, and its SchedulerStats
  // get the LoRA adapters of the requests in flight (RequestTracker::UpdateSchedulerStats, as
  // Python writes them before recording). Returns the message's IterationStats (nullopt for
  // a message without outputs). `message_number` counts the engines' messages from 1.
  virtual std::optional<IterationStats> Track(EngineCoreOutputs* message,
                                              uint64_t message_number) = 0;

  // Settle
  //
  // After the message is recorded: the requests it finished are answered.
  virtual void Settle(const EngineCoreOutputs& message) = 0;
};

class Ingest {
 public:
  // `bookkeeping` may be null: the message's stats are recorded, no IterationStats. Neither
  // pointer is owned; both outlive the Ingest.
  Ingest(StatsRecorder* recorder, IngestBookkeeping* bookkeeping)
      : recorder_(recorder), bookkeeping_(bookkeeping) {}

  // Message
  //
  // Tracks, records and settles one decoded message, in that order.
  void Message(EngineCoreOutputs* message, uint64_t message_number);

 private:
  StatsRecorder* recorder_;
  IngestBookkeeping* bookkeeping_;
};

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_INGEST_H_
