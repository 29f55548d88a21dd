// SPDX-License-Identifier: Apache-2.0
// SchedulerStats and its nested dataclasses (vllm/v1/metrics/stats.py at 6adad087, plus the
// newer keys hits_by_source, num_kv_fetch_reqs_by_stage, ec_connector_stats,
// num_cache_creation_tokens, sleep_state, sleep_state_only). All are Python dataclasses, so msgspec
// sends maps keyed by field name with every field present; a decoder keyed by name is immune to
// field order and to fields added later.
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "decode_internal.h"
#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {
namespace {

using internal::ConsumeNil;
using internal::TolerantField;
using protocol::MsgpackReader;
using protocol::MsgpackType;

Status ReadIntList(MsgpackReader& r, std::vector<int64_t>* out) {
  uint32_t n;
  if (Status s = r.ReadArrayHeader(&n); !s.ok()) return s;
  out->clear();
  out->reserve(n);  // bounded: n <= remaining bytes
  for (uint32_t i = 0; i < n; ++i) {
    int64_t v;
    if (Status s = r.ReadInt(&v); !s.ok()) return s;
    out->push_back(v);
  }
  return Status::Ok();
}

Status ReadDoubleList(MsgpackReader& r, std::vector<double>* out) {
  uint32_t n;
  if (Status s = r.ReadArrayHeader(&n); !s.ok()) return s;
  out->clear();
  out->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    double v;
    if (Status s = r.ReadDouble(&v); !s.ok()) return s;
    out->push_back(v);
  }
  return Status::Ok();
}

// A dict[str, int] as Python reads it: a key the map repeats keeps its first place and takes its
// last value (LoRA adapter names are joined into a label; Python shows each once).
Status ReadStrIntMap(MsgpackReader& r, std::vector<std::pair<std::string_view, int64_t>>* out) {
  uint32_t n;
  if (Status s = r.ReadMapHeader(&n); !s.ok()) return s;
  out->clear();
  out->reserve(n);
  // Engines send a few keys, looked for one by one; a map past kLinear keys gets an index, so
  // that a hostile one costs linear time, not quadratic.
  constexpr size_t kLinear = 16;
  std::unordered_map<std::string_view, size_t> index;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view k;
    int64_t v;
    if (Status s = r.ReadStr(&k); !s.ok()) return s;
    if (Status s = r.ReadInt(&v); !s.ok()) return s;
    size_t at = out->size();
    if (out->size() <= kLinear) {
      for (size_t j = 0; j < out->size(); ++j) {
        if ((*out)[j].first == k) {
          at = j;
          break;
        }
      }
    } else {
      if (index.empty()) {
        for (size_t j = 0; j < out->size(); ++j) index.emplace((*out)[j].first, j);
      }
      at = index.emplace(k, out->size()).first->second;
    }
    if (at < out->size()) {
      (*out)[at].second = v;
    } else {
      out->emplace_back(k, v);
    }
  }
  return Status::Ok();
}

// Iterates a map of str keys, calling `field(key, reader)` for each value; unknown keys are
// skipped by the callee. A non-str key is skipped with its value.
template <typename Fn>
Status ForEachMapField(MsgpackReader& r, Fn&& field) {
  uint32_t n;
  if (Status s = r.ReadMapHeader(&n); !s.ok()) return s;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    MsgpackType t;
    if (Status s = r.PeekType(&t); !s.ok()) return s;
    if (t != MsgpackType::kStr) {
      if (Status s = r.Skip(); !s.ok()) return s;
      if (Status s = r.Skip(); !s.ok()) return s;
      continue;
    }
    if (Status s = r.ReadStr(&key); !s.ok()) return s;
    if (Status s = field(key); !s.ok()) return s;
  }
  return Status::Ok();
}

// Field helpers: decode into `dst`, or report and keep the default.
Status IntField(MsgpackReader& r, const DecodeContext& ctx, std::string_view key, int64_t* dst) {
  return TolerantField(
      r, ctx, key, [&](MsgpackReader& rr) { return rr.ReadInt(dst); }, [&] { *dst = 0; });
}
Status DoubleField(MsgpackReader& r, const DecodeContext& ctx, std::string_view key, double* dst) {
  return TolerantField(
      r, ctx, key, [&](MsgpackReader& rr) { return rr.ReadDouble(dst); }, [&] { *dst = 0; });
}
Status BoolField(MsgpackReader& r, const DecodeContext& ctx, std::string_view key, bool* dst) {
  return TolerantField(
      r, ctx, key, [&](MsgpackReader& rr) { return rr.ReadBool(dst); }, [&] { *dst = false; });
}

Status DecodePrefixCacheStats(MsgpackReader& r, const DecodeContext& ctx, PrefixCacheStats* out) {
  *out = PrefixCacheStats{};
  return ForEachMapField(r, [&](std::string_view key) -> Status {
    if (key == "reset") return BoolField(r, ctx, key, &out->reset);
    if (key == "requests") return IntField(r, ctx, key, &out->requests);
    if (key == "queries") return IntField(r, ctx, key, &out->queries);
    if (key == "hits") return IntField(r, ctx, key, &out->hits);
    if (key == "preempted_requests") return IntField(r, ctx, key, &out->preempted_requests);
    if (key == "preempted_queries") return IntField(r, ctx, key, &out->preempted_queries);
    if (key == "preempted_hits") return IntField(r, ctx, key, &out->preempted_hits);
    if (key == "hits_by_source") {
      return TolerantField(
          r, ctx, key,
          [&](MsgpackReader& rr) {
            return ConsumeNil(rr) ? Status::Ok() : ReadStrIntMap(rr, &out->hits_by_source);
          },
          [&] { out->hits_by_source.clear(); });
    }
    return r.Skip();
  });
}

Status DecodeIterationDetails(MsgpackReader& r, const DecodeContext& ctx,
                              SchedulerIterationDetails* out) {
  *out = SchedulerIterationDetails{};
  return ForEachMapField(r, [&](std::string_view key) -> Status {
    if (key == "iteration_index") return IntField(r, ctx, key, &out->iteration_index);
    if (key == "num_ctx_requests") return IntField(r, ctx, key, &out->num_ctx_requests);
    if (key == "num_ctx_tokens") return IntField(r, ctx, key, &out->num_ctx_tokens);
    if (key == "num_generation_requests") {
      return IntField(r, ctx, key, &out->num_generation_requests);
    }
    if (key == "num_generation_tokens") return IntField(r, ctx, key, &out->num_generation_tokens);
    if (key == "elapsed_ms") return DoubleField(r, ctx, key, &out->elapsed_ms);
    if (key == "num_encoder_inputs") return IntField(r, ctx, key, &out->num_encoder_inputs);
    if (key == "num_encoder_output_tokens") {
      return IntField(r, ctx, key, &out->num_encoder_output_tokens);
    }
    if (key == "is_dummy") return BoolField(r, ctx, key, &out->is_dummy);
    return r.Skip();
  });
}

Status DecodeEvictionEvent(MsgpackReader& r, const DecodeContext& ctx, KvCacheEvictionEvent* out) {
  *out = KvCacheEvictionEvent{};
  return ForEachMapField(r, [&](std::string_view key) -> Status {
    if (key == "lifetime_seconds") return DoubleField(r, ctx, key, &out->lifetime_seconds);
    if (key == "idle_seconds") return DoubleField(r, ctx, key, &out->idle_seconds);
    if (key == "reuse_gaps_seconds") {
      return TolerantField(
          r, ctx, key,
          [&](MsgpackReader& rr) { return ReadDoubleList(rr, &out->reuse_gaps_seconds); },
          [&] { out->reuse_gaps_seconds.clear(); });
    }
    return r.Skip();
  });
}

Status DecodeSpecDecoding(MsgpackReader& r, const DecodeContext& ctx, SpecDecodingStats* out) {
  *out = SpecDecodingStats{};
  return ForEachMapField(r, [&](std::string_view key) -> Status {
    if (key == "num_spec_tokens") return IntField(r, ctx, key, &out->num_spec_tokens);
    if (key == "num_drafts") return IntField(r, ctx, key, &out->num_drafts);
    if (key == "num_draft_tokens") return IntField(r, ctx, key, &out->num_draft_tokens);
    if (key == "num_accepted_tokens") return IntField(r, ctx, key, &out->num_accepted_tokens);
    if (key == "num_accepted_tokens_per_pos" || key == "num_draft_tokens_per_pos") {
      auto* dst = key == "num_accepted_tokens_per_pos" ? &out->num_accepted_tokens_per_pos
                                                       : &out->num_draft_tokens_per_pos;
      return TolerantField(
          r, ctx, key, [&](MsgpackReader& rr) { return ReadIntList(rr, dst); },
          [&] { dst->clear(); });
    }
    return r.Skip();
  });
}

Status DecodeCudagraph(MsgpackReader& r, const DecodeContext& ctx, CudagraphStats* out) {
  *out = CudagraphStats{};
  return ForEachMapField(r, [&](std::string_view key) -> Status {
    if (key == "num_unpadded_tokens") return IntField(r, ctx, key, &out->num_unpadded_tokens);
    if (key == "num_padded_tokens") return IntField(r, ctx, key, &out->num_padded_tokens);
    if (key == "num_paddings") return IntField(r, ctx, key, &out->num_paddings);
    if (key == "runtime_mode") {
      return TolerantField(
          r, ctx, key, [&](MsgpackReader& rr) { return rr.ReadStr(&out->runtime_mode); },
          [&] { out->runtime_mode = {}; });
    }
    return r.Skip();
  });
}

Status DecodePerf(MsgpackReader& r, const DecodeContext& ctx, PerfStats* out) {
  *out = PerfStats{};
  return ForEachMapField(r, [&](std::string_view key) -> Status {
    if (key == "num_flops_per_gpu") return IntField(r, ctx, key, &out->num_flops_per_gpu);
    if (key == "num_read_bytes_per_gpu") return IntField(r, ctx, key, &out->num_read_bytes_per_gpu);
    if (key == "num_write_bytes_per_gpu") {
      return IntField(r, ctx, key, &out->num_write_bytes_per_gpu);
    }
    if (key == "debug_stats") {
      out->has_debug_stats = !r.NextIsNil();
      return r.Skip();
    }
    return r.Skip();
  });
}

Status DecodeSleepState(MsgpackReader& r, const DecodeContext& ctx, SleepState* out) {
  *out = SleepState{};
  return ForEachMapField(r, [&](std::string_view key) -> Status {
    if (key == "scheduler_paused") return BoolField(r, ctx, key, &out->scheduler_paused);
    if (key == "weights" || key == "kv_cache") {
      std::string_view* dst = key == "weights" ? &out->weights : &out->kv_cache;
      return TolerantField(
          r, ctx, key, [&](MsgpackReader& rr) { return rr.ReadStr(dst); },
          [&] { *dst = "resident"; });
    }
    return r.Skip();
  });
}

// ec_connector_stats: {"types": {name: "counter" | "histogram"}, "data": {name: number | list}}
// (ECCPUConnectorStats.data, vllm/distributed/ec_transfer/ec_connector/cpu/metrics.py). `data`
// is read once `types` is known, whichever comes first. What does not fit is reported under
// the key it came with and left out; the other entries are kept.
Status DecodeEcConnectorStats(MsgpackReader& r, const DecodeContext& ctx, EcConnectorStats* out) {
  out->values.clear();
  std::vector<std::pair<std::string_view, std::string_view>> types;
  std::optional<MsgpackReader> data;
  bool types_ok = true;
  const auto report = [&](int64_t offset, std::string_view key, std::string what) {
    ctx.Report(offset, "", key, std::move(what), ProblemKind::kWrongType);
  };
  Status s = ForEachMapField(r, [&](std::string_view key) -> Status {
    if (key == "types") {
      const int64_t at = static_cast<int64_t>(r.offset());
      MsgpackType t;
      if (Status p = r.PeekType(&t); !p.ok()) return p;
      if (t != MsgpackType::kMap) {
        report(at, "ec_connector_stats.types", "not a map; the payload is skipped");
        types_ok = false;
        return r.Skip();
      }
      uint32_t n;
      if (Status h = r.ReadMapHeader(&n); !h.ok()) return h;
      for (uint32_t i = 0; i < n; ++i) {
        const int64_t entry = static_cast<int64_t>(r.offset());
        std::string_view name, type;
        MsgpackReader saved = r;
        if (r.ReadStr(&name).ok() && r.ReadStr(&type).ok()) {
          types.emplace_back(name, type);
          continue;
        }
        r = saved;
        if (Status k = r.Skip(); !k.ok()) return k;
        if (Status v = r.Skip(); !v.ok()) return v;
        report(entry, "ec_connector_stats.types", "an entry that is not str -> str skipped");
      }
      return Status::Ok();
    }
    if (key == "data") {
      MsgpackType t;
      if (Status p = r.PeekType(&t); !p.ok()) return p;
      if (t == MsgpackType::kMap) {
        data = r;
      } else {
        report(static_cast<int64_t>(r.offset()), "ec_connector_stats.data",
               "not a map; the payload is skipped");
      }
      return r.Skip();
    }
    return r.Skip();
  });
  if (!s.ok() || !data || !types_ok) return s;
  // A name's type: the last `types` entry for it, as a Python dict keeps it. Engines send a
  // handful; a hostile map past kLinear entries gets an index, so it costs linear time.
  constexpr size_t kLinear = 16;
  std::unordered_map<std::string_view, std::string_view> index;
  if (types.size() > kLinear) {
    for (const auto& [name, type] : types) index[name] = type;
  }
  const auto type_of = [&](std::string_view name) -> std::optional<std::string_view> {
    if (types.size() > kLinear) {
      auto it = index.find(name);
      return it == index.end() ? std::nullopt : std::optional(it->second);
    }
    const auto last = std::find_if(types.rbegin(), types.rend(),
                                   [&](const auto& entry) { return entry.first == name; });
    return last == types.rend() ? std::nullopt : std::optional(last->second);
  };
  MsgpackReader& d = *data;
  uint32_t n;
  if (Status h = d.ReadMapHeader(&n); !h.ok()) return h;
  for (uint32_t i = 0; i < n; ++i) {
    const int64_t entry = static_cast<int64_t>(d.offset());
    std::string_view name;
    if (!d.ReadStr(&name).ok()) {
      if (Status k = d.Skip(); !k.ok()) return k;
      if (Status v = d.Skip(); !v.ok()) return v;
      report(entry, "ec_connector_stats.data", "a key that is not a str skipped");
      continue;
    }
    const std::optional<std::string_view> type = type_of(name);
    const int64_t value_at = static_cast<int64_t>(d.offset());
    EcConnectorValue value;
    value.name = name;
    bool keep = false;
    if (type == "counter") {
      MsgpackReader saved = d;
      if (d.ReadDouble(&value.increment).ok()) {
        keep = true;
      } else {
        d = saved;
        if (Status v = d.Skip(); !v.ok()) return v;
        report(value_at, name, "a counter value that is not a number skipped");
      }
    } else if (type == "histogram") {
      value.histogram = true;
      MsgpackType t;
      if (Status p = d.PeekType(&t); !p.ok()) return p;
      if (t != MsgpackType::kArray) {
        if (Status v = d.Skip(); !v.ok()) return v;
        report(value_at, name, "histogram samples that are not a list skipped");
      } else {
        uint32_t count;
        if (Status h = d.ReadArrayHeader(&count); !h.ok()) return h;
        for (uint32_t j = 0; j < count; ++j) {  // grown as samples decode, not by the claim
          const int64_t sample_at = static_cast<int64_t>(d.offset());
          double sample;
          MsgpackReader saved = d;
          if (d.ReadDouble(&sample).ok()) {
            value.samples.push_back(sample);
            continue;
          }
          d = saved;
          if (Status v = d.Skip(); !v.ok()) return v;
          report(sample_at, name, "a histogram sample that is not a number skipped");
        }
        keep = true;
      }
    } else {
      if (Status v = d.Skip(); !v.ok()) return v;
      report(value_at, name,
             type ? "a value of unknown type \"" + std::string(*type) + "\" skipped"
                  : std::string("a value with no entry in `types` skipped"));
    }
    if (keep) out->values.push_back(std::move(value));
  }
  return Status::Ok();
}

// Optional nested map: nil -> nullopt; wrong shape -> reported, nullopt.
template <typename T, typename DecodeFn>
Status OptionalField(MsgpackReader& r, const DecodeContext& ctx, std::string_view key,
                     std::optional<T>* dst, DecodeFn&& decode) {
  if (ConsumeNil(r)) {
    dst->reset();
    return Status::Ok();
  }
  return TolerantField(
      r, ctx, key,
      [&](MsgpackReader& rr) {
        dst->emplace();
        return decode(rr, ctx, &**dst);
      },
      [&] { dst->reset(); });
}

}  // namespace

namespace internal {
Status DecodeSchedulerStatsAt(MsgpackReader& r, const DecodeContext& ctx, SchedulerStats* out) {
  *out = SchedulerStats{};
  return ForEachMapField(r, [&](std::string_view key) -> Status {
    // One switch over the field table's keys (kStatsKeyRows, wire_generation.h): a key added
    // there without a case here does not compile (-Wswitch).
    const StatsKey k = FindStatsKey(key);
    switch (k) {
      case StatsKey::kNumRunningReqs:
        return IntField(r, ctx, key, &out->num_running_reqs);
      case StatsKey::kNumWaitingReqs:
        return IntField(r, ctx, key, &out->num_waiting_reqs);
      case StatsKey::kNumSkippedWaitingReqs:
        return IntField(r, ctx, key, &out->num_skipped_waiting_reqs);
      case StatsKey::kNumKvFetchReqsByStage: {
        auto* dst = &out->num_kv_fetch_reqs_by_stage;
        return TolerantField(
            r, ctx, key,
            [&](MsgpackReader& rr) {
              return ConsumeNil(rr) ? Status::Ok() : ReadStrIntMap(rr, dst);
            },
            [&] { dst->clear(); });
      }
      case StatsKey::kStepCounter:
        return IntField(r, ctx, key, &out->step_counter);
      case StatsKey::kCurrentWave:
        return IntField(r, ctx, key, &out->current_wave);
      case StatsKey::kKvCacheUsage:
        return DoubleField(r, ctx, key, &out->kv_cache_usage);
      case StatsKey::kIterationDetails:
        return OptionalField(r, ctx, key, &out->iteration_details, DecodeIterationDetails);
      case StatsKey::kPrefixCacheStats:
        return TolerantField(
            r, ctx, key,
            [&](MsgpackReader& rr) {
              return ConsumeNil(rr) ? Status::Ok()
                                    : DecodePrefixCacheStats(rr, ctx, &out->prefix_cache_stats);
            },
            [&] { out->prefix_cache_stats = PrefixCacheStats{}; });
      case StatsKey::kConnectorPrefixCacheStats:
        return OptionalField(r, ctx, key, &out->connector_prefix_cache_stats,
                             DecodePrefixCacheStats);
      case StatsKey::kKvCacheEvictionEvents:
        return TolerantField(
            r, ctx, key,
            [&](MsgpackReader& rr) -> Status {
              if (ConsumeNil(rr)) return Status::Ok();
              uint32_t n;
              if (Status s = rr.ReadArrayHeader(&n); !s.ok()) return s;
              for (uint32_t i = 0; i < n; ++i) {  // grown as events decode, not by the claim
                out->kv_cache_eviction_events.emplace_back();
                if (Status s = DecodeEvictionEvent(rr, ctx, &out->kv_cache_eviction_events.back());
                    !s.ok()) {
                  return s;
                }
              }
              return Status::Ok();
            },
            [&] { out->kv_cache_eviction_events.clear(); });
      case StatsKey::kSpecDecodingStats:
        return OptionalField(r, ctx, key, &out->spec_decoding_stats, DecodeSpecDecoding);
      case StatsKey::kKvConnectorStats:
        if (ConsumeNil(r)) {
          out->kv_connector_stats.reset();
          return Status::Ok();
        }
        out->kv_connector_stats.emplace();
        return internal::DecodeKvConnectorStats(r, ctx, &*out->kv_connector_stats);
      case StatsKey::kEcConnectorStats:
        return OptionalField(r, ctx, key, &out->ec_connector_stats, DecodeEcConnectorStats);
      case StatsKey::kWaitingLoraAdapters:
      case StatsKey::kRunningLoraAdapters: {
        auto* dst = k == StatsKey::kWaitingLoraAdapters ? &out->waiting_lora_adapters
                                                        : &out->running_lora_adapters;
        return TolerantField(
            r, ctx, key,
            [&](MsgpackReader& rr) {
              return ConsumeNil(rr) ? Status::Ok() : ReadStrIntMap(rr, dst);
            },
            [&] { dst->clear(); });
      }
      case StatsKey::kCudagraphStats:
        return OptionalField(r, ctx, key, &out->cudagraph_stats, DecodeCudagraph);
      case StatsKey::kPerfStats:
        return OptionalField(r, ctx, key, &out->perf_stats, DecodePerf);
      case StatsKey::kSleepState:
        return OptionalField(r, ctx, key, &out->sleep_state, DecodeSleepState);
      case StatsKey::kSleepStateOnly:
        return BoolField(r, ctx, key, &out->sleep_state_only);
      // StatsKeyUse::kSkipped rows, and keys no generation has (newer engines add fields).
      case StatsKey::kEncoderCacheUsage:
      case StatsKey::kNumCorruptedReqs:
      case StatsKey::kUnknown:
        return r.Skip();
    }
    return r.Skip();
  });
}
}  // namespace internal

Status DecodeSchedulerStats(std::string_view data, size_t base_offset, const DecodeContext& ctx,
                            SchedulerStats* out) {
  MsgpackReader r(data, base_offset);
  if (Status s = internal::DecodeSchedulerStatsAt(r, ctx, out); !s.ok()) return s;
  if (!r.at_end()) {
    return Status::Malformed("trailing bytes after SchedulerStats",
                             static_cast<int64_t>(r.offset()));
  }
  return Status::Ok();
}

}  // namespace vmetrics
