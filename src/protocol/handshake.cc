// SPDX-License-Identifier: Apache-2.0
#include "vmetrics/handshake.h"

#include <functional>
#include <string>
#include <utility>

#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics {
namespace {

using protocol::MsgpackReader;
using protocol::MsgpackType;

// ---- Minimal writer for INIT --------------------------------------------------------------
// INIT is the only message the frontend encodes during startup and holds nothing but maps,
// arrays, strings and nil, so a few lines of msgpack here keep vmetrics_protocol free of an
// encoding library. Formats match msgspec: smallest header that fits.

void PutBE(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void WriteMapHeader(std::string* out, uint32_t n) {
  if (n <= 15) {
    out->push_back(static_cast<char>(0x80 | n));
  } else if (n <= 0xffff) {
    out->push_back(static_cast<char>(0xde));
    PutBE(out, n, 2);
  } else {
    out->push_back(static_cast<char>(0xdf));
    PutBE(out, n, 4);
  }
}

void WriteArrayHeader(std::string* out, uint32_t n) {
  if (n <= 15) {
    out->push_back(static_cast<char>(0x90 | n));
  } else if (n <= 0xffff) {
    out->push_back(static_cast<char>(0xdc));
    PutBE(out, n, 2);
  } else {
    out->push_back(static_cast<char>(0xdd));
    PutBE(out, n, 4);
  }
}

void WriteStr(std::string* out, std::string_view s) {
  const size_t n = s.size();
  if (n <= 31) {
    out->push_back(static_cast<char>(0xa0 | n));
  } else if (n <= 0xff) {
    out->push_back(static_cast<char>(0xd9));
    PutBE(out, n, 1);
  } else if (n <= 0xffff) {
    out->push_back(static_cast<char>(0xda));
    PutBE(out, n, 2);
  } else {
    out->push_back(static_cast<char>(0xdb));
    PutBE(out, n, 4);
  }
  out->append(s);
}

void WriteOptStr(std::string* out, const std::optional<std::string>& s) {
  if (s) {
    WriteStr(out, *s);
  } else {
    out->push_back(static_cast<char>(0xc0));
  }
}

void WriteStrArray(std::string* out, const std::vector<std::string>& v) {
  WriteArrayHeader(out, static_cast<uint32_t>(v.size()));
  for (const std::string& s : v) WriteStr(out, s);
}

// ---- Reading helpers ----------------------------------------------------------------------

// Walks a map, calling `field(key, reader)` for each entry; `field` must consume the value
// (or return false to have it skipped as unknown). A non-ok status from `field` stops the walk.
Status ForEachMapEntry(MsgpackReader* r,
                       const std::function<Status(std::string_view, bool*)>& field) {
  uint32_t n = 0;
  if (Status s = r->ReadMapHeader(&n); !s.ok()) return s;
  for (uint32_t i = 0; i < n; ++i) {
    MsgpackType key_type;
    if (Status s = r->PeekType(&key_type); !s.ok()) return s;
    std::string_view key;
    if (key_type == MsgpackType::kStr) {
      if (Status s = r->ReadStr(&key); !s.ok()) return s;
    } else {
      // A non-string key cannot name a dataclass field; skip key and value.
      if (Status s = r->Skip(); !s.ok()) return s;
      if (Status s = r->Skip(); !s.ok()) return s;
      continue;
    }
    bool consumed = false;
    if (Status s = field(key, &consumed); !s.ok()) return s;
    if (!consumed) {
      if (Status s = r->Skip(); !s.ok()) return s;
    }
  }
  return Status::Ok();
}

Status ReadOptStr(MsgpackReader* r, std::optional<std::string>* out) {
  if (r->NextIsNil()) {
    out->reset();
    return r->ReadNil();
  }
  std::string_view v;
  if (Status s = r->ReadStr(&v); !s.ok()) return s;
  *out = std::string(v);
  return Status::Ok();
}

Status ReadOptInt(MsgpackReader* r, std::optional<int64_t>* out) {
  if (r->NextIsNil()) {
    out->reset();
    return r->ReadNil();
  }
  int64_t v = 0;
  if (Status s = r->ReadInt(&v); !s.ok()) return s;
  *out = v;
  return Status::Ok();
}

Status ReadOptDouble(MsgpackReader* r, std::optional<double>* out) {
  if (r->NextIsNil()) {
    out->reset();
    return r->ReadNil();
  }
  double v = 0;
  if (Status s = r->ReadDouble(&v); !s.ok()) return s;
  *out = v;
  return Status::Ok();
}

Status ReadOptBool(MsgpackReader* r, std::optional<bool>* out) {
  if (r->NextIsNil()) {
    out->reset();
    return r->ReadNil();
  }
  bool v = false;
  if (Status s = r->ReadBool(&v); !s.ok()) return s;
  *out = v;
  return Status::Ok();
}

Status ReadStrArray(MsgpackReader* r, std::vector<std::string>* out) {
  uint32_t n = 0;
  if (Status s = r->ReadArrayHeader(&n); !s.ok()) return s;
  out->clear();
  out->reserve(n);  // bounded: the reader checked n against the remaining bytes
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view v;
    if (Status s = r->ReadStr(&v); !s.ok()) return s;
    out->emplace_back(v);
  }
  return Status::Ok();
}

// The frame must hold exactly one value: bytes after it mean the sender and we disagree about
// the format, which during a handshake is better reported than ignored.
Status CheckFullyConsumed(const MsgpackReader& r) {
  if (!r.at_end()) {
    return Status::Malformed("trailing bytes after the message", static_cast<int64_t>(r.offset()));
  }
  return Status::Ok();
}

}  // namespace

Result<HandshakeMessage> DecodeHandshakeMessage(std::string_view frame) {
  MsgpackReader r(frame);
  HandshakeMessage msg;
  Status s = ForEachMapEntry(&r, [&](std::string_view key, bool* consumed) -> Status {
    *consumed = true;
    if (key == "status") {
      std::optional<std::string> status;
      Status st = ReadOptStr(&r, &status);
      msg.status = status.value_or("");
      return st;
    }
    if (key == "local") return ReadOptBool(&r, &msg.local);
    if (key == "headless") return ReadOptBool(&r, &msg.headless);
    if (key == "parallel_config_hash") return ReadOptStr(&r, &msg.parallel_config_hash);
    if (key == "num_gpu_blocks") return ReadOptInt(&r, &msg.num_gpu_blocks);
    if (key == "dp_stats_address") return ReadOptStr(&r, &msg.dp_stats_address);
    *consumed = false;
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (Status t = CheckFullyConsumed(r); !t.ok()) return t;
  return msg;
}

std::string EncodeHandshakeInit(const HandshakeInit& init) {
  std::string out;
  out.reserve(160);
  WriteMapHeader(&out, 2);
  WriteStr(&out, "addresses");
  // EngineZmqAddresses field order (vllm/v1/engine/utils.py).
  WriteMapHeader(&out, 5);
  WriteStr(&out, "inputs");
  WriteStrArray(&out, init.addresses.inputs);
  WriteStr(&out, "outputs");
  WriteStrArray(&out, init.addresses.outputs);
  WriteStr(&out, "coordinator_input");
  WriteOptStr(&out, init.addresses.coordinator_input);
  WriteStr(&out, "coordinator_output");
  WriteOptStr(&out, init.addresses.coordinator_output);
  WriteStr(&out, "frontend_stats_publish_address");
  WriteOptStr(&out, init.addresses.frontend_stats_publish_address);
  WriteStr(&out, "parallel_config");
  out.append(init.parallel_config.empty() ? std::string("\x80", 1) : init.parallel_config);
  return out;
}

Result<HandshakeInit> DecodeHandshakeInit(std::string_view frame) {
  MsgpackReader r(frame);
  HandshakeInit init;
  bool have_addresses = false;
  Status s = ForEachMapEntry(&r, [&](std::string_view key, bool* consumed) -> Status {
    *consumed = true;
    if (key == "addresses") {
      have_addresses = true;
      EngineZmqAddresses& a = init.addresses;
      return ForEachMapEntry(&r, [&](std::string_view akey, bool* aconsumed) -> Status {
        *aconsumed = true;
        if (akey == "inputs") return ReadStrArray(&r, &a.inputs);
        if (akey == "outputs") return ReadStrArray(&r, &a.outputs);
        if (akey == "coordinator_input") return ReadOptStr(&r, &a.coordinator_input);
        if (akey == "coordinator_output") return ReadOptStr(&r, &a.coordinator_output);
        if (akey == "frontend_stats_publish_address") {
          return ReadOptStr(&r, &a.frontend_stats_publish_address);
        }
        *aconsumed = false;
        return Status::Ok();
      });
    }
    if (key == "parallel_config") {
      MsgpackType type;
      if (Status st = r.PeekType(&type); !st.ok()) return st;
      if (type != MsgpackType::kMap) {
        return Status::Malformed("parallel_config is not a map", static_cast<int64_t>(r.offset()));
      }
      std::string_view raw;
      if (Status st = r.ReadRaw(&raw); !st.ok()) return st;
      init.parallel_config = std::string(raw);
      return Status::Ok();
    }
    *consumed = false;
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (Status t = CheckFullyConsumed(r); !t.ok()) return t;
  if (!have_addresses || init.addresses.inputs.empty() || init.addresses.outputs.empty()) {
    return Status::Malformed("INIT carries no input and output addresses");
  }
  return init;
}

Result<EngineCoreReadyResponse> DecodeEngineCoreReadyResponse(std::string_view frame) {
  EngineCoreReadyResponse rr;
  if (frame.empty()) {
    rr.empty_registration = true;
    return rr;
  }
  MsgpackReader r(frame);
  // Known keys are read into their field; a value of the wrong type is skipped (the field
  // keeps its default) and named in skipped_keys. Returning ok with consumed = false makes
  // the walker skip the value.
  Status s = ForEachMapEntry(&r, [&](std::string_view key, bool* consumed) -> Status {
    if (rr.keys.size() < kMaxReadyResponseKeys) rr.keys.emplace_back(key);
    auto lenient = [&](Status st) -> Status {
      if (st.ok()) return st;
      // The reader leaves its cursor in place on failure, so the walker can skip the value.
      // A value that cannot even be skipped is truncated input; the walker reports that.
      rr.skipped_keys.emplace_back(key);
      *consumed = false;
      return Status::Ok();
    };
    *consumed = true;
    auto opt_int = [&](std::optional<int64_t>* f) { return lenient(ReadOptInt(&r, f)); };
    auto opt_str = [&](std::optional<std::string>* f) { return lenient(ReadOptStr(&r, f)); };
    auto req_int = [&](int64_t* f) {
      std::optional<int64_t> v;
      Status st = lenient(ReadOptInt(&r, &v));
      if (v) *f = *v;
      return st;
    };
    auto req_str = [&](std::string* f) {
      std::optional<std::string> v;
      Status st = lenient(ReadOptStr(&r, &v));
      if (v) *f = std::move(*v);
      return st;
    };
    auto req_bool = [&](bool* f) {
      std::optional<bool> v;
      Status st = lenient(ReadOptBool(&r, &v));
      if (v) *f = *v;
      return st;
    };
    if (key == "max_model_len") return opt_int(&rr.max_model_len);
    if (key == "num_gpu_blocks") return opt_int(&rr.num_gpu_blocks);
    if (key == "block_size") return opt_int(&rr.block_size);
    if (key == "dp_stats_address") return opt_str(&rr.dp_stats_address);
    if (key == "dtype") return req_str(&rr.dtype);
    if (key == "vllm_version") return req_str(&rr.vllm_version);
    if (key == "world_size") return req_int(&rr.world_size);
    if (key == "data_parallel_size") return req_int(&rr.data_parallel_size);
    if (key == "tensor_parallel_size") return req_int(&rr.tensor_parallel_size);
    if (key == "pipeline_parallel_size") return req_int(&rr.pipeline_parallel_size);
    if (key == "decode_context_parallel_size") return req_int(&rr.decode_context_parallel_size);
    if (key == "data_parallel_rank") return req_int(&rr.data_parallel_rank);
    if (key == "max_num_seqs") return opt_int(&rr.max_num_seqs);
    if (key == "max_num_batched_tokens") return opt_int(&rr.max_num_batched_tokens);
    if (key == "instance_id") return req_str(&rr.instance_id);
    if (key == "kv_cache_size_tokens") return opt_int(&rr.kv_cache_size_tokens);
    if (key == "kv_cache_max_concurrency") {
      return lenient(ReadOptDouble(&r, &rr.kv_cache_max_concurrency));
    }
    if (key == "kv_events_config") {
      MsgpackType type;
      if (Status st = r.PeekType(&type); !st.ok()) return st;
      if (type == MsgpackType::kNil) return r.ReadNil();
      if (type != MsgpackType::kMap) return lenient(Status::Malformed("not a map"));
      std::string_view raw;
      if (Status st = r.ReadRaw(&raw); !st.ok()) return st;
      rr.kv_events_config = std::string(raw);
      return Status::Ok();
    }
    if (key == "kv_connector") return opt_str(&rr.kv_connector);
    if (key == "kv_role") return opt_str(&rr.kv_role);
    if (key == "kv_engine_id") return opt_str(&rr.kv_engine_id);
    if (key == "kv_events_publisher") return opt_str(&rr.kv_events_publisher);
    if (key == "kv_events_endpoint") return opt_str(&rr.kv_events_endpoint);
    if (key == "kv_events_replay_endpoint") return opt_str(&rr.kv_events_replay_endpoint);
    if (key == "kv_events_topic") return opt_str(&rr.kv_events_topic);
    if (key == "kv_events_buffer_steps") return opt_int(&rr.kv_events_buffer_steps);
    if (key == "kv_events_hwm") return opt_int(&rr.kv_events_hwm);
    if (key == "kv_events_max_queue_size") return opt_int(&rr.kv_events_max_queue_size);
    if (key == "supports_lora") return req_bool(&rr.supports_lora);
    if (key == "max_loras") return req_int(&rr.max_loras);
    if (key == "weight_transfer_backend") return opt_str(&rr.weight_transfer_backend);
    if (key == "enable_sleep_mode") return req_bool(&rr.enable_sleep_mode);
    if (key == "supports_draft_weight_updates") return req_bool(&rr.supports_draft_weight_updates);
    if (key == "effective_attention_block_size") {
      return opt_int(&rr.effective_attention_block_size);
    }
    *consumed = false;
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (Status t = CheckFullyConsumed(r); !t.ok()) return t;
  return rr;
}

std::string EngineIdentity(uint16_t engine_index) {
  std::string id(2, '\0');
  id[0] = static_cast<char>(engine_index & 0xff);
  id[1] = static_cast<char>(engine_index >> 8);
  return id;
}

std::optional<uint16_t> EngineIndexFromIdentity(std::string_view identity) {
  if (identity.size() != 2) return std::nullopt;
  return static_cast<uint16_t>(static_cast<uint8_t>(identity[0]) |
                               (static_cast<uint8_t>(identity[1]) << 8));
}

}  // namespace vmetrics
