// EngineCoreRequest / ABORT encoding and engine choice (docs/wire_format.md "The input socket";
// msgspec's rules: docs/design.md §4.1).
#include "vmetrics/engine_request.h"

#include <cstring>
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

// SamplingParams: a map of the non-default fields, in definition order (n, ..., temperature,
// top_p, top_k, ..., seed, stop, stop_token_ids, ignore_eos, max_tokens, min_tokens, ...,
// output_kind).
void PackSampling(msgpack::sbuffer& buf, Packer& pk, const SamplingParams& p) {
  uint32_t count = 0;
  count += p.n != 1;
  count += p.temperature != 1.0;
  count += p.top_p != 1.0;
  count += p.top_k != 0;
  count += p.seed.has_value();
  count += !p.stop_token_ids.empty();
  count += p.ignore_eos;
  count += p.max_tokens != std::optional<int64_t>(16);
  count += p.min_tokens != 0;
  count += p.output_kind != 0;
  pk.pack_map(count);
  if (p.n != 1) {
    PackKey(pk, "n");
    pk.pack_int64(p.n);
  }
  if (p.temperature != 1.0) {
    PackKey(pk, "temperature");
    PackFloat64(buf, p.temperature);
  }
  if (p.top_p != 1.0) {
    PackKey(pk, "top_p");
    PackFloat64(buf, p.top_p);
  }
  if (p.top_k != 0) {
    PackKey(pk, "top_k");
    pk.pack_int64(p.top_k);
  }
  if (p.seed) {
    PackKey(pk, "seed");
    pk.pack_int64(*p.seed);
  }
  if (!p.stop_token_ids.empty()) {
    PackKey(pk, "stop_token_ids");
    pk.pack_array(static_cast<uint32_t>(p.stop_token_ids.size()));
    for (int64_t t : p.stop_token_ids) pk.pack_int64(t);
  }
  if (p.ignore_eos) {
    PackKey(pk, "ignore_eos");
    pk.pack_true();
  }
  if (p.max_tokens != std::optional<int64_t>(16)) {
    PackKey(pk, "max_tokens");
    if (p.max_tokens) {
      pk.pack_int64(*p.max_tokens);
    } else {
      pk.pack_nil();
    }
  }
  if (p.min_tokens != 0) {
    PackKey(pk, "min_tokens");
    pk.pack_int64(p.min_tokens);
  }
  if (p.output_kind != 0) {
    PackKey(pk, "output_kind");
    pk.pack_int64(p.output_kind);
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
  pk.pack_nil();                       // 7 cache_salt
  pk.pack_nil();                       // 8 data_parallel_rank
  pk.pack_nil();                       // 9 prompt_embeds
  pk.pack_nil();                       // 10 prompt_is_token_ids
  pk.pack_int64(spec.client_index);    // 11
  pk.pack_int64(0);                    // 12 current_wave
  pk.pack_int64(0);                    // 13 priority
  pk.pack_nil();                       // 14 trace_headers
  pk.pack_false();                     // 15 resumable
  if (spec.external_req_id.empty()) {  // 16
    pk.pack_nil();
  } else {
    PackStr(pk, spec.external_req_id);
  }
  pk.pack_nil();    // 17 reasoning_ended
  pk.pack_nil();    // 18 reasoning_parser_kwargs
  pk.pack_false();  // 19 abort_immediately
  pk.pack_nil();    // 20 session_id
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
  if (n > r.remaining()) return Status::Malformed("list longer than the body", r.offset());
  out->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    int64_t v = 0;
    if (Status s = r.ReadInt(&v); !s.ok()) return s;
    out->push_back(v);
  }
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
    } else if (key == "temperature") {
      s = r.ReadDouble(&p->temperature);
    } else if (key == "top_p") {
      s = r.ReadDouble(&p->top_p);
    } else if (key == "top_k") {
      s = r.ReadInt(&p->top_k);
    } else if (key == "seed") {
      s = ReadOptionalInt(r, &p->seed);
    } else if (key == "stop_token_ids") {
      s = ReadIntList(r, &p->stop_token_ids);
    } else if (key == "ignore_eos") {
      s = r.ReadBool(&p->ignore_eos);
    } else if (key == "max_tokens") {
      s = ReadOptionalInt(r, &p->max_tokens);
    } else if (key == "min_tokens") {
      s = r.ReadInt(&p->min_tokens);
    } else if (key == "output_kind") {
      s = r.ReadInt(&p->output_kind);
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
      case 11:
        s = r.ReadInt(&spec.client_index);
        break;
      case 16:
        s = ReadOptionalStr(r, &spec.external_req_id);
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
  if (n > r.remaining()) return Status::Malformed("ABORT lists more ids than bytes", r.offset());
  std::vector<std::string> ids;
  ids.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view id;
    if (Status s = r.ReadStr(&id); !s.ok()) return s;
    ids.emplace_back(id);
  }
  return ids;
}

EngineRouter::EngineRouter(std::vector<int64_t> engine_indexes) {
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
