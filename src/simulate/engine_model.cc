// SPDX-License-Identifier: Apache-2.0
#include "engine_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>

#include "msgspec_writer.h"
#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics::internal {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kVocabulary = 32000;
constexpr int64_t kStoreChunkTokens = 256;  // tokens per Mooncake store key
constexpr double kNominalStepSeconds = 0.01;

constexpr int kQueued = 1;
constexpr int kScheduled = 2;
constexpr int kPreempted = 3;
constexpr int kFinishStop = 0;
constexpr int kFinishLength = 1;

const char* const kNixlClass = "NixlConnector";
const char* const kMooncakeClass = "MooncakeConnector";
const char* const kStoreClass = "MooncakeStoreConnector";

int64_t Clamp(int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); }

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

EngineModel::EngineModel(const SimulatorOptions& options, int engine_index, uint64_t seed,
                         bool deterministic_time)
    : options_(options),
      engine_index_(engine_index),
      deterministic_time_(deterministic_time),
      pd_connector_(options.connector == SimConnector::kNixl ||
                    options.connector == SimConnector::kMooncakeP2p ||
                    options.connector == SimConnector::kMulti),
      store_connector_(options.connector == SimConnector::kMooncakeStore ||
                       options.connector == SimConnector::kMulti) {
  // Each engine draws from its own stream, a function of (seed, engine index) only, so a
  // seeded run is reproducible whatever the thread interleaving.
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(engine_index)};
  rng_.seed(seq);
  totals_.engine_index = engine_index;
  if (options_.num_speculative_tokens > 0) {
    totals_.spec_accepted_per_pos.assign(static_cast<size_t>(options_.num_speculative_tokens), 0);
  }
}

// ---- Distributions ---------------------------------------------------------------------------
// Written out instead of std::*_distribution, whose algorithms differ between standard
// libraries: a seed must give the same capture everywhere.

double EngineModel::Uniform(double lo, double hi) {
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;  // [0, 1)
  return lo + (hi - lo) * u;
}

bool EngineModel::Chance(double p) { return Uniform(0, 1) < p; }

double EngineModel::LogNormal(double median, double sigma) {
  // Box-Muller; 1 - u keeps the logarithm finite.
  const double u1 = 1.0 - Uniform(0, 1);
  const double u2 = Uniform(0, 1);
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  return median * std::exp(sigma * z);
}

int64_t EngineModel::LogUniformInt(int64_t lo, int64_t hi) {
  const double v =
      std::exp(Uniform(std::log(static_cast<double>(lo)), std::log(static_cast<double>(hi) + 1.0)));
  return Clamp(static_cast<int64_t>(v), lo, hi);
}

int64_t EngineModel::Poisson(double mean) {
  // Knuth's method; means here stay below 10.
  const double limit = std::exp(-mean);
  int64_t k = 0;
  double p = Uniform(0, 1);
  while (p > limit) {
    ++k;
    p *= Uniform(0, 1);
  }
  return k;
}

// ---- Time ------------------------------------------------------------------------------------

double EngineModel::StepTime() const {
  if (deterministic_time_) {
    const double dt = options_.rate_hz > 0 ? 1.0 / options_.rate_hz : kNominalStepSeconds;
    return 1000.0 + static_cast<double>(step_) * dt;
  }
  return Now();
}

double EngineModel::Now() {
  // steady_clock is CLOCK_MONOTONIC on Linux, the clock of Python's time.monotonic().
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---- The scheduler model --------------------------------------------------------------------

int64_t EngineModel::BlocksFor(const Request& r) const {
  return CeilDiv(r.prompt_tokens + r.generated + 1, options_.block_size);
}

int64_t EngineModel::UsedBlocks() const {
  int64_t used = 0;
  for (const Request& r : running_) used += BlocksFor(r);
  return used;
}

void EngineModel::DrawCacheHits(Request* r) {
  const int64_t block = options_.block_size;
  if (Chance(0.35)) {
    // Local prefix hit: whole blocks only, never the last prompt token.
    const int64_t hit =
        static_cast<int64_t>(Uniform(0.2, 0.95) * static_cast<double>(r->prompt_tokens));
    r->local_hit_tokens = std::min(hit / block * block, (r->prompt_tokens - 1) / block * block);
  }
  const int64_t rest =
      std::max<int64_t>(0, (r->prompt_tokens - 1 - r->local_hit_tokens) / block * block);
  if (pd_connector_ && Chance(0.9)) {
    r->external_hit_tokens = rest;  // prefilled remotely, pulled
    r->kv_pulled = true;
    r->deferred_steps = 1 + static_cast<int>(rng_() % 3);
  } else if (store_connector_ && Chance(0.3)) {
    r->external_hit_tokens =
        static_cast<int64_t>(Uniform(0.1, 1.0) * static_cast<double>(rest)) / block * block;
  }
}

bool EngineModel::IsLive(const std::string& id) const {
  for (const Request& r : waiting_) {
    if (r.id == id) return true;
  }
  for (const Request& r : running_) {
    if (r.id == id) return true;
  }
  return false;
}

namespace {

// The value of `key` in a raw msgpack map, raw; "" when absent or not a map.
std::string RawMapValue(std::string_view map, std::string_view key) {
  protocol::MsgpackReader r(map);
  uint32_t n = 0;
  if (!r.ReadMapHeader(&n).ok()) return "";
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view k, v;
    if (!r.ReadStr(&k).ok()) return "";
    if (!r.ReadRaw(&v).ok()) return "";
    if (k == key) return std::string(v);
  }
  return "";
}

// What NixlConnector's scheduler reads from a request's kv_transfer_params.
struct NixlParams {
  bool do_remote_decode = false;
  bool do_remote_prefill = false;
  int64_t remote_blocks = 0;    // ids in remote_block_ids, over every KV cache group
  int fields_for_transfer = 0;  // of remote_engine_id, remote_request_id, remote_host, remote_port
};

// `if params.get(key):` on one raw msgpack value: nil, false, 0 and empty containers and
// strings are falsy, anything else truthy.
bool Truthy(std::string_view raw) {
  if (raw.empty()) return false;
  const auto b = static_cast<uint8_t>(raw[0]);
  if (raw.size() == 1) {
    // nil, false, 0, "" (fixstr), [] (fixarray), {} (fixmap)
    return !(b == 0xc0 || b == 0xc2 || b == 0x00 || b == 0xa0 || b == 0x90 || b == 0x80);
  }
  return true;
}

// remote_block_ids: a list of lists (one per KV cache group) or, from older vLLM, one list.
int64_t CountBlockIds(std::string_view raw) {
  protocol::MsgpackReader r(raw);
  uint32_t n = 0;
  if (!r.ReadArrayHeader(&n).ok()) return 0;
  int64_t count = 0;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view item;
    if (!r.ReadRaw(&item).ok()) return count;
    protocol::MsgpackReader group(item);
    uint32_t m = 0;
    count += group.ReadArrayHeader(&m).ok() ? m : 1;
  }
  return count;
}

NixlParams ReadNixlParams(std::string_view map) {
  NixlParams p;
  protocol::MsgpackReader r(map);
  uint32_t n = 0;
  if (!r.ReadMapHeader(&n).ok()) return p;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view k;
    if (!r.ReadStr(&k).ok()) return p;
    std::string_view v;
    if (!r.ReadRaw(&v).ok()) return p;
    if (k == "do_remote_decode") {
      p.do_remote_decode = Truthy(v);
    } else if (k == "do_remote_prefill") {
      p.do_remote_prefill = Truthy(v);
    } else if (k == "remote_block_ids") {
      p.remote_blocks = CountBlockIds(v);
    } else if (k == "remote_engine_id" || k == "remote_request_id" || k == "remote_host" ||
               k == "remote_port") {
      ++p.fields_for_transfer;  // `p in params`: present counts, even as None
    }
  }
  return p;
}

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// FNV-1a over the prompt: a greedy request's tokens are a function of its prompt.
uint64_t PromptHash(const std::vector<int64_t>& prompt) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t t : prompt) {
    h ^= static_cast<uint64_t>(t);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

bool EngineModel::AddServedRequest(const EngineCoreRequestSpec& spec) {
  if (IsLive(spec.request_id)) {
    ++totals_.requests_rejected;
    return false;
  }
  const int64_t max_len = std::max<int64_t>(options_.max_model_len, 16);
  const SamplingParams& sp = spec.sampling;
  Request r;
  r.id = spec.request_id;
  r.prompt_tokens = Clamp(static_cast<int64_t>(spec.prompt_token_ids.size()), 1, max_len - 1);
  // max_tokens None: until the context is full, as vLLM does.
  r.target_tokens = Clamp(sp.max_tokens.value_or(max_len), 1, max_len - r.prompt_tokens);
  auto served = std::make_shared<Served>();
  Served& s = *served;
  s.prompt = spec.prompt_token_ids;
  s.greedy = sp.temperature < 1e-5;
  if (sp.seed) {
    s.rng.seed(static_cast<uint64_t>(*sp.seed));
  } else if (s.greedy) {
    s.rng.seed(PromptHash(s.prompt));
  } else {
    s.rng.seed(rng_());
  }
  // vLLM's check_stop: EOS unless ignore_eos (the frontend leaves _eos_token_id unset then),
  // and any stop_token_ids token; both only once min_tokens tokens are out (the engine masks
  // _all_stop_token_ids before that).
  if (sp.eos_token_id && !sp.ignore_eos) {
    s.eos = *sp.eos_token_id;
    s.stop_candidates.push_back(*sp.eos_token_id);
  }
  for (int64_t t : sp.stop_token_ids.value_or(std::vector<int64_t>{})) {
    if (!Contains(s.stop_candidates, t)) s.stop_candidates.push_back(t);
  }
  if (sp.allowed_token_ids) s.allowed = *sp.allowed_token_ids;
  s.logprobs = sp.logprobs;
  s.prompt_logprobs = sp.prompt_logprobs;
  if (options_.echo_kv_transfer_params && !sp.extra_args.empty()) {
    s.kv_transfer_params = RawMapValue(sp.extra_args, "kv_transfer_params");
  }
  const int64_t earliest = std::max<int64_t>(sp.min_tokens, 0) + 1;
  if (!s.stop_candidates.empty() && earliest <= r.target_tokens) {
    if (options_.served_stop == SimulatorOptions::ServedStop::kEarliest) {
      r.stops_early = true;
      r.target_tokens = earliest;
    } else if (Chance(0.3)) {
      r.stops_early = true;
      r.target_tokens =
          earliest +
          static_cast<int64_t>(s.rng() % static_cast<uint64_t>(r.target_tokens - earliest + 1));
    }
    if (r.stops_early) s.stop_token = s.stop_candidates[s.rng() % s.stop_candidates.size()];
  }
  r.served = std::move(served);
  if (options_.kv_role != SimKvRole::kNone) {
    ApplyKvRole(RawMapValue(sp.extra_args, "kv_transfer_params"), &r);
  } else {
    DrawCacheHits(&r);
  }
  r.pending_events.push_back({kQueued, StepTime()});
  waiting_.push_back(std::move(r));
  ++totals_.requests_arrived;
  ++totals_.requests_served;
  return true;
}

void EngineModel::ApplyKvRole(std::string_view raw, Request* r) {
  if (raw.empty()) return;
  const NixlParams p = ReadNixlParams(raw);
  const bool producer = options_.kv_role != SimKvRole::kConsumer;
  const bool consumer = options_.kv_role != SimKvRole::kProducer;
  Served& s = *r->served;
  // update_state_after_alloc: do_remote_decode wins over do_remote_prefill.
  if (p.do_remote_decode) {
    s.remote_decode = producer;
    return;
  }
  if (!p.do_remote_prefill || !consumer) return;
  if (p.remote_blocks == 0 || p.fields_for_transfer < 4) {
    ++totals_.kv_params_invalid;
    return;
  }
  // All prompt tokens come from the producer; the last is recomputed for its logits.
  s.remote_blocks = p.remote_blocks;
  r->external_hit_tokens = r->prompt_tokens - 1;
  r->kv_pulled = r->external_hit_tokens > 0;
  r->deferred_steps = 1;
  ++totals_.kv_remote_prefills;
}

std::string EngineModel::ProducerParams(const Request& r) {
  const int64_t blocks = CeilDiv(r.prompt_tokens, options_.block_size);
  MsgspecWriter w;
  w.Map(8);
  w.Key("do_remote_prefill").Bool(true);
  w.Key("do_remote_decode").Bool(false);
  w.Key("remote_block_ids").Array(1);  // one KV cache group
  w.Array(static_cast<uint32_t>(blocks));
  for (int64_t i = 0; i < blocks; ++i) {
    w.Int(next_block_id_);
    next_block_id_ = (next_block_id_ + 1) % options_.num_gpu_blocks;
  }
  w.Key("remote_engine_id")
      .Str(options_.kv_engine_id.empty() ? "stand-in-" + std::to_string(engine_index_)
                                         : options_.kv_engine_id);
  w.Key("remote_request_id").Str(r.id);
  // VLLM_NIXL_SIDE_CHANNEL_HOST / _PORT defaults; the port is offset by the DP index.
  w.Key("remote_host").Str("localhost");
  w.Key("remote_port").Int(5600 + engine_index_);
  w.Key("tp_size").Int(1);
  return w.Take();
}

int64_t EngineModel::NextServedToken(Served* s) {
  for (int attempt = 0;; ++attempt) {
    const int64_t t = s->allowed.empty() ? static_cast<int64_t>(s->rng() % kVocabulary)
                                         : s->allowed[s->rng() % s->allowed.size()];
    // Stop candidates appear only where the request stops; an allowed list of nothing else
    // gets one anyway after a few draws (the model had no other choice).
    if (!Contains(s->stop_candidates, t) || attempt >= 8) return t;
  }
}

SimRoutedExperts EngineModel::RoutedExpertsChunk(Served* s, bool after_first_output,
                                                 int64_t tokens) const {
  SimRoutedExperts out;
  out.rows = after_first_output ? s->last_output_tokens : static_cast<int64_t>(s->prompt.size());
  out.layers = options_.routed_experts_layers;
  out.experts_per_token = 2;
  out.bytes.reserve(static_cast<size_t>(out.rows * out.layers * out.experts_per_token));
  for (int64_t row = s->routed_rows; row < s->routed_rows + out.rows; ++row) {
    for (int64_t layer = 0; layer < out.layers; ++layer) {
      for (int64_t k = 0; k < out.experts_per_token; ++k) {
        out.bytes.push_back(static_cast<char>((row * 31 + layer * 7 + k) % 256));
      }
    }
  }
  s->routed_rows += out.rows;
  s->last_output_tokens = tokens;
  return out;
}

SimLogprobs EngineModel::LogprobRows(Served* s, const std::vector<int64_t>& tokens, int64_t k,
                                     bool prompt) {
  SimLogprobs out;
  out.prompt = prompt;
  const int64_t top = k < 0 ? 64 : k;  // -1: "the whole vocabulary", 64 here
  out.rows = static_cast<int64_t>(tokens.size());
  out.columns = top + 1;
  for (int64_t token : tokens) {
    // The token's rank: 1 for greedy sampling, else 1-3; the top k are `token` at its rank and
    // other ids, with falling logprobs.
    const int64_t rank = s->greedy ? 1 : 1 + static_cast<int64_t>(s->rng() % 3);
    float lp = -static_cast<float>(s->rng() % 1000) / 4000.0f;
    std::vector<float> tops;
    for (int64_t j = 0; j < std::max(top, rank); ++j) {
      tops.push_back(lp);
      lp -= 0.05f + static_cast<float>(s->rng() % 1000) / 1000.0f;
    }
    out.token_ids.push_back(token);
    out.logprobs.push_back(tops[static_cast<size_t>(rank - 1)]);
    for (int64_t j = 0; j < top; ++j) {
      int64_t id = j + 1 == rank ? token : static_cast<int64_t>(s->rng() % kVocabulary);
      if (j + 1 != rank && id == token) id = (id + 1) % kVocabulary;
      out.token_ids.push_back(id);
      out.logprobs.push_back(tops[static_cast<size_t>(j)]);
    }
    out.ranks.push_back(rank);
  }
  return out;
}

void EngineModel::AbortServedRequests(std::span<const std::string> ids) {
  for (const std::string& id : ids) {
    auto match = [&id](const Request& r) { return r.id == id; };
    if (auto w = std::find_if(waiting_.begin(), waiting_.end(), match); w != waiting_.end()) {
      waiting_.erase(w);
      ++totals_.requests_aborted;
    } else if (auto r = std::find_if(running_.begin(), running_.end(), match);
               r != running_.end()) {
      running_.erase(r);
      ++totals_.requests_aborted;
    }
  }
}

void EngineModel::Arrive(double now) {
  if (!options_.synthetic_requests) return;
  // The load follows a slow cycle with a random walk on top, so the gauges move the way they
  // do in production: mostly comfortable, now and then at the sequence or KV-block limit
  // (requests wait, the newest get preempted).
  load_walk_ = std::clamp(load_walk_ + Uniform(-0.05, 0.05), -0.7, 0.7);
  const double cycle = std::sin(2.0 * std::numbers::pi * static_cast<double>(step_) / 600.0);
  const double rate = std::clamp(0.8 * (1.0 + 0.6 * cycle) * std::exp(load_walk_), 0.1, 8.0);
  const int64_t n = Poisson(rate);
  const double dt = options_.rate_hz > 0 ? 1.0 / options_.rate_hz : kNominalStepSeconds;
  const int64_t max_len = std::max<int64_t>(options_.max_model_len, 16);
  for (int64_t i = 0; i < n; ++i) {
    Request r;
    r.id = "sim-" + std::to_string(engine_index_) + "-" + std::to_string(next_request_++);
    r.prompt_tokens = Clamp(static_cast<int64_t>(LogNormal(400, 1.0)), 8, max_len / 2);
    r.target_tokens =
        Clamp(static_cast<int64_t>(LogNormal(120, 0.9)), 1, max_len - r.prompt_tokens);
    r.stops_early = Chance(0.6);
    if (r.stops_early)
      r.target_tokens =
          1 + static_cast<int64_t>(Uniform(0, 1) * static_cast<double>(r.target_tokens));
    r.target_tokens = std::min(r.target_tokens, max_len - r.prompt_tokens);
    DrawCacheHits(&r);
    r.pending_events.push_back({kQueued, now - Uniform(0, dt)});
    waiting_.push_back(std::move(r));
    ++totals_.requests_arrived;
  }
}

void EngineModel::Schedule(double now, SimSchedulerStats* stats,
                           std::vector<Request*>* newly_scheduled) {
  SimPrefixCacheStats& prefix = stats->prefix_cache_stats;
  SimPrefixCacheStats connector_prefix;
  std::vector<size_t> first_scheduled;  // indexes into running_
  deferred_this_step_ = 0;
  int64_t used = UsedBlocks();
  bool blocked = false;  // FIFO: once the head does not fit, later requests wait too
  std::deque<Request> still_waiting;
  for (Request& r : waiting_) {
    if (r.deferred_steps > 0) {
      --r.deferred_steps;
      ++deferred_this_step_;
      still_waiting.push_back(std::move(r));
      continue;
    }
    const int64_t need = BlocksFor(r);
    if (blocked || static_cast<int64_t>(running_.size()) >= options_.max_num_seqs ||
        used + need > options_.num_gpu_blocks) {
      blocked = true;
      still_waiting.push_back(std::move(r));
      continue;
    }
    used += need;
    r.pending_events.push_back({kScheduled, now});
    if (!r.ever_scheduled) {
      prefix.requests += 1;
      prefix.queries += r.prompt_tokens;
      prefix.hits += r.local_hit_tokens;
      connector_prefix.requests += 1;
      connector_prefix.queries += r.prompt_tokens - r.local_hit_tokens;
      connector_prefix.hits += r.external_hit_tokens;
    } else {
      prefix.preempted_requests += 1;
      prefix.preempted_queries += r.prompt_tokens + r.generated;
      prefix.preempted_hits += r.local_hit_tokens;
    }
    if (!r.ever_scheduled) first_scheduled.push_back(running_.size());
    r.ever_scheduled = true;
    running_.push_back(std::move(r));
  }
  waiting_ = std::move(still_waiting);
  // running_ stays put until Decode(), so pointers into it are valid for the connector stats.
  for (size_t i : first_scheduled) newly_scheduled->push_back(&running_[i]);
  if (options_.connector != SimConnector::kNone)
    stats->connector_prefix_cache_stats = connector_prefix;
}

SimSpecDecodeMetrics& EngineModel::SpecOf(Request* r) const {
  if (!r->spec) {
    r->spec.emplace();
    r->spec->num_spec_tokens = options_.num_speculative_tokens;
    r->spec->histogram.assign(static_cast<size_t>(options_.num_speculative_tokens) + 1, 0);
  }
  return *r->spec;
}

void EngineModel::ObserveDrafts(Request* r, int64_t drafted, int64_t accepted) const {
  using Level = SimulatorOptions::SpecDecodeMetrics;
  const Level level = options_.per_request_spec_decode_metrics;
  if (level == Level::kNone) return;
  SimSpecDecodeMetrics& m = SpecOf(r);
  m.histogram[static_cast<size_t>(accepted)] += 1;
  m.num_draft_tokens += drafted;
  if (level == Level::kDetailed) {
    m.per_step_accepted.push_back(accepted);
    m.per_step_drafted.push_back(drafted);
  }
}

void EngineModel::Decode(SimMessage* message, SimSpecDecodingStats* spec) {
  const int k = options_.num_speculative_tokens;
  std::vector<Request> still_running;
  still_running.reserve(running_.size());
  for (Request& r : running_) {
    int64_t tokens = 1;
    if (k > 0 && r.first_output_sent) {
      // Verify k drafts: position i is accepted with a falling probability, stopping at the
      // first rejection, as rejection sampling does.
      int64_t accepted = 0;
      while (accepted < k && Chance(0.75 * std::pow(0.85, static_cast<double>(accepted))))
        ++accepted;
      spec->num_drafts += 1;
      spec->num_draft_tokens += k;
      ObserveDrafts(&r, k, accepted);
      spec->num_accepted_tokens += accepted;
      for (int64_t i = 0; i < accepted; ++i)
        spec->num_accepted_tokens_per_pos[static_cast<size_t>(i)] += 1;
      for (int i = 0; i < k; ++i) spec->num_draft_tokens_per_pos[static_cast<size_t>(i)] += 1;
      tokens += accepted;
    }
    tokens = std::min(tokens, r.target_tokens - r.generated);
    SimOutput out;
    out.request_id = r.id;
    out.new_token_ids.reserve(static_cast<size_t>(tokens));
    if (r.served) {
      Served& s = *r.served;
      for (int64_t i = 0; i < tokens; ++i) {
        const bool last = r.generated + i + 1 == r.target_tokens;
        out.new_token_ids.push_back(last && r.stops_early ? s.stop_token : NextServedToken(&s));
      }
      if (s.logprobs) out.new_logprobs = LogprobRows(&s, out.new_token_ids, *s.logprobs, false);
      if (options_.routed_experts_layers > 0) {
        out.routed_experts = RoutedExpertsChunk(&s, r.first_output_sent, tokens);
      }
      if (s.prompt_logprobs && !r.first_output_sent && s.prompt.size() > 1) {
        // Positions 1..N-1: each row's column 0 is the prompt token there.
        const std::vector<int64_t> rest(s.prompt.begin() + 1, s.prompt.end());
        out.new_prompt_logprobs = LogprobRows(&s, rest, *s.prompt_logprobs, true);
      }
    } else {
      for (int64_t i = 0; i < tokens; ++i)
        out.new_token_ids.push_back(static_cast<int64_t>(rng_() % kVocabulary));
    }
    r.generated += tokens;
    out.events = std::move(r.pending_events);
    r.pending_events.clear();
    if (!r.first_output_sent) {
      SimPrefillStats p;
      p.num_prompt_tokens = r.prompt_tokens;
      p.num_local_cached_tokens = r.local_hit_tokens;
      p.num_external_cached_tokens = r.external_hit_tokens;
      p.num_cached_tokens = r.local_hit_tokens + r.external_hit_tokens;
      p.num_computed_tokens = r.prompt_tokens - p.num_cached_tokens;
      // After the step every full prompt block is cached.
      const int64_t cached_after = r.prompt_tokens / options_.block_size * options_.block_size;
      p.num_cache_creation_tokens = std::max<int64_t>(0, cached_after - p.num_cached_tokens);
      out.prefill_stats = p;
      r.first_output_sent = true;
    }
    const bool finished = r.generated >= r.target_tokens;
    if (finished) {
      out.finish_reason = r.stops_early ? kFinishStop : kFinishLength;
      // Every request reports, with an all-zero histogram when it verified no drafts.
      if (options_.per_request_spec_decode_metrics != SimulatorOptions::SpecDecodeMetrics::kNone) {
        out.spec_decode_metrics = std::move(SpecOf(&r));
      }
      if (r.served) {
        const Served& s = *r.served;
        // check_stop tests EOS first: a token that is both stops without a stop_reason.
        if (r.stops_early && s.eos != s.stop_token) out.stop_reason = s.stop_token;
        out.kv_transfer_params = s.kv_transfer_params;
        // NixlConnector.request_finished: params only for FINISHED_LENGTH_CAPPED.
        if (s.remote_decode && !r.stops_early) {
          out.kv_transfer_params = ProducerParams(r);
          ++totals_.kv_params_returned;
        }
      }
    }
    if (options_.request_outputs) message->outputs.push_back(std::move(out));
    if (!finished) still_running.push_back(std::move(r));
  }
  running_ = std::move(still_running);
}

void EngineModel::PreemptIfFull(double now) {
  // Out of KV blocks: preempt the most recently scheduled request (vLLM's recompute policy)
  // until the rest fits.
  while (UsedBlocks() > options_.num_gpu_blocks && running_.size() > 1) {
    Request r = std::move(running_.back());
    running_.pop_back();
    r.pending_events.push_back({kPreempted, now});
    waiting_.push_front(std::move(r));
    ++totals_.preemptions;
  }
}

// ---- Connector statistics ---------------------------------------------------------------------

void EngineModel::AddTransfers(const std::vector<Request*>& pulled, bool mooncake,
                               SimTransferStats* out) {
  out->mooncake = mooncake;
  for (const Request* r : pulled) {
    if (r->served && r->served->remote_blocks > 0) {
      // A kv_role pull: one read of the producer's blocks, sized by them, never failing.
      const int64_t blocks = r->served->remote_blocks;
      const int64_t bytes = blocks * options_.block_size * SimulatorOptions::kKvBytesPerToken;
      out->transfer_duration.push_back(
          std::clamp(LogNormal(0.002 + static_cast<double>(bytes) / 5e9, 0.3), 1e-4, 30.0));
      if (!mooncake) out->post_duration.push_back(std::clamp(LogNormal(0.0008, 0.3), 2e-5, 5.0));
      out->bytes_transferred.push_back(bytes);
      out->num_descriptors.push_back(blocks * SimulatorOptions::kKvLayers);
      continue;
    }
    if (Chance(0.02)) {
      out->num_failed_transfers.push_back(1);
      continue;
    }
    const int64_t bytes = LogUniformInt(64 * kKiB, 64 * kMiB);
    // ~5 GB/s plus a fixed cost, with a heavy tail (a slow peer, a retry).
    double duration = LogNormal(0.002 + static_cast<double>(bytes) / 5e9, 0.6);
    if (Chance(0.02)) duration *= LogNormal(20, 1.0);
    out->transfer_duration.push_back(std::clamp(duration, 1e-4, 30.0));
    if (!mooncake) out->post_duration.push_back(std::clamp(LogNormal(0.0008, 0.7), 2e-5, 5.0));
    out->bytes_transferred.push_back(bytes);
    out->num_descriptors.push_back(LogUniformInt(8, 512));
  }
  // Occasional faults of the synthetic load; a kv_role engine is counted exactly.
  if (options_.kv_role != SimKvRole::kNone) return;
  if (!mooncake && Chance(0.005)) out->num_failed_notifications.push_back(1);
  if (mooncake && Chance(0.01)) out->num_failed_recvs.push_back(1);
  if (Chance(0.01)) out->num_kv_expired_reqs.push_back(1);
}

SimStoreRecord EngineModel::StoreRecord(int64_t keys, int64_t bytes, double median_s) {
  SimStoreRecord rec;
  rec.num_keys = keys;
  rec.num_bytes = bytes;
  rec.duration_seconds = std::clamp(LogNormal(median_s, 0.5), 1e-5, 30.0);
  const double u = Uniform(0, 1);
  if (u < 0.94) {
    rec.status = "ok";
  } else if (u < 0.985 && keys > 1) {
    rec.status = "partial_failure";
    rec.num_failed_keys = 1 + static_cast<int64_t>(rng_() % static_cast<uint64_t>(keys - 1));
  } else {
    rec.status = "error";
    rec.num_failed_keys = keys;
  }
  return rec;
}

void EngineModel::AddStoreOperations(const std::vector<Request*>& scheduled, SimStoreStats* out) {
  auto add = [&](const char* op, SimStoreRecord rec) {
    for (auto& [name, records] : out->operations) {
      if (name == op) {
        records.push_back(std::move(rec));
        return;
      }
    }
    out->operations.emplace_back(op, std::vector<SimStoreRecord>{std::move(rec)});
  };
  for (const Request* r : scheduled) {
    const int64_t prompt_keys = CeilDiv(r->prompt_tokens, kStoreChunkTokens);
    // Scheduler-side lookup, then the worker's load of what was found and save of the rest.
    add("lookup_exists", StoreRecord(prompt_keys, 0, 0.0004));
    if (r->external_hit_tokens > 0 && !r->kv_pulled) {
      const int64_t bytes = LogUniformInt(64 * kKiB, 64 * kMiB);
      add("load_get", StoreRecord(CeilDiv(r->external_hit_tokens, kStoreChunkTokens), bytes,
                                  0.003 + static_cast<double>(bytes) / 4e9));
    }
    add("save_exists", StoreRecord(prompt_keys, 0, 0.0006));
    const int64_t new_tokens = r->prompt_tokens - r->local_hit_tokens - r->external_hit_tokens;
    if (new_tokens >= kStoreChunkTokens) {
      const int64_t bytes = LogUniformInt(64 * kKiB, 64 * kMiB);
      add("save_put", StoreRecord(new_tokens / kStoreChunkTokens, bytes,
                                  0.005 + static_cast<double>(bytes) / 3e9));
    }
  }
}

// ---- Totals ----------------------------------------------------------------------------------

void EngineModel::AccountTransfer(const SimTransferStats& t, const char* class_name,
                                  EngineTotals* totals) {
  auto& fields = totals->connector_fields[class_name];
  auto add_f = [&](const char* name, const std::vector<double>& v) {
    FieldTotals& f = fields[name];
    for (double x : v) {
      f.count += 1;
      f.sum += x;
    }
  };
  auto add_i = [&](const char* name, const std::vector<int64_t>& v) {
    FieldTotals& f = fields[name];
    for (int64_t x : v) {
      f.count += 1;
      f.sum += static_cast<double>(x);
    }
  };
  add_f("transfer_duration", t.transfer_duration);
  if (!t.mooncake) add_f("post_duration", t.post_duration);
  add_i("bytes_transferred", t.bytes_transferred);
  add_i("num_descriptors", t.num_descriptors);
  add_i("num_failed_transfers", t.num_failed_transfers);
  if (!t.mooncake) add_i("num_failed_notifications", t.num_failed_notifications);
  if (t.mooncake) add_i("num_failed_recvs", t.num_failed_recvs);
  add_i("num_kv_expired_reqs", t.num_kv_expired_reqs);
  totals->connector_payloads[class_name] += 1;
}

void EngineModel::Account(const SimMessage& m) {
  EngineTotals& t = totals_;
  t.steps += 1;
  t.messages += 1;
  t.outputs += m.outputs.size();
  for (const SimOutput& o : m.outputs) {
    t.generation_tokens += o.new_token_ids.size();
    if (o.prefill_stats) {
      t.requests_scheduled += 1;
      t.prompt_tokens += static_cast<uint64_t>(o.prefill_stats->num_prompt_tokens);
    }
    if (o.finish_reason) t.finished[*o.finish_reason == kFinishStop ? "stop" : "length"] += 1;
  }
  const SimSchedulerStats& s = m.scheduler_stats;
  auto add_prefix = [](const SimPrefixCacheStats& p, PrefixCacheTotals* out) {
    out->requests += static_cast<uint64_t>(p.requests);
    out->queries += static_cast<uint64_t>(p.queries);
    out->hits += static_cast<uint64_t>(p.hits);
    out->preempted_requests += static_cast<uint64_t>(p.preempted_requests);
    out->preempted_queries += static_cast<uint64_t>(p.preempted_queries);
    out->preempted_hits += static_cast<uint64_t>(p.preempted_hits);
  };
  add_prefix(s.prefix_cache_stats, &t.prefix_cache);
  if (s.connector_prefix_cache_stats)
    add_prefix(*s.connector_prefix_cache_stats, &t.connector_prefix_cache);
  if (s.spec_decoding_stats) {
    const SimSpecDecodingStats& sp = *s.spec_decoding_stats;
    t.spec_num_drafts += static_cast<uint64_t>(sp.num_drafts);
    t.spec_num_draft_tokens += static_cast<uint64_t>(sp.num_draft_tokens);
    t.spec_num_accepted_tokens += static_cast<uint64_t>(sp.num_accepted_tokens);
    for (size_t i = 0;
         i < sp.num_accepted_tokens_per_pos.size() && i < t.spec_accepted_per_pos.size(); ++i) {
      t.spec_accepted_per_pos[i] += static_cast<uint64_t>(sp.num_accepted_tokens_per_pos[i]);
    }
  }
  t.last_num_running_reqs = s.num_running_reqs;
  t.last_num_waiting_reqs = s.num_waiting_reqs;
  t.last_num_skipped_waiting_reqs = s.num_skipped_waiting_reqs;
  t.last_kv_cache_usage = s.kv_cache_usage;
  if (s.kv_connector_stats) {
    t.kv_connector_messages += 1;
    const SimKvConnectorStats& kv = *s.kv_connector_stats;
    if (kv.nixl) AccountTransfer(*kv.nixl, kNixlClass, &t);
    if (kv.mooncake) AccountTransfer(*kv.mooncake, kMooncakeClass, &t);
    if (kv.store) {
      t.connector_payloads[kStoreClass] += 1;
      for (const auto& [op, records] : kv.store->operations) {
        for (const SimStoreRecord& r : records) {
          StoreTotals& st = t.store[{op, r.status}];
          st.records += 1;
          st.duration_seconds_sum += r.duration_seconds;
          st.num_keys += static_cast<uint64_t>(r.num_keys);
          st.num_bytes += static_cast<uint64_t>(r.num_bytes);
          st.num_failed_keys += static_cast<uint64_t>(r.num_failed_keys);
        }
      }
    }
  }
}

// ---- One step --------------------------------------------------------------------------------

void EngineModel::Step(SimMessage* message) {
  ++step_;
  *message = SimMessage();
  message->engine_index = engine_index_;
  const double now = StepTime();
  SimSchedulerStats& stats = message->scheduler_stats;

  Arrive(now);
  std::vector<Request*> newly_scheduled;
  Schedule(now, &stats, &newly_scheduled);

  // Connector statistics describe this step's transfers, which concern the requests that were
  // just scheduled: collect them before decoding moves requests around.
  SimKvConnectorStats kv;
  std::vector<Request*> pulled;
  for (Request* r : newly_scheduled) {
    if (r->kv_pulled) pulled.push_back(r);
  }
  switch (options_.connector) {
    case SimConnector::kNone:
      break;
    case SimConnector::kNixl:
      kv.nixl.emplace();
      AddTransfers(pulled, /*mooncake=*/false, &*kv.nixl);
      break;
    case SimConnector::kMooncakeP2p:
      kv.mooncake.emplace();
      AddTransfers(pulled, /*mooncake=*/true, &*kv.mooncake);
      break;
    case SimConnector::kMooncakeStore:
      kv.store.emplace();
      AddStoreOperations(newly_scheduled, &*kv.store);
      break;
    case SimConnector::kMulti: {
      // Pulled requests alternate between the two P2P children; the store sees every request.
      std::vector<Request*> via_nixl, via_mooncake;
      for (Request* r : pulled) (multi_toggle_++ % 2 ? via_mooncake : via_nixl).push_back(r);
      kv.nixl.emplace();
      AddTransfers(via_nixl, /*mooncake=*/false, &*kv.nixl);
      kv.store.emplace();
      AddStoreOperations(newly_scheduled, &*kv.store);
      kv.mooncake.emplace();
      AddTransfers(via_mooncake, /*mooncake=*/true, &*kv.mooncake);
      break;
    }
  }
  // A connector reports nothing for a step without activity (its stats are empty, so the
  // scheduler leaves kv_connector_stats nil); a Multi leaves out empty children.
  if (kv.nixl && kv.nixl->empty()) kv.nixl.reset();
  if (kv.mooncake && kv.mooncake->empty()) kv.mooncake.reset();
  if (kv.store && kv.store->empty()) kv.store.reset();
  if (kv.nixl || kv.mooncake || kv.store) stats.kv_connector_stats = std::move(kv);

  SimSpecDecodingStats spec;
  if (options_.num_speculative_tokens > 0) {
    spec.num_spec_tokens = options_.num_speculative_tokens;
    spec.num_accepted_tokens_per_pos.assign(static_cast<size_t>(spec.num_spec_tokens), 0);
    spec.num_draft_tokens_per_pos.assign(static_cast<size_t>(spec.num_spec_tokens), 0);
  }
  Decode(message, &spec);
  if (spec.num_drafts > 0) stats.spec_decoding_stats = std::move(spec);  // None unless verified
  PreemptIfFull(now);

  stats.num_running_reqs = static_cast<int64_t>(running_.size());
  // Deferred requests (waiting for their KV) are vLLM's skipped_waiting queue; the others,
  // preempted ones included, are capacity waiting.
  stats.num_skipped_waiting_reqs = deferred_this_step_;
  stats.num_waiting_reqs = static_cast<int64_t>(waiting_.size()) - deferred_this_step_;
  stats.kv_cache_usage = std::min(
      1.0, static_cast<double>(UsedBlocks()) / static_cast<double>(options_.num_gpu_blocks));

  if (deterministic_time_) {
    const double dt = options_.rate_hz > 0 ? 1.0 / options_.rate_hz : kNominalStepSeconds;
    message->timestamp = now + std::min(LogNormal(0.006, 0.3), 0.8 * dt);
  } else {
    message->timestamp = Now();
  }
  Account(*message);
}

}  // namespace vmetrics::internal
