// SPDX-License-Identifier: Apache-2.0
#include "wire_encode.h"

#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "msgspec_writer.h"

namespace vmetrics::internal {
namespace {

using Writer = MsgspecWriter;

// PrefixCacheStats (BaseCacheStats fields first): 4 keys up to g20250927, 7 after (the
// preempted ones), 8 with hits_by_source.
void WritePrefixCacheStats(Writer& w, const SimPrefixCacheStats& p, int keys = 7) {
  w.Map(static_cast<uint32_t>(keys));
  w.Key("reset").Bool(p.reset);
  w.Key("requests").Int(p.requests);
  w.Key("queries").Int(p.queries);
  w.Key("hits").Int(p.hits);
  if (keys < 7) return;
  w.Key("preempted_requests").Int(p.preempted_requests);
  w.Key("preempted_queries").Int(p.preempted_queries);
  w.Key("preempted_hits").Int(p.preempted_hits);
  if (keys > 7) w.Key("hits_by_source").Map(0);
}

// 5 keys up to g20260413, 6 after (num_draft_tokens_per_pos).
void WriteSpecDecodingStats(Writer& w, const SimSpecDecodingStats& s, int keys = 6) {
  w.Map(static_cast<uint32_t>(keys));
  w.Key("num_spec_tokens").Int(s.num_spec_tokens);
  w.Key("num_drafts").Int(s.num_drafts);
  w.Key("num_draft_tokens").Int(s.num_draft_tokens);
  w.Key("num_accepted_tokens").Int(s.num_accepted_tokens);
  w.Key("num_accepted_tokens_per_pos").IntList(s.num_accepted_tokens_per_pos);
  if (keys > 5) w.Key("num_draft_tokens_per_pos").IntList(s.num_draft_tokens_per_pos);
}

// NixlKVConnectorStats.data / MooncakeKVConnectorStats.data: every key, lists possibly empty.
void WriteTransferStats(Writer& w, const SimTransferStats& t) {
  if (t.mooncake) {
    w.Map(6);
    w.Key("transfer_duration").DoubleList(t.transfer_duration);
    w.Key("bytes_transferred").IntList(t.bytes_transferred);
    w.Key("num_descriptors").IntList(t.num_descriptors);
    w.Key("num_failed_transfers").IntList(t.num_failed_transfers);
    w.Key("num_failed_recvs").IntList(t.num_failed_recvs);
    w.Key("num_kv_expired_reqs").IntList(t.num_kv_expired_reqs);
    return;
  }
  w.Map(7);
  w.Key("transfer_duration").DoubleList(t.transfer_duration);
  w.Key("post_duration").DoubleList(t.post_duration);
  w.Key("bytes_transferred").IntList(t.bytes_transferred);
  w.Key("num_descriptors").IntList(t.num_descriptors);
  w.Key("num_failed_transfers").IntList(t.num_failed_transfers);
  w.Key("num_failed_notifications").IntList(t.num_failed_notifications);
  w.Key("num_kv_expired_reqs").IntList(t.num_kv_expired_reqs);
}

void WriteStoreStats(Writer& w, const SimStoreStats& s) {
  w.Map(static_cast<uint32_t>(s.operations.size()));
  for (const auto& [op, records] : s.operations) {
    w.Key(op);
    w.Array(static_cast<uint32_t>(records.size()));
    for (const SimStoreRecord& r : records) {
      w.Map(5);
      w.Key("duration_seconds").Double(r.duration_seconds);
      w.Key("num_keys").Int(r.num_keys);
      w.Key("num_bytes").Int(r.num_bytes);
      w.Key("status").Str(r.status);
      w.Key("num_failed_keys").Int(r.num_failed_keys);
    }
  }
}

void WriteKvConnectorStats(Writer& w, const SimKvConnectorStats& kv, SimConnector connector,
                           bool legacy_multi_shape) {
  if (connector != SimConnector::kMulti) {
    // A bare connector sends its own flat `data` dict.
    if (kv.nixl) {
      WriteTransferStats(w, *kv.nixl);
    } else if (kv.mooncake) {
      WriteTransferStats(w, *kv.mooncake);
    } else if (kv.store) {
      WriteStoreStats(w, *kv.store);
    } else {
      w.Map(0);
    }
    return;
  }
  // MultiConnector: child class name -> child payload, in config order, non-empty only.
  const uint32_t n = (kv.nixl ? 1 : 0) + (kv.store ? 1 : 0) + (kv.mooncake ? 1 : 0);
  w.Map(n);
  auto child = [&](const char* name, auto write) {
    w.Key(name);
    if (legacy_multi_shape) {
      // Before September 2026 each child travelled as its stats object: {"data": {...}}.
      w.Map(1);
      w.Key("data");
    }
    write();
  };
  if (kv.nixl) child("NixlConnector", [&] { WriteTransferStats(w, *kv.nixl); });
  if (kv.store) child("MooncakeStoreConnector", [&] { WriteStoreStats(w, *kv.store); });
  if (kv.mooncake) child("MooncakeConnector", [&] { WriteTransferStats(w, *kv.mooncake); });
}

// SchedulerStats: a dataclass, so all 16 fields of vLLM 6adad087 in definition order.
void WriteSchedulerStats(Writer& w, const SimSchedulerStats& s, SimConnector connector,
                         bool legacy_multi_shape) {
  w.Map(16);
  w.Key("num_running_reqs").Int(s.num_running_reqs);
  w.Key("num_waiting_reqs").Int(s.num_waiting_reqs);
  w.Key("num_skipped_waiting_reqs").Int(s.num_skipped_waiting_reqs);
  w.Key("step_counter").Int(s.step_counter);
  w.Key("current_wave").Int(s.current_wave);
  w.Key("kv_cache_usage").Double(s.kv_cache_usage);
  w.Key("iteration_details").Nil();
  w.Key("prefix_cache_stats");
  WritePrefixCacheStats(w, s.prefix_cache_stats);
  w.Key("connector_prefix_cache_stats");
  if (s.connector_prefix_cache_stats) {
    WritePrefixCacheStats(w, *s.connector_prefix_cache_stats);
  } else {
    w.Nil();
  }
  w.Key("kv_cache_eviction_events").Array(0);
  w.Key("spec_decoding_stats");
  if (s.spec_decoding_stats) {
    WriteSpecDecodingStats(w, *s.spec_decoding_stats);
  } else {
    w.Nil();
  }
  w.Key("kv_connector_stats");
  if (s.kv_connector_stats) {
    WriteKvConnectorStats(w, *s.kv_connector_stats, connector, legacy_multi_shape);
  } else {
    w.Nil();
  }
  w.Key("waiting_lora_adapters").Map(0);
  w.Key("running_lora_adapters").Map(0);
  w.Key("cudagraph_stats").Nil();
  w.Key("perf_stats").Nil();
}

// A tensor triple [dtype, shape, data] with the data inline as ext 3 (vLLM's encoder sends
// buffers below its size threshold that way, larger ones as aux frames; a frontend reads both).
template <typename T>
void WriteTensor(Writer& w, std::string_view dtype, std::initializer_list<int64_t> shape,
                 const std::vector<T>& values) {
  w.Array(3);
  w.Str(dtype);
  w.Array(static_cast<uint32_t>(shape.size()));
  for (int64_t d : shape) w.Int(d);
  std::string bytes(values.size() * sizeof(T), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());  // little-endian host, as numpy's "<"
  w.Ext(3, bytes);
}

// LogprobsLists [ids, logprobs, ranks, cu_num_generated_tokens] (numpy dtypes) or
// LogprobsTensors [ids, logprobs, ranks] (torch dtype names).
void WriteLogprobs(Writer& w, const SimLogprobs& l) {
  w.Array(l.prompt ? 3 : 4);
  WriteTensor(w, l.prompt ? "int64" : "<i8", {l.rows, l.columns}, l.token_ids);
  WriteTensor(w, l.prompt ? "float32" : "<f4", {l.rows, l.columns}, l.logprobs);
  WriteTensor(w, l.prompt ? "int64" : "<i8", {l.rows}, l.ranks);
  if (!l.prompt) w.Nil();  // cu_num_generated_tokens: nil in a per-request output
}

// spec_decode_metrics: RequestSpecDecodeMetrics as a map in its field order, or nil.
void WriteSpecDecodeMetrics(Writer& w, const std::optional<SimSpecDecodeMetrics>& m) {
  if (!m) {
    w.Nil();
    return;
  }
  auto ints = [&w](const std::vector<int64_t>& v) {
    w.Array(static_cast<uint32_t>(v.size()));
    for (int64_t x : v) w.Int(x);
  };
  w.Map(5);
  w.Key("num_spec_tokens").Int(m->num_spec_tokens);
  w.Key("histogram");
  ints(m->histogram);
  w.Key("num_draft_tokens").Int(m->num_draft_tokens);
  w.Key("per_step_accepted");
  ints(m->per_step_accepted);
  w.Key("per_step_drafted");
  ints(m->per_step_drafted);
}

// routed_experts: the ndarray triple (vLLM's MsgpackEncoder), or nil.
void WriteRoutedExperts(Writer& w, const std::optional<SimRoutedExperts>& r) {
  if (!r) {
    w.Nil();
    return;
  }
  w.Array(3);
  w.Str("|u1");
  w.Array(3);
  w.Int(r->rows);
  w.Int(r->layers);
  w.Int(r->experts_per_token);
  w.Ext(3, r->bytes);
}

// EngineCoreOutput: array_like, all 16 positions.
void WriteOutput(Writer& w, const SimOutput& o) {
  w.Array(16);
  w.Str(o.request_id);
  w.IntList(o.new_token_ids);
  if (o.new_logprobs) {
    WriteLogprobs(w, *o.new_logprobs);
  } else {
    w.Nil();
  }
  if (o.new_prompt_logprobs) {
    WriteLogprobs(w, *o.new_prompt_logprobs);
  } else {
    w.Nil();
  }
  w.Nil();  // pooling_output
  w.OptInt(o.finish_reason);
  w.OptInt(o.stop_reason);  // a stop_token_ids token; EOS and length stops carry none
  if (o.events.empty()) {
    w.Nil();  // the engine sends nil, not [], when there are no events
  } else {
    w.Array(static_cast<uint32_t>(o.events.size()));
    for (const SimEvent& e : o.events) {
      // EngineCoreEvent: a msgspec Struct without array_like, so a map.
      w.Map(2);
      w.Key("type").Int(e.type);
      w.Key("timestamp").Double(e.timestamp);
    }
  }
  if (o.kv_transfer_params.empty()) {
    w.Nil();
  } else {
    w.Raw(o.kv_transfer_params);
  }
  w.Nil();  // ec_transfer_params
  w.Nil();  // trace_headers
  if (o.prefill_stats) {
    const SimPrefillStats& p = *o.prefill_stats;
    w.Map(6);
    w.Key("num_prompt_tokens").Int(p.num_prompt_tokens);
    w.Key("num_computed_tokens").Int(p.num_computed_tokens);
    w.Key("num_cached_tokens").Int(p.num_cached_tokens);
    w.Key("num_local_cached_tokens").Int(p.num_local_cached_tokens);
    w.Key("num_external_cached_tokens").Int(p.num_external_cached_tokens);
    w.Key("num_cache_creation_tokens").Int(p.num_cache_creation_tokens);
  } else {
    w.Nil();
  }
  WriteRoutedExperts(w, o.routed_experts);
  w.Int(0);  // num_nans_in_logits
  w.Nil();   // mm_cache_miss_hashes
  w.Nil();   // new_sampling_mask
}

// PrefillStats with the generation's first `keys` keys (5 in g20260712, 6 after).
void WritePrefillStats(Writer& w, const SimPrefillStats& p, int keys) {
  w.Map(static_cast<uint32_t>(keys));
  w.Key("num_prompt_tokens").Int(p.num_prompt_tokens);
  w.Key("num_computed_tokens").Int(p.num_computed_tokens);
  w.Key("num_cached_tokens").Int(p.num_cached_tokens);
  w.Key("num_local_cached_tokens").Int(p.num_local_cached_tokens);
  w.Key("num_external_cached_tokens").Int(p.num_external_cached_tokens);
  if (keys > 5) w.Key("num_cache_creation_tokens").Int(p.num_cache_creation_tokens);
}

// EngineCoreOutput in `g`'s layout.
void WriteOutputAs(Writer& w, const SimOutput& o, const WireGeneration& g) {
  w.Array(g.output_count);
  // Logprobs go out as tensors, in the generations that send them so; else nil.
  const auto logprobs = [&w, tensors = g.logprobs == LogprobsForm::kTensors](const auto& lp) {
    if (lp && tensors) {
      WriteLogprobs(w, *lp);
    } else {
      w.Nil();
    }
  };
  for (size_t p = 0; p < g.output_count; ++p) {
    switch (g.output[p]) {
      case OutputField::kRequestId:
        w.Str(o.request_id);
        break;
      case OutputField::kNewTokenIds:
        w.IntList(o.new_token_ids);
        break;
      case OutputField::kNewLogprobs:
        logprobs(o.new_logprobs);
        break;
      case OutputField::kNewPromptLogprobsTensors:
        logprobs(o.new_prompt_logprobs);
        break;
      case OutputField::kFinishReason:
        w.OptInt(o.finish_reason);
        break;
      case OutputField::kStopReason:
        w.OptInt(o.stop_reason);
        break;
      case OutputField::kEvents:
        if (o.events.empty()) {
          w.Nil();
        } else {
          w.Array(static_cast<uint32_t>(o.events.size()));
          for (const SimEvent& e : o.events) {
            w.Map(2);
            w.Key("type").Int(e.type);
            w.Key("timestamp").Double(e.timestamp);
          }
        }
        break;
      case OutputField::kKvTransferParams:
        if (o.kv_transfer_params.empty()) {
          w.Nil();
        } else {
          w.Raw(o.kv_transfer_params);
        }
        break;
      case OutputField::kNumCachedTokens:
        w.Int(o.prefill_stats ? o.prefill_stats->num_cached_tokens : 0);
        break;
      case OutputField::kNumExternalComputedTokens:
        w.Int(o.prefill_stats ? o.prefill_stats->num_external_cached_tokens : 0);
        break;
      case OutputField::kPrefillStats:
        if (o.prefill_stats) {
          WritePrefillStats(w, *o.prefill_stats, g.prefill_stats_keys);
        } else {
          w.Nil();
        }
        break;
      case OutputField::kNumNansInLogits:
        w.Int(0);
        break;
      case OutputField::kRoutedExperts:
        WriteRoutedExperts(w, o.routed_experts);
        break;
      case OutputField::kSpecDecodeMetrics:
        WriteSpecDecodeMetrics(w, o.spec_decode_metrics);
        break;
      case OutputField::kPoolingOutput:
      case OutputField::kEcTransferParams:
      case OutputField::kTraceHeaders:
      case OutputField::kMmCacheMissHashes:
      case OutputField::kNewSamplingMask:
      case OutputField::kUnknown:
        w.Nil();
        break;
    }
  }
}

// SchedulerStats with `g`'s keys, in its order.
void WriteSchedulerStatsAs(Writer& w, const SimSchedulerStats& s, SimConnector connector,
                           bool legacy_multi_shape, const WireGeneration& g) {
  w.Map(static_cast<uint32_t>(g.scheduler_stats_keys.size()));
  for (StatsKey key : g.scheduler_stats_keys) {
    w.Key(StatsKeyName(key));
    switch (key) {
      case StatsKey::kNumRunningReqs:
        w.Int(s.num_running_reqs);
        break;
      case StatsKey::kNumWaitingReqs:
        w.Int(s.num_waiting_reqs);
        break;
      case StatsKey::kNumSkippedWaitingReqs:
        w.Int(s.num_skipped_waiting_reqs);
        break;
      case StatsKey::kStepCounter:
        w.Int(s.step_counter);
        break;
      case StatsKey::kCurrentWave:
        w.Int(s.current_wave);
        break;
      case StatsKey::kNumCorruptedReqs:
        w.Int(0);
        break;
      case StatsKey::kKvCacheUsage:
        w.Double(s.kv_cache_usage);
        break;
      case StatsKey::kEncoderCacheUsage:
        w.Double(0.0);
        break;
      case StatsKey::kPrefixCacheStats:
        WritePrefixCacheStats(w, s.prefix_cache_stats, g.prefix_cache_stats_keys);
        break;
      case StatsKey::kConnectorPrefixCacheStats:
        if (s.connector_prefix_cache_stats) {
          WritePrefixCacheStats(w, *s.connector_prefix_cache_stats, g.prefix_cache_stats_keys);
        } else {
          w.Nil();
        }
        break;
      case StatsKey::kKvCacheEvictionEvents:
        w.Array(0);
        break;
      case StatsKey::kSpecDecodingStats:
        if (s.spec_decoding_stats) {
          WriteSpecDecodingStats(w, *s.spec_decoding_stats, g.spec_decoding_stats_keys);
        } else {
          w.Nil();
        }
        break;
      case StatsKey::kKvConnectorStats:
        if (s.kv_connector_stats) {
          WriteKvConnectorStats(w, *s.kv_connector_stats, connector, legacy_multi_shape);
        } else {
          w.Nil();
        }
        break;
      case StatsKey::kWaitingLoraAdapters:
      case StatsKey::kRunningLoraAdapters:
      case StatsKey::kNumKvFetchReqsByStage:
        w.Map(0);
        break;
      case StatsKey::kIterationDetails:
      case StatsKey::kEcConnectorStats:
      case StatsKey::kCudagraphStats:
      case StatsKey::kPerfStats:
      case StatsKey::kSleepState:
      case StatsKey::kSleepStateOnly:
      case StatsKey::kUnknown:
        w.Nil();
        break;
    }
  }
}

}  // namespace

std::string EncodeEngineCoreOutputs(const SimMessage& m, SimConnector connector,
                                    bool legacy_multi_shape, const WireGeneration& wire) {
  Writer w;
  w.Array(8);
  w.Int(m.engine_index);
  w.Array(static_cast<uint32_t>(m.outputs.size()));
  for (const SimOutput& o : m.outputs) WriteOutputAs(w, o, wire);
  WriteSchedulerStatsAs(w, m.scheduler_stats, connector, legacy_multi_shape, wire);
  w.Double(m.timestamp);
  w.Nil();  // utility_output
  w.Nil();  // finished_requests
  w.Nil();  // wave_complete
  w.Nil();  // start_wave
  return w.Take();
}

std::string EncodeRegistration(const EngineCoreReadyResponse& r, const WireGeneration& wire) {
  Writer w;
  switch (wire.ready_form) {
    case ReadyForm::kEmptyRegistration:
      return "";
    case ReadyForm::kThreeFields:
      w.Map(3);
      w.Key("max_model_len").OptInt(r.max_model_len);
      w.Key("num_gpu_blocks").OptInt(r.num_gpu_blocks);
      w.Key("dp_stats_address").OptStr(r.dp_stats_address);
      return w.Take();
    case ReadyForm::kWithVersion:
      w.Map(10);
      w.Key("max_model_len").OptInt(r.max_model_len);
      w.Key("num_gpu_blocks").OptInt(r.num_gpu_blocks);
      w.Key("block_size").OptInt(r.block_size);
      w.Key("dp_stats_address").OptStr(r.dp_stats_address);
      w.Key("dtype").Str(r.dtype);
      w.Key("vllm_version").Str(r.vllm_version);
      w.Key("world_size").Int(r.world_size);
      w.Key("data_parallel_size").Int(r.data_parallel_size);
      w.Key("kv_cache_size_tokens").OptInt(r.kv_cache_size_tokens);
      w.Key("kv_cache_max_concurrency").OptDouble(r.kv_cache_max_concurrency);
      return w.Take();
    case ReadyForm::kWithParallelism:
      break;
  }
  return EncodeReadyResponse(r);
}

std::string EncodeReadyWithBlocks(bool local, bool headless,
                                  const std::optional<std::string>& parallel_config_hash,
                                  int64_t num_gpu_blocks) {
  Writer w;
  w.Map(parallel_config_hash ? 6 : 5);
  w.Key("status").Str(kHandshakeReady);
  w.Key("local").Bool(local);
  w.Key("headless").Bool(headless);
  w.Key("num_gpu_blocks").Int(num_gpu_blocks);
  w.Key("dp_stats_address").Nil();
  if (parallel_config_hash) w.Key("parallel_config_hash").Str(*parallel_config_hash);
  return w.Take();
}

std::string EncodeEngineCoreOutputs(const SimMessage& m, SimConnector connector,
                                    bool legacy_multi_shape) {
  Writer w;
  w.Array(8);
  w.Int(m.engine_index);
  w.Array(static_cast<uint32_t>(m.outputs.size()));
  for (const SimOutput& o : m.outputs) WriteOutput(w, o);
  WriteSchedulerStats(w, m.scheduler_stats, connector, legacy_multi_shape);
  w.Double(m.timestamp);
  w.Nil();  // utility_output
  w.Nil();  // finished_requests
  w.Nil();  // wave_complete
  w.Nil();  // start_wave
  return w.Take();
}

std::string EncodeHandshakeStatus(std::string_view status, bool local, bool headless,
                                  const std::optional<std::string>& parallel_config_hash) {
  Writer w;
  w.Map(parallel_config_hash ? 4 : 3);
  w.Key("status").Str(status);
  w.Key("local").Bool(local);
  w.Key("headless").Bool(headless);
  if (parallel_config_hash) w.Key("parallel_config_hash").Str(*parallel_config_hash);
  return w.Take();
}

std::string EncodeReadyResponse(const EngineCoreReadyResponse& r) {
  Writer w;
  w.Map(27);
  w.Key("max_model_len").OptInt(r.max_model_len);
  w.Key("num_gpu_blocks").OptInt(r.num_gpu_blocks);
  w.Key("block_size").OptInt(r.block_size);
  w.Key("dp_stats_address").OptStr(r.dp_stats_address);
  w.Key("dtype").Str(r.dtype);
  w.Key("vllm_version").Str(r.vllm_version);
  w.Key("world_size").Int(r.world_size);
  w.Key("data_parallel_size").Int(r.data_parallel_size);
  w.Key("tensor_parallel_size").Int(r.tensor_parallel_size);
  w.Key("pipeline_parallel_size").Int(r.pipeline_parallel_size);
  w.Key("decode_context_parallel_size").Int(r.decode_context_parallel_size);
  w.Key("data_parallel_rank").Int(r.data_parallel_rank);
  w.Key("max_num_seqs").OptInt(r.max_num_seqs);
  w.Key("max_num_batched_tokens").OptInt(r.max_num_batched_tokens);
  w.Key("instance_id").Str(r.instance_id);
  w.Key("kv_cache_size_tokens").OptInt(r.kv_cache_size_tokens);
  w.Key("kv_cache_max_concurrency").OptDouble(r.kv_cache_max_concurrency);
  w.Key("kv_events_config");
  if (r.kv_events_config.empty()) {
    w.Nil();
  } else {
    w.Raw(r.kv_events_config);
  }
  w.Key("kv_connector").OptStr(r.kv_connector);
  w.Key("kv_role").OptStr(r.kv_role);
  w.Key("kv_engine_id").OptStr(r.kv_engine_id);
  w.Key("supports_lora").Bool(r.supports_lora);
  w.Key("max_loras").Int(r.max_loras);
  w.Key("weight_transfer_backend").OptStr(r.weight_transfer_backend);
  w.Key("enable_sleep_mode").Bool(r.enable_sleep_mode);
  w.Key("supports_draft_weight_updates").Bool(r.supports_draft_weight_updates);
  w.Key("effective_attention_block_size").OptInt(r.effective_attention_block_size);
  return w.Take();
}

namespace {

// EngineCoreOutputs [engine_index, [], nil, timestamp, [call_id, failure_message, result], nil,
// nil, nil]: the result a UtilityResult [nil, value] when the call succeeded, nil when it failed.
std::string EncodeUtilityOutput(int64_t engine_index, uint64_t call_id, double timestamp,
                                std::optional<std::string_view> failure_message,
                                std::string_view result_msgpack) {
  Writer w;
  w.Array(8);
  w.Int(engine_index);
  w.Array(0);
  w.Nil();
  w.Double(timestamp);
  w.Array(3);  // UtilityOutput [call_id, failure_message, result]
  w.Uint(call_id);
  if (failure_message) {
    w.Str(*failure_message);
    w.Nil();
  } else {
    w.Nil();
    w.Array(2);  // UtilityResult [type_info, value]
    w.Nil();
    w.Raw(result_msgpack);
  }
  w.Nil();
  w.Nil();
  w.Nil();
  return w.Take();
}

}  // namespace

std::string EncodeUtilityReply(int64_t engine_index, uint64_t call_id, double timestamp,
                               std::string_view result_msgpack) {
  return EncodeUtilityOutput(engine_index, call_id, timestamp, std::nullopt, result_msgpack);
}

std::string EncodeUtilityFailure(int64_t engine_index, uint64_t call_id, double timestamp,
                                 std::string_view failure_message) {
  return EncodeUtilityOutput(engine_index, call_id, timestamp, failure_message, {});
}

std::string EncodeAuxFrameMessage(int64_t engine_index, double timestamp) {
  Writer w;
  w.Array(8);
  w.Int(engine_index);
  w.Array(1);
  // An output with its first three positions: request_id, new_token_ids, new_logprobs (the
  // rest take their defaults). new_logprobs is a LogprobsLists whose one field is a tensor in
  // an aux frame: a frontend must have that frame to decode it (a pooling tensor it could skip).
  w.Array(3);
  w.Str("vmetrics-sim-truncated");
  w.Array(0);
  w.Array(1);
  w.Array(3);  // tensor [dtype, shape, data]; data = aux frame index
  w.Str("float32");
  w.Array(1);
  w.Int(kAuxFrameFloats);
  w.Int(2);
  w.Nil();  // scheduler_stats
  w.Double(timestamp);
  w.Nil();
  w.Nil();
  w.Nil();
  w.Nil();
  return w.Take();
}

}  // namespace vmetrics::internal
