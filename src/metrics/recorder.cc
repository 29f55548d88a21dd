// SPDX-License-Identifier: Apache-2.0
// StatsRecorder: the declared families (family_handles.h), the connector families
// (connector_families.h) and the accounting, fed from decoded messages.
//
// Budget: recording is what `serve`'s output thread does after decoding, per message. W1
// (stats-only, a MultiConnector payload) decodes and records in 5.14 µs, 1.58 µs of it decoding;
// W2 (256 outputs) in 8.10 µs, 7.93 µs of it decoding, and 13.3 µs with its requests, the
// difference being RecordIteration and the request tracker (bench/README.md). Recording through
// the handles is a load and an atomic update per field; simpler code is welcome while it stays
// inside these figures.
#include "vmetrics/recorder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <span>

#include "buckets.h"
#include "cardinality_guard.h"
#include "connector_families.h"
#include "family_handles.h"
#include "vmetrics/internal/ec_connector_rows.h"
#include "vmetrics/internal/wire_text.h"

namespace vmetrics {

using internal::FamilyId;

namespace {

// request_success's children are indexed by FinishReason value.
static_assert(internal::EagerIndex(FamilyId::kRequestSuccess, "stop") ==
                  static_cast<size_t>(FinishReason::kStop) &&
              internal::EagerIndex(FamilyId::kRequestSuccess, "length") ==
                  static_cast<size_t>(FinishReason::kLength) &&
              internal::EagerIndex(FamilyId::kRequestSuccess, "abort") ==
                  static_cast<size_t>(FinishReason::kAbort) &&
              internal::EagerIndex(FamilyId::kRequestSuccess, "error") ==
                  static_cast<size_t>(FinishReason::kError) &&
              internal::EagerIndex(FamilyId::kRequestSuccess, "repetition") ==
                  static_cast<size_t>(FinishReason::kRepetition));
constexpr size_t kFinishReasons = internal::Declaration(FamilyId::kRequestSuccess).eager.size();

// The eager value index of a KV fetch stage or a cache-hit tier, or -1 for a value the family
// does not have. A handful of entries per message at most; a switch on the length, no lookup.
int KvFetchStageIndex(std::string_view stage) {
  using internal::EagerIndex;
  switch (stage.size()) {
    case 16:
      if (stage == "waiting_to_start")
        return EagerIndex(FamilyId::kNumRequestsKvFetchByStage, "waiting_to_start");
      break;
    case 11:
      if (stage == "in_progress")
        return EagerIndex(FamilyId::kNumRequestsKvFetchByStage, "in_progress");
      break;
    case 17:
      if (stage == "completed_waiting")
        return EagerIndex(FamilyId::kNumRequestsKvFetchByStage, "completed_waiting");
      break;
    default:
      break;
  }
  return -1;
}
int CacheHitSourceIndex(std::string_view source) {
  constexpr FamilyId kId = FamilyId::kPromptTokensCachedBySource;
  using internal::EagerIndex;
  if (source == "device") return EagerIndex(kId, "device");
  if (source == "host") return EagerIndex(kId, "host");
  if (source == "p2p") return EagerIndex(kId, "p2p");
  if (source == "disk") return EagerIndex(kId, "disk");
  if (source == "external_unspecified") return EagerIndex(kId, "external_unspecified");
  return -1;
}

std::vector<std::string> EngineNames(const std::vector<int64_t>& indexes) {
  std::vector<std::string> names;
  names.reserve(indexes.size());
  for (int64_t e : indexes) names.push_back(std::to_string(e));
  return names;
}

// [a-zA-Z_][a-zA-Z0-9_]*, not reserved (`__`): what both exposition formats accept.
bool IsLabelName(std::string_view k) {
  const auto alpha = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  if (k.empty() || !alpha(k[0]) || k.starts_with("__")) return false;
  return std::ranges::all_of(k, [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

}  // namespace

std::span<const std::string_view> HistogramBucketFamilyKeys() {
  static constexpr std::string_view kKeys[] = {
      "request_latency",  "time_to_first_token",     "inter_token_latency", "iteration_tokens",
      "request_params_n", "request_num_preemptions", "request_tokens",      "kv_cache_residency"};
  return kKeys;
}

struct StatsRecorder::Impl {
  Impl(Registry* reg, RecorderOptions opts)
      : registry(reg),
        options(std::move(opts)),
        reporter([this](const std::string& line) { Log(line); },
                 [this](ProblemKind kind) { guard.CountSkipped(kind); }),
        guard(reg, options.max_label_values_per_family, options.max_label_value_bytes, options.log),
        declared(reg, options.served_model_name, EngineNames(options.engine_indexes),
                 options.max_model_len, options.num_speculative_tokens,
                 internal::OpenGates::For(options), options.custom_histogram_buckets),
        connectors(reg, options.catalog != nullptr ? *options.catalog : ConnectorCatalog::BuiltIn(),
                   options.served_model_name, declared.engines(), options.log, &guard,
                   options.connectors.configured() ? &options.connectors : nullptr) {}

  void Log(const std::string& line) const {
    if (options.log) {
      options.log(line);
    } else {
      std::fprintf(stderr, "vmetrics: %s\n", internal::EscapeForLog(line).c_str());
    }
  }

  // Registration order is render order (declared_families.h): the families before the
  // connector rows, the configured connectors' families in config order, then the rest.
  void RegisterAll() {
    declared.Register(/*before_connector_rows=*/true);
    if (options.connectors.configured()) {
      std::vector<std::string> names;
      if (options.connectors.is_multi()) {
        names = options.connectors.children;
      } else {
        names.push_back(options.connectors.connector);
      }
      for (const std::string& n : names) {
        if (const ConnectorRow* row = connectors.catalog().FindByClassName(n)) {
          connectors.Register(*row, n);
        }
      }
    }
    declared.Register(/*before_connector_rows=*/false);
    ResolveEcConnector();
    connectors.UseAccounting(declared.family<FamilyId::kKvConnectorPayloads>());
    // vmetrics_decode_errors' eager children, one per DecodePart (their order).
    const CounterFamily decode_errors_family = declared.family<FamilyId::kDecodeErrors>();
    for (size_t i = 0; i < kDecodeParts; ++i) {
      const std::string_view part[] = {DecodePartName(static_cast<DecodePart>(i))};
      decode_errors[i] = decode_errors_family.GetOrCreate(part);
    }
    max_lora_label = std::to_string(options.max_loras);
    if (!options.cache_config.empty()) SetCacheConfig(options.cache_config);
  }

  // The configured EC connector's children (ec_connector_rows.h): its families are the declared
  // rows its gate opened, registered with the others, one child per engine, as
  // build_prom_metrics binds them. A connector with no row registers nothing: its payloads are
  // not recorded.
  void ResolveEcConnector() {
    if (!options.ec_connector.configured()) return;
    ec_row = internal::FindEcConnectorRow(options.ec_connector.connector);
    if (ec_row == nullptr) {
      Log("--ec-transfer-config: EC connector " +
          internal::EscapeForLog(options.ec_connector.connector) +
          " has no families known to vmetrics; its ec_connector_stats are not recorded");
      return;
    }
    for (const internal::FamilyDeclaration& d : internal::kDeclaredFamilies) {
      if (d.gate == ec_row->gate) ec_families.push_back(&d);
    }
    const std::vector<std::string>& engines = declared.engines();
    ec_children.assign(engines.size(), std::vector<Child*>(ec_families.size(), nullptr));
    for (size_t m = 0; m < ec_families.size(); ++m) {
      Family* family = declared.FamilyOrNull(ec_families[m]->id);
      for (size_t slot = 0; slot < engines.size(); ++slot) {
        const std::string_view values[] = {options.served_model_name, engines[slot]};
        ec_children[slot][m] = family->GetOrCreate(values);  // made at registration
      }
    }
  }

  // ec_connector_stats of the configured EC connector: a counter adds its number, a histogram
  // observes each sample. A name the connector does not register, or whose type is not the
  // family's, is counted (wrong_type) and skipped (Python would raise).
  void RecordEcConnector(const EcConnectorStats& stats, size_t slot) {
    if (ec_row == nullptr) return;
    for (const EcConnectorValue& v : stats.values) {
      size_t m = 0;
      while (m < ec_families.size() && ec_families[m]->name != v.name) ++m;
      const bool known = m < ec_families.size();
      if (!known || (ec_families[m]->type == MetricType::kHistogram) != v.histogram) {
        Problem p;
        p.kind = ProblemKind::kWrongType;
        p.connector = ec_row->class_name;
        p.key = v.name;
        p.what = known ? "ec_connector_stats: a value typed unlike its family skipped"
                       : "ec_connector_stats: a metric the connector does not register skipped";
        reporter.Report(p);
        continue;
      }
      Child* child = ec_children[slot][m];
      if (v.histogram) {
        for (const double sample : v.samples) {
          Observe(child->As<Histogram>(), sample, "ec_connector_stats");
        }
      } else {
        Add(child->As<Counter>(), v.increment, "ec_connector_stats");
      }
    }
  }

  // vllm:cache_config_info was registered without labels (they are the CacheConfig keys, known
  // only now). The labelled family, children and all, replaces it where it renders (Python
  // registers it in log_engine_initialized, after the handshake); nothing is changed under a
  // render's feet.
  void SetCacheConfig(const std::vector<std::pair<std::string, std::string>>& config) {
    std::lock_guard<std::mutex> lock(cache_config_mu);
    if (cache_config_set) return;
    cache_config_set = true;
    const internal::FamilyDeclaration& d = internal::Declaration(FamilyId::kCacheConfigInfo);
    FamilySpec spec = internal::SpecOf(d, options.max_model_len);
    // The values come from the engines' ready responses (and --cache-config-info): they pass
    // the checks of every label value from outside (UTF-8, --max-label-value-bytes), counted
    // like the others; a key that is no label name (or is `engine`) would break the exposition.
    // A pair refused either way is left out of the labels, the rest is kept.
    std::vector<std::string_view> values;
    for (const auto& [k, v] : config) {
      ProblemKind refused = ProblemKind::kOther;
      if (!internal::IsValidUtf8(v)) {
        refused = ProblemKind::kInvalidUtf8;
      } else if (guard.max_value_bytes() != 0 && v.size() > guard.max_value_bytes()) {
        refused = ProblemKind::kLabelValueTooLong;
      }
      if (refused != ProblemKind::kOther) {
        guard.CountSkipped(refused);
        Log(std::string(d.name) + ": the value of " + internal::EscapeForLog(k) +
            (refused == ProblemKind::kInvalidUtf8 ? " is not valid UTF-8" : " is too long") +
            "; the label is left out");
        continue;
      }
      if (!IsLabelName(k) || k == "engine" ||
          std::ranges::find(spec.label_names, k) != spec.label_names.end()) {
        Log(std::string(d.name) + ": " + internal::EscapeForLog(k) +
            " is not a usable label name; the label is left out");
        continue;
      }
      spec.label_names.push_back(k);
      values.push_back(v);
    }
    spec.label_names.emplace_back("engine");
    std::unique_ptr<Family> labelled = registry->MakeFamily(std::move(spec));
    GaugeFamily family(labelled.get());
    values.emplace_back("");
    for (const std::string& e : declared.engines()) {
      values.back() = e;
      family.GetOrCreate(values)->Set(1.0);
    }
    registry->ReplaceFamily(declared.family<FamilyId::kCacheConfigInfo>().family(),
                            std::move(labelled));
  }

  int Slot(int64_t engine_index) const {
    for (size_t i = 0; i < options.engine_indexes.size(); ++i) {
      if (options.engine_indexes[i] == engine_index) return static_cast<int>(i);
    }
    return -1;
  }

  void Add(Counter* c, double v, const char* field) {
    if (!c->Add(v)) {
      Problem p;
      p.kind = std::isnan(v) ? ProblemKind::kNanIncrement : ProblemKind::kNegativeIncrement;
      p.key = field;
      p.what =
          std::isnan(v) ? "NaN counter increment skipped" : "negative counter increment skipped";
      reporter.Report(p);
    }
  }

  // Observes `v` unless it is NaN or infinite (reporter.h, ObservationProblem): a latency
  // computed from a NaN or infinite engine timestamp is; such a value is skipped and counted
  // (nan_observation, infinite_observation) so /metrics stays parsable.
  void Observe(Histogram* h, double v, const char* field) {
    const ProblemKind kind = ObservationProblem(v);
    if (kind == ProblemKind::kOther) {
      h->Observe(v);
      return;
    }
    Problem p;
    p.kind = kind;
    p.key = field;
    p.what = kind == ProblemKind::kNanObservation ? "NaN histogram observation skipped"
                                                  : "infinite histogram observation skipped";
    reporter.Report(p);
  }

  // ObserveMany with the check of Observe; the batch goes in one call when every value passes.
  void ObserveMany(Histogram* h, std::span<const double> values, const char* field) {
    if (std::all_of(values.begin(), values.end(),
                    [](double v) { return ObservationProblem(v) == ProblemKind::kOther; })) {
      h->ObserveMany(values);
      return;
    }
    for (const double v : values) Observe(h, v, field);
  }

  void RecordScheduler(const SchedulerStats& s, size_t slot, const DecodeContext& ctx) {
    using F = FamilyId;
    const internal::EngineHandles& h = declared.engine(slot);
    h.Get<F::kNumRequestsRunning>()->Set(static_cast<double>(s.num_running_reqs));
    h.Get<F::kNumRequestsWaiting>()->Set(
        static_cast<double>(s.num_waiting_reqs + s.num_skipped_waiting_reqs));
    h.Get<F::kNumRequestsWaitingByReason, "capacity">()->Set(
        static_cast<double>(s.num_waiting_reqs));
    h.Get<F::kNumRequestsWaitingByReason, "deferred">()->Set(
        static_cast<double>(s.num_skipped_waiting_reqs));
    if (h.Get<F::kNumRequestsKvFetchByStage>() != nullptr) RecordKvFetchStages(s, h);
    h.Get<F::kKvCacheUsagePerc>()->Set(s.kv_cache_usage);
    Add(h.Get<F::kPrefixCacheQueries>(), static_cast<double>(s.prefix_cache_stats.queries),
        "prefix_cache_stats.queries");
    Add(h.Get<F::kPrefixCacheHits>(), static_cast<double>(s.prefix_cache_stats.hits),
        "prefix_cache_stats.hits");
    Add(h.Get<F::kPromptTokensCachedBySource, "device">(),
        static_cast<double>(s.prefix_cache_stats.hits), "prefix_cache_stats.hits");
    if (s.connector_prefix_cache_stats) {
      Add(h.Get<F::kExternalPrefixCacheQueries>(),
          static_cast<double>(s.connector_prefix_cache_stats->queries),
          "connector_prefix_cache_stats.queries");
      Add(h.Get<F::kExternalPrefixCacheHits>(),
          static_cast<double>(s.connector_prefix_cache_stats->hits),
          "connector_prefix_cache_stats.hits");
      for (const auto& [source, tokens] : s.connector_prefix_cache_stats->hits_by_source) {
        const int i = CacheHitSourceIndex(source);
        if (i < 0) {
          // Python's decoder types the key as CacheHitSource: another value fails its whole
          // message. Only this entry is skipped here; no label value is invented.
          Problem p;
          p.kind = ProblemKind::kWrongType;
          p.key = "connector_prefix_cache_stats.hits_by_source";
          p.what = "unknown cache hit source \"" + std::string(source) + "\" skipped";
          reporter.Report(p);
          continue;
        }
        Add(h.Get<F::kPromptTokensCachedBySource>(static_cast<size_t>(i)),
            static_cast<double>(tokens), "connector_prefix_cache_stats.hits_by_source");
      }
    }
    if (s.spec_decoding_stats && h.Get<F::kSpecDecodeNumDrafts>() != nullptr) {
      const SpecDecodingStats& sd = *s.spec_decoding_stats;
      Add(h.Get<F::kSpecDecodeNumDrafts>(), static_cast<double>(sd.num_drafts),
          "spec_decoding_stats.num_drafts");
      Add(h.Get<F::kSpecDecodeNumDraftTokens>(), static_cast<double>(sd.num_draft_tokens),
          "spec_decoding_stats.num_draft_tokens");
      Add(h.Get<F::kSpecDecodeNumAcceptedTokens>(), static_cast<double>(sd.num_accepted_tokens),
          "spec_decoding_stats.num_accepted_tokens");
      const size_t positions = std::min(h.positions(), sd.num_accepted_tokens_per_pos.size());
      for (size_t pos = 0; pos < positions; ++pos) {
        Add(h.Position<F::kSpecDecodeNumAcceptedTokensPerPos>(pos),
            static_cast<double>(sd.num_accepted_tokens_per_pos[pos]),
            "spec_decoding_stats.num_accepted_tokens_per_pos");
      }
    }
    // A diffusion model's spec-decode stats count denoising steps, canvas positions and
    // committed tokens (the spec-decode families are not registered then).
    if (s.spec_decoding_stats && h.Get<F::kDiffusionNumDenoisingSteps>() != nullptr) {
      const SpecDecodingStats& sd = *s.spec_decoding_stats;
      Add(h.Get<F::kDiffusionNumDenoisingSteps>(), static_cast<double>(sd.num_drafts),
          "spec_decoding_stats.num_drafts");
      Add(h.Get<F::kDiffusionNumCanvasPositions>(), static_cast<double>(sd.num_draft_tokens),
          "spec_decoding_stats.num_draft_tokens");
      Add(h.Get<F::kDiffusionNumCommittedTokens>(), static_cast<double>(sd.num_accepted_tokens),
          "spec_decoding_stats.num_accepted_tokens");
    }
    if (s.kv_connector_stats) connectors.Record(*s.kv_connector_stats, slot, ctx);
    if (s.ec_connector_stats) RecordEcConnector(*s.ec_connector_stats, slot);
    if (s.perf_stats) {
      const PerfStats& p = *s.perf_stats;
      if (p.num_flops_per_gpu != 0 || p.num_read_bytes_per_gpu != 0 ||
          p.num_write_bytes_per_gpu != 0) {
        Add(h.Get<F::kEstimatedFlopsPerGpu>(), static_cast<double>(p.num_flops_per_gpu),
            "perf_stats.num_flops_per_gpu");
        Add(h.Get<F::kEstimatedReadBytesPerGpu>(), static_cast<double>(p.num_read_bytes_per_gpu),
            "perf_stats.num_read_bytes_per_gpu");
        Add(h.Get<F::kEstimatedWriteBytesPerGpu>(), static_cast<double>(p.num_write_bytes_per_gpu),
            "perf_stats.num_write_bytes_per_gpu");
      }
    }
    if (Histogram* lifetime = h.Get<F::kKvBlockLifetimeSeconds>(); lifetime != nullptr) {
      Histogram* idle = h.Get<F::kKvBlockIdleBeforeEvictSeconds>();
      Histogram* reuse_gap = h.Get<F::kKvBlockReuseGapSeconds>();
      for (const KvCacheEvictionEvent& e : s.kv_cache_eviction_events) {
        Observe(lifetime, e.lifetime_seconds, "kv_cache_eviction_events.lifetime_seconds");
        Observe(idle, e.idle_seconds, "kv_cache_eviction_events.idle_seconds");
        ObserveMany(reuse_gap, e.reuse_gaps_seconds, "kv_cache_eviction_events.reuse_gaps_seconds");
      }
    }
    if (options.max_loras > 0) RecordLoraInfo(s);
  }

  // Python sets every stage each message: `num_kv_fetch_reqs_by_stage.get(stage, 0)`.
  // The request gauges of an engine that is gone: its requests were failed, none runs or waits.
  void ClearRequests(size_t slot) const {
    using F = FamilyId;
    const internal::EngineHandles& h = declared.engine(slot);
    h.Get<F::kNumRequestsRunning>()->Set(0);
    h.Get<F::kNumRequestsWaiting>()->Set(0);
    h.Get<F::kNumRequestsWaitingByReason, "capacity">()->Set(0);
    h.Get<F::kNumRequestsWaitingByReason, "deferred">()->Set(0);
    if (h.Get<F::kNumRequestsKvFetchByStage>() != nullptr) RecordKvFetchStages({}, h);
  }

  static void RecordKvFetchStages(const SchedulerStats& s, const internal::EngineHandles& h) {
    using F = FamilyId;
    std::array<int64_t, internal::Declaration(F::kNumRequestsKvFetchByStage).eager.size()> n{};
    for (const auto& [stage, requests] : s.num_kv_fetch_reqs_by_stage) {
      const int i = KvFetchStageIndex(stage);
      if (i >= 0) n[static_cast<size_t>(i)] = requests;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      h.Get<F::kNumRequestsKvFetchByStage>(i)->Set(static_cast<double>(n[i]));
    }
  }

  // docs/recording.md, scheduler_stats item 8: one child per (max_lora, waiting names, running
  // names), the names comma-joined in the order the SchedulerStats holds them, set to the current
  // Unix time. A child is never removed; names come from requests and engines, so the guard bounds
  // how many there are.
  void RecordLoraInfo(const SchedulerStats& s) {
    const auto join = [](std::span<const std::pair<std::string_view, int64_t>> adapters) {
      std::string names;
      for (const auto& [name, unused] : adapters) {
        if (!names.empty()) names += ',';
        names += name;
      }
      return names;
    };
    const std::string waiting = join(s.waiting_lora_adapters);
    const std::string running = join(s.running_lora_adapters);
    const std::string_view values[] = {max_lora_label, waiting, running};
    const GaugeFamily lora = declared.family<FamilyId::kLoraRequestsInfo>();
    internal::LabelRefusal why;
    Gauge* child = guard.GetOrCreate(lora, values, &why);
    if (child == nullptr) {
      guard.CountDropped(lora.family(), why);
      return;
    }
    child->Set(registry->clock().UnixSeconds());
  }

  // docs/recording.md "Recording one IterationStats": C.1-C.9, in that order, as Python's
  // PrometheusStatLogger records an IterationStats (vllm/v1/metrics/loggers.py at
  // vllm-project/vllm 13cbd441). vllm:corrupted_requests, first in Python's order, is registered
  // only when its NaN checking is on.
  void RecordIteration(const IterationStats& it, size_t slot) {
    using F = FamilyId;
    const internal::EngineHandles& h = declared.engine(slot);
    const auto d = [](int64_t v) { return static_cast<double>(v); };
    if (Counter* corrupted = h.Get<F::kCorruptedRequests>(); corrupted != nullptr) {
      Add(corrupted, d(it.num_corrupted_reqs), "num_corrupted_reqs");
    }
    Add(h.Get<F::kNumPreemptions>(), d(it.num_preempted_reqs), "num_preempted_reqs");
    const PromptTokenStats& p = it.prompt_token_stats;
    Add(h.Get<F::kPromptTokens>(), d(p.total), "prompt_token_stats.total");
    Add(h.Get<F::kPromptTokensBySource, "local_compute">(), d(p.computed),
        "prompt_token_stats.computed");
    Add(h.Get<F::kPromptTokensBySource, "local_cache_hit">(), d(p.local_cache_hit),
        "prompt_token_stats.local_cache_hit");
    Add(h.Get<F::kPromptTokensBySource, "external_kv_transfer">(), d(p.external_kv_transfer),
        "prompt_token_stats.external_kv_transfer");
    Add(h.Get<F::kPromptTokensCached>(), d(p.cached_tokens), "prompt_token_stats.cached_tokens");
    Add(h.Get<F::kGenerationTokens>(), d(it.num_generation_tokens), "num_generation_tokens");
    // Once per IterationStats, even when the value is 0.
    Observe(h.Get<F::kIterationTokensTotal>(), d(p.computed + it.num_generation_tokens),
            "iteration_tokens");
    Histogram* const max_generation = h.Get<F::kRequestMaxNumGenerationTokens>();
    for (int64_t v : it.max_num_generation_tokens_iter) {
      Observe(max_generation, d(v), "max_num_generation_tokens");
    }
    Histogram* const params_n = h.Get<F::kRequestParamsN>();
    for (int64_t v : it.n_params_iter) Observe(params_n, d(v), "n_params");
    ObserveMany(h.Get<F::kTimeToFirstTokenSeconds>(), it.time_to_first_tokens_iter,
                "time_to_first_token");
    // One per output: batched.
    ObserveMany(h.Get<F::kInterTokenLatencySeconds>(), it.inter_token_latencies_iter,
                "inter_token_latency");
    for (const FinishedRequestStats& f : it.finished_requests) {
      const auto reason = static_cast<size_t>(f.finish_reason);
      if (reason < kFinishReasons) h.Get<F::kRequestSuccess>(reason)->Add(1);
      Observe(h.Get<F::kE2eRequestLatencySeconds>(), f.e2e_latency, "e2e_latency");
      Observe(h.Get<F::kRequestQueueTimeSeconds>(), f.queued_time, "queued_time");
      Observe(h.Get<F::kRequestPrefillTimeSeconds>(), f.prefill_time, "prefill_time");
      Observe(h.Get<F::kRequestInferenceTimeSeconds>(), f.inference_time, "inference_time");
      Observe(h.Get<F::kRequestDecodeTimeSeconds>(), f.decode_time, "decode_time");
      Observe(h.Get<F::kRequestNumPreemptions>(), d(f.num_preemptions), "num_preemptions");
      Observe(h.Get<F::kRequestPrefillKvComputedTokens>(),
              d(f.num_prompt_tokens - std::max<int64_t>(f.num_cached_tokens, 0)),
              "prefill_kv_computed_tokens");
      Observe(h.Get<F::kRequestPromptTokens>(), d(f.num_prompt_tokens), "num_prompt_tokens");
      Observe(h.Get<F::kRequestGenerationTokens>(), d(f.num_generation_tokens),
              "num_generation_tokens");
      Observe(h.Get<F::kRequestTimePerOutputTokenSeconds>(), f.mean_time_per_output_token,
              "mean_time_per_output_token");
      // Python: `if finished_request.max_tokens_param:` (None and 0 are skipped).
      if (f.max_tokens_param && *f.max_tokens_param != 0) {
        Observe(h.Get<F::kRequestParamsMaxTokens>(), d(*f.max_tokens_param), "max_tokens");
      }
    }
  }

  Registry* registry;
  RecorderOptions options;
  LoggingReporter reporter;
  // Bounds the children that label values from outside create (connector families, LoRA names).
  internal::CardinalityGuard guard;
  internal::DeclaredFamilies declared;
  // The connector families; its resolver owns the connector catalog (a copy of
  // options.catalog: rows that `_metrics_descriptor` registers at run time go there, never into
  // the caller's catalog).
  internal::ConnectorRecorder connectors;
  // The configured EC connector's row (nullptr: none, or one with no row) and its children,
  // by engine slot then the row's metric order.
  const internal::EcConnectorRow* ec_row = nullptr;
  std::vector<const internal::FamilyDeclaration*> ec_families;  // the row's, in table order
  std::vector<std::vector<Child*>> ec_children;
  std::string max_lora_label;                          // str(max_loras)
  std::array<Counter*, kDecodeParts> decode_errors{};  // by DecodePart
  std::mutex wire_mu;  // engine -> the generation it was last reported as
  std::vector<std::tuple<std::string, std::string, std::string>> wire_info;
  std::mutex cache_config_mu;
  bool cache_config_set = false;
};

StatsRecorder::StatsRecorder(Registry* registry, RecorderOptions options)
    : impl_(std::make_unique<Impl>(registry, std::move(options))) {
  impl_->RegisterAll();
}

StatsRecorder::~StatsRecorder() = default;

DecodeContext StatsRecorder::decode_context(uint64_t message_number) const {
  DecodeContext ctx;
  ctx.connectors = impl_->options.connectors.configured() ? &impl_->options.connectors : nullptr;
  ctx.reporter = &impl_->reporter;
  ctx.message_number = message_number;
  return ctx;
}

void StatsRecorder::Record(const EngineCoreOutputs& message) {
  if (message.skipped.any()) {
    const auto count = [this](DecodePart part, uint32_t n) {
      if (n > 0) impl_->decode_errors[static_cast<size_t>(part)]->Add(n);
    };
    count(DecodePart::kOutput, message.skipped.outputs);
    count(DecodePart::kSchedulerStats, message.skipped.scheduler_stats);
    count(DecodePart::kUtilityOutput, message.skipped.utility_output);
    count(DecodePart::kFinishedRequests, message.skipped.finished_requests);
  }
  const int slot = impl_->Slot(message.engine_index);
  if (slot < 0) {
    impl_->declared.single<FamilyId::kUnknownEngineMessages>()->Add(1);
    Problem p;
    p.what = "message from engine index " + std::to_string(message.engine_index) +
             ", which is not a configured engine; skipped";
    impl_->reporter.Report(p);
    return;
  }
  // Python's output loop resolves a utility reply and `continue`s: no stats from it.
  if (message.utility_output) return;
  // A newer engine's sleep-telemetry-only update carries no scheduler data; recording its
  // default-valued fields would zero the gauges. The sleep families themselves are not part of
  // the 6adad087 family set, so nothing is recorded from it.
  if (message.scheduler_stats && message.scheduler_stats->sleep_state_only) return;
  if (message.scheduler_stats) {
    DecodeContext ctx = decode_context(0);
    impl_->RecordScheduler(*message.scheduler_stats, static_cast<size_t>(slot), ctx);
  }
}

void StatsRecorder::RecordIteration(const IterationStats& iteration, int64_t engine_index) {
  const int slot = impl_->Slot(engine_index);
  if (slot < 0) return;
  impl_->RecordIteration(iteration, static_cast<size_t>(slot));
}

void StatsRecorder::ClearEngineRequests(int64_t engine_index) {
  const int slot = impl_->Slot(engine_index);
  if (slot >= 0) impl_->ClearRequests(static_cast<size_t>(slot));
}

void StatsRecorder::SetEngineSleepState(int64_t engine_index, bool asleep, int64_t level) {
  const int slot = impl_->Slot(engine_index);
  if (slot < 0) return;
  using F = FamilyId;
  const internal::EngineHandles& h = impl_->declared.engine(static_cast<size_t>(slot));
  h.Get<F::kEngineSleepState, "awake">()->Set(asleep ? 0 : 1);
  h.Get<F::kEngineSleepState, "weights_offloaded">()->Set(asleep && level == 1 ? 1 : 0);
  h.Get<F::kEngineSleepState, "discard_all">()->Set(asleep && level == 2 ? 1 : 0);
}

IdentifiedPayloads StatsRecorder::ResolveConnectors(const KvConnectorStats& stats,
                                                    const DecodeContext& ctx) {
  return impl_->connectors.Resolve(stats, ctx);
}

void StatsRecorder::CountDecodeError() {
  impl_->decode_errors[static_cast<size_t>(DecodePart::kMessage)]->Add(1);
}

void StatsRecorder::SetEngineWire(int64_t engine_index, std::string_view generation,
                                  std::string_view requests) {
  const GaugeFamily info = impl_->declared.family<FamilyId::kEngineWireInfo>();
  if (!info) return;
  const std::string engine = std::to_string(engine_index);
  std::lock_guard<std::mutex> lock(impl_->wire_mu);
  for (auto& [e, previous_generation, previous_requests] : impl_->wire_info) {
    if (e != engine) continue;
    if (previous_generation == generation && previous_requests == requests) return;
    const std::string_view before[] = {engine, previous_generation, previous_requests};
    info.GetOrCreate(before)->Set(0);
    previous_generation = std::string(generation);
    previous_requests = std::string(requests);
    const std::string_view now[] = {engine, previous_generation, previous_requests};
    info.GetOrCreate(now)->Set(1);
    return;
  }
  impl_->wire_info.emplace_back(engine, std::string(generation), std::string(requests));
  const std::string_view now[] = {engine, generation, requests};
  info.GetOrCreate(now)->Set(1);
}

void StatsRecorder::SetCacheConfig(
    const std::vector<std::pair<std::string, std::string>>& cache_config) {
  impl_->SetCacheConfig(cache_config);
}

void StatsRecorder::SetEngineUp(int64_t engine_index, bool up) {
  const GaugeFamily engine_up = impl_->declared.family<FamilyId::kEngineUp>();
  if (!engine_up) return;
  engine_up.GetOrCreate({std::to_string(engine_index)})->Set(up ? 1.0 : 0.0);
}

Reporter& StatsRecorder::reporter() { return impl_->reporter; }
const RecorderOptions& StatsRecorder::options() const { return impl_->options; }

}  // namespace vmetrics
