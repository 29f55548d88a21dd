// SPDX-License-Identifier: Apache-2.0
// File: decode_fuzz_check.h
//
// The invariants the decode fuzzer checks, shared by the libFuzzer entry (decode_fuzz.cc) and
// the corpus-replay test (tests/protocol/decode_corpus_replay_test.cc), so a crash input kept in
// fuzz/corpus/decode/ fails ctest without libFuzzer.
//
// Input layout: the bytes are frame 0. When the first byte is odd and the input has at least
// three bytes, the last two bytes (little endian) give the length of one aux frame that sits
// just before them: [frame0][aux1][len lo][len hi]. tools/gen_fixtures.py writes seeds the same
// way.
//
// Invariants, for several connector configurations (none, a bare NIXL, a MultiConnector):
//   * decoding never crashes (ASan/UBSan report anything else), even with the stack below it
//     filled with 0xff (an uninitialized length then shows up as a giant allocation);
//   * decoding the same frames twice gives the same status and the same value;
//   * on success: wire_bytes is frame 0's size; every string_view in the value points into the
//     frames (the lifetime contract of engine_core_outputs.h); every count is bounded by the
//     input size (no value is invented); every ConnectorPayload is named by the configuration,
//     a MultiConnector child key, or nothing (then it is the whole kv_connector_stats map, or a
//     malformed value). Identification with the catalog is kv_connector_fuzz's; an output's
//     spec_decode_metrics map decodes again (DecodeSpecDecodeMetrics), as the token APIs do.
#ifndef VMETRICS_FUZZ_DECODE_FUZZ_CHECK_H_
#define VMETRICS_FUZZ_DECODE_FUZZ_CHECK_H_

#include <cstdint>
#include <cstring>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/engine_core_outputs.h"

namespace vmetrics::fuzz {

// Splits fuzzer input into frames as described above.
inline std::vector<std::string_view> SplitFuzzInput(std::string_view data) {
  if (data.size() >= 3 && (static_cast<uint8_t>(data[0]) & 1)) {
    const size_t body = data.size() - 2;
    size_t aux = static_cast<uint8_t>(data[body]) |
                 (static_cast<size_t>(static_cast<uint8_t>(data[body + 1])) << 8);
    if (aux > body) aux = body;
    return {data.substr(0, body - aux), data.substr(body - aux, aux)};
  }
  return {data};
}

namespace internal {

// Fills the stack the decoder is about to use with 0xff, so a local it reads before writing
// (a count left uninitialized when a header read fails) holds a huge value and shows up as a
// giant allocation instead of passing by luck.
[[gnu::noinline]] inline void DirtyTheStack() {
  volatile unsigned char junk[16384];
  for (size_t i = 0; i < sizeof junk; ++i) junk[i] = 0xff;
}

inline void Put(std::ostringstream& os, std::string_view name, std::string_view v) {
  os << name << "=" << v.size() << ":" << v << ";";
}

inline void PutTensor(std::ostringstream& os, const Tensor& t) {
  Put(os, "dtype", t.dtype);
  os << "shape=";
  for (int64_t d : t.shape) os << d << ",";
  os << "aux=" << t.aux_frame << ";";
  Put(os, "data", t.data);
}

inline void PutLogprobs(std::ostringstream& os, const std::optional<Logprobs>& lp) {
  if (!lp) {
    os << "nolp;";
    return;
  }
  os << "lp" << lp->fields.size() << "[";
  for (const auto& f : lp->fields) {
    if (f) {
      PutTensor(os, *f);
    } else {
      os << "-;";
    }
  }
  os << "]";
}

inline void PutPrefix(std::ostringstream& os, const PrefixCacheStats& p) {
  os << "pcs" << p.reset << "," << p.requests << "," << p.queries << "," << p.hits << ","
     << p.preempted_requests << "," << p.preempted_queries << "," << p.preempted_hits << "[";
  for (const auto& [k, v] : p.hits_by_source) os << k << "=" << v << ",";
  os << "];";
}

inline void PutPairs(std::ostringstream& os,
                     const std::vector<std::pair<std::string_view, int64_t>>& pairs) {
  os << "[";
  for (const auto& [k, v] : pairs) os << k.size() << ":" << k << "=" << v << ",";
  os << "]";
}

}  // namespace internal

// Every decoded field as text, for comparing two decodes of the same input. Doubles are
// printed bit for bit so NaN payloads and -0.0 compare exactly.
inline std::string Summarize(const EngineCoreOutputs& out) {
  using internal::Put;
  std::ostringstream os;
  auto bits = [](double d) {
    uint64_t b;
    std::memcpy(&b, &d, sizeof b);
    return b;
  };
  os << "engine=" << out.engine_index << ";ts=" << bits(out.timestamp)
     << ";wire=" << out.wire_fields << "/" << out.wire_bytes << ";";
  for (const EngineCoreOutput& o : out.outputs) {
    os << "{";
    Put(os, "id", o.request_id);
    os << "tok=";
    for (int64_t t : o.new_token_ids) os << t << ",";
    internal::PutLogprobs(os, o.new_logprobs);
    internal::PutLogprobs(os, o.new_prompt_logprobs_tensors);
    os << "pool=" << o.has_pooling_output;
    if (o.pooling_output) internal::PutTensor(os, *o.pooling_output);
    os << "experts=" << o.has_routed_experts;
    if (o.routed_experts) internal::PutTensor(os, *o.routed_experts);
    os << "mask=" << o.has_new_sampling_mask;
    if (o.new_sampling_mask) {
      internal::PutTensor(os, o.new_sampling_mask->token_ids);
      internal::PutTensor(os, o.new_sampling_mask->offsets);
    }
    os << "fin=" << (o.finish_reason ? static_cast<int>(*o.finish_reason) : -1)
       << ";stop=" << static_cast<int>(o.stop_reason.kind) << "," << o.stop_reason.token_id;
    Put(os, "stoptext", o.stop_reason.text);
    if (o.events) {
      os << "ev[";
      for (const EngineCoreEvent& e : *o.events) {
        os << static_cast<int>(e.type) << "@" << bits(e.timestamp) << ",";
      }
      os << "]";
    }
    Put(os, "kvp", o.kv_transfer_params);
    Put(os, "ecp", o.ec_transfer_params);
    Put(os, "trace", o.trace_headers);
    if (o.prefill_stats) {
      const PrefillStats& p = *o.prefill_stats;
      os << "prefill=" << p.num_prompt_tokens << "," << p.num_computed_tokens << ","
         << p.num_cached_tokens << "," << p.num_local_cached_tokens << ","
         << p.num_external_cached_tokens << "," << p.num_cache_creation_tokens << ";";
    }
    os << "routed=" << o.has_routed_experts << ";nans=" << o.num_nans_in_logits << ";mm=";
    for (std::string_view h : o.mm_cache_miss_hashes) os << h.size() << ":" << h << ",";
    os << "mask=" << o.has_new_sampling_mask << ";wire=" << o.wire_fields << ";";
    Put(os, "spec", o.spec_decode_metrics);
    os << "}";
  }
  if (out.scheduler_stats) {
    const SchedulerStats& s = *out.scheduler_stats;
    os << "stats{" << s.num_running_reqs << "," << s.num_waiting_reqs << ","
       << s.num_skipped_waiting_reqs << "," << s.step_counter << "," << s.current_wave << ","
       << bits(s.kv_cache_usage) << ";";
    if (s.iteration_details) {
      const SchedulerIterationDetails& d = *s.iteration_details;
      os << "iter=" << d.iteration_index << "," << d.num_ctx_requests << "," << d.num_ctx_tokens
         << "," << d.num_generation_requests << "," << d.num_generation_tokens << ","
         << bits(d.elapsed_ms) << "," << d.num_encoder_inputs << "," << d.num_encoder_output_tokens
         << "," << d.is_dummy << ";";
    }
    internal::PutPrefix(os, s.prefix_cache_stats);
    if (s.connector_prefix_cache_stats) internal::PutPrefix(os, *s.connector_prefix_cache_stats);
    for (const KvCacheEvictionEvent& e : s.kv_cache_eviction_events) {
      os << "evict=" << bits(e.lifetime_seconds) << "," << bits(e.idle_seconds) << "[";
      for (double g : e.reuse_gaps_seconds) os << bits(g) << ",";
      os << "]";
    }
    if (s.spec_decoding_stats) {
      const SpecDecodingStats& sd = *s.spec_decoding_stats;
      os << "spec=" << sd.num_spec_tokens << "," << sd.num_drafts << "," << sd.num_draft_tokens
         << "," << sd.num_accepted_tokens << "[";
      for (int64_t v : sd.num_accepted_tokens_per_pos) os << v << ",";
      os << "][";
      for (int64_t v : sd.num_draft_tokens_per_pos) os << v << ",";
      os << "]";
    }
    if (s.kv_connector_stats) {
      const KvConnectorStats& kv = *s.kv_connector_stats;
      os << "kv multi=" << kv.multi << ";";
      Put(os, "raw", kv.raw);
      for (const ConnectorPayload& p : kv.payloads) {
        os << "(";
        Put(os, "conn", p.connector);
        os << "by=" << static_cast<int>(p.named_by) << ";wrapped=" << p.data_wrapped
           << ";malformed=" << p.malformed << ";off=" << p.payload_offset << ";";
        Put(os, "payload", p.payload);
        Put(os, "desc", p.descriptor);
        os << ")";
      }
    }
    os << "wlora";
    internal::PutPairs(os, s.waiting_lora_adapters);
    os << "rlora";
    internal::PutPairs(os, s.running_lora_adapters);
    if (s.cudagraph_stats) {
      os << "cg=" << s.cudagraph_stats->num_unpadded_tokens << ","
         << s.cudagraph_stats->num_padded_tokens << "," << s.cudagraph_stats->num_paddings;
      Put(os, "mode", s.cudagraph_stats->runtime_mode);
    }
    if (s.perf_stats) {
      os << "perf=" << s.perf_stats->num_flops_per_gpu << ","
         << s.perf_stats->num_read_bytes_per_gpu << "," << s.perf_stats->num_write_bytes_per_gpu
         << "," << s.perf_stats->has_debug_stats << ";";
    }
    if (s.sleep_state) {
      os << "sleep=" << s.sleep_state->scheduler_paused;
      Put(os, "w", s.sleep_state->weights);
      Put(os, "kv", s.sleep_state->kv_cache);
    }
    os << "sleeponly=" << s.sleep_state_only << "}";
  }
  if (out.utility_output) {
    const UtilityOutput& u = *out.utility_output;
    os << "util=" << u.call_id << "," << u.call_id_u64 << "," << u.call_id_is_u64 << ";";
    if (u.failure_message) Put(os, "fail", *u.failure_message);
    Put(os, "result", u.result);
  }
  if (out.finished_requests) {
    os << "finished[";
    for (std::string_view id : *out.finished_requests) os << id.size() << ":" << id << ",";
    os << "]";
  }
  if (out.wave_complete) os << "wave_complete=" << *out.wave_complete << ";";
  if (out.start_wave) os << "start_wave=" << *out.start_wave << ";";
  return os.str();
}

namespace internal {

inline bool Inside(std::string_view v, std::span<const std::string_view> frames) {
  if (v.empty()) return true;
  for (std::string_view f : frames) {
    if (v.data() >= f.data() && v.data() + v.size() <= f.data() + f.size()) return true;
  }
  // Static strings (SleepState's "resident" defaults) live outside the frames.
  return v == "resident";
}

inline std::string CheckViews(const EngineCoreOutputs& out,
                              std::span<const std::string_view> frames) {
  std::vector<std::string_view> views;
  const size_t input = frames[0].size();
  if (out.wire_bytes != input) return "wire_bytes differs from the frame size";
  if (out.outputs.size() > input) return "more outputs than input bytes";
  auto tensor = [&](const Tensor& t) {
    views.push_back(t.dtype);
    views.push_back(t.data);
  };
  for (const EngineCoreOutput& o : out.outputs) {
    views.push_back(o.request_id);
    if (o.new_token_ids.size() > input) return "more tokens than input bytes";
    for (const auto* lp : {&o.new_logprobs, &o.new_prompt_logprobs_tensors}) {
      if (!*lp) continue;
      for (const auto& f : (*lp)->fields) {
        if (f) tensor(*f);
      }
    }
    if (o.pooling_output) tensor(*o.pooling_output);
    if (o.routed_experts) tensor(*o.routed_experts);
    if (o.new_sampling_mask) {
      tensor(o.new_sampling_mask->token_ids);
      tensor(o.new_sampling_mask->offsets);
    }
    views.push_back(o.stop_reason.text);
    views.push_back(o.kv_transfer_params);
    views.push_back(o.ec_transfer_params);
    views.push_back(o.trace_headers);
    for (std::string_view h : o.mm_cache_miss_hashes) views.push_back(h);
    views.push_back(o.spec_decode_metrics);
    // The decoder passes only maps DecodeSpecDecodeMetrics accepts, which the token APIs
    // decode again.
    if (!o.spec_decode_metrics.empty()) {
      RequestSpecDecodeMetrics m;
      if (!DecodeSpecDecodeMetrics(o.spec_decode_metrics, &m).ok()) {
        return "spec_decode_metrics passed the decoder but does not decode";
      }
      if (m.histogram.size() > input || m.per_step_accepted.size() > input) {
        return "more spec decode counts than input bytes";
      }
    }
  }
  if (out.scheduler_stats) {
    const SchedulerStats& s = *out.scheduler_stats;
    for (const auto& [k, v] : s.prefix_cache_stats.hits_by_source) views.push_back(k);
    if (s.connector_prefix_cache_stats) {
      for (const auto& [k, v] : s.connector_prefix_cache_stats->hits_by_source) views.push_back(k);
    }
    for (const auto& [k, v] : s.waiting_lora_adapters) views.push_back(k);
    for (const auto& [k, v] : s.running_lora_adapters) views.push_back(k);
    if (s.cudagraph_stats) views.push_back(s.cudagraph_stats->runtime_mode);
    if (s.sleep_state) {
      views.push_back(s.sleep_state->weights);
      views.push_back(s.sleep_state->kv_cache);
    }
    if (s.kv_connector_stats) {
      views.push_back(s.kv_connector_stats->raw);
      for (const ConnectorPayload& p : s.kv_connector_stats->payloads) {
        views.push_back(p.payload);
        views.push_back(p.descriptor);
        if (!p.payload.empty() && (p.payload_offset + p.payload.size() > input ||
                                   p.payload.data() != frames[0].data() + p.payload_offset)) {
          return "payload_offset does not locate the payload in frame 0";
        }
        if (p.named_by == PayloadNamedBy::kNothing ? !p.connector.empty() && !p.malformed
                                                   : p.connector.empty()) {
          return "a payload's name and what named it disagree";
        }
        if (p.named_by == PayloadNamedBy::kNothing && !p.malformed &&
            p.payload != s.kv_connector_stats->raw) {
          return "an unnamed payload is not the whole kv_connector_stats map";
        }
      }
    }
  }
  if (out.utility_output) {
    if (out.utility_output->failure_message) views.push_back(*out.utility_output->failure_message);
    views.push_back(out.utility_output->result);
  }
  if (out.finished_requests) {
    for (std::string_view id : *out.finished_requests) views.push_back(id);
  }
  for (std::string_view v : views) {
    if (!Inside(v, frames)) return "a string_view points outside the frames";
  }
  return "";
}

}  // namespace internal

// Decodes `frames` under each configuration, twice, and returns "" when every invariant
// holds, else a description of the first one broken.
inline std::string CheckFrameInvariants(std::span<const std::string_view> frames) {
  if (frames.empty()) return "";
  static const ConnectorConfig kNixl{"NixlConnector", {}};
  static const ConnectorConfig kMulti{
      "MultiConnector", {"NixlConnector", "MooncakeStoreConnector", "MooncakeConnector"}};
  const ConnectorConfig* configs[] = {nullptr, &kNixl, &kMulti};
  for (const ConnectorConfig* config : configs) {
    DecodeContext ctx;
    ctx.connectors = config;
    ctx.message_number = 1;
    EngineCoreOutputs first, second;
    internal::DirtyTheStack();
    const Status a = DecodeEngineCoreOutputs(frames, ctx, &first);
    internal::DirtyTheStack();
    const Status b = DecodeEngineCoreOutputs(frames, ctx, &second);
    const std::string which = config ? " (config " + config->connector + ")" : " (no config)";
    if (a.code() != b.code() || a.offset() != b.offset()) {
      return "two decodes disagree on the status" + which + ": " + a.ToString() + " vs " +
             b.ToString();
    }
    if (!a.ok()) continue;
    if (Summarize(first) != Summarize(second)) return "two decodes disagree on the value" + which;
    if (std::string why = internal::CheckViews(first, frames); !why.empty()) return why + which;
    // Reusing an output object must give the same value as a fresh one.
    if (!DecodeEngineCoreOutputs(frames, ctx, &first).ok() ||
        Summarize(first) != Summarize(second)) {
      return "decoding into a reused output changed the value" + which;
    }
  }
  return "";
}

// The fuzzer's check: `data` split into frames as described at the top of this file.
inline std::string CheckDecodeInvariants(std::string_view data) {
  const std::vector<std::string_view> frames = SplitFuzzInput(data);
  return CheckFrameInvariants(frames);
}

}  // namespace vmetrics::fuzz

#endif  // VMETRICS_FUZZ_DECODE_FUZZ_CHECK_H_
