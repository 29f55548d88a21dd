// SPDX-License-Identifier: Apache-2.0
// DecodeCapture: each message of a capture as one JSON line; see decode.h.
#include "vmetrics/offline/decode.h"

#include <bit>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "capture.h"
#include "vmetrics/connector_walk.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/internal/json_from_msgpack.h"
#include "vmetrics/recorder.h"
#include "vmetrics/wire_decoder.h"

namespace vmetrics::frontend {
namespace {

using Json = nlohmann::ordered_json;

// How recording resolves the message's kv_connector_stats payloads
// (StatsRecorder::ResolveConnectors).
using Resolutions = IdentifiedPayloads;

Json RawToJson(std::string_view raw) {
  if (raw.empty()) return nullptr;
  Result<Json> j = protocol::MsgpackToJson(raw);
  return j.ok() ? *j : Json("<" + j.status().ToString() + ">");
}

Json TensorJson(const Tensor& t) {
  Json j;
  j["dtype"] = std::string(t.dtype);
  j["shape"] = t.shape;
  if (t.aux_frame >= 0) j["aux_frame"] = t.aux_frame;
  j["bytes"] = t.data.size();
  return j;
}

Json LogprobsJson(const std::optional<Logprobs>& l) {
  if (!l) return nullptr;
  Json arr = Json::array();
  for (const auto& f : l->fields) arr.push_back(f ? TensorJson(*f) : Json(nullptr));
  return arr;
}

Json PrefixJson(const PrefixCacheStats& p) {
  Json j = {{"reset", p.reset},
            {"requests", p.requests},
            {"queries", p.queries},
            {"hits", p.hits},
            {"preempted_requests", p.preempted_requests},
            {"preempted_queries", p.preempted_queries},
            {"preempted_hits", p.preempted_hits}};
  if (!p.hits_by_source.empty()) {
    Json h = Json::object();
    for (const auto& [k, v] : p.hits_by_source) h[std::string(k)] = v;
    j["hits_by_source"] = h;
  }
  return j;
}

Json StrIntMap(const std::vector<std::pair<std::string_view, int64_t>>& m) {
  Json j = Json::object();
  for (const auto& [k, v] : m) j[std::string(k)] = v;
  return j;
}

Json KvJson(const KvConnectorStats&, const DecodeContext& ctx, const Resolutions& resolved) {
  Json j;
  j["multi"] = resolved.multi;
  Json payloads = Json::array();
  for (const IdentifiedPayload& id : resolved.payloads) {
    const ConnectorPayload& p = id.payload;
    Json pj;
    pj["connector"] = std::string(p.connector);
    pj["recognised_as"] = id.row != nullptr ? Json(id.row->id) : Json(nullptr);
    pj["identified_by"] = IdentifiedByName(id.identified_by);
    if (p.data_wrapped) pj["data_wrapped"] = true;
    pj["outcome"] = id.outcome;
    pj["payload"] = RawToJson(p.payload);
    if (id.row != nullptr) {
      // What recording would do with it: samples per family.
      Json samples = Json::object();
      ForEachConnectorSample(p, *id.row, ctx, [&](const ConnectorSample& s) {
        const MetricDef& m = id.row->metrics[s.metric_index];
        std::string key = m.name;
        // Const labels (Offloading's transfer_type) and an info map's names, as name=value, so
        // that the metrics sharing a family and the info labels stay apart.
        for (const auto& [name, value] : m.const_labels) {
          key.append("|").append(name).append("=").append(value);
        }
        for (size_t i = 0; i < s.extra_label_values.size(); ++i) {
          key.append("|");
          if (i < s.extra_label_names.size()) key.append(s.extra_label_names[i]).append("=");
          key.append(s.extra_label_values[i]);
        }
        for (const double v : s.values) samples[key].push_back(v);
      });
      pj["samples"] = samples;
    }
    payloads.push_back(pj);
  }
  j["payloads"] = payloads;
  return j;
}

Json SchedulerJson(const SchedulerStats& s, const DecodeContext& ctx, const Resolutions& resolved) {
  Json j;
  j["num_running_reqs"] = s.num_running_reqs;
  j["num_waiting_reqs"] = s.num_waiting_reqs;
  j["num_skipped_waiting_reqs"] = s.num_skipped_waiting_reqs;
  j["step_counter"] = s.step_counter;
  j["current_wave"] = s.current_wave;
  j["kv_cache_usage"] = s.kv_cache_usage;
  if (s.iteration_details) {
    const auto& d = *s.iteration_details;
    j["iteration_details"] = {{"iteration_index", d.iteration_index},
                              {"num_ctx_requests", d.num_ctx_requests},
                              {"num_ctx_tokens", d.num_ctx_tokens},
                              {"num_generation_requests", d.num_generation_requests},
                              {"num_generation_tokens", d.num_generation_tokens},
                              {"elapsed_ms", d.elapsed_ms},
                              {"num_encoder_inputs", d.num_encoder_inputs},
                              {"num_encoder_output_tokens", d.num_encoder_output_tokens},
                              {"is_dummy", d.is_dummy}};
  } else {
    j["iteration_details"] = nullptr;
  }
  j["prefix_cache_stats"] = PrefixJson(s.prefix_cache_stats);
  j["connector_prefix_cache_stats"] =
      s.connector_prefix_cache_stats ? PrefixJson(*s.connector_prefix_cache_stats) : Json(nullptr);
  Json ev = Json::array();
  for (const auto& e : s.kv_cache_eviction_events) {
    ev.push_back({{"lifetime_seconds", e.lifetime_seconds},
                  {"idle_seconds", e.idle_seconds},
                  {"reuse_gaps_seconds", e.reuse_gaps_seconds}});
  }
  j["kv_cache_eviction_events"] = ev;
  if (s.spec_decoding_stats) {
    const auto& d = *s.spec_decoding_stats;
    j["spec_decoding_stats"] = {{"num_spec_tokens", d.num_spec_tokens},
                                {"num_drafts", d.num_drafts},
                                {"num_draft_tokens", d.num_draft_tokens},
                                {"num_accepted_tokens", d.num_accepted_tokens},
                                {"num_accepted_tokens_per_pos", d.num_accepted_tokens_per_pos},
                                {"num_draft_tokens_per_pos", d.num_draft_tokens_per_pos}};
  } else {
    j["spec_decoding_stats"] = nullptr;
  }
  j["kv_connector_stats"] =
      s.kv_connector_stats ? KvJson(*s.kv_connector_stats, ctx, resolved) : Json(nullptr);
  j["waiting_lora_adapters"] = StrIntMap(s.waiting_lora_adapters);
  j["running_lora_adapters"] = StrIntMap(s.running_lora_adapters);
  if (s.cudagraph_stats) {
    const auto& c = *s.cudagraph_stats;
    j["cudagraph_stats"] = {{"num_unpadded_tokens", c.num_unpadded_tokens},
                            {"num_padded_tokens", c.num_padded_tokens},
                            {"num_paddings", c.num_paddings},
                            {"runtime_mode", std::string(c.runtime_mode)}};
  } else {
    j["cudagraph_stats"] = nullptr;
  }
  if (s.perf_stats) {
    const auto& p = *s.perf_stats;
    j["perf_stats"] = {{"num_flops_per_gpu", p.num_flops_per_gpu},
                       {"num_read_bytes_per_gpu", p.num_read_bytes_per_gpu},
                       {"num_write_bytes_per_gpu", p.num_write_bytes_per_gpu},
                       {"has_debug_stats", p.has_debug_stats}};
  } else {
    j["perf_stats"] = nullptr;
  }
  if (s.sleep_state) {
    j["sleep_state"] = {{"scheduler_paused", s.sleep_state->scheduler_paused},
                        {"weights", std::string(s.sleep_state->weights)},
                        {"kv_cache", std::string(s.sleep_state->kv_cache)}};
  }
  j["sleep_state_only"] = s.sleep_state_only;
  return j;
}

Json OutputJson(const EngineCoreOutput& o) {
  Json j;
  j["request_id"] = std::string(o.request_id);
  j["new_token_ids"] = o.new_token_ids;
  j["new_logprobs"] = LogprobsJson(o.new_logprobs);
  j["new_prompt_logprobs_tensors"] = LogprobsJson(o.new_prompt_logprobs_tensors);
  j["pooling_output"] = o.pooling_output
                            ? TensorJson(*o.pooling_output)
                            : (o.has_pooling_output ? Json("<not a tensor>") : Json(nullptr));
  j["finish_reason"] = o.finish_reason ? Json(FinishReasonName(*o.finish_reason)) : Json(nullptr);
  switch (o.stop_reason.kind) {
    case StopReason::Kind::kNone:
      j["stop_reason"] = nullptr;
      break;
    case StopReason::Kind::kTokenId:
      j["stop_reason"] = o.stop_reason.token_id;
      break;
    case StopReason::Kind::kString:
      j["stop_reason"] = std::string(o.stop_reason.text);
      break;
  }
  if (o.events) {
    Json ev = Json::array();
    for (const auto& e : *o.events) {
      static constexpr const char* kNames[] = {"", "QUEUED", "SCHEDULED", "PREEMPTED"};
      ev.push_back({{"type", kNames[static_cast<int>(e.type)]}, {"timestamp", e.timestamp}});
    }
    j["events"] = ev;
  } else {
    j["events"] = nullptr;
  }
  j["kv_transfer_params"] = RawToJson(o.kv_transfer_params);
  j["ec_transfer_params"] = RawToJson(o.ec_transfer_params);
  j["trace_headers"] = RawToJson(o.trace_headers);
  if (o.has_num_cached_tokens) {
    j["num_cached_tokens"] = o.num_cached_tokens;
    j["num_external_computed_tokens"] = o.num_external_computed_tokens;
  }
  if (o.prefill_stats) {
    const auto& p = *o.prefill_stats;
    j["prefill_stats"] = {{"num_prompt_tokens", p.num_prompt_tokens},
                          {"num_computed_tokens", p.num_computed_tokens},
                          {"num_cached_tokens", p.num_cached_tokens},
                          {"num_local_cached_tokens", p.num_local_cached_tokens},
                          {"num_external_cached_tokens", p.num_external_cached_tokens},
                          {"num_cache_creation_tokens", p.num_cache_creation_tokens}};
  } else {
    j["prefill_stats"] = nullptr;
  }
  j["routed_experts"] = o.has_routed_experts;
  j["num_nans_in_logits"] = o.num_nans_in_logits;
  Json h = Json::array();
  for (auto s : o.mm_cache_miss_hashes) h.push_back(std::string(s));
  j["mm_cache_miss_hashes"] = h;
  j["new_sampling_mask"] = o.has_new_sampling_mask;
  j["wire_fields"] = o.wire_fields;
  return j;
}

Json MessageJson(const EngineCoreOutputs& m, uint64_t number, size_t offset,
                 const DecodeContext& ctx, const Resolutions& resolved,
                 const WireRecognition* wire) {
  Json j;
  j["message"] = number;
  j["offset"] = offset;
  j["bytes"] = m.wire_bytes;
  j["wire_fields"] = m.wire_fields;
  j["engine_index"] = m.engine_index;
  // The engine's wire generation, and the table this message was decoded with.
  if (wire != nullptr && wire->recognised) {
    j["wire_generation"] = wire->name();
  } else {
    j["wire_generation"] = nullptr;
  }
  if (wire != nullptr && std::popcount(wire->candidates) > 1) {
    Json c = Json::array();
    for (const WireGeneration& g : WireGenerations()) {
      if ((wire->candidates & (WireCandidates{1} << WireGenerationIndex(g))) != 0) {
        c.push_back(std::string(g.name));
      }
    }
    j["wire_candidates"] = c;
  }
  j["decoded_as"] = ctx.wire != nullptr ? std::string(ctx.wire->name) : std::string();
  if (m.skipped.any()) {
    j["skipped"] = {{"output", m.skipped.outputs},
                    {"scheduler_stats", m.skipped.scheduler_stats},
                    {"utility_output", m.skipped.utility_output},
                    {"finished_requests", m.skipped.finished_requests}};
  }
  Json outs = Json::array();
  for (const auto& o : m.outputs) outs.push_back(OutputJson(o));
  j["outputs"] = outs;
  j["scheduler_stats"] =
      m.scheduler_stats ? SchedulerJson(*m.scheduler_stats, ctx, resolved) : Json(nullptr);
  j["timestamp"] = m.timestamp;
  if (m.utility_output) {
    const auto& u = *m.utility_output;
    Json uj;
    if (u.call_id_is_u64) {
      uj["call_id"] = u.call_id_u64;
    } else {
      uj["call_id"] = u.call_id;
    }
    uj["failure_message"] =
        u.failure_message ? Json(std::string(*u.failure_message)) : Json(nullptr);
    uj["result"] = RawToJson(u.result);
    j["utility_output"] = uj;
  } else {
    j["utility_output"] = nullptr;
  }
  if (m.finished_requests) {
    Json f = Json::array();
    for (auto id : *m.finished_requests) f.push_back(std::string(id));
    j["finished_requests"] = f;
  } else {
    j["finished_requests"] = nullptr;
  }
  j["wave_complete"] = m.wave_complete ? Json(*m.wave_complete) : Json(nullptr);
  j["start_wave"] = m.start_wave ? Json(*m.start_wave) : Json(nullptr);
  return j;
}

}  // namespace

Result<uint64_t> DecodeCapture(const DecodeCaptureOptions& args,
                               const std::function<void(std::string_view)>& out) {
  // Payloads are decoded and resolved as recording does it: a row that a third-party connector
  // describes with `_metrics_descriptor` is adopted (or refused, as `replay` would refuse it),
  // so its payloads show their samples, this one and those after it. The recorder's registry is
  // never rendered.
  RecorderOptions options;
  if (!args.kv_transfer_config.empty()) {
    Result<ConnectorConfig> c = ConnectorConfig::FromKvTransferConfigJson(args.kv_transfer_config);
    if (!c.ok()) return c.status();
    options.connectors = *c;
  }
  Result<std::string> data = ReadCaptureFile(args.input);
  if (!data.ok()) return data.status();
  auto log = [&args](std::string_view line) {
    if (args.log) args.log(line);
  };
  options.log = [&log](const std::string& line) { log(line); };
  Result<const WireGeneration*> forced = ParseEngineWire(args.engine_wire);
  if (!forced.ok()) return forced.status();
  Registry registry;
  StatsRecorder recorder(&registry, options);
  Resolutions resolved;
  WireDecoderOptions wire_options;
  wire_options.forced = *forced;
  wire_options.log = [&log](const std::string& line) { log(line); };
  wire_options.on_recognised = [&log](const WireRecognition& r) { log(DescribeRecognition(r)); };
  WireDecoder wire(std::move(wire_options));
  return DecodeStream(
      *data, wire, [&](uint64_t number) { return recorder.decode_context(number); },
      [&](EngineCoreOutputs& m, uint64_t number, size_t offset, const DecodeContext& ctx) {
        resolved = {};
        if (m.scheduler_stats && m.scheduler_stats->kv_connector_stats) {
          resolved = recorder.ResolveConnectors(*m.scheduler_stats->kv_connector_stats, ctx);
        }
        // A str that is not valid UTF-8 (vLLM's decoder would refuse it) is written with each
        // invalid byte replaced by U+FFFD: dump() would otherwise throw (type_error.316).
        std::string line =
            MessageJson(m, number, offset, ctx, resolved, wire.recognition(m.engine_index))
                .dump(-1, ' ', false, Json::error_handler_t::replace);
        line.push_back('\n');
        out(line);
      },
      [&](const std::string& what) { log(what); });
}

}  // namespace vmetrics::frontend
