// SPDX-License-Identifier: Apache-2.0
// Ingest: track, record, settle; see ingest.h.
#include "ingest.h"

#include "vmetrics/recorder.h"

namespace vmetrics::frontend {

void Ingest::Message(EngineCoreOutputs* message, uint64_t message_number) {
  if (bookkeeping_ == nullptr) {
    recorder_->Record(*message);
    return;
  }
  const std::optional<IterationStats> it = bookkeeping_->Track(message, message_number);
  // Python records a message's SchedulerStats, then its IterationStats.
  recorder_->Record(*message);
  if (it) recorder_->RecordIteration(*it, message->engine_index);
  bookkeeping_->Settle(*message);
}

}  // namespace vmetrics::frontend
