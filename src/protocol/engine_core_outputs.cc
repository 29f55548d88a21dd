// SPDX-License-Identifier: Apache-2.0
// EngineCoreOutputs, EngineCoreOutput and UtilityOutput: msgspec Structs with array_like=True,
// so they travel as positional arrays (vllm/v1/engine/__init__.py at 6adad087). msgspec always
// writes every position, but decodes a shorter array by defaulting the missing trailing
// fields and ignores extra trailing ones, which is how newer engines add fields; we do the same.
#include "vmetrics/engine_core_outputs.h"

#include <string>

#include "decode_internal.h"

namespace vmetrics {
namespace {

using internal::ConsumeNil;
using protocol::MsgpackReader;
using protocol::MsgpackType;

// Nested structures of an output are a handful of levels deep; a bound keeps hostile nesting
// in tensors and logprob lists from recursing.
constexpr uint32_t kMaxShapeRank = 64;

Status Malformed(const MsgpackReader& r, std::string what,
                 StatusDetail detail = StatusDetail::kNone) {
  return Status::Malformed(std::move(what), static_cast<int64_t>(r.offset()), detail);
}

// A tensor triple [dtype, shape, data]; data is ext 3 (inline bytes) or an aux frame index.
// Returns Malformed when the value at `r` is not a tensor triple (the reader is not advanced).
Status DecodeTensor(MsgpackReader& r, std::span<const std::string_view> frames, Tensor* out) {
  MsgpackReader t = r;
  uint32_t n;
  if (Status s = t.ReadArrayHeader(&n); !s.ok()) return s;
  if (n != 3) return Malformed(r, "tensor must be [dtype, shape, data]");
  if (Status s = t.ReadStr(&out->dtype); !s.ok()) return s;
  uint32_t rank;
  if (Status s = t.ReadArrayHeader(&rank); !s.ok()) return s;
  if (rank > kMaxShapeRank) {
    return Status::LimitExceeded("tensor rank above 64", static_cast<int64_t>(t.offset()));
  }
  out->shape.clear();
  for (uint32_t i = 0; i < rank; ++i) {
    int64_t d;
    if (Status s = t.ReadInt(&d); !s.ok()) return s;
    out->shape.push_back(d);
  }
  MsgpackType type;
  if (Status s = t.PeekType(&type); !s.ok()) return s;
  out->aux_frame = -1;
  out->data = {};
  if (type == MsgpackType::kExt) {
    int8_t ext;
    if (Status s = t.ReadExt(&ext, &out->data); !s.ok()) return s;
  } else if (type == MsgpackType::kInt) {
    int64_t index;
    if (Status s = t.ReadInt(&index); !s.ok()) return s;
    if (index < 1 || index > 0x7fffffff) {
      return Malformed(t, "tensor aux frame index out of range", StatusDetail::kAuxFrame);
    }
    out->aux_frame = static_cast<int32_t>(index);
    if (static_cast<size_t>(index) < frames.size()) {
      out->data = frames[static_cast<size_t>(index)];
    } else {
      return Malformed(t,
                       "tensor refers to aux frame " + std::to_string(index) +
                           " but the message has " + std::to_string(frames.size() - 1),
                       StatusDetail::kAuxFrame);
    }
  } else {
    return Malformed(t, "tensor data must be ext 3 or an aux frame index");
  }
  r = t;
  return Status::Ok();
}

}  // namespace

size_t NumpyItemSize(std::string_view dtype) {
  if (dtype.size() < 3 || (dtype[0] != '<' && dtype[0] != '|')) return 0;
  const char kind = dtype[1];
  if (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f') return 0;
  size_t size = 0;
  for (size_t i = 2; i < dtype.size(); ++i) {
    if (dtype[i] < '0' || dtype[i] > '9' || size > 16) return 0;
    size = size * 10 + static_cast<size_t>(dtype[i] - '0');
  }
  const bool ok = kind == 'b'   ? size == 1
                  : kind == 'f' ? (size == 2 || size == 4 || size == 8)
                                : (size == 1 || size == 2 || size == 4 || size == 8);
  // numpy writes '|' for one-byte items and '<' (on the little-endian hosts engines run on)
  // for wider ones.
  if (!ok || (size == 1) != (dtype[0] == '|')) return 0;
  return size;
}

std::string NumpyArrayProblem(const Tensor& t) {
  const size_t item = NumpyItemSize(t.dtype);
  if (item == 0) return "not a little-endian numeric numpy dtype";
  size_t bytes = item;
  for (const int64_t d : t.shape) {
    if (d < 0) return "negative dimension";
    if (d != 0 && bytes > t.data.size() / static_cast<size_t>(d)) {
      return "data shorter than its shape";
    }
    bytes *= static_cast<size_t>(d);
  }
  if (bytes != t.data.size()) return "data size does not match dtype and shape";
  return "";
}

namespace {

// A non-negative integer of RequestSpecDecodeMetrics.
Status ReadCount(MsgpackReader& r, const char* key, int64_t* out) {
  if (Status s = r.ReadInt(out); !s.ok()) return s;
  if (*out < 0) return Malformed(r, std::string("spec_decode_metrics.") + key + " is negative");
  return Status::Ok();
}

// A list of non-negative integers of RequestSpecDecodeMetrics (into `out` when not null).
Status ReadCounts(MsgpackReader& r, const char* key, std::vector<int64_t>* out, size_t* size) {
  uint32_t n;
  if (Status s = r.ReadArrayHeader(&n); !s.ok()) return s;
  *size = n;
  if (out != nullptr) out->clear();
  for (uint32_t i = 0; i < n; ++i) {
    int64_t v;
    if (Status s = ReadCount(r, key, &v); !s.ok()) return s;
    if (out != nullptr) out->push_back(v);
  }
  return Status::Ok();
}

}  // namespace

Status DecodeSpecDecodeMetrics(std::string_view raw, RequestSpecDecodeMetrics* out) {
  // vLLM's num_speculative_tokens is far below this; the bound keeps the histogram small.
  constexpr int64_t kMaxSpecTokens = 1024;
  RequestSpecDecodeMetrics local;
  RequestSpecDecodeMetrics& m = out != nullptr ? *out : local;
  m = RequestSpecDecodeMetrics{};
  MsgpackReader r(raw);
  uint32_t keys;
  if (Status s = r.ReadMapHeader(&keys); !s.ok()) return s;
  bool has_spec_tokens = false;
  size_t histogram_size = 0, accepted_size = 0, drafted_size = 0;
  // The sums are taken over the histogram, which is short, even when only checking.
  std::vector<int64_t>* keep = out != nullptr ? &m.per_step_accepted : nullptr;
  std::vector<int64_t>* keep_drafted = out != nullptr ? &m.per_step_drafted : nullptr;
  for (uint32_t k = 0; k < keys; ++k) {
    std::string_view key;
    if (Status s = r.ReadStr(&key); !s.ok()) return s;
    Status s = Status::Ok();
    if (key == "num_spec_tokens") {
      has_spec_tokens = true;
      s = ReadCount(r, "num_spec_tokens", &m.num_spec_tokens);
    } else if (key == "histogram") {
      s = ReadCounts(r, "histogram", &m.histogram, &histogram_size);
    } else if (key == "num_draft_tokens") {
      s = ReadCount(r, "num_draft_tokens", &m.num_draft_tokens);
    } else if (key == "per_step_accepted") {
      s = ReadCounts(r, "per_step_accepted", keep, &accepted_size);
    } else if (key == "per_step_drafted") {
      s = ReadCounts(r, "per_step_drafted", keep_drafted, &drafted_size);
    } else {
      s = r.Skip();
    }
    if (!s.ok()) return s;
  }
  if (!has_spec_tokens) return Malformed(r, "spec_decode_metrics has no num_spec_tokens");
  if (m.num_spec_tokens > kMaxSpecTokens) {
    return Malformed(r, "spec_decode_metrics.num_spec_tokens above 1024");
  }
  if (histogram_size != static_cast<size_t>(m.num_spec_tokens) + 1) {
    return Malformed(r, "spec_decode_metrics.histogram is not num_spec_tokens + 1 long");
  }
  if (accepted_size != drafted_size) {
    return Malformed(r, "spec_decode_metrics per-step lists differ in length");
  }
  for (size_t j = 0; j < m.histogram.size(); ++j) {
    int64_t accepted;
    if (__builtin_add_overflow(m.num_spec_steps, m.histogram[j], &m.num_spec_steps) ||
        __builtin_mul_overflow(static_cast<int64_t>(j), m.histogram[j], &accepted) ||
        __builtin_add_overflow(m.num_accepted_draft_tokens, accepted,
                               &m.num_accepted_draft_tokens)) {
      return Malformed(r, "spec_decode_metrics sums overflow");
    }
  }
  return Status::Ok();
}

namespace {

// A numpy array as NumpyArrayProblem accepts it, of rank `min_rank` or more (the reader is not
// advanced on failure).
Status DecodeNumpyArray(MsgpackReader& r, std::span<const std::string_view> frames, size_t min_rank,
                        Tensor* out) {
  MsgpackReader t = r;
  if (Status s = DecodeTensor(t, frames, out); !s.ok()) return s;
  if (std::string problem = NumpyArrayProblem(*out); !problem.empty()) {
    return Malformed(r, "ndarray: " + problem);
  }
  if (out->shape.size() < min_rank) return Malformed(r, "ndarray: rank too low");
  r = t;
  return Status::Ok();
}

// The integers of a 1-D integer array NumpyArrayProblem accepted.
int64_t NumpyInt(const Tensor& t, size_t i) {
  const size_t item = NumpyItemSize(t.dtype);
  const char* p = t.data.data() + i * item;
  const bool is_signed = t.dtype[1] == 'i';
  uint64_t v = 0;
  for (size_t b = 0; b < item; ++b)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(p[b])) << (8 * b);
  if (is_signed && item < 8 && (v >> (8 * item - 1)) != 0) v |= ~uint64_t{0} << (8 * item);
  return static_cast<int64_t>(v);
}

// SamplingMaskLists: [token_ids, offsets, cu_num_generated_tokens]; see the header.
Status DecodeSamplingMask(MsgpackReader& r, std::span<const std::string_view> frames,
                          SamplingMaskLists* out) {
  uint32_t n;
  if (Status s = r.ReadArrayHeader(&n); !s.ok()) return s;
  if (n < 2) return Malformed(r, "SamplingMaskLists needs token_ids and offsets");
  if (Status s = DecodeNumpyArray(r, frames, 1, &out->token_ids); !s.ok()) return s;
  if (Status s = DecodeNumpyArray(r, frames, 1, &out->offsets); !s.ok()) return s;
  for (const Tensor* t : {&out->token_ids, &out->offsets}) {
    if (t->shape.size() != 1 || (t->dtype[1] != 'i' && t->dtype[1] != 'u')) {
      return Malformed(r, "SamplingMaskLists arrays must be 1-D integers");
    }
  }
  const auto count = static_cast<size_t>(out->offsets.shape[0]);
  if (count == 0) return Malformed(r, "SamplingMaskLists offsets must not be empty");
  int64_t previous = NumpyInt(out->offsets, 0);
  if (previous < 0) return Malformed(r, "SamplingMaskLists offsets must not be negative");
  for (size_t i = 1; i < count; ++i) {
    const int64_t v = NumpyInt(out->offsets, i);
    if (v < previous) return Malformed(r, "SamplingMaskLists offsets must not decrease");
    previous = v;
  }
  if (previous > out->token_ids.shape[0]) {
    return Malformed(r, "SamplingMaskLists offsets past token_ids");
  }
  for (uint32_t i = 2; i < n; ++i) {  // cu_num_generated_tokens and newer trailing fields
    if (Status s = r.Skip(); !s.ok()) return s;
  }
  return Status::Ok();
}

// LogprobsLists / LogprobsTensors: an array whose positions are tensor triples or other values.
Status DecodeLogprobs(MsgpackReader& r, std::span<const std::string_view> frames, Logprobs* out) {
  uint32_t n;
  if (Status s = r.ReadArrayHeader(&n); !s.ok()) return s;
  out->fields.clear();
  out->fields.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    Tensor t;
    Status s = DecodeTensor(r, frames, &t);
    if (s.ok()) {
      out->fields.emplace_back(std::move(t));
      continue;
    }
    if (s.code() == StatusCode::kUnsupported) return s;   // pickle inside: refuse
    if (s.detail() == StatusDetail::kAuxFrame) return s;  // a missing frame: the whole message
    out->fields.emplace_back(std::nullopt);
    if (Status k = r.Skip(); !k.ok()) return k;
  }
  return Status::Ok();
}

Status DecodeEvents(MsgpackReader& r, std::vector<EngineCoreEvent>* out) {
  uint32_t n;
  if (Status s = r.ReadArrayHeader(&n); !s.ok()) return s;
  out->clear();
  out->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t m;
    if (Status s = r.ReadMapHeader(&m); !s.ok()) return s;
    EngineCoreEvent e;
    bool have_type = false;
    for (uint32_t j = 0; j < m; ++j) {
      std::string_view key;
      if (Status s = r.ReadStr(&key); !s.ok()) return s;
      if (key == "type") {
        int64_t t;
        if (Status s = r.ReadInt(&t); !s.ok()) return s;
        if (t < 1 || t > 3) return Malformed(r, "unknown EngineCoreEventType " + std::to_string(t));
        e.type = static_cast<EventType>(t);
        have_type = true;
      } else if (key == "timestamp") {
        if (Status s = r.ReadDouble(&e.timestamp); !s.ok()) return s;
      } else if (Status s = r.Skip(); !s.ok()) {
        return s;
      }
    }
    if (!have_type) return Malformed(r, "EngineCoreEvent without type");
    out->push_back(e);
  }
  return Status::Ok();
}

Status DecodePrefillStats(MsgpackReader& r, PrefillStats* out) {
  uint32_t n;
  if (Status s = r.ReadMapHeader(&n); !s.ok()) return s;
  *out = PrefillStats{};
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (Status s = r.ReadStr(&key); !s.ok()) return s;
    int64_t* dst = nullptr;
    if (key == "num_prompt_tokens")
      dst = &out->num_prompt_tokens;
    else if (key == "num_computed_tokens")
      dst = &out->num_computed_tokens;
    else if (key == "num_cached_tokens")
      dst = &out->num_cached_tokens;
    else if (key == "num_local_cached_tokens")
      dst = &out->num_local_cached_tokens;
    else if (key == "num_external_cached_tokens")
      dst = &out->num_external_cached_tokens;
    else if (key == "num_cache_creation_tokens")
      dst = &out->num_cache_creation_tokens;
    if (dst == nullptr) {
      if (Status s = r.Skip(); !s.ok()) return s;
    } else if (Status s = r.ReadInt(dst); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

// Reads an optional raw value (map or anything): nil -> empty view.
// An optional map kept as raw msgpack (kv_transfer_params, ec_transfer_params, trace_headers:
// dicts in every generation). Anything else is refused, as msgspec refuses it: a scalar there
// means the engine's layout is not the table's (an older engine's num_cached_tokens read as
// trace_headers), which must not pass for a value.
Status ReadOptionalMap(MsgpackReader& r, std::string_view* out) {
  *out = {};
  if (ConsumeNil(r)) return Status::Ok();
  MsgpackType t;
  if (Status s = r.PeekType(&t); !s.ok()) return s;
  if (t != MsgpackType::kMap) return Malformed(r, "expected map");
  return r.ReadRaw(out);
}

// Resets `out` to a default EngineCoreOutput but keeps the capacity of its plain vectors, so
// an output reused from the previous message decodes its token ids without allocating
// (assigning EngineCoreOutput{} frees them, and a step of 256 outputs allocated 256 times;
// move-assigning a default-constructed one costs half the decode). Every field is named here:
// the static_assert is a reminder to reset a field added to the struct.
static_assert(sizeof(EngineCoreOutput) == 656 || sizeof(void*) != 8,
              "EngineCoreOutput changed: reset the new field in ResetOutput, then update 656");
void ResetOutput(EngineCoreOutput* out) {
  out->request_id = {};
  out->new_token_ids.clear();
  out->new_logprobs.reset();
  out->new_prompt_logprobs_tensors.reset();
  out->pooling_output.reset();
  out->has_pooling_output = false;
  out->finish_reason.reset();
  out->stop_reason = StopReason{};
  out->events.reset();
  out->kv_transfer_params = {};
  out->ec_transfer_params = {};
  out->trace_headers = {};
  out->prefill_stats.reset();
  out->has_num_cached_tokens = false;
  out->num_cached_tokens = 0;
  out->num_external_computed_tokens = 0;
  out->has_routed_experts = false;
  out->routed_experts.reset();
  out->num_nans_in_logits = 0;
  out->mm_cache_miss_hashes.clear();
  out->has_new_sampling_mask = false;
  out->new_sampling_mask.reset();
  out->spec_decode_metrics = {};
  out->wire_fields = 0;
}

// The value at `r` as the table's `field`: nil where the field is Optional leaves it at its
// default. Inlined into the position loop, so the ok path of the common fields (an int, a
// nil) needs no Status in memory.
[[gnu::always_inline]] inline Status DecodeField(OutputField field, MsgpackReader& r,
                                                 std::span<const std::string_view> frames,
                                                 EngineCoreOutput* out) {
  switch (field) {
    case OutputField::kNewLogprobs:
    case OutputField::kNewPromptLogprobsTensors: {
      auto& dst =
          field == OutputField::kNewLogprobs ? out->new_logprobs : out->new_prompt_logprobs_tensors;
      if (ConsumeNil(r)) return Status::Ok();
      dst.emplace();
      return DecodeLogprobs(r, frames, &*dst);
    }
    case OutputField::kPoolingOutput: {
      if (ConsumeNil(r)) return Status::Ok();
      out->has_pooling_output = true;
      Tensor t;
      if (!DecodeTensor(r, frames, &t).ok()) return r.Skip();
      out->pooling_output = std::move(t);
      return Status::Ok();
    }
    case OutputField::kFinishReason: {
      if (ConsumeNil(r)) return Status::Ok();
      int64_t reason;
      if (Status s = r.ReadInt(&reason); !s.ok()) return s;
      if (reason < 0 || reason > 4) {
        return Malformed(r, "unknown FinishReason " + std::to_string(reason));
      }
      out->finish_reason = static_cast<FinishReason>(reason);
      return Status::Ok();
    }
    case OutputField::kStopReason: {
      if (ConsumeNil(r)) return Status::Ok();
      MsgpackType t;
      if (Status s = r.PeekType(&t); !s.ok()) return s;
      if (t == MsgpackType::kStr) {
        out->stop_reason.kind = StopReason::Kind::kString;
        return r.ReadStr(&out->stop_reason.text);
      }
      out->stop_reason.kind = StopReason::Kind::kTokenId;
      return r.ReadInt(&out->stop_reason.token_id);
    }
    case OutputField::kEvents:
      if (ConsumeNil(r)) return Status::Ok();
      out->events.emplace();
      return DecodeEvents(r, &*out->events);
    case OutputField::kKvTransferParams:
      return ReadOptionalMap(r, &out->kv_transfer_params);
    case OutputField::kEcTransferParams:
      return ReadOptionalMap(r, &out->ec_transfer_params);
    case OutputField::kTraceHeaders:
      return ReadOptionalMap(r, &out->trace_headers);
    case OutputField::kPrefillStats:
      if (ConsumeNil(r)) return Status::Ok();
      out->prefill_stats.emplace();
      return DecodePrefillStats(r, &*out->prefill_stats);
    case OutputField::kNumCachedTokens: {
      Status s = r.ReadInt(&out->num_cached_tokens);
      out->has_num_cached_tokens = s.ok();
      return s;
    }
    case OutputField::kNumExternalComputedTokens:
      return r.ReadInt(&out->num_external_computed_tokens);
    case OutputField::kRoutedExperts: {
      if (ConsumeNil(r)) return Status::Ok();
      out->has_routed_experts = true;
      Tensor t;
      if (Status s = DecodeNumpyArray(r, frames, 1, &t); !s.ok()) return s;
      out->routed_experts = std::move(t);
      return Status::Ok();
    }
    case OutputField::kNumNansInLogits:
      return r.ReadInt(&out->num_nans_in_logits);
    case OutputField::kMmCacheMissHashes: {
      if (ConsumeNil(r)) return Status::Ok();
      uint32_t count;
      if (Status s = r.ReadArrayHeader(&count); !s.ok()) return s;
      for (uint32_t i = 0; i < count; ++i) {
        std::string_view h;
        if (Status s = r.ReadStr(&h); !s.ok()) return s;
        out->mm_cache_miss_hashes.push_back(h);
      }
      return Status::Ok();
    }
    case OutputField::kNewSamplingMask: {
      if (ConsumeNil(r)) return Status::Ok();
      out->has_new_sampling_mask = true;
      SamplingMaskLists mask;
      if (Status s = DecodeSamplingMask(r, frames, &mask); !s.ok()) return s;
      out->new_sampling_mask = std::move(mask);
      return Status::Ok();
    }
    case OutputField::kRequestId:  // positions 0 and 1 are read before the table
    case OutputField::kNewTokenIds:
    case OutputField::kSpecDecodeMetrics:  // checked by CheckSpecDecodeMetrics
      return ReadOptionalMap(r, &out->spec_decode_metrics);
    case OutputField::kUnknown:  // newer trailing fields
      break;
  }
  return r.Skip();
}

// A field that failed: a wrong type at a position is named by the table's field, which says
// which generation's field the engine did not send. Out of line: only failures get here.
[[gnu::noinline, gnu::cold]] Status FieldFailure(OutputField field, Status s) {
  if (s.code() == StatusCode::kMalformed && s.detail() == StatusDetail::kNone) {
    return Status::Malformed(std::string(OutputFieldName(field)) + ": " + s.message(), s.offset());
  }
  return s;
}

// One EngineCoreOutput, its positions read through the generation's table: the field at each
// position decides what is read, so the same loop reads every generation.
Status DecodeOutput(MsgpackReader& r, std::span<const std::string_view> frames,
                    const WireGeneration& wire, EngineCoreOutput* out) {
  uint32_t n;
  if (Status s = r.ReadArrayHeader(&n); !s.ok()) return s;
  if (n < 2) return Malformed(r, "EngineCoreOutput needs request_id and new_token_ids");
  ResetOutput(out);
  out->wire_fields = n;
  if (Status s = r.ReadStr(&out->request_id); !s.ok()) return s;
  {
    uint32_t count;
    if (Status s = r.ReadArrayHeader(&count); !s.ok()) return s;
    out->new_token_ids.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
      int64_t tok;
      if (Status s = r.ReadInt(&tok); !s.ok()) return s;
      out->new_token_ids.push_back(tok);
    }
  }
  // Budget (callgrind instructions, bench/README.md "What the wire-generation table costs"): a
  // W2 output (one token id, then 11 nils, num_nans_in_logits and 2 nils; 256 to a message)
  // costs 362 instructions of DecodeEngineCoreOutputs, this loop two passes of ~40 each; the
  // same decoder with the positions written into the code, 353. A change here keeps W2 within
  // 3% of that.
  for (uint32_t pos = 2; pos < n; ++pos) {
    // Most positions of most outputs are nil, and nil leaves every field at its default except
    // the int fields that never are None (num_nans_in_logits, num_cached_tokens): consume the
    // run of nils up to the next of those (the table's nil_run_end), and move on. Past the
    // table's last int field, and past its last position, the run goes to the end. `pos` is
    // at most kMaxOutputPositions here, the last index of nil_run_end.
    pos += r.SkipNils(std::min<uint32_t>(n, wire.nil_run_end[pos]) - pos);
    if (pos == n) break;
    if (pos >= kMaxOutputPositions) [[unlikely]] {
      // Past the table's capacity (a far newer engine): values nobody reads.
      for (; pos < n; ++pos) {
        if (Status s = r.Skip(); !s.ok()) return s;
      }
      break;
    }
    // Positions past the table's are kUnknown in it (MakeWireGeneration), up to its capacity.
    if (Status s = DecodeField(wire.output[pos], r, frames, out); !s.ok()) [[unlikely]] {
      return FieldFailure(wire.output[pos], std::move(s));
    }
  }
  return Status::Ok();
}

Status DecodeUtility(MsgpackReader& r, UtilityOutput* out) {
  uint32_t n;
  if (Status s = r.ReadArrayHeader(&n); !s.ok()) return s;
  if (n < 1) return Malformed(r, "UtilityOutput needs call_id");
  *out = UtilityOutput{};
  {
    MsgpackReader peek = r;
    int64_t signed_id;
    if (peek.ReadInt(&signed_id).ok()) {
      out->call_id = signed_id;
      r = peek;
    } else {
      if (Status s = r.ReadUint(&out->call_id_u64); !s.ok()) return s;
      out->call_id_is_u64 = true;
      out->call_id = static_cast<int64_t>(out->call_id_u64);
    }
    if (!out->call_id_is_u64 && out->call_id >= 0)
      out->call_id_u64 = static_cast<uint64_t>(out->call_id);
  }
  for (uint32_t pos = 1; pos < n; ++pos) {
    Status s;
    if (pos == 1) {
      if (!ConsumeNil(r)) {
        std::string_view msg;
        s = r.ReadStr(&msg);
        if (s.ok()) out->failure_message = msg;
      }
    } else if (pos == 2) {
      out->result = {};
      if (!ConsumeNil(r)) s = r.ReadRaw(&out->result);
    } else {
      s = r.Skip();
    }
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status DecodeOptionalInt(MsgpackReader& r, std::optional<int64_t>* out) {
  out->reset();
  if (ConsumeNil(r)) return Status::Ok();
  int64_t v;
  if (Status s = r.ReadInt(&v); !s.ok()) return s;
  *out = v;
  return Status::Ok();
}

}  // namespace

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kError:
      return "error";
    case FinishReason::kRepetition:
      return "repetition";
  }
  return "?";
}

const char* DecodePartName(DecodePart part) {
  switch (part) {
    case DecodePart::kMessage:
      return "message";
    case DecodePart::kOutput:
      return "output";
    case DecodePart::kSchedulerStats:
      return "scheduler_stats";
    case DecodePart::kUtilityOutput:
      return "utility_output";
    case DecodePart::kFinishedRequests:
      return "finished_requests";
  }
  return "message";
}

namespace {

// An output's spec_decode_metrics map that DecodeSpecDecodeMetrics refuses is dropped and
// reported, and the output kept: the map only feeds the token APIs' `metrics` objects, and a
// wrong guess at a newer engine's RequestSpecDecodeMetrics must not cost a request its final
// tokens.
[[gnu::noinline, gnu::cold]] void CheckSpecDecodeMetrics(std::string_view frame0,
                                                         const DecodeContext& ctx,
                                                         EngineCoreOutput* out) {
  const Status s = DecodeSpecDecodeMetrics(out->spec_decode_metrics, nullptr);
  if (s.ok()) return;
  const auto offset = static_cast<int64_t>(out->spec_decode_metrics.data() - frame0.data());
  ctx.Report(offset, "", "spec_decode_metrics", s.message(), ProblemKind::kWrongType);
  out->spec_decode_metrics = {};
}

// A part that failed to decode is skipped when that is possible: the failure is about its
// shape (not a pickle ext, not a missing aux frame, which fail the message in Python's decoder
// too) and the value can be stepped over. Returns the status the message fails with, or Ok
// with `r` after the part.
Status SalvagePart(const Status& failure, const char* start, MsgpackReader& r,
                   const DecodeContext& ctx, DecodePart part, uint32_t* skipped) {
  if (failure.code() == StatusCode::kUnsupported || failure.detail() == StatusDetail::kAuxFrame) {
    return failure;
  }
  r.Rewind(start);
  if (Status skip = r.Skip(); !skip.ok()) return skip;
  ++*skipped;
  // Logged once per kind of problem (the reporter keys on the part and the text, not on the
  // message number or offset).
  internal::ReportProblem(ctx, failure.offset(), "", DecodePartName(part),
                          "skipped, the rest of the message is recorded: " + failure.message());
  return Status::Ok();
}

}  // namespace

// Budget (bench/README.md, decode_bench): W1, a stats-only message of ~3.5 kB with a
// MultiConnector payload, decodes in 1.58 µs against a floor (reading every header, building
// nothing) of 0.93 µs; W2, 256 outputs in ~17 kB, in 7.93 µs against a floor of 7.24 µs. The
// output loop decodes into the same `out` every time, so a message allocates nothing once the
// vectors have grown. Simpler code is welcome while it stays inside these figures.
Status DecodeEngineCoreOutputs(std::span<const std::string_view> frames, const DecodeContext& ctx,
                               EngineCoreOutputs* out) {
  // Outputs decoded so far. out->outputs keeps the previous message's elements to decode into
  // and is cut to `used` however this function returns.
  size_t used = 0;
  struct TrimOutputs {
    std::vector<EngineCoreOutput>* outputs;
    const size_t* used;
    ~TrimOutputs() { outputs->resize(*used); }
  } trim{&out->outputs, &used};
  out->scheduler_stats.reset();
  out->utility_output.reset();
  out->finished_requests.reset();
  out->wave_complete.reset();
  out->start_wave.reset();
  out->engine_index = 0;
  out->timestamp = 0;
  out->wire_fields = 0;
  out->skipped = DecodeSkips{};
  if (frames.empty()) return Status::Malformed("message has no frames", 0);
  const WireGeneration& wire = ctx.wire != nullptr ? *ctx.wire : NewestWireGeneration();
  out->wire_bytes = frames[0].size();
  MsgpackReader r(frames[0]);
  uint32_t n;
  if (Status s = r.ReadArrayHeader(&n); !s.ok()) {
    return Status::Malformed("EngineCoreOutputs must be an array: " + s.message(), s.offset());
  }
  out->wire_fields = n;
  for (uint32_t pos = 0; pos < n; ++pos) {
    // A part that fails is stepped over from where it began (`start`, taken by the parts that
    // can be salvaged).
    Status s;
    switch (pos) {
      case 0:
        s = r.ReadInt(&out->engine_index);
        break;
      case 1: {
        if (ConsumeNil(r)) break;
        const char* const start = r.position();
        uint32_t count;
        if (s = r.ReadArrayHeader(&count); !s.ok()) {
          s = SalvagePart(s, start, r, ctx, DecodePart::kOutput, &out->skipped.outputs);
          break;
        }
        // Grown one decoded output at a time: a count is only a claim until the outputs are
        // there, and an EngineCoreOutput is far larger than the byte that claims it.
        // The elements the previous message left are decoded into again (ResetOutput keeps
        // their token-id capacity); new ones are appended. `have` is the vector's size.
        size_t have = out->outputs.size();
        for (uint32_t i = 0; i < count; ++i) {
          if (used == have) {
            out->outputs.emplace_back();
            ++have;
          }
          const char* const entry = r.position();
          if (Status e = DecodeOutput(r, frames, wire, &out->outputs[used]); e.ok()) [[likely]] {
            if (!out->outputs[used].spec_decode_metrics.empty()) [[unlikely]] {
              CheckSpecDecodeMetrics(frames[0], ctx, &out->outputs[used]);
            }
            ++used;
          } else if (s = SalvagePart(e, entry, r, ctx, DecodePart::kOutput, &out->skipped.outputs);
                     !s.ok()) {
            break;  // this entry could not be skipped; otherwise only it is lost
          }
        }
        break;
      }
      case 2:
        if (!ConsumeNil(r)) {
          const char* const start = r.position();
          out->scheduler_stats.emplace();
          s = internal::DecodeSchedulerStatsAt(r, ctx, &*out->scheduler_stats);
          if (!s.ok()) {
            out->scheduler_stats.reset();
            s = SalvagePart(s, start, r, ctx, DecodePart::kSchedulerStats,
                            &out->skipped.scheduler_stats);
          }
        }
        break;
      case 3:
        s = r.ReadDouble(&out->timestamp);
        break;
      case 4:
        if (!ConsumeNil(r)) {
          const char* const start = r.position();
          out->utility_output.emplace();
          s = DecodeUtility(r, &*out->utility_output);
          if (!s.ok()) {
            out->utility_output.reset();
            s = SalvagePart(s, start, r, ctx, DecodePart::kUtilityOutput,
                            &out->skipped.utility_output);
          }
        }
        break;
      case 5:
        if (!ConsumeNil(r)) {
          const char* const start = r.position();
          uint32_t count;
          s = r.ReadArrayHeader(&count);
          if (s.ok()) {
            out->finished_requests.emplace();
            out->finished_requests->reserve(count);  // bounded: count <= remaining bytes
            for (uint32_t i = 0; s.ok() && i < count; ++i) {
              std::string_view id;
              s = r.ReadStr(&id);
              if (s.ok()) out->finished_requests->push_back(id);
            }
          }
          if (!s.ok()) {
            out->finished_requests.reset();
            s = SalvagePart(s, start, r, ctx, DecodePart::kFinishedRequests,
                            &out->skipped.finished_requests);
          }
        }
        break;
      case 6:
        s = DecodeOptionalInt(r, &out->wave_complete);
        break;
      case 7:
        s = DecodeOptionalInt(r, &out->start_wave);
        break;
      default:
        s = r.Skip();
        break;  // positions added by newer engines
    }
    if (!s.ok()) return s;
  }
  if (!r.at_end()) {
    return Status::Malformed("trailing bytes after EngineCoreOutputs",
                             static_cast<int64_t>(r.offset()));
  }
  return Status::Ok();
}

}  // namespace vmetrics
