// SPDX-License-Identifier: Apache-2.0
// EngineCoreRequest / ABORT encoding and engine choice (docs/wire_format.md "The input socket";
// msgspec's rules: docs/design.md §4.1).
#include "vmetrics/engine_request.h"

#include <cstring>
#include <functional>
#include <msgpack.hpp>

#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void PackStr(Packer& pk, const std::string& s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

void PackKey(Packer& pk, const char* key) { PackStr(pk, key); }

// msgspec writes every Python float as float64 (0xcb). msgpack-cxx's pack_double writes an
// integral double (1.0, 0.0) as an int, which an engine would decode as the wrong type for
// arrival_time, so the eight bytes are written here.
void PackFloat64(msgpack::sbuffer& buf, double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  char bytes[9];
  bytes[0] = static_cast<char>(0xcb);
  for (int i = 0; i < 8; ++i) bytes[1 + i] = static_cast<char>((bits >> (56 - 8 * i)) & 0xff);
  buf.write(bytes, sizeof(bytes));
}

void PackInts(Packer& pk, const std::vector<int64_t>& v) {
  pk.pack_array(static_cast<uint32_t>(v.size()));
  for (int64_t t : v) pk.pack_int64(t);
}

void PackStrs(Packer& pk, const std::vector<std::string>& v) {
  pk.pack_array(static_cast<uint32_t>(v.size()));
  for (const std::string& s : v) PackStr(pk, s);
}

void PackOptInt(Packer& pk, const std::optional<int64_t>& v) {
  if (v) {
    pk.pack_int64(*v);
  } else {
    pk.pack_nil();
  }
}

// SamplingParams: a map of the fields that differ from Python's defaults, in definition order
// (vllm/sampling_params.py at 6adad087). Each entry is a (present, write) pair so the count in
// the map header and the entries written cannot disagree.
void PackSampling(msgpack::sbuffer& buf, Packer& pk, const SamplingParams& p) {
  struct Entry {
    bool present;
    const char* key;
    std::function<void()> write;
  };
  auto f64 = [&](double v) { return [&buf, v] { PackFloat64(buf, v); }; };
  auto i64 = [&](int64_t v) { return [&pk, v] { pk.pack_int64(v); }; };
  auto boolean = [&](bool v) { return [&pk, v] { v ? pk.pack_true() : pk.pack_false(); }; };
  const Entry entries[] = {
      {p.n != 1, "n", i64(p.n)},
      {p.presence_penalty != 0.0, "presence_penalty", f64(p.presence_penalty)},
      {p.frequency_penalty != 0.0, "frequency_penalty", f64(p.frequency_penalty)},
      {p.repetition_penalty != 1.0, "repetition_penalty", f64(p.repetition_penalty)},
      {p.temperature != 1.0, "temperature", f64(p.temperature)},
      {p.top_p != 1.0, "top_p", f64(p.top_p)},
      {p.top_k != 0, "top_k", i64(p.top_k)},
      {p.min_p != 0.0, "min_p", f64(p.min_p)},
      {p.seed.has_value(), "seed", [&] { PackOptInt(pk, p.seed); }},
      {p.stop.has_value(), "stop", [&] { PackStrs(pk, *p.stop); }},
      {p.stop_token_ids.has_value(), "stop_token_ids", [&] { PackInts(pk, *p.stop_token_ids); }},
      {p.ignore_eos, "ignore_eos", boolean(true)},
      {p.max_tokens != std::optional<int64_t>(16), "max_tokens",
       [&] { PackOptInt(pk, p.max_tokens); }},
      {p.min_tokens != 0, "min_tokens", i64(p.min_tokens)},
      {p.logprobs.has_value(), "logprobs", [&] { PackOptInt(pk, p.logprobs); }},
      {p.prompt_logprobs.has_value(), "prompt_logprobs",
       [&] { PackOptInt(pk, p.prompt_logprobs); }},
      {p.logprob_token_ids.has_value(), "logprob_token_ids",
       [&] { PackInts(pk, *p.logprob_token_ids); }},
      {p.flat_logprobs, "flat_logprobs", boolean(true)},
      {!p.detokenize, "detokenize", boolean(false)},
      {!p.skip_special_tokens, "skip_special_tokens", boolean(false)},
      {!p.spaces_between_special_tokens, "spaces_between_special_tokens", boolean(false)},
      {p.include_stop_str_in_output, "include_stop_str_in_output", boolean(true)},
      {p.output_kind != 0, "output_kind", i64(p.output_kind)},
      {p.stream_interval.has_value(), "stream_interval",
       [&] { PackOptInt(pk, p.stream_interval); }},
      {p.skip_clone, "skip_clone", boolean(true)},
      {p.output_text_buffer_length != 0, "output_text_buffer_length",
       i64(p.output_text_buffer_length)},
      {p.eos_token_id.has_value(), "_eos_token_id", [&] { PackOptInt(pk, p.eos_token_id); }},
      {!p.all_stop_token_ids.empty(), "_all_stop_token_ids",
       [&] { PackInts(pk, p.all_stop_token_ids); }},
      {p.logit_bias.has_value(), "logit_bias",
       [&] {
         pk.pack_map(static_cast<uint32_t>(p.logit_bias->size()));
         for (const auto& [token, bias] : *p.logit_bias) {
           pk.pack_int64(token);
           PackFloat64(buf, bias);
         }
       }},
      {p.allowed_token_ids.has_value(), "allowed_token_ids",
       [&] { PackInts(pk, *p.allowed_token_ids); }},
      {!p.extra_args.empty(), "extra_args",
       [&] { buf.write(p.extra_args.data(), p.extra_args.size()); }},
      {p.routed_experts_prompt_start != 0, "routed_experts_prompt_start",
       i64(p.routed_experts_prompt_start)},
      {p.bad_words.has_value(), "bad_words", [&] { PackStrs(pk, *p.bad_words); }},
      {p.skip_reading_prefix_cache.has_value(), "skip_reading_prefix_cache",
       [&] { *p.skip_reading_prefix_cache ? pk.pack_true() : pk.pack_false(); }},
      {p.thinking_token_budget.has_value(), "thinking_token_budget",
       [&] { PackOptInt(pk, p.thinking_token_budget); }},
      {p.repetition_detection.has_value(), "repetition_detection",
       [&] {
         pk.pack_map(3);
         PackKey(pk, "max_pattern_size");
         pk.pack_int64(p.repetition_detection->max_pattern_size);
         PackKey(pk, "min_pattern_size");
         pk.pack_int64(p.repetition_detection->min_pattern_size);
         PackKey(pk, "min_count");
         pk.pack_int64(p.repetition_detection->min_count);
       }},
  };
  uint32_t count = 0;
  for (const Entry& e : entries) count += e.present;
  pk.pack_map(count);
  for (const Entry& e : entries) {
    if (!e.present) continue;
    PackKey(pk, e.key);
    e.write();
  }
}

}  // namespace

std::string EncodeEngineCoreRequest(const EngineCoreRequestSpec& spec) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_array(21);
  PackStr(pk, spec.request_id);                                        // 0
  pk.pack_array(static_cast<uint32_t>(spec.prompt_token_ids.size()));  // 1
  for (int64_t t : spec.prompt_token_ids) pk.pack_int64(t);
  pk.pack_nil();                         // 2 mm_features
  PackSampling(buf, pk, spec.sampling);  // 3
  pk.pack_nil();                         // 4 pooling_params
  PackFloat64(buf, spec.arrival_time);   // 5
  if (spec.lora_name.empty()) {          // 6 lora_request
    pk.pack_nil();
  } else {
    // LoRARequest is array_like too: all 7 positions.
    pk.pack_array(7);
    PackStr(pk, spec.lora_name);
    pk.pack_int64(spec.lora_int_id);
    PackStr(pk, spec.lora_path);
    pk.pack_nil();
    pk.pack_nil();
    pk.pack_false();
    pk.pack_false();
  }
  if (spec.cache_salt) {  // 7
    PackStr(pk, *spec.cache_salt);
  } else {
    pk.pack_nil();
  }
  PackOptInt(pk, spec.data_parallel_rank);  // 8
  pk.pack_nil();                            // 9 prompt_embeds
  pk.pack_nil();                            // 10 prompt_is_token_ids
  pk.pack_int64(spec.client_index);         // 11
  pk.pack_int64(0);                         // 12 current_wave
  pk.pack_int64(spec.priority);             // 13
  pk.pack_nil();                            // 14 trace_headers
  pk.pack_false();                          // 15 resumable
  if (spec.external_req_id.empty()) {       // 16
    pk.pack_nil();
  } else {
    PackStr(pk, spec.external_req_id);
  }
  pk.pack_nil();          // 17 reasoning_ended
  pk.pack_nil();          // 18 reasoning_parser_kwargs
  pk.pack_false();        // 19 abort_immediately
  if (spec.session_id) {  // 20
    PackStr(pk, *spec.session_id);
  } else {
    pk.pack_nil();
  }
  return std::string(buf.data(), buf.size());
}

std::string EncodeAbort(std::span<const std::string> request_ids) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_array(static_cast<uint32_t>(request_ids.size()));
  for (const std::string& id : request_ids) PackStr(pk, id);
  return std::string(buf.data(), buf.size());
}

namespace {

using protocol::MsgpackReader;

// Reads an optional string (nil = "").
Status ReadOptionalStr(MsgpackReader& r, std::string* out) {
  if (r.NextIsNil()) return r.ReadNil();
  std::string_view v;
  if (Status s = r.ReadStr(&v); !s.ok()) return s;
  out->assign(v);
  return Status::Ok();
}

Status ReadOptionalInt(MsgpackReader& r, std::optional<int64_t>* out) {
  if (r.NextIsNil()) {
    out->reset();
    return r.ReadNil();
  }
  int64_t v = 0;
  if (Status s = r.ReadInt(&v); !s.ok()) return s;
  *out = v;
  return Status::Ok();
}

Status ReadIntList(MsgpackReader& r, std::vector<int64_t>* out) {
  out->clear();
  if (r.NextIsNil()) return r.ReadNil();
  uint32_t n = 0;
  if (Status s = r.ReadArrayHeader(&n); !s.ok()) return s;
  // Every element takes at least one byte: a count beyond what is left is a lie, and
  // reserving it would let a peer size our allocation.
  if (n > r.remaining()) {
    return Status::Malformed("list longer than the body", static_cast<int64_t>(r.offset()));
  }
  out->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    int64_t v = 0;
    if (Status s = r.ReadInt(&v); !s.ok()) return s;
    out->push_back(v);
  }
  return Status::Ok();
}

Status ReadOptionalIntList(MsgpackReader& r, std::optional<std::vector<int64_t>>* out) {
  if (r.NextIsNil()) {
    out->reset();
    return r.ReadNil();
  }
  out->emplace();
  return ReadIntList(r, &**out);
}

Status ReadOptionalStrList(MsgpackReader& r, std::optional<std::vector<std::string>>* out) {
  if (r.NextIsNil()) {
    out->reset();
    return r.ReadNil();
  }
  uint32_t n = 0;
  if (Status s = r.ReadArrayHeader(&n); !s.ok()) return s;
  if (n > r.remaining()) {
    return Status::Malformed("list longer than the body", static_cast<int64_t>(r.offset()));
  }
  out->emplace();
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view v;
    if (Status s = r.ReadStr(&v); !s.ok()) return s;
    (*out)->emplace_back(v);
  }
  return Status::Ok();
}

Status ReadLogitBias(MsgpackReader& r,
                     std::optional<std::vector<std::pair<int64_t, double>>>* out) {
  if (r.NextIsNil()) {
    out->reset();
    return r.ReadNil();
  }
  uint32_t n = 0;
  if (Status s = r.ReadMapHeader(&n); !s.ok()) return s;
  if (n > r.remaining()) {
    return Status::Malformed("map longer than the body", static_cast<int64_t>(r.offset()));
  }
  out->emplace();
  for (uint32_t i = 0; i < n; ++i) {
    int64_t token = 0;
    double bias = 0;
    if (Status s = r.ReadInt(&token); !s.ok()) return s;
    if (Status s = r.ReadDouble(&bias); !s.ok()) return s;
    (*out)->emplace_back(token, bias);
  }
  return Status::Ok();
}

Status ReadRepetitionDetection(MsgpackReader& r, std::optional<RepetitionDetectionParams>* out) {
  if (r.NextIsNil()) {
    out->reset();
    return r.ReadNil();
  }
  uint32_t n = 0;
  if (Status s = r.ReadMapHeader(&n); !s.ok()) return s;
  RepetitionDetectionParams p;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (Status s = r.ReadStr(&key); !s.ok()) return s;
    Status s;
    if (key == "max_pattern_size") {
      s = r.ReadInt(&p.max_pattern_size);
    } else if (key == "min_pattern_size") {
      s = r.ReadInt(&p.min_pattern_size);
    } else if (key == "min_count") {
      s = r.ReadInt(&p.min_count);
    } else {
      s = r.Skip();
    }
    if (!s.ok()) return s;
  }
  *out = p;
  return Status::Ok();
}

Status ReadOptionalBool(MsgpackReader& r, std::optional<bool>* out) {
  if (r.NextIsNil()) {
    out->reset();
    return r.ReadNil();
  }
  bool v = false;
  if (Status s = r.ReadBool(&v); !s.ok()) return s;
  *out = v;
  return Status::Ok();
}

// SamplingParams: a map of the non-default keys; the ones SamplingParams holds are read, the
// rest skipped.
Status ReadSampling(MsgpackReader& r, SamplingParams* p) {
  *p = SamplingParams();
  if (r.NextIsNil()) return r.ReadNil();
  uint32_t n = 0;
  if (Status s = r.ReadMapHeader(&n); !s.ok()) return s;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (Status s = r.ReadStr(&key); !s.ok()) return s;
    Status s;
    if (key == "n") {
      s = r.ReadInt(&p->n);
    } else if (key == "presence_penalty") {
      s = r.ReadDouble(&p->presence_penalty);
    } else if (key == "frequency_penalty") {
      s = r.ReadDouble(&p->frequency_penalty);
    } else if (key == "repetition_penalty") {
      s = r.ReadDouble(&p->repetition_penalty);
    } else if (key == "temperature") {
      s = r.ReadDouble(&p->temperature);
    } else if (key == "top_p") {
      s = r.ReadDouble(&p->top_p);
    } else if (key == "top_k") {
      s = r.ReadInt(&p->top_k);
    } else if (key == "min_p") {
      s = r.ReadDouble(&p->min_p);
    } else if (key == "seed") {
      s = ReadOptionalInt(r, &p->seed);
    } else if (key == "stop") {
      s = ReadOptionalStrList(r, &p->stop);
    } else if (key == "stop_token_ids") {
      s = ReadOptionalIntList(r, &p->stop_token_ids);
    } else if (key == "ignore_eos") {
      s = r.ReadBool(&p->ignore_eos);
    } else if (key == "max_tokens") {
      s = ReadOptionalInt(r, &p->max_tokens);
    } else if (key == "min_tokens") {
      s = r.ReadInt(&p->min_tokens);
    } else if (key == "logprobs") {
      s = ReadOptionalInt(r, &p->logprobs);
    } else if (key == "prompt_logprobs") {
      s = ReadOptionalInt(r, &p->prompt_logprobs);
    } else if (key == "logprob_token_ids") {
      s = ReadOptionalIntList(r, &p->logprob_token_ids);
    } else if (key == "flat_logprobs") {
      s = r.ReadBool(&p->flat_logprobs);
    } else if (key == "detokenize") {
      s = r.ReadBool(&p->detokenize);
    } else if (key == "skip_special_tokens") {
      s = r.ReadBool(&p->skip_special_tokens);
    } else if (key == "spaces_between_special_tokens") {
      s = r.ReadBool(&p->spaces_between_special_tokens);
    } else if (key == "include_stop_str_in_output") {
      s = r.ReadBool(&p->include_stop_str_in_output);
    } else if (key == "output_kind") {
      s = r.ReadInt(&p->output_kind);
    } else if (key == "stream_interval") {
      s = ReadOptionalInt(r, &p->stream_interval);
    } else if (key == "skip_clone") {
      s = r.ReadBool(&p->skip_clone);
    } else if (key == "output_text_buffer_length") {
      s = r.ReadInt(&p->output_text_buffer_length);
    } else if (key == "_eos_token_id") {
      s = ReadOptionalInt(r, &p->eos_token_id);
    } else if (key == "_all_stop_token_ids") {
      s = ReadIntList(r, &p->all_stop_token_ids);
    } else if (key == "logit_bias") {
      s = ReadLogitBias(r, &p->logit_bias);
    } else if (key == "allowed_token_ids") {
      s = ReadOptionalIntList(r, &p->allowed_token_ids);
    } else if (key == "extra_args") {
      std::string_view raw;
      if (r.NextIsNil()) {
        s = r.ReadNil();
      } else {
        s = r.ReadRaw(&raw);
        p->extra_args.assign(raw);
      }
    } else if (key == "routed_experts_prompt_start") {
      s = r.ReadInt(&p->routed_experts_prompt_start);
    } else if (key == "bad_words") {
      s = ReadOptionalStrList(r, &p->bad_words);
    } else if (key == "skip_reading_prefix_cache") {
      s = ReadOptionalBool(r, &p->skip_reading_prefix_cache);
    } else if (key == "thinking_token_budget") {
      s = ReadOptionalInt(r, &p->thinking_token_budget);
    } else if (key == "repetition_detection") {
      s = ReadRepetitionDetection(r, &p->repetition_detection);
    } else {
      s = r.Skip();
    }
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

Result<EngineCoreRequestSpec> DecodeEngineCoreRequest(std::string_view body) {
  MsgpackReader r(body);
  uint32_t count = 0;
  if (Status s = r.ReadArrayHeader(&count); !s.ok()) return s;
  if (count < 9) {
    return Status::Malformed(
        "EngineCoreRequest has " + std::to_string(count) + " positions, needs at least 9", 0);
  }
  EngineCoreRequestSpec spec;
  for (uint32_t pos = 0; pos < count; ++pos) {
    Status s;
    switch (pos) {
      case 0: {
        std::string_view id;
        s = r.ReadStr(&id);
        spec.request_id.assign(id);
        break;
      }
      case 1:
        s = ReadIntList(r, &spec.prompt_token_ids);
        break;
      case 3:
        s = ReadSampling(r, &spec.sampling);
        break;
      case 5:
        s = r.ReadDouble(&spec.arrival_time);
        break;
      case 6:  // LoRARequest: [lora_name, lora_int_id, lora_path, ...] or nil
        if (r.NextIsNil()) {
          s = r.ReadNil();
        } else {
          uint32_t fields = 0;
          s = r.ReadArrayHeader(&fields);
          for (uint32_t f = 0; s.ok() && f < fields; ++f) {
            if (f == 0) {
              s = ReadOptionalStr(r, &spec.lora_name);
            } else if (f == 1) {
              s = r.ReadInt(&spec.lora_int_id);
            } else if (f == 2) {
              s = ReadOptionalStr(r, &spec.lora_path);
            } else {
              s = r.Skip();
            }
          }
        }
        break;
      case 7:
        if (r.NextIsNil()) {
          s = r.ReadNil();
        } else {
          std::string_view salt;
          s = r.ReadStr(&salt);
          spec.cache_salt.emplace(salt);
        }
        break;
      case 8:
        s = ReadOptionalInt(r, &spec.data_parallel_rank);
        break;
      case 11:
        s = r.ReadInt(&spec.client_index);
        break;
      case 13:
        s = r.ReadInt(&spec.priority);
        break;
      case 16:
        s = ReadOptionalStr(r, &spec.external_req_id);
        break;
      case 20:
        if (r.NextIsNil()) {
          s = r.ReadNil();
        } else {
          std::string_view session;
          s = r.ReadStr(&session);
          spec.session_id.emplace(session);
        }
        break;
      default:
        s = r.Skip();
        break;
    }
    if (!s.ok()) return s;
  }
  return spec;
}

Result<std::vector<std::string>> DecodeAbort(std::string_view body) {
  MsgpackReader r(body);
  uint32_t n = 0;
  if (Status s = r.ReadArrayHeader(&n); !s.ok()) return s;
  if (n > r.remaining()) {
    return Status::Malformed("ABORT lists more ids than bytes", static_cast<int64_t>(r.offset()));
  }
  std::vector<std::string> ids;
  ids.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view id;
    if (Status s = r.ReadStr(&id); !s.ok()) return s;
    ids.emplace_back(id);
  }
  return ids;
}

EngineRouter::EngineRouter(const std::vector<int64_t>& engine_indexes) {
  for (int64_t e : engine_indexes) engines_.push_back(Engine{e});
}

int64_t EngineRouter::Choose() {
  // Round robin from the cursor; a strictly smaller load wins, so ties keep rotating.
  const size_t n = engines_.size();
  Engine* best = nullptr;
  size_t best_pos = 0;
  for (size_t k = 0; k < n; ++k) {
    const size_t pos = (next_ + k) % n;
    Engine& e = engines_[pos];
    if (!e.alive) continue;
    const int64_t load = (e.has_stats ? e.load : 0) + e.assigned;
    if (best == nullptr || load < (best->has_stats ? best->load : 0) + best->assigned) {
      best = &e;
      best_pos = pos;
    }
  }
  if (best == nullptr) return -1;
  next_ = (best_pos + 1) % n;
  return best->index;
}

bool EngineRouter::IsAlive(int64_t engine_index) const {
  for (const Engine& e : engines_) {
    if (e.index == engine_index) return e.alive;
  }
  return false;
}

bool EngineRouter::Has(int64_t engine_index) const {
  for (const Engine& e : engines_) {
    if (e.index == engine_index) return true;
  }
  return false;
}

void EngineRouter::Assign(const std::string& request_id, int64_t engine_index) {
  request_engine_[request_id] = engine_index;
  for (Engine& e : engines_) {
    if (e.index == engine_index) ++e.assigned;
  }
}

int64_t EngineRouter::EngineOf(const std::string& request_id) const {
  auto it = request_engine_.find(request_id);
  return it == request_engine_.end() ? -1 : it->second;
}

void EngineRouter::Release(const std::string& request_id) { request_engine_.erase(request_id); }

void EngineRouter::ObserveStats(int64_t engine_index, const SchedulerStats& stats) {
  for (Engine& e : engines_) {
    if (e.index != engine_index) continue;
    e.has_stats = true;
    e.load = stats.num_running_reqs + stats.num_waiting_reqs + stats.num_skipped_waiting_reqs;
    e.assigned = 0;  // the engine's own counts include what was sent before
  }
}

std::vector<std::string> EngineRouter::MarkDead(int64_t engine_index) {
  for (Engine& e : engines_) {
    if (e.index == engine_index) e.alive = false;
  }
  std::vector<std::string> lost;
  for (auto it = request_engine_.begin(); it != request_engine_.end();) {
    if (it->second == engine_index) {
      lost.push_back(it->first);
      it = request_engine_.erase(it);
    } else {
      ++it;
    }
  }
  return lost;
}

}  // namespace vmetrics
