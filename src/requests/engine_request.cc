// SPDX-License-Identifier: Apache-2.0
// EngineCoreRequest / ABORT encoding and decoding, driven by the wire generations' request
// tables, and engine choice (docs/wire_format.md "Requests per generation"; msgspec's rules:
// docs/design.md §4.1).
#include "vmetrics/engine_request.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <msgpack.hpp>

#include "vmetrics/internal/msgpack_reader.h"
#include "vmetrics/internal/wire_text.h"
#include "vmetrics/wire_decoder.h"

namespace vmetrics {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;
using R = RequestField;
using L = LoraField;
using S = SamplingKey;

// CPython's _SAMPLING_EPS in vllm/sampling_params.py: below it, sampling is greedy.
constexpr double kSamplingEps = 1e-5;

void PackStr(Packer& pk, std::string_view s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

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

// An int in its smallest msgpack form (as msgspec and msgpack-cxx's pack_int64 write it) at
// `out`; returns the bytes written (at most 9).
size_t WriteInt(int64_t v, char* out) {
  auto be = [out](uint8_t tag, uint64_t u, size_t bytes) {
    out[0] = static_cast<char>(tag);
    for (size_t i = 0; i < bytes; ++i) {
      out[1 + i] = static_cast<char>((u >> (8 * (bytes - 1 - i))) & 0xff);
    }
    return 1 + bytes;
  };
  if (v >= 0) {
    const auto u = static_cast<uint64_t>(v);
    if (u <= 0x7f) {
      out[0] = static_cast<char>(u);
      return 1;
    }
    if (u <= 0xff) return be(0xcc, u, 1);
    if (u <= 0xffff) return be(0xcd, u, 2);
    if (u <= 0xffffffff) return be(0xce, u, 4);
    return be(0xcf, u, 8);
  }
  if (v >= -32) {
    out[0] = static_cast<char>(static_cast<uint8_t>(v));
    return 1;
  }
  const auto u = static_cast<uint64_t>(v);
  if (v >= -128) return be(0xd0, u, 1);
  if (v >= -32768) return be(0xd1, u, 2);
  if (v >= INT32_MIN) return be(0xd2, u, 4);
  return be(0xd3, u, 8);
}

// A list of ints (prompts run to thousands): written through a stack chunk, not an int at a
// time through the packer.
void PackInts(msgpack::sbuffer& buf, Packer& pk, const std::vector<int64_t>& v) {
  pk.pack_array(static_cast<uint32_t>(v.size()));
  char chunk[9 * 128];
  size_t n = 0;
  for (int64_t t : v) {
    n += WriteInt(t, chunk + n);
    if (n > sizeof(chunk) - 9) {
      buf.write(chunk, n);
      n = 0;
    }
  }
  buf.write(chunk, n);
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

void PackOptStr(Packer& pk, const std::optional<std::string>& v) {
  if (v) {
    PackStr(pk, *v);
  } else {
    pk.pack_nil();
  }
}

void PackBool(Packer& pk, bool v) { v ? pk.pack_true() : pk.pack_false(); }

// Whether `key` holds a value other than its default: what an engine without the key would
// miss.
bool NotDefault(SamplingKey key, const SamplingParams& p) {
  switch (key) {
    case S::kN:
      return p.n != 1;
    case S::kPresencePenalty:
      return p.presence_penalty != 0.0;
    case S::kFrequencyPenalty:
      return p.frequency_penalty != 0.0;
    case S::kRepetitionPenalty:
      return p.repetition_penalty != 1.0;
    case S::kTemperature:
      return p.temperature != 1.0;
    case S::kTopP:
      return p.top_p != 1.0;
    case S::kTopK:
      return p.top_k != 0;
    case S::kMinP:
      return p.min_p != 0.0;
    case S::kSeed:
      return p.seed.has_value();
    case S::kStop:
      return p.stop.has_value();
    case S::kStopTokenIds:
      return p.stop_token_ids.has_value();
    case S::kIgnoreEos:
      return p.ignore_eos;
    case S::kMaxTokens:
      return p.max_tokens != std::optional<int64_t>(16);
    case S::kMinTokens:
      return p.min_tokens != 0;
    case S::kLogprobs:
      return p.logprobs.has_value();
    case S::kPromptLogprobs:
      return p.prompt_logprobs.has_value();
    case S::kLogprobTokenIds:
      return p.logprob_token_ids.has_value();
    case S::kFlatLogprobs:
      return p.flat_logprobs;
    case S::kDetokenize:
      return !p.detokenize;
    case S::kSkipSpecialTokens:
      return !p.skip_special_tokens;
    case S::kSpacesBetweenSpecialTokens:
      return !p.spaces_between_special_tokens;
    case S::kIncludeStopStrInOutput:
      return p.include_stop_str_in_output;
    case S::kOutputKind:
      return p.output_kind != 0;
    case S::kStreamInterval:
      return p.stream_interval.has_value();
    case S::kSkipClone:
      return p.skip_clone;
    case S::kOutputTextBufferLength:
      return p.output_text_buffer_length != 0;
    case S::kEosTokenId:
      return p.eos_token_id.has_value();
    case S::kAllStopTokenIds:
      return !p.all_stop_token_ids.empty();
    case S::kLogitBias:
      return p.logit_bias.has_value();
    case S::kAllowedTokenIds:
      return p.allowed_token_ids.has_value();
    case S::kExtraArgs:
      return !p.extra_args.empty();
    case S::kRoutedExpertsPromptStart:
      return p.routed_experts_prompt_start != 0;
    case S::kBadWords:
      return p.bad_words.has_value();
    case S::kSkipReadingPrefixCache:
      return p.skip_reading_prefix_cache.has_value();
    case S::kThinkingTokenBudget:
      return p.thinking_token_budget.has_value();
    case S::kRepetitionDetection:
      return p.repetition_detection.has_value();
    // Keys no token API sets.
    case S::kBestOf:
    case S::kRealN:
    case S::kLogitsProcessors:
    case S::kTruncatePromptTokens:
    case S::kStructuredOutputs:
    case S::kGuidedDecoding:
    case S::kBadWordsTokenIds:
      return false;
  }
  return false;
}

// Whether msgspec writes `key` for these params. It leaves a value out when it is the default
// object (omit_defaults compares identity): ints equal to the default are cached objects and
// left out, while the completions frontend's request-model floats are new objects, written
// whatever their value, but for top_p and min_p, which greedy sampling replaces with the class
// constants (SamplingParams::request_model_floats).
bool Written(SamplingKey key, const SamplingParams& p) {
  if (NotDefault(key, p)) return true;
  if (!p.request_model_floats) return false;
  switch (key) {
    case S::kPresencePenalty:
    case S::kFrequencyPenalty:
    case S::kRepetitionPenalty:
    case S::kTemperature:
      return true;
    case S::kTopP:
    case S::kMinP:
      return p.temperature >= kSamplingEps;
    default:
      return false;
  }
}

void PackSamplingValue(SamplingKey key, const SamplingParams& p, msgpack::sbuffer& buf,
                       Packer& pk) {
  switch (key) {
    case S::kN:
      pk.pack_int64(p.n);
      return;
    case S::kPresencePenalty:
      return PackFloat64(buf, p.presence_penalty);
    case S::kFrequencyPenalty:
      return PackFloat64(buf, p.frequency_penalty);
    case S::kRepetitionPenalty:
      return PackFloat64(buf, p.repetition_penalty);
    case S::kTemperature:
      return PackFloat64(buf, p.temperature);
    case S::kTopP:
      return PackFloat64(buf, p.top_p);
    case S::kTopK:
      pk.pack_int64(p.top_k);
      return;
    case S::kMinP:
      return PackFloat64(buf, p.min_p);
    case S::kSeed:
      return PackOptInt(pk, p.seed);
    case S::kStop:
      return PackStrs(pk, *p.stop);
    case S::kStopTokenIds:
      return PackInts(buf, pk, *p.stop_token_ids);
    case S::kIgnoreEos:
      return PackBool(pk, p.ignore_eos);
    case S::kMaxTokens:
      return PackOptInt(pk, p.max_tokens);
    case S::kMinTokens:
      pk.pack_int64(p.min_tokens);
      return;
    case S::kLogprobs:
      return PackOptInt(pk, p.logprobs);
    case S::kPromptLogprobs:
      return PackOptInt(pk, p.prompt_logprobs);
    case S::kLogprobTokenIds:
      return PackInts(buf, pk, *p.logprob_token_ids);
    case S::kFlatLogprobs:
      return PackBool(pk, p.flat_logprobs);
    case S::kDetokenize:
      return PackBool(pk, p.detokenize);
    case S::kSkipSpecialTokens:
      return PackBool(pk, p.skip_special_tokens);
    case S::kSpacesBetweenSpecialTokens:
      return PackBool(pk, p.spaces_between_special_tokens);
    case S::kIncludeStopStrInOutput:
      return PackBool(pk, p.include_stop_str_in_output);
    case S::kOutputKind:
      pk.pack_int64(p.output_kind);
      return;
    case S::kStreamInterval:
      return PackOptInt(pk, p.stream_interval);
    case S::kSkipClone:
      return PackBool(pk, p.skip_clone);
    case S::kOutputTextBufferLength:
      pk.pack_int64(p.output_text_buffer_length);
      return;
    case S::kEosTokenId:
      return PackOptInt(pk, p.eos_token_id);
    case S::kAllStopTokenIds:
      return PackInts(buf, pk, PythonSetOrder(p.all_stop_token_ids));
    case S::kLogitBias:
      pk.pack_map(static_cast<uint32_t>(p.logit_bias->size()));
      for (const auto& [token, bias] : *p.logit_bias) {
        pk.pack_int64(token);
        PackFloat64(buf, bias);
      }
      return;
    case S::kAllowedTokenIds:
      return PackInts(buf, pk, *p.allowed_token_ids);
    case S::kExtraArgs:
      buf.write(p.extra_args.data(), p.extra_args.size());
      return;
    case S::kRoutedExpertsPromptStart:
      pk.pack_int64(p.routed_experts_prompt_start);
      return;
    case S::kBadWords:
      return PackStrs(pk, *p.bad_words);
    case S::kSkipReadingPrefixCache:
      return PackBool(pk, *p.skip_reading_prefix_cache);
    case S::kThinkingTokenBudget:
      return PackOptInt(pk, p.thinking_token_budget);
    case S::kRepetitionDetection:
      pk.pack_map(3);
      PackStr(pk, "max_pattern_size");
      pk.pack_int64(p.repetition_detection->max_pattern_size);
      PackStr(pk, "min_pattern_size");
      pk.pack_int64(p.repetition_detection->min_pattern_size);
      PackStr(pk, "min_count");
      pk.pack_int64(p.repetition_detection->min_count);
      return;
    case S::kBestOf:
    case S::kRealN:
    case S::kLogitsProcessors:
    case S::kTruncatePromptTokens:
    case S::kStructuredOutputs:
    case S::kGuidedDecoding:
    case S::kBadWordsTokenIds:
      pk.pack_nil();  // never written (Written is false)
      return;
  }
}

// SamplingParams: the written keys of the layout, in its order. msgspec sizes the map header
// for the whole struct (map16) and patches the count afterwards, so it is map16 however few
// keys there are.
void PackSampling(msgpack::sbuffer& buf, Packer& pk, const SamplingParams& p,
                  std::span<const SamplingKey> keys) {
  // Each key's verdict once: a table has at most 64 keys.
  uint64_t written = 0;
  uint16_t count = 0;
  for (size_t i = 0; i < keys.size() && i < 64; ++i) {
    if (!Written(keys[i], p)) continue;
    written |= uint64_t{1} << i;
    ++count;
  }
  const char header[3] = {static_cast<char>(0xde), static_cast<char>(count >> 8),
                          static_cast<char>(count & 0xff)};
  buf.write(header, sizeof(header));
  for (size_t i = 0; i < keys.size() && i < 64; ++i) {
    if (((written >> i) & 1U) == 0) continue;
    PackStr(pk, SamplingKeyName(keys[i]));
    PackSamplingValue(keys[i], p, buf, pk);
  }
}

void PackLora(Packer& pk, const EngineCoreRequestSpec& spec, std::span<const LoraField> fields) {
  pk.pack_array(static_cast<uint32_t>(fields.size()));
  for (LoraField f : fields) {
    switch (f) {
      case L::kLoraName:
        PackStr(pk, spec.lora_name);
        break;
      case L::kLoraIntId:
        pk.pack_int64(spec.lora_int_id);
        break;
      case L::kLoraPath:
        PackStr(pk, spec.lora_path);
        break;
      case L::kBaseModelName:
        if (spec.lora_base_model_name.empty()) {
          pk.pack_nil();
        } else {
          PackStr(pk, spec.lora_base_model_name);
        }
        break;
      case L::kLoadInplace:
      case L::kIs3dLoraWeight:
        pk.pack_false();
        break;
      case L::kLoraLocalPath:
      case L::kLongLoraMaxLen:
      case L::kTensorizerConfigDict:
        pk.pack_nil();
        break;
    }
  }
}

// Request fields that only frontends read: left out where a layout does not have them.
bool FrontendOnly(RequestField f) { return f == R::kExternalReqId; }

// SamplingParams keys an engine without them does not miss (CheckRequestFits).
bool DroppableKey(SamplingKey k) {
  switch (k) {
    case S::kStreamInterval:
    case S::kSkipClone:
    case S::kOutputTextBufferLength:
    case S::kSkipReadingPrefixCache:
    case S::kDetokenize:
      return true;
    default:
      return false;
  }
}

// Whether the spec gives `f` a value other than its default.
bool HasValue(RequestField f, const EngineCoreRequestSpec& spec) {
  switch (f) {
    case R::kEosTokenId:
      return spec.eos_token_id.has_value();
    case R::kLoraRequest:
      return !spec.lora_name.empty();
    case R::kCacheSalt:
      return spec.cache_salt.has_value();
    case R::kDataParallelRank:
      return spec.data_parallel_rank.has_value();
    case R::kClientIndex:
      return spec.client_index != 0;
    case R::kPriority:
      return spec.priority != 0;
    case R::kExternalReqId:
      return !spec.external_req_id.empty();
    case R::kAbortImmediately:
      return spec.abort_immediately;
    case R::kSessionId:
      return spec.session_id.has_value();
    case R::kRequestId:
    case R::kPromptTokenIds:
    case R::kSamplingParams:
    case R::kArrivalTime:
      return true;
    case R::kMmFeatures:
    case R::kPoolingParams:
    case R::kPromptEmbeds:
    case R::kPromptIsTokenIds:
    case R::kCurrentWave:
    case R::kTraceHeaders:
    case R::kResumable:
    case R::kReasoningEnded:
    case R::kReasoningParserKwargs:
      return false;
  }
  return false;
}

}  // namespace

Status CheckRequestFits(const EngineCoreRequestSpec& spec, const RequestLayout& layout) {
  static constexpr R kCarried[] = {R::kLoraRequest, R::kCacheSalt,    R::kDataParallelRank,
                                   R::kClientIndex, R::kPriority,     R::kAbortImmediately,
                                   R::kSessionId,   R::kExternalReqId};
  for (R f : kCarried) {
    if (!HasValue(f, spec) || layout.PositionOf(f) >= 0 || FrontendOnly(f)) continue;
    return Status::InvalidArgument(
        std::string(RequestFieldName(f)) +
        " cannot be sent: the engine's request layout has no such field");
  }
  const bool eos_in_request = layout.PositionOf(R::kEosTokenId) >= 0;
  if (!eos_in_request && !layout.Has(S::kEosTokenId) && spec.eos_token_id) {
    return Status::InvalidArgument("the engine's request layout has no place for the EOS token");
  }
  for (size_t k = 0; k <= static_cast<size_t>(S::kRepetitionDetection); ++k) {
    const auto key = static_cast<SamplingKey>(k);
    if (!NotDefault(key, spec.sampling) || layout.Has(key) || DroppableKey(key)) continue;
    if (key == S::kEosTokenId && eos_in_request) continue;
    return Status::InvalidArgument("sampling_params." + std::string(SamplingKeyName(key)) +
                                   " cannot be sent: the engine's SamplingParams has no such key");
  }
  return Status::Ok();
}

std::string EncodeEngineCoreRequest(const EngineCoreRequestSpec& spec,
                                    const RequestLayout& layout) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_array(static_cast<uint32_t>(layout.fields.size()));
  for (RequestField f : layout.fields) {
    switch (f) {
      case R::kRequestId:
        PackStr(pk, spec.request_id);
        break;
      case R::kPromptTokenIds:
        PackInts(buf, pk, spec.prompt_token_ids);
        break;
      case R::kSamplingParams:
        PackSampling(buf, pk, spec.sampling, layout.sampling);
        break;
      case R::kEosTokenId:
        PackOptInt(pk, spec.eos_token_id);
        break;
      case R::kArrivalTime:
        PackFloat64(buf, spec.arrival_time);
        break;
      case R::kLoraRequest:
        if (spec.lora_name.empty()) {
          pk.pack_nil();
        } else {
          PackLora(pk, spec, layout.lora);
        }
        break;
      case R::kCacheSalt:
        PackOptStr(pk, spec.cache_salt);
        break;
      case R::kDataParallelRank:
        PackOptInt(pk, spec.data_parallel_rank);
        break;
      case R::kClientIndex:
        pk.pack_int64(spec.client_index);
        break;
      case R::kCurrentWave:
        pk.pack_int64(0);
        break;
      case R::kPriority:
        pk.pack_int64(spec.priority);
        break;
      case R::kResumable:
        pk.pack_false();
        break;
      case R::kExternalReqId:
        if (spec.external_req_id.empty()) {
          pk.pack_nil();
        } else {
          PackStr(pk, spec.external_req_id);
        }
        break;
      case R::kAbortImmediately:
        PackBool(pk, spec.abort_immediately);
        break;
      case R::kSessionId:
        PackOptStr(pk, spec.session_id);
        break;
      case R::kMmFeatures:
      case R::kPoolingParams:
      case R::kPromptEmbeds:
      case R::kPromptIsTokenIds:
      case R::kTraceHeaders:
      case R::kReasoningEnded:
      case R::kReasoningParserKwargs:
        pk.pack_nil();
        break;
    }
  }
  return std::string(buf.data(), buf.size());
}

std::string EncodeEngineCoreRequest(const EngineCoreRequestSpec& spec) {
  return EncodeEngineCoreRequest(spec, NewestWireGeneration().request);
}

std::string EncodeAbort(std::span<const std::string> request_ids) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_array(static_cast<uint32_t>(request_ids.size()));
  for (const std::string& id : request_ids) PackStr(pk, id);
  return std::string(buf.data(), buf.size());
}

std::vector<int64_t> PythonSetOrder(const std::vector<int64_t>& ids) {
  if (ids.size() <= 1) return ids;  // the common case: EOS alone
  // CPython 3.11 Objects/setobject.c: PySet_MINSIZE 8, LINEAR_PROBES 9, PERTURB_SHIFT 5, grow
  // when fill * 5 >= mask * 3 to the smallest power of two above used * 4 (used * 2 past
  // 50000). An int's hash is its value modulo 2**61 - 1 (sign kept), -1 hashing as -2.
  auto hash = [](int64_t v) -> uint64_t {
    constexpr int64_t kModulus = (int64_t{1} << 61) - 1;
    int64_t h = v % kModulus;
    if (h == -1) h = -2;
    return static_cast<uint64_t>(h);
  };
  using Table = std::vector<std::optional<int64_t>>;
  // The slot holding `v`, or the first empty one on its probe sequence.
  auto probe = [&hash](const Table& t, int64_t v) {
    const size_t mask = t.size() - 1;
    uint64_t perturb = hash(v);
    size_t i = static_cast<size_t>(perturb) & mask;
    for (;;) {
      if (!t[i] || *t[i] == v) return i;
      if (i + 9 <= mask) {
        for (size_t j = 1; j <= 9; ++j) {
          if (!t[i + j] || *t[i + j] == v) return i + j;
        }
      }
      perturb >>= 5;
      i = (i * 5 + 1 + static_cast<size_t>(perturb)) & mask;
    }
  };
  Table table(8);
  size_t used = 0;  // no deletions: fill == used
  for (int64_t v : ids) {
    const size_t slot = probe(table, v);
    if (table[slot]) continue;  // already in the set
    table[slot] = v;
    ++used;
    const size_t mask = table.size() - 1;
    if (used * 5 >= mask * 3) {
      const size_t minused = used > 50000 ? used * 2 : used * 4;
      size_t size = 8;
      while (size <= minused) size <<= 1;
      Table grown(size);
      for (const std::optional<int64_t>& e : table) {
        if (e) grown[probe(grown, *e)] = *e;
      }
      table = std::move(grown);
    }
  }
  std::vector<int64_t> order;
  order.reserve(used);
  for (const std::optional<int64_t>& e : table) {
    if (e) order.push_back(*e);
  }
  return order;
}

Result<EngineRequestLayout> RequestLayoutFor(uint32_t candidates) {
  std::vector<const WireGeneration*> gens;
  const std::span<const WireGeneration> all = WireGenerations();
  for (size_t i = 0; i < all.size(); ++i) {
    if ((candidates >> i) & 1U) gens.push_back(&all[i]);
  }
  if (gens.empty()) return Status::InvalidArgument("no wire generation to encode requests for");
  const RequestLayout& first = gens.front()->request;
  EngineRequestLayout out;
  auto equal = [&first](const RequestLayout& r) {
    return std::ranges::equal(r.fields, first.fields) && std::ranges::equal(r.lora, first.lora) &&
           std::ranges::equal(r.sampling, first.sampling) && r.required == first.required;
  };
  if (std::all_of(gens.begin(), gens.end(),
                  [&](const WireGeneration* g) { return equal(g->request); })) {
    out.name = std::string(gens.back()->name);
    out.fields.assign(first.fields.begin(), first.fields.end());
    out.lora.assign(first.lora.begin(), first.lora.end());
    out.sampling.assign(first.sampling.begin(), first.sampling.end());
    out.required = first.required;
    return out;
  }
  // The longest prefixes every candidate agrees on.
  size_t fields = first.fields.size();
  size_t lora = first.lora.size();
  for (const WireGeneration* g : gens) {
    const RequestLayout& r = g->request;
    size_t p = 0;
    while (p < fields && p < r.fields.size() && r.fields[p] == first.fields[p]) ++p;
    fields = p;
    size_t q = 0;
    while (q < lora && q < r.lora.size() && r.lora[q] == first.lora[q]) ++q;
    lora = q;
  }
  std::string names = WireCandidateNames(candidates);
  for (const WireGeneration* g : gens) {
    if (g->request.required > fields || g->request.lora_required > lora) {
      return Status::Unavailable("no request layout that every one of " + names +
                                 " decodes alike: " + std::string(g->name) + " needs " +
                                 std::to_string(g->request.required) + " positions");
    }
  }
  out.name = "common to " + names;
  out.fields.assign(first.fields.begin(), first.fields.begin() + static_cast<ptrdiff_t>(fields));
  out.lora.assign(first.lora.begin(), first.lora.begin() + static_cast<ptrdiff_t>(lora));
  for (SamplingKey k : first.sampling) {
    if (std::all_of(gens.begin(), gens.end(),
                    [k](const WireGeneration* g) { return g->request.Has(k); })) {
      out.sampling.push_back(k);
    }
  }
  for (const WireGeneration* g : gens) out.required = std::max(out.required, g->request.required);
  return out;
}

namespace {

using protocol::MsgpackReader;
using protocol::MsgpackType;

uint16_t TypeBit(MsgpackType t) {
  switch (t) {
    case MsgpackType::kNil:
      return kWireNil;
    case MsgpackType::kBool:
      return kWireBool;
    case MsgpackType::kInt:
      return kWireInt;
    case MsgpackType::kFloat:
      return kWireFloat;
    case MsgpackType::kStr:
      return kWireStr;
    case MsgpackType::kBin:
      return kWireBin;
    case MsgpackType::kArray:
      return kWireArray;
    case MsgpackType::kMap:
      return kWireMap;
    case MsgpackType::kExt:
      return kWireExt;
  }
  return 0;
}

// msgspec's words for the type names in its errors.
std::string Expected(uint16_t accepted) {
  static constexpr std::pair<uint16_t, const char*> kNames[] = {
      {kWireBool, "bool"},  {kWireInt, "int"},   {kWireFloat, "float"},
      {kWireStr, "str"},    {kWireBin, "bytes"}, {kWireArray, "array"},
      {kWireMap, "object"}, {kWireExt, "ext"},   {kWireNil, "null"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if ((accepted & bit) == 0) continue;
    if (bit == kWireInt && (accepted & kWireFloat) != 0) continue;  // "float" takes ints
    if (!out.empty()) out += " | ";
    out += name;
  }
  return out;
}

// The strict reader: every failure names its path as msgspec does.
class StrictReader {
 public:
  explicit StrictReader(std::string_view body) : r_(body) {}
  MsgpackReader& r() { return r_; }

  Status Fail(const std::string& path, const std::string& what) const {
    return Status::Malformed(what + " - at `" + path + "`", static_cast<int64_t>(r_.offset()));
  }
  // Checks the next value's type against `accepted`.
  Status Check(uint16_t accepted, const std::string& path, MsgpackType* type) {
    if (Status s = r_.PeekType(type); !s.ok()) return Fail(path, "Input data was truncated");
    if ((TypeBit(*type) & accepted) == 0) {
      return Fail(path, "Expected `" + Expected(accepted) + "`, got `" +
                            protocol::MsgpackTypeName(*type) + "`");
    }
    return Status::Ok();
  }
  Status Str(const std::string& path, std::string* out) {
    std::string_view v;
    if (Status s = r_.ReadStr(&v); !s.ok()) return Fail(path, "Input data was truncated");
    if (!internal::IsValidUtf8(v)) return Fail(path, "Invalid UTF-8");
    out->assign(v);
    return Status::Ok();
  }
  Status OptStr(const std::string& path, std::optional<std::string>* out) {
    MsgpackType t{};
    if (Status s = Check(kWireNil | kWireStr, path, &t); !s.ok()) return s;
    if (t == MsgpackType::kNil) {
      out->reset();
      return r_.ReadNil();
    }
    out->emplace();
    return Str(path, &**out);
  }
  Status Int(const std::string& path, int64_t* out) {
    MsgpackType t{};
    if (Status s = Check(kWireInt, path, &t); !s.ok()) return s;
    if (Status s = r_.ReadInt(out); !s.ok()) return Fail(path, "Integer value out of range");
    return Status::Ok();
  }
  Status OptInt(const std::string& path, std::optional<int64_t>* out) {
    MsgpackType t{};
    if (Status s = Check(kWireNil | kWireInt, path, &t); !s.ok()) return s;
    if (t == MsgpackType::kNil) {
      out->reset();
      return r_.ReadNil();
    }
    int64_t v = 0;
    if (Status s = r_.ReadInt(&v); !s.ok()) return Fail(path, "Integer value out of range");
    *out = v;
    return Status::Ok();
  }
  Status Float(const std::string& path, double* out) {
    MsgpackType t{};
    if (Status s = Check(kWireFloat | kWireInt, path, &t); !s.ok()) return s;
    return r_.ReadDouble(out);
  }
  Status Bool(const std::string& path, bool* out) {
    MsgpackType t{};
    if (Status s = Check(kWireBool, path, &t); !s.ok()) return s;
    return r_.ReadBool(out);
  }
  Status OptBool(const std::string& path, std::optional<bool>* out) {
    MsgpackType t{};
    if (Status s = Check(kWireNil | kWireBool, path, &t); !s.ok()) return s;
    if (t == MsgpackType::kNil) {
      out->reset();
      return r_.ReadNil();
    }
    bool v = false;
    if (Status s = r_.ReadBool(&v); !s.ok()) return s;
    *out = v;
    return Status::Ok();
  }
  // An array header, bounded by the bytes left.
  Status Array(const std::string& path, uint32_t* n) {
    if (Status s = r_.ReadArrayHeader(n); !s.ok()) return Fail(path, "Input data was truncated");
    return Status::Ok();
  }
  Status Ints(const std::string& path, std::vector<int64_t>* out) {
    MsgpackType t{};
    if (Status s = Check(kWireArray, path, &t); !s.ok()) return s;
    uint32_t n = 0;
    if (Status s = Array(path, &n); !s.ok()) return s;
    out->clear();
    out->reserve(n);
    for (uint32_t i = 0; i < n; ++i) {
      int64_t v = 0;
      if (Status s = Int(path + "[" + std::to_string(i) + "]", &v); !s.ok()) return s;
      out->push_back(v);
    }
    return Status::Ok();
  }
  Status OptInts(const std::string& path, std::optional<std::vector<int64_t>>* out) {
    if (r_.NextIsNil()) {
      out->reset();
      return r_.ReadNil();
    }
    out->emplace();
    return Ints(path, &**out);
  }
  Status OptStrs(const std::string& path, std::optional<std::vector<std::string>>* out,
                 bool or_str) {
    MsgpackType t{};
    if (Status s = Check(kWireNil | kWireArray | (or_str ? kWireStr : 0), path, &t); !s.ok()) {
      return s;
    }
    if (t == MsgpackType::kNil) {
      out->reset();
      return r_.ReadNil();
    }
    out->emplace();
    if (t == MsgpackType::kStr) {
      (*out)->emplace_back();
      return Str(path, &(*out)->back());
    }
    uint32_t n = 0;
    if (Status s = Array(path, &n); !s.ok()) return s;
    for (uint32_t i = 0; i < n; ++i) {
      (*out)->emplace_back();
      MsgpackType e{};
      const std::string at = path + "[" + std::to_string(i) + "]";
      if (Status s = Check(kWireStr, at, &e); !s.ok()) return s;
      if (Status s = Str(at, &(*out)->back()); !s.ok()) return s;
    }
    return Status::Ok();
  }
  // Any value of an accepted type, skipped.
  Status SkipAs(uint16_t accepted, const std::string& path) {
    MsgpackType t{};
    if (Status s = Check(accepted, path, &t); !s.ok()) return s;
    if (Status s = r_.Skip(); !s.ok()) return Fail(path, "Input data was truncated");
    return Status::Ok();
  }

 private:
  MsgpackReader r_;
};

Status ReadSamplingKey(StrictReader& in, SamplingKey key, const std::string& path,
                       SamplingParams* p) {
  switch (key) {
    case S::kN:
      return in.Int(path, &p->n);
    case S::kPresencePenalty:
      return in.Float(path, &p->presence_penalty);
    case S::kFrequencyPenalty:
      return in.Float(path, &p->frequency_penalty);
    case S::kRepetitionPenalty:
      return in.Float(path, &p->repetition_penalty);
    case S::kTemperature:
      return in.Float(path, &p->temperature);
    case S::kTopP:
      return in.Float(path, &p->top_p);
    case S::kTopK:
      return in.Int(path, &p->top_k);
    case S::kMinP:
      return in.Float(path, &p->min_p);
    case S::kSeed:
      return in.OptInt(path, &p->seed);
    case S::kStop:
      return in.OptStrs(path, &p->stop, /*or_str=*/true);
    case S::kStopTokenIds:
      return in.OptInts(path, &p->stop_token_ids);
    case S::kIgnoreEos:
      return in.Bool(path, &p->ignore_eos);
    case S::kMaxTokens:
      return in.OptInt(path, &p->max_tokens);
    case S::kMinTokens:
      return in.Int(path, &p->min_tokens);
    case S::kLogprobs:
      return in.OptInt(path, &p->logprobs);
    case S::kPromptLogprobs:
      return in.OptInt(path, &p->prompt_logprobs);
    case S::kLogprobTokenIds:
      return in.OptInts(path, &p->logprob_token_ids);
    case S::kFlatLogprobs:
      return in.Bool(path, &p->flat_logprobs);
    case S::kDetokenize:
      return in.Bool(path, &p->detokenize);
    case S::kSkipSpecialTokens:
      return in.Bool(path, &p->skip_special_tokens);
    case S::kSpacesBetweenSpecialTokens:
      return in.Bool(path, &p->spaces_between_special_tokens);
    case S::kIncludeStopStrInOutput:
      return in.Bool(path, &p->include_stop_str_in_output);
    case S::kOutputKind: {
      // RequestOutputKind: msgspec accepts only its members' values.
      if (Status s = in.Int(path, &p->output_kind); !s.ok()) return s;
      if (p->output_kind < 0 || p->output_kind > 2) {
        return in.Fail(path, "Invalid enum value " + std::to_string(p->output_kind));
      }
      return Status::Ok();
    }
    case S::kStreamInterval:
      return in.OptInt(path, &p->stream_interval);
    case S::kSkipClone:
      return in.Bool(path, &p->skip_clone);
    case S::kOutputTextBufferLength:
      return in.Int(path, &p->output_text_buffer_length);
    case S::kEosTokenId:
      return in.OptInt(path, &p->eos_token_id);
    case S::kAllStopTokenIds:
      return in.Ints(path, &p->all_stop_token_ids);
    case S::kLogitBias: {
      MsgpackType t{};
      if (Status s = in.Check(kWireNil | kWireMap, path, &t); !s.ok()) return s;
      if (t == MsgpackType::kNil) {
        p->logit_bias.reset();
        return in.r().ReadNil();
      }
      uint32_t n = 0;
      if (Status s = in.r().ReadMapHeader(&n); !s.ok()) return in.Fail(path, "truncated");
      p->logit_bias.emplace();
      for (uint32_t i = 0; i < n; ++i) {
        int64_t token = 0;
        double bias = 0;
        if (Status s = in.Int(path + "[...]", &token); !s.ok()) return s;
        if (Status s = in.Float(path + "[" + std::to_string(token) + "]", &bias); !s.ok()) {
          return s;
        }
        p->logit_bias->emplace_back(token, bias);
      }
      return Status::Ok();
    }
    case S::kAllowedTokenIds:
      return in.OptInts(path, &p->allowed_token_ids);
    case S::kExtraArgs: {
      MsgpackType t{};
      if (Status s = in.Check(kWireNil | kWireMap, path, &t); !s.ok()) return s;
      if (t == MsgpackType::kNil) return in.r().ReadNil();
      std::string_view raw;
      if (Status s = in.r().ReadRaw(&raw); !s.ok()) return in.Fail(path, "truncated");
      p->extra_args.assign(raw);
      return Status::Ok();
    }
    case S::kRoutedExpertsPromptStart:
      return in.Int(path, &p->routed_experts_prompt_start);
    case S::kBadWords:
      return in.OptStrs(path, &p->bad_words, /*or_str=*/false);
    case S::kSkipReadingPrefixCache:
      return in.OptBool(path, &p->skip_reading_prefix_cache);
    case S::kThinkingTokenBudget:
      return in.OptInt(path, &p->thinking_token_budget);
    case S::kRepetitionDetection: {
      MsgpackType t{};
      if (Status s = in.Check(kWireNil | kWireMap, path, &t); !s.ok()) return s;
      if (t == MsgpackType::kNil) {
        p->repetition_detection.reset();
        return in.r().ReadNil();
      }
      uint32_t n = 0;
      if (Status s = in.r().ReadMapHeader(&n); !s.ok()) return in.Fail(path, "truncated");
      RepetitionDetectionParams d;
      for (uint32_t i = 0; i < n; ++i) {
        std::string name;
        MsgpackType k{};
        if (Status s = in.Check(kWireStr, path, &k); !s.ok()) return s;
        if (Status s = in.Str(path, &name); !s.ok()) return s;
        std::string at = path;
        at.append(".").append(name);
        Status s;
        if (name == "max_pattern_size") {
          s = in.Int(at, &d.max_pattern_size);
        } else if (name == "min_pattern_size") {
          s = in.Int(at, &d.min_pattern_size);
        } else if (name == "min_count") {
          s = in.Int(at, &d.min_count);
        } else {
          s = in.SkipAs(0xffff, at);
        }
        if (!s.ok()) return s;
      }
      p->repetition_detection = d;
      return Status::Ok();
    }
    case S::kBestOf:
    case S::kRealN:
    case S::kTruncatePromptTokens:
      return in.SkipAs(kWireNil | kWireInt, path);
    case S::kLogitsProcessors:
    case S::kBadWordsTokenIds:
      return in.SkipAs(kWireNil | kWireArray, path);
    case S::kStructuredOutputs:
    case S::kGuidedDecoding:
      return in.SkipAs(kWireNil | kWireMap, path);
  }
  return Status::Ok();
}

Status ReadSampling(StrictReader& in, const RequestLayout& layout, const std::string& path,
                    SamplingParams* p) {
  *p = SamplingParams();
  MsgpackType t{};
  if (Status s = in.Check(kWireNil | kWireMap, path, &t); !s.ok()) return s;
  if (t == MsgpackType::kNil) return in.r().ReadNil();
  uint32_t n = 0;
  if (Status s = in.r().ReadMapHeader(&n); !s.ok()) return in.Fail(path, "truncated");
  for (uint32_t i = 0; i < n; ++i) {
    MsgpackType k{};
    if (Status s = in.Check(kWireStr, path, &k); !s.ok()) return s;
    std::string name;
    if (Status s = in.Str(path, &name); !s.ok()) return s;
    const auto known =
        std::find_if(layout.sampling.begin(), layout.sampling.end(),
                     [&name](SamplingKey key) { return name == SamplingKeyName(key); });
    std::string at = path;
    at.append(".").append(name);
    if (known == layout.sampling.end()) {  // msgspec ignores unknown keys
      if (Status s = in.SkipAs(0xffff, at); !s.ok()) return s;
      continue;
    }
    if (Status s = ReadSamplingKey(in, *known, at, p); !s.ok()) return s;
  }
  return Status::Ok();
}

Status ReadLora(StrictReader& in, const RequestLayout& layout, const std::string& path,
                EngineCoreRequestSpec* spec) {
  uint32_t n = 0;
  if (Status s = in.Array(path, &n); !s.ok()) return s;
  if (n < layout.lora_required) {
    return in.Fail(path, "Expected `array` of at least length " +
                             std::to_string(layout.lora_required) + ", got " + std::to_string(n));
  }
  for (uint32_t i = 0; i < n; ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    if (i >= layout.lora.size()) {
      if (Status s = in.SkipAs(0xffff, at); !s.ok()) return s;
      continue;
    }
    const LoraField f = layout.lora[i];
    MsgpackType t{};
    if (Status s = in.Check(AcceptedTypes(f), at, &t); !s.ok()) return s;
    Status s;
    switch (f) {
      case L::kLoraName:
        s = in.Str(at, &spec->lora_name);
        break;
      case L::kLoraIntId:
        s = in.Int(at, &spec->lora_int_id);
        break;
      case L::kLoraPath:
        s = in.Str(at, &spec->lora_path);
        break;
      case L::kBaseModelName: {
        std::optional<std::string> base;
        s = in.OptStr(at, &base);
        spec->lora_base_model_name = base.value_or("");
        break;
      }
      default:
        s = in.SkipAs(AcceptedTypes(f), at);
        break;
    }
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

Result<EngineCoreRequestSpec> DecodeEngineCoreRequest(std::string_view body,
                                                      const RequestLayout& layout) {
  StrictReader in(body);
  MsgpackType top{};
  if (Status s = in.Check(kWireArray, "$", &top); !s.ok()) return s;
  uint32_t count = 0;
  if (Status s = in.Array("$", &count); !s.ok()) return s;
  if (count < layout.required) {
    return in.Fail("$", "Expected `array` of at least length " + std::to_string(layout.required) +
                            ", got " + std::to_string(count));
  }
  EngineCoreRequestSpec spec;
  for (uint32_t pos = 0; pos < count; ++pos) {
    const std::string path = "$[" + std::to_string(pos) + "]";
    if (pos >= layout.fields.size()) {  // extra trailing positions are ignored
      if (Status s = in.SkipAs(0xffff, path); !s.ok()) return s;
      continue;
    }
    const RequestField f = layout.fields[pos];
    MsgpackType t{};
    if (Status s = in.Check(AcceptedTypes(f), path, &t); !s.ok()) return s;
    Status s;
    switch (f) {
      case R::kRequestId:
        s = in.Str(path, &spec.request_id);
        break;
      case R::kPromptTokenIds:
        if (t == MsgpackType::kNil) {
          s = in.r().ReadNil();
        } else {
          s = in.Ints(path, &spec.prompt_token_ids);
        }
        break;
      case R::kSamplingParams:
        s = ReadSampling(in, layout, path, &spec.sampling);
        break;
      case R::kEosTokenId:
        s = in.OptInt(path, &spec.eos_token_id);
        break;
      case R::kArrivalTime:
        s = in.Float(path, &spec.arrival_time);
        break;
      case R::kLoraRequest:
        if (t == MsgpackType::kNil) {
          s = in.r().ReadNil();
        } else {
          s = ReadLora(in, layout, path, &spec);
        }
        break;
      case R::kCacheSalt:
        s = in.OptStr(path, &spec.cache_salt);
        break;
      case R::kDataParallelRank:
        s = in.OptInt(path, &spec.data_parallel_rank);
        break;
      case R::kClientIndex:
        s = in.Int(path, &spec.client_index);
        break;
      case R::kPriority:
        s = in.Int(path, &spec.priority);
        break;
      case R::kExternalReqId: {
        std::optional<std::string> external;
        s = in.OptStr(path, &external);
        spec.external_req_id = external.value_or("");
        break;
      }
      case R::kAbortImmediately:
        s = in.Bool(path, &spec.abort_immediately);
        break;
      case R::kSessionId:
        s = in.OptStr(path, &spec.session_id);
        break;
      default:
        s = in.SkipAs(AcceptedTypes(f), path);
        break;
    }
    if (!s.ok()) return s;
  }
  if (!in.r().at_end()) return in.Fail("$", "trailing bytes after the request");
  return spec;
}

Result<EngineCoreRequestSpec> DecodeEngineCoreRequest(std::string_view body) {
  return DecodeEngineCoreRequest(body, NewestWireGeneration().request);
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

EngineRouter::Engine* EngineRouter::Find(int64_t engine_index) {
  for (Engine& e : engines_) {
    if (e.index == engine_index) return &e;
  }
  return nullptr;
}

void EngineRouter::Assign(const std::string& request_id, int64_t engine_index) {
  auto [it, added] = request_engine_.try_emplace(request_id, engine_index);
  if (!added) {
    if (Engine* before = Find(it->second)) --before->in_flight;
    it->second = engine_index;
  }
  if (Engine* e = Find(engine_index)) {
    ++e->assigned;
    ++e->in_flight;
  }
}

int64_t EngineRouter::InFlight(int64_t engine_index) const {
  for (const Engine& e : engines_) {
    if (e.index == engine_index) return e.in_flight;
  }
  return 0;
}

std::vector<int64_t> EngineRouter::BusyEngines() const {
  std::vector<int64_t> busy;
  for (const Engine& e : engines_) {
    if (e.in_flight > 0) busy.push_back(e.index);
  }
  return busy;
}

int64_t EngineRouter::EngineOf(const std::string& request_id) const {
  auto it = request_engine_.find(request_id);
  return it == request_engine_.end() ? -1 : it->second;
}

void EngineRouter::Release(const std::string& request_id) {
  auto it = request_engine_.find(request_id);
  if (it == request_engine_.end()) return;
  if (Engine* e = Find(it->second)) --e->in_flight;
  request_engine_.erase(it);
}

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
    if (e.index != engine_index) continue;
    e.alive = false;
    e.in_flight = 0;
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

void EngineRouter::MarkAlive(int64_t engine_index) {
  for (Engine& e : engines_) {
    if (e.index != engine_index) continue;
    e.alive = true;
    e.has_stats = false;
    e.load = 0;
    e.assigned = 0;
  }
}

}  // namespace vmetrics
