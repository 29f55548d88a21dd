// SPDX-License-Identifier: Apache-2.0
// Deterministic workload generators. Values come from splitmix64 and simple closed forms, never
// from std::*_distribution (whose algorithms differ between standard libraries), so a seed
// gives the same bytes everywhere; the layout follows src/simulate/wire_encode.cc (msgspec).
#include "bench/workloads.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <msgpack.hpp>
#include <sstream>

#include "msgspec_writer.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics::bench {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "vmetrics bench: %s\n", what.c_str());
  std::exit(2);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t Int(int64_t lo, int64_t hi) {                                    // [lo, hi]
    return lo + static_cast<int64_t>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool Chance(double p) { return Unit() < p; }
  // Log-uniform in [lo, hi): latencies and sizes spread over their buckets.
  double LogUniform(double lo, double hi) {
    return std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * Unit());
  }

 private:
  uint64_t state_;
};

using Writer = internal::MsgspecWriter;

const char* const kMultiNixlStoreP2p =
    "{\"kv_connector\":\"MultiConnector\",\"kv_connector_extra_config\":{\"connectors\":["
    "{\"kv_connector\":\"NixlConnector\"},{\"kv_connector\":\"MooncakeStoreConnector\"},"
    "{\"kv_connector\":\"MooncakeConnector\"}]}}";
const char* const kMultiWithHf3fs =
    "{\"kv_connector\":\"MultiConnector\",\"kv_connector_extra_config\":{\"connectors\":["
    "{\"kv_connector\":\"NixlConnector\"},{\"kv_connector\":\"MooncakeStoreConnector\"},"
    "{\"kv_connector\":\"MooncakeConnector\"},{\"kv_connector\":\"HF3FSKVConnector\"}]}}";

void PrefixCacheStats(Writer& w, int64_t requests, int64_t queries, int64_t hits) {
  w.Map(7);
  w.Key("reset").Bool(false);
  w.Key("requests").Int(requests);
  w.Key("queries").Int(queries);
  w.Key("hits").Int(hits);
  w.Key("preempted_requests").Int(0);
  w.Key("preempted_queries").Int(0);
  w.Key("preempted_hits").Int(0);
}

// A list of `n` ones with probability p each, else empty (failure counters).
void RareOnes(Writer& w, Rng& rng, double p) {
  const bool one = rng.Chance(p);
  w.Array(one ? 1 : 0);
  if (one) w.Int(1);
}

// NixlKVConnectorStats.data with `n` transfers.
void NixlPayload(Writer& w, Rng& rng, int n) {
  w.Map(7);
  w.Key("transfer_duration").Array(static_cast<uint32_t>(n));
  for (int i = 0; i < n; ++i) w.Double(rng.LogUniform(0.002, 2.0));
  w.Key("post_duration").Array(static_cast<uint32_t>(n));
  for (int i = 0; i < n; ++i) w.Double(rng.LogUniform(0.0002, 0.2));
  w.Key("bytes_transferred").Array(static_cast<uint32_t>(n));
  for (int i = 0; i < n; ++i) w.Int(int64_t{1} << rng.Int(14, 31));
  w.Key("num_descriptors").Array(static_cast<uint32_t>(n));
  for (int i = 0; i < n; ++i) w.Int(rng.Int(8, 4096));
  w.Key("num_failed_transfers");
  RareOnes(w, rng, 1.0 / 64);
  w.Key("num_failed_notifications");
  RareOnes(w, rng, 1.0 / 256);
  w.Key("num_kv_expired_reqs");
  RareOnes(w, rng, 1.0 / 128);
}

// MooncakeKVConnectorStats.data (P2P) with `n` transfers.
void MooncakeP2pPayload(Writer& w, Rng& rng, int n) {
  w.Map(6);
  w.Key("transfer_duration").Array(static_cast<uint32_t>(n));
  for (int i = 0; i < n; ++i) w.Double(rng.LogUniform(0.002, 2.0));
  w.Key("bytes_transferred").Array(static_cast<uint32_t>(n));
  for (int i = 0; i < n; ++i) w.Int(int64_t{1} << rng.Int(14, 31));
  w.Key("num_descriptors").Array(static_cast<uint32_t>(n));
  for (int i = 0; i < n; ++i) w.Int(rng.Int(8, 4096));
  w.Key("num_failed_transfers");
  RareOnes(w, rng, 1.0 / 64);
  w.Key("num_failed_recvs");
  RareOnes(w, rng, 1.0 / 64);
  w.Key("num_kv_expired_reqs");
  RareOnes(w, rng, 1.0 / 128);
}

// Mooncake store: {operation: [record, ...]} with `records` records over three operations.
void StorePayload(Writer& w, Rng& rng, int records) {
  static const char* const kOps[] = {"save_put", "load_get", "lookup_exists"};
  int per_op[3] = {0, 0, 0};
  for (int i = 0; i < records; ++i) ++per_op[i % 3];
  w.Map(3);
  for (int op = 0; op < 3; ++op) {
    w.Key(kOps[op]).Array(static_cast<uint32_t>(per_op[op]));
    for (int i = 0; i < per_op[op]; ++i) {
      const double u = rng.Unit();
      const char* status = u < 1.0 / 64 ? "error" : u < 3.0 / 64 ? "partial_failure" : "ok";
      const int64_t keys = rng.Int(1, 32);
      w.Map(5);
      w.Key("duration_seconds").Double(rng.LogUniform(0.0005, 3.0));
      w.Key("num_keys").Int(keys);
      w.Key("num_bytes").Int(op == 2 ? 0 : keys * (int64_t{1} << 20));
      w.Key("status").Str(status);
      w.Key("num_failed_keys").Int(status[0] == 'o' ? 0 : rng.Int(1, keys));
    }
  }
}

struct StatsShape {
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t deferred = 0;
  int64_t step = 0;
  double kv_usage = 0;
  int64_t queries = 0;
  bool connector_prefix = false;
  int spec_tokens = 0;      // > 0: SpecDecodingStats
  int eviction_events = 0;  // KV cache eviction events
  // Writes the kv_connector_stats value; empty = nil.
  std::function<void(Writer&)> kv_connector;
};

// SchedulerStats: the 16 dataclass fields of vLLM 6adad087 in definition order.
void SchedulerStats(Writer& w, Rng& rng, const StatsShape& s) {
  w.Map(16);
  w.Key("num_running_reqs").Int(s.running);
  w.Key("num_waiting_reqs").Int(s.waiting);
  w.Key("num_skipped_waiting_reqs").Int(s.deferred);
  w.Key("step_counter").Int(s.step);
  w.Key("current_wave").Int(0);
  w.Key("kv_cache_usage").Double(s.kv_usage);
  w.Key("iteration_details").Nil();
  w.Key("prefix_cache_stats");
  PrefixCacheStats(w, rng.Int(0, 4), s.queries, s.queries / 2);
  w.Key("connector_prefix_cache_stats");
  if (s.connector_prefix) {
    const int64_t q = rng.Int(0, 2048);
    PrefixCacheStats(w, rng.Int(0, 2), q, q / 4);
  } else {
    w.Nil();
  }
  w.Key("kv_cache_eviction_events").Array(static_cast<uint32_t>(s.eviction_events));
  for (int i = 0; i < s.eviction_events; ++i) {
    w.Map(3);
    w.Key("lifetime_seconds").Double(rng.LogUniform(0.001, 1800.0));
    w.Key("idle_seconds").Double(rng.LogUniform(0.001, 600.0));
    w.Key("reuse_gaps_seconds").Array(2);
    w.Double(rng.LogUniform(0.001, 300.0));
    w.Double(rng.LogUniform(0.001, 300.0));
  }
  w.Key("spec_decoding_stats");
  if (s.spec_tokens > 0) {
    const int64_t drafts = rng.Int(1, 64);
    w.Map(6);
    w.Key("num_spec_tokens").Int(s.spec_tokens);
    w.Key("num_drafts").Int(drafts);
    w.Key("num_draft_tokens").Int(drafts * s.spec_tokens);
    int64_t accepted = 0;
    std::vector<int64_t> per_pos;
    for (int p = 0; p < s.spec_tokens; ++p) {
      per_pos.push_back(drafts * (s.spec_tokens - p) / (s.spec_tokens + 1));
      accepted += per_pos.back();
    }
    w.Key("num_accepted_tokens").Int(accepted);
    w.Key("num_accepted_tokens_per_pos").Array(static_cast<uint32_t>(per_pos.size()));
    for (int64_t v : per_pos) w.Int(v);
    w.Key("num_draft_tokens_per_pos").Array(static_cast<uint32_t>(s.spec_tokens));
    for (int p = 0; p < s.spec_tokens; ++p) w.Int(drafts);
  } else {
    w.Nil();
  }
  w.Key("kv_connector_stats");
  if (s.kv_connector) {
    s.kv_connector(w);
  } else {
    w.Nil();
  }
  w.Key("waiting_lora_adapters").Map(0);
  w.Key("running_lora_adapters").Map(0);
  w.Key("cudagraph_stats").Nil();
  w.Key("perf_stats").Map(4);
  w.Key("num_flops_per_gpu").Int(rng.Int(int64_t{1} << 30, int64_t{1} << 40));
  w.Key("num_read_bytes_per_gpu").Int(rng.Int(1 << 20, 1 << 30));
  w.Key("num_write_bytes_per_gpu").Int(rng.Int(1 << 16, 1 << 24));
  w.Key("debug_stats").Nil();
}

// EngineCoreOutputs envelope around `body` (outputs array + stats), all 8 positions.
void Envelope(Writer& w, int64_t engine, double timestamp,
              const std::function<void(Writer&)>& outputs,
              const std::function<void(Writer&)>& stats) {
  w.Array(8);
  w.Int(engine);
  outputs(w);
  stats(w);
  w.Double(timestamp);
  w.Nil();  // utility_output
  w.Nil();  // finished_requests
  w.Nil();  // wave_complete
  w.Nil();  // start_wave
}

uint64_t ReadQueries(std::string_view frame) {
  EngineCoreOutputs out;
  std::string_view frames[] = {frame};
  if (!DecodeEngineCoreOutputs(frames, {}, &out).ok() || !out.scheduler_stats) return 0;
  return static_cast<uint64_t>(out.scheduler_stats->prefix_cache_stats.queries);
}

void Finish(Workload* w) {
  w->bytes = 0;
  w->prefix_cache_queries = 0;
  for (const std::string& m : w->messages) {
    w->bytes += m.size();
    w->prefix_cache_queries += ReadQueries(m);
  }
}

}  // namespace

Workload MakeW1(size_t messages, uint64_t seed) {
  Workload wl;
  wl.name = "w1";
  wl.engines = 8;
  wl.kv_transfer_config = kMultiNixlStoreP2p;
  Rng rng(seed);
  Writer w;
  for (size_t i = 0; i < messages; ++i) {
    const int64_t engine = static_cast<int64_t>(i % 8);
    StatsShape s;
    s.running = rng.Int(64, 256);
    s.waiting = rng.Int(0, 32);
    s.deferred = rng.Int(0, 8);
    s.step = static_cast<int64_t>(i / 8 + 1);
    s.kv_usage = rng.Unit();
    s.queries = rng.Int(0, 8192);
    s.connector_prefix = true;
    s.kv_connector = [&rng](Writer& ww) {
      ww.Map(3);
      ww.Key("NixlConnector");
      NixlPayload(ww, rng, 64);
      ww.Key("MooncakeStoreConnector");
      StorePayload(ww, rng, 8);
      ww.Key("MooncakeConnector");
      MooncakeP2pPayload(ww, rng, 16);
    };
    Envelope(
        w, engine, 1000.0 + 0.01 * static_cast<double>(i / 8), [](Writer& ww) { ww.Array(0); },
        [&](Writer& ww) { SchedulerStats(ww, rng, s); });
    wl.messages.push_back(w.Take());
  }
  Finish(&wl);
  return wl;
}

Workload MakeW2(size_t messages, uint64_t seed) {
  constexpr int kOutputs = 256;
  Workload wl;
  wl.name = "w2";
  wl.engines = 1;
  Rng rng(seed ^ 0x5732);
  Writer w;
  struct Slot {
    std::string id;
    bool fresh = true;  // next output is the request's first
    int64_t prompt = 0;
  };
  std::vector<Slot> slots(kOutputs);
  uint64_t next_id = 0;
  auto new_request = [&](Slot& s) {
    char buf[48];
    const uint64_t a = rng.Next(), b = rng.Next();
    std::snprintf(buf, sizeof(buf), "cmpl-%016llx%016llx-%llu", static_cast<unsigned long long>(a),
                  static_cast<unsigned long long>(b),
                  static_cast<unsigned long long>(next_id++ % 10));
    s.id = buf;
    s.fresh = true;
    s.prompt = rng.Int(16, 4096);
  };
  for (Slot& s : slots) new_request(s);
  for (size_t i = 0; i < messages; ++i) {
    const double now = 2000.0 + 0.02 * static_cast<double>(i);
    auto outputs = [&](Writer& ww) {
      ww.Array(kOutputs);
      for (Slot& s : slots) {
        const bool finish = !s.fresh && rng.Chance(1.0 / 128);
        ww.Array(16);
        ww.Str(s.id);
        ww.Array(1);
        ww.Int(rng.Int(0, 151935));
        ww.Nil();  // new_logprobs
        ww.Nil();  // new_prompt_logprobs_tensors
        ww.Nil();  // pooling_output
        if (finish) {
          ww.Int(rng.Chance(0.8) ? 0 : 1);  // stop / length
        } else {
          ww.Nil();
        }
        ww.Nil();  // stop_reason
        if (s.fresh) {
          ww.Array(2);
          ww.Map(2);
          ww.Key("type").Int(1);  // QUEUED
          ww.Key("timestamp").Double(now - 0.05);
          ww.Map(2);
          ww.Key("type").Int(2);  // SCHEDULED
          ww.Key("timestamp").Double(now - 0.02);
        } else {
          ww.Nil();
        }
        ww.Nil();  // kv_transfer_params
        ww.Nil();  // ec_transfer_params
        ww.Nil();  // trace_headers
        if (s.fresh) {
          const int64_t cached = s.prompt / 2;
          ww.Map(6);
          ww.Key("num_prompt_tokens").Int(s.prompt);
          ww.Key("num_computed_tokens").Int(s.prompt - cached);
          ww.Key("num_cached_tokens").Int(cached);
          ww.Key("num_local_cached_tokens").Int(cached);
          ww.Key("num_external_cached_tokens").Int(0);
          ww.Key("num_cache_creation_tokens").Int(0);
        } else {
          ww.Nil();
        }
        ww.Nil();   // routed_experts
        ww.Int(0);  // num_nans_in_logits
        ww.Nil();   // mm_cache_miss_hashes
        ww.Nil();   // new_sampling_mask
        s.fresh = false;
        if (finish) new_request(s);
      }
    };
    StatsShape s;
    s.running = kOutputs;
    s.waiting = rng.Int(0, 64);
    s.step = static_cast<int64_t>(i + 1);
    s.kv_usage = rng.Unit();
    s.queries = rng.Int(0, 4096);
    Envelope(w, 0, now, outputs, [&](Writer& ww) { SchedulerStats(ww, rng, s); });
    wl.messages.push_back(w.Take());
    wl.outputs += kOutputs;
  }
  Finish(&wl);
  return wl;
}

Workload MakeW3(int engines, int steps_per_engine, uint64_t seed) {
  Workload wl;
  wl.name = "w3";
  wl.engines = engines;
  wl.kv_transfer_config = kMultiWithHf3fs;
  wl.num_speculative_tokens = 3;
  wl.kv_cache_metrics = true;
  wl.cache_config = {{"block_size", "16"},
                     {"cache_dtype", "auto"},
                     {"enable_prefix_caching", "True"},
                     {"gpu_memory_utilization", "0.9"},
                     {"num_gpu_blocks", std::to_string(8192 * engines)}};
  Rng rng(seed ^ 0x5733);
  Writer w;
  for (int step = 0; step < steps_per_engine; ++step) {
    for (int engine = 0; engine < engines; ++engine) {
      StatsShape s;
      s.running = rng.Int(1, 256);
      s.waiting = rng.Int(0, 32);
      s.deferred = rng.Int(0, 8);
      s.step = step + 1;
      s.kv_usage = rng.Unit();
      s.queries = rng.Int(0, 8192);
      s.connector_prefix = true;
      s.spec_tokens = 3;
      s.eviction_events = 2;
      s.kv_connector = [&rng](Writer& ww) {
        ww.Map(4);
        ww.Key("NixlConnector");
        NixlPayload(ww, rng, 8);
        ww.Key("MooncakeStoreConnector");
        StorePayload(ww, rng, 6);
        ww.Key("MooncakeConnector");
        MooncakeP2pPayload(ww, rng, 4);
        ww.Key("HF3FSKVConnector").Map(5);
        ww.Key("save_duration").Array(2);
        ww.Double(rng.LogUniform(0.001, 5.0));
        ww.Double(rng.LogUniform(0.001, 5.0));
        ww.Key("load_duration").Array(1);
        ww.Double(rng.LogUniform(0.001, 5.0));
        ww.Key("num_failed_save").Int(rng.Int(0, 1));
        ww.Key("num_failed_load").Int(0);
        ww.Key("num_transfer_task").Int(3);
      };
      Envelope(
          w, engine, 3000.0 + step, [](Writer& ww) { ww.Array(0); },
          [&](Writer& ww) { SchedulerStats(ww, rng, s); });
      wl.messages.push_back(w.Take());
    }
  }
  Finish(&wl);
  return wl;
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Die("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> SplitCapture(std::string_view data) {
  std::vector<std::string> out;
  while (!data.empty()) {
    size_t n = 0;
    if (Status s = protocol::ValidateOne(data, &n); !s.ok()) Die("bad capture: " + s.ToString());
    out.emplace_back(data.substr(0, n));
    data.remove_prefix(n);
  }
  return out;
}

Workload LoadOrMake(std::string_view name, bool smoke) {
  if (const char* v = std::getenv("VMETRICS_BENCH_SMOKE"); v != nullptr && *v != '\0') smoke = true;
  Workload w;
  if (name == "w1") {
    w = MakeW1(smoke ? kW1SmokeMessages : kW1Messages);
  } else if (name == "w2") {
    w = MakeW2(smoke ? kW2SmokeMessages : kW2Messages);
  } else if (name == "w3") {
    w = MakeW3(kW3Engines);
  } else if (name == "w3_1" || name == "w3_8") {
    w = MakeW3(name == "w3_1" ? 1 : 8);
    w.name = std::string(name);
  } else {
    Die("unknown workload " + std::string(name));
  }
  if (const char* dir = std::getenv("VMETRICS_BENCH_CAPTURES"); dir != nullptr && *dir != '\0') {
    const std::string path = std::string(dir) + "/" + std::string(name) + ".msgpack";
    std::ifstream probe(path, std::ios::binary);
    if (probe) {
      std::vector<std::string> loaded = SplitCapture(ReadFileOrDie(path));
      if (loaded != w.messages) {
        Die(path + " differs from what the generator makes (regenerate with vmetrics_bench_gen)");
      }
    }
  }
  return w;
}

RequestReplay::RequestReplay(const Workload& w) : intake_(w.messages.size()) {
  Registry registry;
  StatsRecorder recorder(&registry, RecorderOptionsFor(w));
  EngineCoreOutputs out;
  for (size_t i = 0; i < w.messages.size(); ++i) {
    std::string_view frames[] = {w.messages[i]};
    if (!DecodeEngineCoreOutputs(frames, recorder.decode_context(i + 1), &out).ok()) {
      Die("cannot decode message " + std::to_string(i + 1) + " of " + w.name);
    }
    for (const EngineCoreOutput& o : out.outputs) {
      if (!o.prefill_stats) continue;
      intake_[i].push_back({.request_id = std::string(o.request_id),
                            .arrival_time = out.timestamp - 0.1,
                            .prompt_len = o.prefill_stats->num_prompt_tokens,
                            .max_tokens = 2048});
    }
  }
}

void RequestReplay::Apply(size_t i, const EngineCoreOutputs& out, RequestTracker* tracker,
                          StatsRecorder* recorder) const {
  for (const RequestInfo& info : intake_[i]) tracker->AddRequest(info);
  if (std::optional<IterationStats> it = tracker->ProcessOutputs(out, out.timestamp + 0.005)) {
    recorder->RecordIteration(*it, out.engine_index);
  }
}

RecorderOptions RecorderOptionsFor(const Workload& w) {
  RecorderOptions o;
  o.served_model_name = "meta-llama/Llama-3.1-8B-Instruct";
  o.engine_indexes.clear();
  for (int i = 0; i < w.engines; ++i) o.engine_indexes.push_back(i);
  if (!w.kv_transfer_config.empty()) {
    Result<ConnectorConfig> c = ConnectorConfig::FromKvTransferConfigJson(w.kv_transfer_config);
    if (!c.ok()) Die("bad kv_transfer_config: " + c.status().ToString());
    o.connectors = *c;
  }
  o.num_speculative_tokens = w.num_speculative_tokens;
  o.kv_cache_metrics = w.kv_cache_metrics;
  o.cache_config = w.cache_config;
  o.log = [](const std::string&) {};
  return o;
}

namespace {

// The families SchedulerStats does not feed (docs/recording.md "Family order"), in
// registration order. bench/python_reference.py has the same list.
struct RequestFamily {
  const char* name;
  double base;  // histogram scale
};
constexpr RequestFamily kRequestFamilies[] = {
    {"vllm:mm_cache_queries", 0},
    {"vllm:mm_cache_hits", 0},
    {"vllm:num_preemptions", 0},
    {"vllm:prompt_tokens", 0},
    {"vllm:prompt_tokens_by_source", 0},
    {"vllm:prompt_tokens_cached", 0},
    {"vllm:generation_tokens", 0},
    {"vllm:request_success", 0},
    {"vllm:request_prompt_tokens", 16},
    {"vllm:request_generation_tokens", 16},
    {"vllm:iteration_tokens_total", 16},
    {"vllm:request_max_num_generation_tokens", 16},
    {"vllm:request_params_n", 1},
    {"vllm:request_params_max_tokens", 16},
    {"vllm:time_to_first_token_seconds", 0.05},
    {"vllm:inter_token_latency_seconds", 0.05},
    {"vllm:request_time_per_output_token_seconds", 0.05},
    {"vllm:e2e_request_latency_seconds", 0.05},
    {"vllm:request_queue_time_seconds", 0.05},
    {"vllm:request_inference_time_seconds", 0.05},
    {"vllm:request_prefill_time_seconds", 0.05},
    {"vllm:request_decode_time_seconds", 0.05},
    {"vllm:request_prefill_kv_computed_tokens", 16},
};

}  // namespace

void FeedRequestFamilies(Registry* registry) {
  int f = 0;
  for (const RequestFamily& rf : kRequestFamilies) {
    Family* family = registry->Find(rf.name);
    if (family == nullptr) Die(std::string("no family ") + rf.name);
    const std::vector<const Child*> children = family->Children();
    for (size_t c = 0; c < children.size(); ++c) {
      Child* child = family->GetOrCreate(children[c]->label_values());
      if (Counter* counter = child->As<Counter>()) {
        (void)counter->Add(1.5 * static_cast<double>(c + 1) * static_cast<double>(f + 1));
      } else if (Histogram* histogram = child->As<Histogram>()) {
        for (int j = 0; j < 8; ++j) {
          const int k =
              static_cast<int>((7 * c + 13 * static_cast<size_t>(j) + static_cast<size_t>(f)) % 50);
          histogram->Observe(rf.base * static_cast<double>(1 + k) / 8.0);
        }
      }
    }
    ++f;
  }
}

}  // namespace vmetrics::bench
