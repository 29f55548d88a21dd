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

#include "cardinality_guard.h"
#include "connector_families.h"
#include "family_handles.h"
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

std::vector<std::string> EngineNames(const std::vector<int64_t>& indexes) {
  std::vector<std::string> names;
  names.reserve(indexes.size());
  for (int64_t e : indexes) names.push_back(std::to_string(e));
  return names;
}

internal::OpenGates GatesOf(const RecorderOptions& o) {
  internal::OpenGates gates;
  gates.spec_decode = o.num_speculative_tokens > 0;
  gates.kv_cache_metrics = o.kv_cache_metrics;
  gates.lora = o.max_loras > 0;
  gates.engine_liveness = o.track_engine_liveness;
  gates.engine_wire = o.report_engine_wire;
  return gates;
}

}  // namespace

struct StatsRecorder::Impl {
  Impl(Registry* reg, RecorderOptions opts)
      : registry(reg),
        options(std::move(opts)),
        reporter([this](const std::string& line) { Log(line); },
                 [this](ProblemKind kind) { guard.CountSkipped(kind); }),
        guard(reg, options.max_label_values_per_family, options.max_label_value_bytes, options.log),
        declared(reg, options.served_model_name, EngineNames(options.engine_indexes),
                 options.max_model_len, options.num_speculative_tokens, GatesOf(options)),
        connectors(reg, options.catalog != nullptr ? *options.catalog : ConnectorCatalog::BuiltIn(),
                   options.served_model_name, declared.engines(), options.log, &guard) {}

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
          connectors.Register(*row);
        }
      }
    }
    declared.Register(/*before_connector_rows=*/false);
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
    for (const auto& [k, unused] : config) spec.label_names.push_back(k);
    spec.label_names.emplace_back("engine");
    std::unique_ptr<Family> labelled = registry->MakeFamily(std::move(spec));
    GaugeFamily family(labelled.get());
    for (const std::string& e : declared.engines()) {
      std::vector<std::string_view> values;
      values.reserve(config.size() + 1);
      for (const auto& [unused, v] : config) values.push_back(v);
      values.push_back(e);
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
    h.Get<F::kKvCacheUsagePerc>()->Set(s.kv_cache_usage);
    Add(h.Get<F::kPrefixCacheQueries>(), static_cast<double>(s.prefix_cache_stats.queries),
        "prefix_cache_stats.queries");
    Add(h.Get<F::kPrefixCacheHits>(), static_cast<double>(s.prefix_cache_stats.hits),
        "prefix_cache_stats.hits");
    if (s.connector_prefix_cache_stats) {
      Add(h.Get<F::kExternalPrefixCacheQueries>(),
          static_cast<double>(s.connector_prefix_cache_stats->queries),
          "connector_prefix_cache_stats.queries");
      Add(h.Get<F::kExternalPrefixCacheHits>(),
          static_cast<double>(s.connector_prefix_cache_stats->hits),
          "connector_prefix_cache_stats.hits");
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
    if (s.kv_connector_stats) connectors.Record(*s.kv_connector_stats, slot, ctx);
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
        lifetime->Observe(e.lifetime_seconds);
        idle->Observe(e.idle_seconds);
        for (double gap : e.reuse_gaps_seconds) reuse_gap->Observe(gap);
      }
    }
    if (options.max_loras > 0) RecordLoraInfo(s);
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
  // vllm-project/vllm 6adad087). vllm:corrupted_requests, first in Python's order, is registered
  // only when its NaN checking is on.
  void RecordIteration(const IterationStats& it, size_t slot) {
    using F = FamilyId;
    const internal::EngineHandles& h = declared.engine(slot);
    const auto d = [](int64_t v) { return static_cast<double>(v); };
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
    h.Get<F::kIterationTokensTotal>()->Observe(d(p.computed + it.num_generation_tokens));
    Histogram* const max_generation = h.Get<F::kRequestMaxNumGenerationTokens>();
    for (int64_t v : it.max_num_generation_tokens_iter) max_generation->Observe(d(v));
    Histogram* const params_n = h.Get<F::kRequestParamsN>();
    for (int64_t v : it.n_params_iter) params_n->Observe(d(v));
    h.Get<F::kTimeToFirstTokenSeconds>()->ObserveMany(it.time_to_first_tokens_iter);
    // One per output: batched.
    h.Get<F::kInterTokenLatencySeconds>()->ObserveMany(it.inter_token_latencies_iter);
    for (const FinishedRequestStats& f : it.finished_requests) {
      const auto reason = static_cast<size_t>(f.finish_reason);
      if (reason < kFinishReasons) h.Get<F::kRequestSuccess>(reason)->Add(1);
      h.Get<F::kE2eRequestLatencySeconds>()->Observe(f.e2e_latency);
      h.Get<F::kRequestQueueTimeSeconds>()->Observe(f.queued_time);
      h.Get<F::kRequestPrefillTimeSeconds>()->Observe(f.prefill_time);
      h.Get<F::kRequestInferenceTimeSeconds>()->Observe(f.inference_time);
      h.Get<F::kRequestDecodeTimeSeconds>()->Observe(f.decode_time);
      h.Get<F::kRequestPrefillKvComputedTokens>()->Observe(
          d(f.num_prompt_tokens - std::max<int64_t>(f.num_cached_tokens, 0)));
      h.Get<F::kRequestPromptTokens>()->Observe(d(f.num_prompt_tokens));
      h.Get<F::kRequestGenerationTokens>()->Observe(d(f.num_generation_tokens));
      h.Get<F::kRequestTimePerOutputTokenSeconds>()->Observe(f.mean_time_per_output_token);
      // Python: `if finished_request.max_tokens_param:` (None and 0 are skipped).
      if (f.max_tokens_param && *f.max_tokens_param != 0) {
        h.Get<F::kRequestParamsMaxTokens>()->Observe(d(*f.max_tokens_param));
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
  std::string max_lora_label;                          // str(max_loras)
  std::array<Counter*, kDecodeParts> decode_errors{};  // by DecodePart
  std::mutex wire_mu;  // engine -> the generation it was last reported as
  std::vector<std::pair<std::string, std::string>> wire_info;
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

IdentifiedPayloads StatsRecorder::ResolveConnectors(const KvConnectorStats& stats,
                                                    const DecodeContext& ctx) {
  return impl_->connectors.Resolve(stats, ctx);
}

void StatsRecorder::CountDecodeError() {
  impl_->decode_errors[static_cast<size_t>(DecodePart::kMessage)]->Add(1);
}

void StatsRecorder::SetEngineWire(int64_t engine_index, std::string_view generation) {
  const GaugeFamily info = impl_->declared.family<FamilyId::kEngineWireInfo>();
  if (!info) return;
  const std::string engine = std::to_string(engine_index);
  std::lock_guard<std::mutex> lock(impl_->wire_mu);
  for (auto& [e, previous] : impl_->wire_info) {
    if (e != engine) continue;
    if (previous == generation) return;
    const std::string_view before[] = {engine, previous};
    info.GetOrCreate(before)->Set(0);
    previous = std::string(generation);
    const std::string_view now[] = {engine, previous};
    info.GetOrCreate(now)->Set(1);
    return;
  }
  impl_->wire_info.emplace_back(engine, std::string(generation));
  const std::string_view now[] = {engine, generation};
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
