// SPDX-License-Identifier: Apache-2.0
// Recognising an engine's wire generation and decoding with its table; see wire_decoder.h.
#include "vmetrics/wire_decoder.h"

#include <algorithm>
#include <array>
#include <bit>

#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics {
namespace {

using protocol::MsgpackReader;
using protocol::MsgpackType;

// ---------------------------------------------------------------------------------------------
// What one message shows.

uint16_t TypeBit(MsgpackType t) { return static_cast<uint16_t>(1u << static_cast<unsigned>(t)); }
static_assert(static_cast<unsigned>(MsgpackType::kNil) == 0 && kWireNil == 1 &&
              static_cast<unsigned>(MsgpackType::kMap) == 7 && kWireMap == 1 << 7);

// A message's SchedulerStats key set: a bit per StatsKey (the field table's rows).
static_assert(kStatsKeyCount <= 32);

int StatsKeyIndex(std::string_view key) {
  const StatsKey k = FindStatsKey(key);
  return k == StatsKey::kUnknown ? -1 : static_cast<int>(k);
}

uint32_t StatsKeyBits(const WireGeneration& g) {
  uint32_t bits = 0;
  for (StatsKey k : g.scheduler_stats_keys) bits |= 1u << static_cast<unsigned>(k);
  return bits;
}

struct OutputShape {
  uint32_t length = 0;
  std::array<uint16_t, kMaxOutputPositions> types{};  // type bit per position
  int64_t finish_reason = -1;
  int logprobs_arity = -1;  // -1: nil or not an array
  bool logprobs_tensors = false;
  int prefill_position = -1;  // a map holding num_prompt_tokens, and its key count
  uint32_t prefill_keys = 0;
};

struct StatsShape {
  bool present = false;
  uint32_t keys = 0;  // bits over StatsKey
  uint32_t key_count = 0;
  uint32_t unknown_keys = 0;
  int prefix_keys = -1;  // PrefixCacheStats key count
  int connector_prefix_keys = -1;
  int spec_keys = -1;
  int nixl_keys = -1;
  int nixl_failures_int = -1;  // 1 int entries, 0 float entries, -1 no entry seen
};

// The keys of the map at `r` (consumed), or -1 if it is not a map.
int MapKeyCount(MsgpackReader& r) {
  MsgpackType t;
  if (!r.PeekType(&t).ok() || t != MsgpackType::kMap) {
    (void)r.Skip();
    return -1;
  }
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) return -1;
  for (uint32_t i = 0; i < 2 * n; ++i) {
    if (!r.Skip().ok()) return -1;
  }
  return static_cast<int>(n);
}

// A map at `r` that looks like a NIXL payload: the one-key count form of 2025-09
// ({num_successful_transfers}) or the telemetry form (has post_duration, and not
// num_failed_recvs, which marks Mooncake P2P). Fills keys and failure entry type; false if it
// is not one (r is consumed either way).
bool NixlShape(MsgpackReader& r, StatsShape* s) {
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) return false;
  bool post = false, successful = false, recvs = false;
  int failures_int = -1;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!r.ReadStr(&key).ok()) return false;
    if (key == "post_duration") post = true;
    if (key == "num_successful_transfers") successful = true;
    if (key == "num_failed_recvs") recvs = true;
    if ((key == "num_failed_transfers" || key == "num_failed_notifications") && failures_int < 0) {
      MsgpackReader a = r;
      uint32_t len;
      MsgpackType first;
      if (a.ReadArrayHeader(&len).ok() && len > 0 && a.PeekType(&first).ok()) {
        if (first == MsgpackType::kInt) failures_int = 1;
        if (first == MsgpackType::kFloat) failures_int = 0;
      }
    }
    if (!r.Skip().ok()) return false;
  }
  if (recvs || !(post || (successful && n == 1))) return false;
  s->nixl_keys = static_cast<int>(n);
  s->nixl_failures_int = failures_int;
  return true;
}

// kv_connector_stats: the NIXL payload, bare or a MultiConnector child (flat or data-wrapped).
void KvShape(MsgpackReader& r, StatsShape* s) {
  MsgpackType t;
  if (!r.PeekType(&t).ok() || t != MsgpackType::kMap) {
    (void)r.Skip();
    return;
  }
  {
    MsgpackReader bare = r;
    if (NixlShape(bare, s)) {
      r = bare;
      return;
    }
  }
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) return;
  for (uint32_t i = 0; i < n; ++i) {
    if (!r.Skip().ok()) return;  // the child's class name
    MsgpackReader child = r;
    if (!r.Skip().ok()) return;
    if (s->nixl_keys >= 0 || !child.PeekType(&t).ok() || t != MsgpackType::kMap) continue;
    MsgpackReader wrapped = child;
    uint32_t m;
    std::string_view key;
    if (wrapped.ReadMapHeader(&m).ok() && m == 1 && wrapped.ReadStr(&key).ok() && key == "data" &&
        wrapped.PeekType(&t).ok() && t == MsgpackType::kMap) {
      child = wrapped;
    }
    StatsShape probe;
    if (NixlShape(child, &probe)) {
      s->nixl_keys = probe.nixl_keys;
      s->nixl_failures_int = probe.nixl_failures_int;
    }
  }
}

void ReadStatsShape(MsgpackReader& r, StatsShape* s) {
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) return;
  s->present = true;
  s->key_count = n;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!r.ReadStr(&key).ok()) {
      ++s->unknown_keys;
      if (!r.Skip().ok() || !r.Skip().ok()) return;
      continue;
    }
    const int index = StatsKeyIndex(key);
    if (index < 0) {
      ++s->unknown_keys;
    } else {
      s->keys |= 1u << index;
    }
    if (key == "prefix_cache_stats") {
      s->prefix_keys = MapKeyCount(r);
    } else if (key == "connector_prefix_cache_stats") {
      s->connector_prefix_keys = MapKeyCount(r);
    } else if (key == "spec_decoding_stats") {
      s->spec_keys = MapKeyCount(r);
    } else if (key == "kv_connector_stats") {
      KvShape(r, s);
    } else if (!r.Skip().ok()) {
      return;
    }
  }
}

// A map that holds num_prompt_tokens (PrefillStats): its key count; -1 otherwise.
int PrefillKeys(MsgpackReader r) {
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) return -1;
  bool prefill = false;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (r.ReadStr(&key).ok() && key == "num_prompt_tokens") prefill = true;
    if (!r.Skip().ok()) return -1;
  }
  return prefill ? static_cast<int>(n) : -1;
}

bool ReadOutputShape(MsgpackReader& r, OutputShape* o) {
  uint32_t n;
  if (!r.ReadArrayHeader(&n).ok()) return false;
  o->length = n;
  for (uint32_t p = 0; p < n; ++p) {
    MsgpackType t;
    if (!r.PeekType(&t).ok()) return false;
    if (p < kMaxOutputPositions) o->types[p] = TypeBit(t);
    if (p == 2 && t == MsgpackType::kArray) {
      MsgpackReader a = r;
      uint32_t arity;
      MsgpackType first;
      if (a.ReadArrayHeader(&arity).ok()) {
        o->logprobs_arity = static_cast<int>(arity);
        // A tensor triple [dtype str, shape, data].
        uint32_t inner;
        if (arity > 0 && a.PeekType(&first).ok() && first == MsgpackType::kArray &&
            a.ReadArrayHeader(&inner).ok() && inner == 3 && a.PeekType(&first).ok() &&
            first == MsgpackType::kStr) {
          o->logprobs_tensors = true;
        }
      }
    } else if (p == 5 && t == MsgpackType::kInt) {
      MsgpackReader a = r;
      int64_t v;
      if (a.ReadInt(&v).ok()) o->finish_reason = v;
    } else if (t == MsgpackType::kMap && o->prefill_position < 0) {
      const int keys = PrefillKeys(r);
      if (keys >= 0) {
        o->prefill_position = static_cast<int>(p);
        o->prefill_keys = static_cast<uint32_t>(keys);
      }
    }
    if (!r.Skip().ok()) return false;
  }
  return true;
}

enum class Verdict : uint8_t { kReject, kLoose, kExact };

Verdict CheckOutput(const WireGeneration& g, const OutputShape& o) {
  const uint32_t common = std::min<uint32_t>({o.length, g.output_count, kMaxOutputPositions});
  for (uint32_t p = 0; p < common; ++p) {
    if ((o.types[p] & AcceptedTypes(g.output[p])) == 0) return Verdict::kReject;
  }
  if (o.finish_reason > g.max_finish_reason) return Verdict::kReject;
  if (o.logprobs_arity >= 0) {
    switch (g.logprobs) {
      case LogprobsForm::kListTriple:
        if (o.logprobs_arity != 3 || o.logprobs_tensors) return Verdict::kReject;
        break;
      case LogprobsForm::kListQuadruple:
        if (o.logprobs_arity != 4 || o.logprobs_tensors) return Verdict::kReject;
        break;
      case LogprobsForm::kTensors:
        if (!o.logprobs_tensors) return Verdict::kReject;
        break;
    }
  }
  if (o.prefill_position >= 0) {
    if (g.output_field(static_cast<size_t>(o.prefill_position)) != OutputField::kPrefillStats ||
        o.prefill_keys != g.prefill_stats_keys) {
      return Verdict::kReject;
    }
  }
  return o.length == g.output_count ? Verdict::kExact : Verdict::kLoose;
}

Verdict CheckStats(const WireGeneration& g, uint32_t g_keys, const StatsShape& s) {
  if (s.unknown_keys > 0 || (s.keys & ~g_keys) != 0) return Verdict::kReject;
  if (s.prefix_keys >= 0 && s.prefix_keys != g.prefix_cache_stats_keys) return Verdict::kReject;
  if (s.connector_prefix_keys >= 0 && s.connector_prefix_keys != g.prefix_cache_stats_keys) {
    return Verdict::kReject;
  }
  if (s.spec_keys >= 0 && s.spec_keys != g.spec_decoding_stats_keys) return Verdict::kReject;
  if (s.nixl_keys >= 0) {
    if (s.nixl_keys != g.nixl_keys) return Verdict::kReject;
    if (s.nixl_failures_int >= 0 && (s.nixl_failures_int == 1) != g.nixl_failures_are_ints) {
      return Verdict::kReject;
    }
  }
  return s.keys == g_keys ? Verdict::kExact : Verdict::kLoose;
}

void Apply(Verdict v, size_t i, WireFit* fit) {
  const WireCandidates bit = WireCandidates{1} << i;
  if (v == Verdict::kReject) fit->fits &= ~bit;
  if (v != Verdict::kExact) fit->exact &= ~bit;
}

// Narrows `candidates` by a message's fit: the generations it fits, and among them those that
// match it exactly when there are any. 0 if it fits none of them.
WireCandidates Narrow(WireCandidates candidates, const WireFit& fit) {
  WireCandidates left = candidates & fit.fits;
  if ((left & fit.exact) != 0) left &= fit.exact;
  return left;
}

bool AllAgree(WireCandidates candidates) {
  const auto gens = WireGenerations();
  for (size_t i = 0; i < gens.size(); ++i) {
    if ((candidates & (WireCandidates{1} << i)) == 0) continue;
    for (size_t j = i + 1; j < gens.size(); ++j) {
      if ((candidates & (WireCandidates{1} << j)) != 0 && !LayoutsAgree(gens[i], gens[j])) {
        return false;
      }
    }
  }
  return true;
}

WireCandidates Only(const WireGeneration& g) { return WireCandidates{1} << WireGenerationIndex(g); }

// The ready form of a registration: the older empty frame, or which fields the ready response
// has.
ReadyForm ReadyFormOf(const EngineCoreReadyResponse& r) {
  if (r.empty_registration) return ReadyForm::kEmptyRegistration;
  const auto has = [&r](std::string_view key) {
    return std::find(r.keys.begin(), r.keys.end(), key) != r.keys.end();
  };
  for (std::string_view k : {"tensor_parallel_size", "pipeline_parallel_size",
                             "decode_context_parallel_size", "data_parallel_rank", "max_num_seqs",
                             "max_num_batched_tokens", "instance_id", "kv_events_config"}) {
    if (has(k)) return ReadyForm::kWithParallelism;
  }
  for (std::string_view k :
       {"block_size", "dtype", "vllm_version", "world_size", "data_parallel_size",
        "kv_cache_size_tokens", "kv_cache_max_concurrency"}) {
    if (has(k)) return ReadyForm::kWithVersion;
  }
  return ReadyForm::kThreeFields;
}

WireCandidates WithReadyForm(ReadyForm form) {
  WireCandidates c = 0;
  const auto gens = WireGenerations();
  for (size_t i = 0; i < gens.size(); ++i) {
    if (gens[i].ready_form == form) c |= WireCandidates{1} << i;
  }
  return c;
}

}  // namespace

WireCandidates AllWireGenerations() {
  const size_t n = WireGenerations().size();
  return n >= 32 ? ~WireCandidates{0} : (WireCandidates{1} << n) - 1;
}

std::string WireCandidateNames(WireCandidates candidates) {
  std::string names;
  const auto gens = WireGenerations();
  for (size_t i = gens.size(); i-- > 0;) {  // newest first
    if ((candidates & (WireCandidates{1} << i)) == 0) continue;
    if (!names.empty()) names += ", ";
    names += gens[i].name;
  }
  return names;
}

const WireGeneration& NewestOf(WireCandidates candidates) {
  const auto gens = WireGenerations();
  for (size_t i = gens.size(); i-- > 0;) {
    if ((candidates & (WireCandidates{1} << i)) != 0) return gens[i];
  }
  return NewestWireGeneration();
}

WireFit FitWireGenerations(std::string_view frame0) {
  WireFit fit;
  fit.fits = fit.exact = AllWireGenerations();
  MsgpackReader r(frame0);
  uint32_t n;
  if (!r.ReadArrayHeader(&n).ok() || n < 2 || !r.Skip().ok()) return fit;  // engine_index
  const auto gens = WireGenerations();
  static const std::vector<uint32_t> kKeyBits = [] {
    std::vector<uint32_t> bits;
    for (const WireGeneration& g : WireGenerations()) bits.push_back(StatsKeyBits(g));
    return bits;
  }();
  uint32_t outputs = 0;
  uint32_t min_len = UINT32_MAX, max_len = 0;
  MsgpackType t;
  if (r.PeekType(&t).ok() && t == MsgpackType::kArray) {
    uint32_t count;
    if (r.ReadArrayHeader(&count).ok()) {
      for (uint32_t i = 0; i < count && i < kMaxOutputsExamined; ++i) {
        OutputShape shape;
        if (!ReadOutputShape(r, &shape)) break;
        ++outputs;
        min_len = std::min(min_len, shape.length);
        max_len = std::max(max_len, shape.length);
        for (size_t g = 0; g < gens.size(); ++g) Apply(CheckOutput(gens[g], shape), g, &fit);
      }
      // The rest of the outputs are not looked at.
      for (uint32_t i = outputs; i < count; ++i) {
        if (!r.Skip().ok()) break;
      }
    }
  } else {
    (void)r.Skip();
  }
  fit.has_outputs = outputs > 0;
  StatsShape stats;
  if (n >= 3 && r.PeekType(&t).ok() && t == MsgpackType::kMap) {
    ReadStatsShape(r, &stats);
    if (stats.present) {
      for (size_t g = 0; g < gens.size(); ++g) {
        Apply(CheckStats(gens[g], kKeyBits[g], stats), g, &fit);
      }
    }
  }
  fit.informative = fit.has_outputs || stats.present;
  if (!fit.informative) {
    fit.fits = fit.exact = AllWireGenerations();
    return fit;
  }
  if (fit.has_outputs) {
    fit.evidence = "EngineCoreOutput of " + std::to_string(min_len) +
                   (max_len != min_len ? "-" + std::to_string(max_len) : std::string()) +
                   " positions";
  }
  if (stats.present) {
    if (!fit.evidence.empty()) fit.evidence += ", ";
    fit.evidence += "SchedulerStats of " + std::to_string(stats.key_count) + " keys";
    if (stats.prefix_keys >= 0) {
      fit.evidence += ", PrefixCacheStats of " + std::to_string(stats.prefix_keys);
    }
    if (stats.nixl_keys >= 0) {
      fit.evidence += ", NIXL payload of " + std::to_string(stats.nixl_keys);
    }
  }
  return fit;
}

Result<const WireGeneration*> ParseEngineWire(std::string_view value) {
  if (value.empty() || value == "auto") return static_cast<const WireGeneration*>(nullptr);
  if (const WireGeneration* g = FindWireGeneration(value)) return g;
  std::string known;
  for (const WireGeneration& g : WireGenerations()) {
    known += known.empty() ? "" : ", ";
    known += g.name;
  }
  return Status::InvalidArgument("--engine-wire: '" + std::string(value) +
                                 "' is neither auto, a wire generation (" + known +
                                 ") nor a vLLM release one of them pins");
}

std::string DescribeRecognition(const WireRecognition& rec) {
  std::string line = "engine " + std::to_string(rec.engine_index) + ": wire generation ";
  if (!rec.recognised) {
    return line + "not decided yet: fits " + WireCandidateNames(rec.candidates) +
           " (messages so far decode the same in each)";
  }
  line += rec.name();
  if (rec.forced) return line + " (--engine-wire)";
  line += " (" + rec.how + ")";
  if (rec.generation == nullptr) {
    return line + "; decoded as the newest, " + std::string(NewestWireGeneration().name);
  }
  const WireCandidates others =
      rec.candidates & ~(WireCandidates{1} << WireGenerationIndex(*rec.generation));
  if (rec.ambiguous) {
    return line + "; AMBIGUOUS: also fits " + WireCandidateNames(others) +
           ", which decode differently; --engine-wire chooses";
  }
  if (others != 0) {
    line += "; " + WireCandidateNames(others) + (std::has_single_bit(others) ? " has" : " have") +
            " the same layout, decoded the same";
  }
  return line;
}

// ---------------------------------------------------------------------------------------------
// WireRecognizer

WireRecognizer::WireRecognizer(int64_t engine_index, const WireGeneration* forced)
    : forced_(forced) {
  rec_.engine_index = engine_index;
  if (forced != nullptr) {
    rec_.generation = forced;
    rec_.recognised = true;
    rec_.forced = true;
    rec_.candidates = Only(*forced);
    rec_.how = "--engine-wire";
  } else {
    rec_.candidates = AllWireGenerations();
  }
}

bool WireRecognizer::Settle(const std::string& how) {
  if (rec_.forced || !AllAgree(rec_.candidates)) return false;
  const WireGeneration* chosen = &NewestOf(rec_.candidates);
  const bool changed = !rec_.recognised || rec_.generation != chosen;
  rec_.generation = chosen;
  rec_.recognised = true;
  rec_.ambiguous = false;
  if (changed) rec_.how = how;
  return changed;
}

void WireRecognizer::ObserveHandshake(const EngineCoreReadyResponse& ready_response,
                                      const HandshakeMessage* ready) {
  const ReadyForm form = ReadyFormOf(ready_response);
  if (rec_.forced) {
    if (forced_->ready_form != form) {
      notes_.push_back("engine " + std::to_string(rec_.engine_index) + " registered with a " +
                       ReadyFormName(form) + ", which --engine-wire " + std::string(forced_->name) +
                       " does not send (it sends a " + ReadyFormName(forced_->ready_form) + ")");
    }
    return;
  }
  std::string how = ReadyFormName(form);
  WireCandidates by_form = WithReadyForm(form);
  // READY's num_gpu_blocks says the same as an empty registration; one without the other is a
  // handshake no generation sent, and the registration is trusted.
  if (ready != nullptr &&
      ready->num_gpu_blocks.has_value() != (form == ReadyForm::kEmptyRegistration)) {
    notes_.push_back("engine " + std::to_string(rec_.engine_index) + ": READY " +
                     (ready->num_gpu_blocks ? "carries" : "lacks") +
                     " num_gpu_blocks, which no generation with a " + ReadyFormName(form) +
                     " does; recognising by the registration");
  }
  if ((rec_.candidates & by_form) != 0) rec_.candidates &= by_form;
  if (!ready_response.vllm_version.empty()) {
    if (const WireGeneration* g = WireGenerationOfVllmVersion(ready_response.vllm_version)) {
      if ((rec_.candidates & Only(*g)) != 0) {
        rec_.candidates = Only(*g);
        how += ", vllm_version " + ready_response.vllm_version;
      } else {
        notes_.push_back("engine " + std::to_string(rec_.engine_index) + ": vllm_version " +
                         ready_response.vllm_version + " names " + std::string(g->name) +
                         ", which its " + ReadyFormName(form) + " rules out; not used");
      }
    }
  }
  Settle(how);
}

bool WireRecognizer::ObserveMessage(std::string_view frame0, uint64_t message_number) {
  if (!observing_) return false;
  const WireFit fit = FitWireGenerations(frame0);
  if (!fit.informative) return false;
  ++observed_;
  const std::string engine = "engine " + std::to_string(rec_.engine_index);
  const std::string at = "message " + std::to_string(message_number) + " (" + fit.evidence + ")";
  bool changed = false;
  if (rec_.forced) {
    if ((fit.fits & Only(*forced_)) == 0 && !told_mismatch_) {
      told_mismatch_ = true;
      notes_.push_back(engine + ": " + at + " does not fit --engine-wire " +
                       std::string(forced_->name) +
                       (fit.fits != 0 ? "; it fits " + WireCandidateNames(Narrow(fit.fits, fit))
                                      : std::string("; it fits no known generation")) +
                       ". Parts that do not decode are skipped and counted");
    }
    if (told_mismatch_ || observed_ >= kObservedMessages) observing_ = false;
    return false;
  }
  WireCandidates left = Narrow(rec_.candidates, fit);
  if (left == 0 && fit.fits != 0) {
    // The structure contradicts what the handshake (or earlier messages) said: the bytes are
    // what gets decoded, so they win.
    left = Narrow(fit.fits, fit);
    notes_.push_back(engine + ": " + at + " fits " + WireCandidateNames(left) +
                     ", not what it was taken for (" + WireCandidateNames(rec_.candidates) +
                     "); following the message");
  }
  if (left != 0) {
    matched_any_ = true;
    const bool narrowed = left != rec_.candidates;
    rec_.candidates = left;
    if (narrowed || !rec_.recognised) changed = Settle(at);
    if (rec_.generation == nullptr && rec_.recognised && AllAgree(left)) changed = Settle(at);
    if (rec_.generation != nullptr && (rec_.candidates & Only(*rec_.generation)) == 0) {
      // The bytes ruled out the generation decided earlier and what is left decodes
      // differently (Settle declined): decided again between what is left, as Decide does.
      rec_.recognised = false;
      changed = Decide(at + " contradicts " + std::string(rec_.generation->name));
    }
  } else if (!matched_any_ && rec_.generation == nullptr) {
    // Fits nothing, and nothing fitted before: an engine newer (or other) than every table.
    if (!rec_.recognised) {
      rec_.recognised = true;
      rec_.ambiguous = false;
      rec_.how = at + " fits no known generation";
      changed = true;
      notes_.push_back(engine + ": " + at +
                       " fits no known wire generation; decoding it as the newest (" +
                       std::string(NewestWireGeneration().name) +
                       "), which skips what it does not know. --engine-wire names a "
                       "generation or vLLM release to use instead");
    }
  } else if (!told_unfit_) {
    told_unfit_ = true;
    notes_.push_back(engine + ": " + at + " fits no generation left (" +
                     WireCandidateNames(rec_.candidates) + "); kept " + rec_.name());
  }
  if ((std::has_single_bit(rec_.candidates) && matched_any_) || observed_ >= kObservedMessages) {
    observing_ = false;
  }
  return changed;
}

bool WireRecognizer::Decide(std::string why) {
  if (rec_.recognised) return false;
  const bool agree = AllAgree(rec_.candidates);
  rec_.generation = &NewestOf(rec_.candidates);
  rec_.recognised = true;
  rec_.ambiguous = !agree;
  rec_.how = std::move(why);
  if (!agree) {
    notes_.push_back("engine " + std::to_string(rec_.engine_index) +
                     ": wire generation ambiguous between " + WireCandidateNames(rec_.candidates) +
                     " (" + rec_.how + "); decoding as " + std::string(rec_.generation->name) +
                     ". Start with --engine-wire <generation or vLLM release> to choose");
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// WireDecoder

struct WireDecoder::Engine {
  explicit Engine(int64_t index, const WireGeneration* forced) : recognizer(index, forced) {}
  WireRecognizer recognizer;
  struct Held {
    std::vector<std::string> frames;
    DecodeContext ctx;
  };
  std::deque<Held> held;
  size_t held_bytes = 0;
  bool reported = false;
  WireCandidates reported_candidates = 0;
};

WireDecoder::WireDecoder(WireDecoderOptions options) : options_(std::move(options)) {}
WireDecoder::~WireDecoder() = default;

WireDecoder::Engine& WireDecoder::EngineFor(int64_t engine_index) {
  if (engine_index < 0 || engine_index > 65535) {
    if (!other_) other_ = std::make_unique<Engine>(-1, options_.forced);
    return *other_;
  }
  const auto slot = static_cast<size_t>(engine_index);
  if (engines_.size() <= slot) engines_.resize(slot + 1);
  if (!engines_[slot]) engines_[slot] = std::make_unique<Engine>(engine_index, options_.forced);
  return *engines_[slot];
}

void WireDecoder::Report(Engine& e, bool changed) const {
  for (std::string& note : e.recognizer.TakeNotes()) {
    if (options_.log) options_.log(note);
  }
  const WireRecognition& rec = e.recognizer.recognition();
  if (rec.candidates != e.reported_candidates && rec.engine_index >= 0) {
    e.reported_candidates = rec.candidates;
    if (options_.on_candidates) options_.on_candidates(rec.engine_index, rec.candidates);
  }
  if (!rec.recognised || (e.reported && !changed)) return;
  e.reported = true;
  if (options_.on_recognised && rec.engine_index >= 0) options_.on_recognised(rec);
}

void WireDecoder::ObserveHandshake(int64_t engine_index,
                                   const EngineCoreReadyResponse& ready_response,
                                   const HandshakeMessage* ready) {
  Engine& e = EngineFor(engine_index);
  // An engine that registers again may be another build: recognised afresh (nothing is held:
  // a registration comes before the engine's outputs).
  e.recognizer = WireRecognizer(engine_index, options_.forced);
  e.reported = false;
  e.reported_candidates = 0;
  e.recognizer.ObserveHandshake(ready_response, ready);
  Report(e, true);
}

void WireDecoder::DecodeNow(const WireGeneration& table, std::span<const std::string_view> frames,
                            const DecodeContext& ctx, const OnMessage& on_message,
                            const OnFailure& on_failure) {
  DecodeContext with_table = ctx;
  with_table.wire = &table;
  Status s = DecodeEngineCoreOutputs(frames, with_table, &scratch_);
  if (s.ok()) {
    on_message(scratch_, with_table);
  } else if (on_failure) {
    on_failure(s, with_table);
  }
}

void WireDecoder::Flush(Engine& e, const OnMessage& on_message, const OnFailure& on_failure) {
  while (!e.held.empty()) {
    Engine::Held held = std::move(e.held.front());
    e.held.pop_front();
    std::vector<std::string_view> views(held.frames.begin(), held.frames.end());
    DecodeNow(e.recognizer.table(), views, held.ctx, on_message, on_failure);
  }
  e.held_bytes = 0;
}

void WireDecoder::Feed(std::span<const std::string_view> frames, const DecodeContext& ctx,
                       const OnMessage& on_message, const OnFailure& on_failure) {
  int64_t engine_index = -1;
  if (!frames.empty()) {
    MsgpackReader r(frames[0]);
    uint32_t n;
    if (!r.ReadArrayHeader(&n).ok() || n == 0 || !r.ReadInt(&engine_index).ok()) {
      engine_index = -1;
    }
  }
  Engine& e = EngineFor(engine_index);
  // The common case, once an engine is recognised and observed: straight to the decoder.
  if (!e.recognizer.observing() && e.held.empty()) {
    DecodeNow(e.recognizer.table(), frames, ctx, on_message, on_failure);
    return;
  }
  if (!frames.empty()) {
    const bool changed = e.recognizer.ObserveMessage(frames[0], ctx.message_number);
    Report(e, changed);
  }
  const WireRecognition& rec = e.recognizer.recognition();
  if (rec.recognised) {
    Flush(e, on_message, on_failure);
    DecodeNow(e.recognizer.table(), frames, ctx, on_message, on_failure);
    return;
  }
  // Not recognised: a message without outputs decodes the same whatever the generation, and
  // is recorded now unless earlier ones wait (the order is kept).
  const bool has_outputs = !frames.empty() && FitWireGenerations(frames[0]).has_outputs;
  if (e.held.empty() && !has_outputs) {
    DecodeNow(e.recognizer.table(), frames, ctx, on_message, on_failure);
    return;
  }
  Engine::Held held;
  held.ctx = ctx;
  for (std::string_view f : frames) {
    held.frames.emplace_back(f);
    e.held_bytes += f.size();
  }
  e.held.push_back(std::move(held));
  if (e.held.size() >= options_.max_held_messages || e.held_bytes >= options_.max_held_bytes) {
    const bool changed = e.recognizer.Decide(std::to_string(e.held.size()) +
                                             " messages with outputs did not tell them apart");
    Report(e, changed);
    Flush(e, on_message, on_failure);
  }
}

void WireDecoder::Finish(const OnMessage& on_message, const OnFailure& on_failure) {
  const auto finish = [&](Engine& e) {
    if (e.held.empty()) return;
    const bool changed =
        e.recognizer.Decide("the stream ended before its messages told them apart");
    Report(e, changed);
    Flush(e, on_message, on_failure);
  };
  for (auto& e : engines_) {
    if (e) finish(*e);
  }
  if (other_) finish(*other_);
}

std::vector<WireRecognition> WireDecoder::recognitions() const {
  std::vector<WireRecognition> out;
  for (const auto& e : engines_) {
    if (e) out.push_back(e->recognizer.recognition());
  }
  return out;
}

const WireRecognition* WireDecoder::recognition(int64_t engine_index) const {
  if (engine_index < 0 || static_cast<size_t>(engine_index) >= engines_.size() ||
      !engines_[static_cast<size_t>(engine_index)]) {
    return nullptr;
  }
  return &engines_[static_cast<size_t>(engine_index)]->recognizer.recognition();
}

}  // namespace vmetrics
