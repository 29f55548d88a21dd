// SPDX-License-Identifier: Apache-2.0
// File: record_fuzz_check.h
//
// The invariants the recording fuzzer checks, shared by the libFuzzer entry (record_fuzz.cc)
// and the corpus-replay test (tests/metrics/record_corpus_replay_test.cc), so a crash input
// kept in fuzz/corpus/record/ fails ctest without libFuzzer.
//
// The input is one EngineCoreOutputs message, split into frames as decode_fuzz does
// (decode_fuzz_check.h). It goes the way a message goes in `vmetrics serve`: decoded with the
// recorder's context (no connector configured, then a MultiConnector and the ECCPUConnector EC
// connector, so ec_connector_stats are recorded too), its SchedulerStats given
// the tracker's LoRA adapters and recorded, its outputs turned into an IterationStats by a
// RequestTracker that knows every request id in the message (requests with a LoRA adapter, NaN
// checking on) and recorded — twice, so the second message meets every child already made.
// Invariants:
//   * recording never crashes (ASan/UBSan report anything else);
//   * a utility output's result reads as the engine control routes read it
//     (DecodeUtilityResult): the same status twice, never a crash;
//   * both renderings (text 0.0.4, OpenMetrics) pass the exposition grammar checker
//   (exposition_invariant.h): no engine timestamp, count, name or
//     stat can make /metrics unparsable.
#ifndef VMETRICS_FUZZ_RECORD_FUZZ_CHECK_H_
#define VMETRICS_FUZZ_RECORD_FUZZ_CHECK_H_

#include <string>
#include <string_view>
#include <vector>

#include "fuzz/decode_fuzz_check.h"
#include "fuzz/exposition_invariant.h"
#include "vmetrics/recorder.h"
#include "vmetrics/registry.h"
#include "vmetrics/requests.h"
#include "vmetrics/utility_call.h"

namespace vmetrics::fuzz {

inline std::string CheckRecordInvariants(std::string_view data) {
  const std::vector<std::string_view> frames = SplitFuzzInput(data);
  static const ConnectorConfig kMulti{
      "MultiConnector", {"NixlConnector", "MooncakeStoreConnector", "MooncakeConnector"}};
  const ConnectorConfig* configs[] = {nullptr, &kMulti};
  for (const ConnectorConfig* config : configs) {
    Registry registry;
    RecorderOptions o;
    o.log = [](const std::string&) {};
    o.engine_indexes = {0, 1};
    o.max_loras = 2;
    o.num_speculative_tokens = 2;
    o.max_label_values_per_family = 8;
    if (config != nullptr) {
      o.connectors = *config;
      o.ec_connector.connector = "ECCPUConnector";
    }
    StatsRecorder recorder(&registry, o);
    RequestTracker::Options tracker_options;
    tracker_options.track_nans_in_logits = true;
    tracker_options.monotonic = [] { return 1000.0; };
    RequestTracker tracker(tracker_options);
    EngineCoreOutputs message;
    if (!DecodeEngineCoreOutputs(frames, recorder.decode_context(1), &message).ok()) continue;
    if (message.utility_output) {
      Result<UtilityArg> a = DecodeUtilityResult(message.utility_output->result);
      Result<UtilityArg> b = DecodeUtilityResult(message.utility_output->result);
      if (a.ok() != b.ok() || (a.ok() && *a != *b)) return "a utility result read two ways";
    }
    for (const EngineCoreOutput& out : message.outputs) {
      RequestInfo info;
      info.request_id = std::string(out.request_id);
      info.arrival_time = 999.0;
      info.prompt_len = 8;
      info.lora_name = "fuzz-lora";
      tracker.AddRequest(std::move(info));  // a repeated id is refused, as serve refuses it
    }
    for (int round = 0; round < 2; ++round) {
      if (message.scheduler_stats) tracker.UpdateSchedulerStats(&*message.scheduler_stats);
      recorder.Record(message);
      if (std::optional<IterationStats> it = tracker.ProcessOutputs(message, 1000.5)) {
        recorder.RecordIteration(*it, message.engine_index);
      }
    }
    if (std::string why = CheckExpositionGrammar(registry); !why.empty()) {
      return why + (config != nullptr ? " (config MultiConnector)" : " (no config)");
    }
  }
  return "";
}

}  // namespace vmetrics::fuzz

#endif  // VMETRICS_FUZZ_RECORD_FUZZ_CHECK_H_
