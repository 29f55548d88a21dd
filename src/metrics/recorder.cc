#include "vmetrics/recorder.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <span>

#include "metrics/buckets.h"
#include "metrics/cardinality_guard.h"
#include "metrics/connector_families.h"
#include "metrics/frontend_families.h"

namespace vmetrics {

using internal::BucketSet;
using internal::FrontendFamily;
using internal::Gate;

namespace {

std::vector<double> BucketsFor(BucketSet set, int64_t max_model_len) {
  switch (set) {
    case BucketSet::kNone:
      return {};
    case BucketSet::kTokens125:
      return internal::Build125Buckets(max_model_len);
    case BucketSet::kIterationTokens:
      return internal::IterationTokensBuckets();
    case BucketSet::kRequestParamsN:
      return internal::RequestParamsNBuckets();
    case BucketSet::kTimeToFirstToken:
      return internal::TimeToFirstTokenBuckets();
    case BucketSet::kInterTokenLatency:
      return internal::InterTokenLatencyBuckets();
    case BucketSet::kRequestLatency:
      return internal::RequestLatencyBuckets();
    case BucketSet::kKvResidency:
      return internal::KvResidencyBuckets();
  }
  return {};
}

// Per-engine children of the scheduler families, resolved once.
struct EngineHandles {
  Child* running = nullptr;
  Child* waiting = nullptr;
  Child* waiting_capacity = nullptr;
  Child* waiting_deferred = nullptr;
  Child* kv_cache_usage = nullptr;
  Child* prefix_queries = nullptr;
  Child* prefix_hits = nullptr;
  Child* external_queries = nullptr;
  Child* external_hits = nullptr;
  Child* flops = nullptr;
  Child* read_bytes = nullptr;
  Child* write_bytes = nullptr;
  Child* spec_drafts = nullptr;
  Child* spec_draft_tokens = nullptr;
  Child* spec_accepted = nullptr;
  std::vector<Child*> spec_per_pos;
  Child* kv_block_lifetime = nullptr;
  Child* kv_block_idle = nullptr;
  Child* kv_block_reuse_gap = nullptr;
  // Request and iteration families (RecordIteration).
  Child* corrupted = nullptr;  // only when the family is registered (never by default)
  Child* preemptions = nullptr;
  Child* prompt_tokens = nullptr;
  Child* prompt_by_source[3] = {};  // local_compute, local_cache_hit, external_kv_transfer
  Child* prompt_cached = nullptr;
  Child* generation_tokens = nullptr;
  Child* success[5] = {};  // by FinishReason value: stop, length, abort, error, repetition
  Child* request_prompt_tokens = nullptr;
  Child* request_generation_tokens = nullptr;
  Child* iteration_tokens = nullptr;
  Child* max_num_generation_tokens = nullptr;
  Child* params_n = nullptr;
  Child* params_max_tokens = nullptr;
  Child* ttft = nullptr;
  Child* itl = nullptr;
  Child* tpot = nullptr;
  Child* e2e = nullptr;
  Child* queue_time = nullptr;
  Child* inference_time = nullptr;
  Child* prefill_time = nullptr;
  Child* decode_time = nullptr;
  Child* prefill_kv_computed = nullptr;
};

}  // namespace

struct StatsRecorder::Impl {
  Impl(Registry* reg, RecorderOptions opts)
      : registry(reg),
        options(std::move(opts)),
        reporter([this](const std::string& line) { Log(line); }),
        guard(reg, options.max_label_values_per_family, options.log) {}

  void Log(const std::string& line) const {
    if (options.log) {
      options.log(line);
    } else {
      std::fprintf(stderr, "vmetrics: %s\n", line.c_str());
    }
  }

  Family& Register(const FrontendFamily& f) {
    FamilySpec spec;
    spec.name = std::string(f.name);
    spec.type = f.type;
    spec.help = std::string(f.help);
    spec.label_names = {"model_name", "engine"};
    if (!f.extra_label.empty()) spec.label_names.emplace_back(f.extra_label);
    spec.buckets = BucketsFor(f.buckets, options.max_model_len);
    Family& family = registry->AddFamily(std::move(spec));
    families[std::string(f.name)] = &family;
    if (f.extra_label == "position") return family;  // children made per engine below
    // Eager children: the extra label is the outer loop, engines the inner one (Python builds
    // {label value: {engine: child}} dicts).
    if (f.extra_values.empty()) {
      for (const std::string& e : engines) family.GetOrCreate({options.served_model_name, e});
    } else {
      for (std::string_view v : f.extra_values) {
        for (const std::string& e : engines) {
          family.GetOrCreate({options.served_model_name, e, std::string(v)});
        }
      }
    }
    return family;
  }

  Child* Get(std::string_view family, size_t slot, std::string_view extra = {}) {
    auto it = families.find(std::string(family));
    if (it == families.end()) return nullptr;
    if (extra.empty()) return it->second->GetOrCreate({options.served_model_name, engines[slot]});
    return it->second->GetOrCreate({options.served_model_name, engines[slot], std::string(extra)});
  }

  void RegisterAll() {
    for (int64_t e : options.engine_indexes) engines.push_back(std::to_string(e));
    const bool spec_decode = options.num_speculative_tokens > 0;
    if (spec_decode) {
      for (const FrontendFamily& f : internal::SpecDecodeFamilies()) Register(f);
    }
    // Connector families of the configured connectors, in config order.
    connectors = std::make_unique<internal::ConnectorRecorder>(
        registry, &runtime_catalog, options.served_model_name, engines, options.log, &guard);
    if (options.connectors.configured()) {
      std::vector<std::string> names;
      if (options.connectors.is_multi()) {
        names = options.connectors.children;
      } else {
        names.push_back(options.connectors.connector);
      }
      for (const std::string& n : names) {
        if (const ConnectorRow* row = catalog->FindByClassName(n)) connectors->Register(*row);
      }
    }
    for (const FrontendFamily& f : internal::FrontendFamilies()) {
      if (f.gate == Gate::kKvCacheMetrics && !options.kv_cache_metrics) continue;
      Register(f);
    }
    if (options.max_loras > 0) {
      FamilySpec spec;
      spec.name = std::string(internal::kLoraRequestsInfoName);
      spec.type = MetricType::kGauge;
      spec.help = std::string(internal::kLoraRequestsInfoHelp);
      spec.label_names = {"max_lora", "waiting_lora_adapters", "running_lora_adapters"};
      lora_family = &registry->AddFamily(std::move(spec));
      max_lora_label = std::to_string(options.max_loras);
    }
    {
      FamilySpec spec;
      spec.name = std::string(internal::kCacheConfigInfoName);
      spec.type = MetricType::kGauge;
      spec.help = std::string(internal::kCacheConfigInfoHelp);
      cache_config_family = &registry->AddFamily(std::move(spec));
    }
    {
      FamilySpec spec;
      spec.name = "vmetrics_decode_errors";
      spec.type = MetricType::kCounter;
      spec.help = "EngineCoreOutputs messages that could not be decoded and were skipped.";
      spec.render_group = 1;
      decode_errors =
          registry->AddFamily(std::move(spec)).GetOrCreate(std::span<const std::string>());
      spec = FamilySpec{};
      spec.name = "vmetrics_unknown_engine_messages";
      spec.type = MetricType::kCounter;
      spec.help =
          "EngineCoreOutputs messages from an engine index outside the configured data-parallel "
          "ranks, skipped.";
      spec.render_group = 1;
      unknown_engine =
          registry->AddFamily(std::move(spec)).GetOrCreate(std::span<const std::string>());
      connectors->RegisterAccounting();
      if (options.track_engine_liveness) {
        spec = FamilySpec{};
        spec.name = "vmetrics_engine_up";
        spec.type = MetricType::kGauge;
        spec.help = "1 while the engine is connected and alive, 0 after it died or went silent.";
        spec.label_names = {"engine"};
        spec.render_group = 1;
        Family& up = registry->AddFamily(std::move(spec));
        for (const std::string& e : engines) up.GetOrCreate({e})->Set(1.0);
        engine_up = &up;
      }
    }
    // Resolve the per-engine handles (engine-major for spec per-position children).
    handles.resize(engines.size());
    for (size_t slot = 0; slot < engines.size(); ++slot) {
      EngineHandles& h = handles[slot];
      h.running = Get("vllm:num_requests_running", slot);
      h.waiting = Get("vllm:num_requests_waiting", slot);
      h.waiting_capacity = Get("vllm:num_requests_waiting_by_reason", slot, "capacity");
      h.waiting_deferred = Get("vllm:num_requests_waiting_by_reason", slot, "deferred");
      h.kv_cache_usage = Get("vllm:kv_cache_usage_perc", slot);
      h.prefix_queries = Get("vllm:prefix_cache_queries", slot);
      h.prefix_hits = Get("vllm:prefix_cache_hits", slot);
      h.external_queries = Get("vllm:external_prefix_cache_queries", slot);
      h.external_hits = Get("vllm:external_prefix_cache_hits", slot);
      h.flops = Get("vllm:estimated_flops_per_gpu", slot);
      h.read_bytes = Get("vllm:estimated_read_bytes_per_gpu", slot);
      h.write_bytes = Get("vllm:estimated_write_bytes_per_gpu", slot);
      Get("vllm:engine_sleep_state", slot, "awake")->Set(1.0);
      h.corrupted = Get("vllm:corrupted_requests", slot);
      h.preemptions = Get("vllm:num_preemptions", slot);
      h.prompt_tokens = Get("vllm:prompt_tokens", slot);
      h.prompt_by_source[0] = Get("vllm:prompt_tokens_by_source", slot, "local_compute");
      h.prompt_by_source[1] = Get("vllm:prompt_tokens_by_source", slot, "local_cache_hit");
      h.prompt_by_source[2] = Get("vllm:prompt_tokens_by_source", slot, "external_kv_transfer");
      h.prompt_cached = Get("vllm:prompt_tokens_cached", slot);
      h.generation_tokens = Get("vllm:generation_tokens", slot);
      for (uint8_t r = 0; r < 5; ++r) {
        h.success[r] =
            Get("vllm:request_success", slot, FinishReasonName(static_cast<FinishReason>(r)));
      }
      h.request_prompt_tokens = Get("vllm:request_prompt_tokens", slot);
      h.request_generation_tokens = Get("vllm:request_generation_tokens", slot);
      h.iteration_tokens = Get("vllm:iteration_tokens_total", slot);
      h.max_num_generation_tokens = Get("vllm:request_max_num_generation_tokens", slot);
      h.params_n = Get("vllm:request_params_n", slot);
      h.params_max_tokens = Get("vllm:request_params_max_tokens", slot);
      h.ttft = Get("vllm:time_to_first_token_seconds", slot);
      h.itl = Get("vllm:inter_token_latency_seconds", slot);
      h.tpot = Get("vllm:request_time_per_output_token_seconds", slot);
      h.e2e = Get("vllm:e2e_request_latency_seconds", slot);
      h.queue_time = Get("vllm:request_queue_time_seconds", slot);
      h.inference_time = Get("vllm:request_inference_time_seconds", slot);
      h.prefill_time = Get("vllm:request_prefill_time_seconds", slot);
      h.decode_time = Get("vllm:request_decode_time_seconds", slot);
      h.prefill_kv_computed = Get("vllm:request_prefill_kv_computed_tokens", slot);
      if (spec_decode) {
        h.spec_drafts = Get("vllm:spec_decode_num_drafts", slot);
        h.spec_draft_tokens = Get("vllm:spec_decode_num_draft_tokens", slot);
        h.spec_accepted = Get("vllm:spec_decode_num_accepted_tokens", slot);
        for (int64_t pos = 0; pos < options.num_speculative_tokens; ++pos) {
          h.spec_per_pos.push_back(
              Get("vllm:spec_decode_num_accepted_tokens_per_pos", slot, std::to_string(pos)));
        }
      }
      if (options.kv_cache_metrics) {
        h.kv_block_lifetime = Get("vllm:kv_block_lifetime_seconds", slot);
        h.kv_block_idle = Get("vllm:kv_block_idle_before_evict_seconds", slot);
        h.kv_block_reuse_gap = Get("vllm:kv_block_reuse_gap_seconds", slot);
      }
    }
    if (!options.cache_config.empty()) SetCacheConfig(options.cache_config);
  }

  void SetCacheConfig(const std::vector<std::pair<std::string, std::string>>& config) {
    std::lock_guard<std::mutex> lock(cache_config_mu);
    if (cache_config_set) return;
    cache_config_set = true;
    // The family was registered without labels (its label set is only known now); give it
    // the CacheConfig keys + engine, as Python's log_engine_initialized does.
    FamilySpec& spec = const_cast<FamilySpec&>(cache_config_family->spec());
    spec.label_names.clear();
    for (const auto& [k, unused] : config) spec.label_names.push_back(k);
    spec.label_names.push_back("engine");
    for (const std::string& e : engines) {
      std::vector<std::string> values;
      for (const auto& [unused, v] : config) values.push_back(v);
      values.push_back(e);
      cache_config_family->GetOrCreate(values)->Set(1.0);
    }
  }

  int Slot(int64_t engine_index) const {
    for (size_t i = 0; i < options.engine_indexes.size(); ++i) {
      if (options.engine_indexes[i] == engine_index) return static_cast<int>(i);
    }
    return -1;
  }

  void Add(Child* c, double v, const char* field) {
    if (c != nullptr && !c->Add(v)) {
      Problem p;
      p.key = field;
      p.what = "negative counter increment skipped";
      reporter.Report(p);
    }
  }

  void RecordScheduler(const SchedulerStats& s, size_t slot, const DecodeContext& ctx) {
    EngineHandles& h = handles[slot];
    h.running->Set(static_cast<double>(s.num_running_reqs));
    h.waiting->Set(static_cast<double>(s.num_waiting_reqs + s.num_skipped_waiting_reqs));
    h.waiting_capacity->Set(static_cast<double>(s.num_waiting_reqs));
    h.waiting_deferred->Set(static_cast<double>(s.num_skipped_waiting_reqs));
    h.kv_cache_usage->Set(s.kv_cache_usage);
    Add(h.prefix_queries, static_cast<double>(s.prefix_cache_stats.queries),
        "prefix_cache_stats.queries");
    Add(h.prefix_hits, static_cast<double>(s.prefix_cache_stats.hits), "prefix_cache_stats.hits");
    if (s.connector_prefix_cache_stats) {
      Add(h.external_queries, static_cast<double>(s.connector_prefix_cache_stats->queries),
          "connector_prefix_cache_stats.queries");
      Add(h.external_hits, static_cast<double>(s.connector_prefix_cache_stats->hits),
          "connector_prefix_cache_stats.hits");
    }
    if (s.spec_decoding_stats && h.spec_drafts != nullptr) {
      const SpecDecodingStats& sd = *s.spec_decoding_stats;
      Add(h.spec_drafts, static_cast<double>(sd.num_drafts), "spec_decoding_stats.num_drafts");
      Add(h.spec_draft_tokens, static_cast<double>(sd.num_draft_tokens),
          "spec_decoding_stats.num_draft_tokens");
      Add(h.spec_accepted, static_cast<double>(sd.num_accepted_tokens),
          "spec_decoding_stats.num_accepted_tokens");
      for (size_t pos = 0; pos < h.spec_per_pos.size(); ++pos) {
        if (pos < sd.num_accepted_tokens_per_pos.size()) {
          Add(h.spec_per_pos[pos], static_cast<double>(sd.num_accepted_tokens_per_pos[pos]),
              "spec_decoding_stats.num_accepted_tokens_per_pos");
        }
      }
    }
    if (s.kv_connector_stats) connectors->Record(*s.kv_connector_stats, slot, ctx);
    if (s.perf_stats) {
      const PerfStats& p = *s.perf_stats;
      if (p.num_flops_per_gpu != 0 || p.num_read_bytes_per_gpu != 0 ||
          p.num_write_bytes_per_gpu != 0) {
        Add(h.flops, static_cast<double>(p.num_flops_per_gpu), "perf_stats.num_flops_per_gpu");
        Add(h.read_bytes, static_cast<double>(p.num_read_bytes_per_gpu),
            "perf_stats.num_read_bytes_per_gpu");
        Add(h.write_bytes, static_cast<double>(p.num_write_bytes_per_gpu),
            "perf_stats.num_write_bytes_per_gpu");
      }
    }
    if (h.kv_block_lifetime != nullptr) {
      for (const KvCacheEvictionEvent& e : s.kv_cache_eviction_events) {
        h.kv_block_lifetime->Observe(e.lifetime_seconds);
        h.kv_block_idle->Observe(e.idle_seconds);
        for (double gap : e.reuse_gaps_seconds) h.kv_block_reuse_gap->Observe(gap);
      }
    }
    if (lora_family != nullptr) RecordLoraInfo(s);
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
    Child* child = guard.GetOrCreate(*lora_family, values);
    if (child == nullptr) {
      guard.CountDropped(*lora_family);
      return;
    }
    child->Set(registry->clock().UnixSeconds());
  }

  // docs/recording.md "Recording one IterationStats": C.1-C.9, in that order.
  void RecordIteration(const IterationStats& it, size_t slot) {
    EngineHandles& h = handles[slot];
    const auto d = [](int64_t v) { return static_cast<double>(v); };
    Add(h.corrupted, d(it.num_corrupted_reqs), "num_corrupted_reqs");    // C.1
    Add(h.preemptions, d(it.num_preempted_reqs), "num_preempted_reqs");  // C.2
    const PromptTokenStats& p = it.prompt_token_stats;
    Add(h.prompt_tokens, d(p.total), "prompt_token_stats.total");              // C.3
    Add(h.prompt_by_source[0], d(p.computed), "prompt_token_stats.computed");  // C.4
    Add(h.prompt_by_source[1], d(p.local_cache_hit), "prompt_token_stats.local_cache_hit");
    Add(h.prompt_by_source[2], d(p.external_kv_transfer),
        "prompt_token_stats.external_kv_transfer");
    Add(h.prompt_cached, d(p.cached_tokens), "prompt_token_stats.cached_tokens");    // C.5
    Add(h.generation_tokens, d(it.num_generation_tokens), "num_generation_tokens");  // C.6
    // C.7: once per IterationStats, even when the value is 0.
    h.iteration_tokens->Observe(d(p.computed + it.num_generation_tokens));
    for (int64_t v : it.max_num_generation_tokens_iter) {  // C.8
      h.max_num_generation_tokens->Observe(d(v));
    }
    for (int64_t v : it.n_params_iter) h.params_n->Observe(d(v));
    h.ttft->ObserveMany(it.time_to_first_tokens_iter);
    h.itl->ObserveMany(it.inter_token_latencies_iter);            // one per output: batched
    for (const FinishedRequestStats& f : it.finished_requests) {  // C.9
      const auto reason = static_cast<size_t>(f.finish_reason);
      if (reason < 5) h.success[reason]->Add(1);
      h.e2e->Observe(f.e2e_latency);
      h.queue_time->Observe(f.queued_time);
      h.prefill_time->Observe(f.prefill_time);
      h.inference_time->Observe(f.inference_time);
      h.decode_time->Observe(f.decode_time);
      h.prefill_kv_computed->Observe(
          d(f.num_prompt_tokens - std::max<int64_t>(f.num_cached_tokens, 0)));
      h.request_prompt_tokens->Observe(d(f.num_prompt_tokens));
      h.request_generation_tokens->Observe(d(f.num_generation_tokens));
      h.tpot->Observe(f.mean_time_per_output_token);
      // Python: `if finished_request.max_tokens_param:` (None and 0 are skipped).
      if (f.max_tokens_param && *f.max_tokens_param != 0) {
        h.params_max_tokens->Observe(d(*f.max_tokens_param));
      }
    }
  }

  Registry* registry;
  RecorderOptions options;
  LoggingReporter reporter;
  // Bounds the children that label values from outside create (connector families, LoRA names).
  internal::CardinalityGuard guard;
  const ConnectorCatalog* catalog = nullptr;  // = &runtime_catalog
  // A copy of options.catalog (it shares the rows): rows registered at run time from
  // `_metrics_descriptor` go here, where decoding sees them, never into the caller's catalog.
  ConnectorCatalog runtime_catalog;
  std::vector<std::string> engines;
  std::map<std::string, Family*, std::less<>> families;
  std::vector<EngineHandles> handles;
  std::unique_ptr<internal::ConnectorRecorder> connectors;
  Family* lora_family = nullptr;  // with LoRA enabled
  std::string max_lora_label;     // str(max_loras)
  Family* cache_config_family = nullptr;
  std::mutex cache_config_mu;
  bool cache_config_set = false;
  Child* decode_errors = nullptr;
  Child* unknown_engine = nullptr;
  Family* engine_up = nullptr;
};

StatsRecorder::StatsRecorder(Registry* registry, RecorderOptions options)
    : impl_(std::make_unique<Impl>(registry, std::move(options))) {
  impl_->runtime_catalog =
      impl_->options.catalog != nullptr ? *impl_->options.catalog : ConnectorCatalog::BuiltIn();
  impl_->catalog = &impl_->runtime_catalog;
  impl_->RegisterAll();
}

StatsRecorder::~StatsRecorder() = default;

DecodeContext StatsRecorder::decode_context(uint64_t message_number) const {
  DecodeContext ctx;
  ctx.catalog = impl_->catalog;
  ctx.connectors = impl_->options.connectors.configured() ? &impl_->options.connectors : nullptr;
  ctx.reporter = &impl_->reporter;
  ctx.message_number = message_number;
  return ctx;
}

void StatsRecorder::Record(const EngineCoreOutputs& message) {
  const int slot = impl_->Slot(message.engine_index);
  if (slot < 0) {
    impl_->unknown_engine->Add(1);
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

const ConnectorRow* StatsRecorder::ResolveConnector(const ConnectorPayload& payload,
                                                    const DecodeContext& ctx,
                                                    const char** outcome) {
  return impl_->connectors->Resolve(payload, ctx, outcome);
}

void StatsRecorder::CountDecodeError() { impl_->decode_errors->Add(1); }

void StatsRecorder::SetCacheConfig(std::vector<std::pair<std::string, std::string>> config) {
  impl_->SetCacheConfig(config);
}

void StatsRecorder::SetEngineUp(int64_t engine_index, bool up) {
  if (impl_->engine_up == nullptr) return;
  impl_->engine_up->GetOrCreate({std::to_string(engine_index)})->Set(up ? 1.0 : 0.0);
}

Reporter& StatsRecorder::reporter() { return impl_->reporter; }
const RecorderOptions& StatsRecorder::options() const { return impl_->options; }

}  // namespace vmetrics
