// SPDX-License-Identifier: Apache-2.0
// File: kv_connector_fuzz_check.h
//
// The invariants the KV-connector fuzzer checks, shared by the libFuzzer entry
// (kv_connector_fuzz.cc) and the corpus-replay test
// (tests/metrics/kv_connector_corpus_replay_test.cc), so a crash input kept in
// fuzz/corpus/kv_connector/ fails ctest without libFuzzer.
//
// Input: a `kv_connector_stats` value (msgpack), as SchedulerStats carries it: a bare
// connector's payload, or MultiConnector's {class name: payload} map, possibly with a
// `_metrics_descriptor`. The check wraps it in a stats-only EngineCoreOutputs from engine 0
// (WrapKvConnectorStats) and, for several connector configurations (none, bare NIXL, bare
// Mooncake store, a MultiConnector of NIXL, Mooncake store and Mooncake P2P), runs the whole
// payload path: decoding and identification, ForEachConnectorSample, descriptor adoption,
// recording with a small label-cardinality limit, and rendering.
//
// Invariants:
//   * nothing crashes (ASan/UBSan report anything else);
//   * identification ties every payload to a row or gives the reason it has none, and a payload
//     identified without a row or malformed is not recorded;
//   * every sample names a metric of its row and carries as many extra label values as the
//     row says (record labels, or the metric's labelnames); samples of one nonzero label_set
//     carry the same label values; no more samples than the payload could hold;
//   * recording respects the cardinality guard: no family grows past
//     max(its children before recording, kFuzzLabelLimit);
//   * both renderings (text 0.0.4, OpenMetrics) pass the exposition grammar checker
//     (exposition_invariant.h).
#ifndef VMETRICS_FUZZ_KV_CONNECTOR_FUZZ_CHECK_H_
#define VMETRICS_FUZZ_KV_CONNECTOR_FUZZ_CHECK_H_

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/exposition_invariant.h"
#include "vmetrics/connector_catalog.h"
#include "vmetrics/connector_identification.h"
#include "vmetrics/connector_walk.h"
#include "vmetrics/exposition.h"
#include "vmetrics/internal/declared_families.h"
#include "vmetrics/recorder.h"

namespace vmetrics::fuzz {

inline constexpr size_t kFuzzLabelLimit = 4;

// A stats-only EngineCoreOutputs frame from engine 0 whose SchedulerStats holds only
// `kv_connector_stats` = `kv` (raw msgpack): [0, [], {"kv_connector_stats": kv}, 0, nil x4].
inline std::string WrapKvConnectorStats(std::string_view kv) {
  std::string frame("\x98\x00\x90\x81", 4);  // [0, [], {  (engine index 0: a NUL byte)
  frame.append("\xb2kv_connector_stats");
  frame.append(kv);
  frame.append("\x00\xc0\xc0\xc0\xc0", 5);
  return frame;
}

namespace internal {

inline std::string CheckSamples(const KvConnectorStats& kv, const DecodeContext& ctx) {
  IdentifiedPayloads ids;
  IdentifyConnectorPayloads(kv, ConnectorCatalog::BuiltIn(), ctx, &ids);
  for (const IdentifiedPayload& id : ids.payloads) {
    const ConnectorPayload& p = id.payload;
    if ((id.row == nullptr) != (id.identified_by == IdentifiedBy::kNone)) {
      return "a payload's row and how it was identified disagree (connector " +
             std::string(p.connector) + ")";
    }
    if ((id.row != nullptr) != (std::string_view(id.outcome) == kOutcomeRecorded)) {
      return "a payload's row and outcome disagree (connector " + std::string(p.connector) + ")";
    }
    if (p.malformed && id.row != nullptr) return "a malformed payload has a row";
    if (id.row == nullptr) continue;
    const ConnectorRow& row = *id.row;
    const size_t extra = row.record_shaped() ? row.ExtraLabelNames().size() : 0;
    std::string why;
    std::map<uint32_t, std::vector<std::string>> labels_of_set;
    const size_t n = ForEachConnectorSample(p, row, ctx, [&](const ConnectorSample& s) {
      if (!why.empty()) return;
      if (s.metric_index >= row.metrics.size()) {
        why = "a sample names no metric of its row";
      } else if (row.metrics[s.metric_index].sample_kind == SampleKind::kSetInfo) {
        // An info map's labels are its own: one name per value, the value 1.
        if (s.extra_label_names.size() != s.extra_label_values.size()) {
          why = "an info sample's label names and values differ in number";
        } else if (s.values.size() != 1 || s.values[0] != 1.0) {
          why = "an info sample is not the single value 1";
        }
      } else if (s.extra_label_values.size() !=
                 (row.record_shaped() ? extra : row.metrics[s.metric_index].labelnames.size())) {
        why = "a sample carries the wrong number of extra label values";
      } else if (!s.extra_label_names.empty()) {
        why = "a sample that is not an info map carries label names";
      } else if (s.label_set != 0) {
        const std::vector<std::string> labels(s.extra_label_values.begin(),
                                              s.extra_label_values.end());
        const auto [it, first] = labels_of_set.emplace(s.label_set, labels);
        if (!first && it->second != labels) {
          why = "two samples of one label_set carry different label values";
        }
      }
    });
    if (!why.empty()) return why + " (connector " + std::string(p.connector) + ")";
    if (n > row.metrics.size() * (p.payload.size() + 1))
      return "more samples than the payload holds";
  }
  return "";
}

inline std::string CheckRecording(const EngineCoreOutputs& message, const ConnectorConfig* config) {
  Registry registry;
  RecorderOptions o;
  o.log = [](const std::string&) {};
  o.max_label_values_per_family = kFuzzLabelLimit;
  if (config != nullptr) o.connectors = *config;
  StatsRecorder recorder(&registry, o);
  std::map<std::string, size_t> before;
  for (const Family* f : registry.Families()) before[f->name()] = f->Children().size();
  recorder.Record(message);
  recorder.Record(message);  // the second time every child exists or is refused again
  const std::vector<const Family*> families = registry.Families();
  for (const Family* f : families) {
    // The drop counters have a child per family that dropped a value: bounded by the families,
    // not by the per-family limit (which they are not subject to).
    const std::string_view dropped =
        vmetrics::internal::Declaration(vmetrics::internal::FamilyId::kLabelValuesDropped).name;
    // The skipped counter has one child per reason.
    const std::string_view skipped =
        vmetrics::internal::Declaration(vmetrics::internal::FamilyId::kWireValuesSkipped).name;
    const size_t limit = f->name() == dropped   ? families.size()
                         : f->name() == skipped ? std::size(vmetrics::kWireSkipReasons)
                                                : std::max(before[f->name()], kFuzzLabelLimit);
    if (f->Children().size() > limit) return "family " + f->name() + " grew past the limit";
  }
  return CheckExpositionGrammar(registry);
}

}  // namespace internal

// Returns "" when every invariant holds for the kv_connector_stats value `kv`, else the first
// one broken.
inline std::string CheckKvConnectorInvariants(std::string_view kv) {
  static const ConnectorConfig kNixl{"NixlConnector", {}};
  static const ConnectorConfig kStore{"MooncakeStoreConnector", {}};
  static const ConnectorConfig kMulti{
      "MultiConnector", {"NixlConnector", "MooncakeStoreConnector", "MooncakeConnector"}};
  const ConnectorConfig* configs[] = {nullptr, &kNixl, &kStore, &kMulti};
  const std::string frame = WrapKvConnectorStats(kv);
  const std::string_view frames[] = {frame};
  for (const ConnectorConfig* config : configs) {
    const std::string which = config ? " (config " + config->connector + ")" : " (no config)";
    DecodeContext ctx;
    ctx.connectors = config;
    EngineCoreOutputs message;
    if (!DecodeEngineCoreOutputs(frames, ctx, &message).ok()) continue;  // decode_fuzz's job
    if (!message.scheduler_stats || !message.scheduler_stats->kv_connector_stats) continue;
    if (std::string why = internal::CheckSamples(*message.scheduler_stats->kv_connector_stats, ctx);
        !why.empty()) {
      return why + which;
    }
    if (std::string why = internal::CheckRecording(message, config); !why.empty()) {
      return why + which;
    }
  }
  return "";
}

}  // namespace vmetrics::fuzz

#endif  // VMETRICS_FUZZ_KV_CONNECTOR_FUZZ_CHECK_H_
