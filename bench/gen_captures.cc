// SPDX-License-Identifier: Apache-2.0
// vmetrics_bench_gen: writes the benchmark workloads (bench/workloads.h) as capture files.
//
//   build-bench/bench/vmetrics_bench_gen bench/captures          # full sizes
//   build-bench/bench/vmetrics_bench_gen --smoke bench/captures  # bench/compare --smoke
//
// Writes <dir>/w1.msgpack, w2.msgpack, w3.msgpack, w3_1.msgpack, w3_8.msgpack (concatenated frame
// 0s, the input of `vmetrics replay` and of bench/python_reference.py) and <dir>/workloads.json
// describing how to record each one (engines, --kv-transfer-config, ...) and its totals.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/workloads.h"

int main(int argc, char** argv) {
  bool smoke = false;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--smoke") {
      smoke = true;
    } else {
      dir = a;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: vmetrics_bench_gen [--smoke] DIR\n");
    return 2;
  }
  nlohmann::json meta = nlohmann::json::object();
  meta["smoke"] = smoke;
  for (const char* name : {"w1", "w2", "w3", "w3_1", "w3_8"}) {
    const vmetrics::bench::Workload w = vmetrics::bench::LoadOrMake(name, smoke);
    const std::string path = dir + "/" + name + ".msgpack";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    for (const std::string& m : w.messages)
      out.write(m.data(), static_cast<std::streamsize>(m.size()));
    if (!out) {
      std::fprintf(stderr, "vmetrics_bench_gen: cannot write %s\n", path.c_str());
      return 1;
    }
    nlohmann::json j;
    j["path"] = path;
    j["messages"] = w.messages.size();
    j["bytes"] = w.bytes;
    j["outputs"] = w.outputs;
    j["engines"] = w.engines;
    j["kv_transfer_config"] = w.kv_transfer_config;
    j["num_speculative_tokens"] = w.num_speculative_tokens;
    j["kv_cache_metrics"] = w.kv_cache_metrics;
    j["cache_config"] = nlohmann::json::array();
    for (const auto& [k, v] : w.cache_config) j["cache_config"].push_back({k, v});
    j["prefix_cache_queries"] = w.prefix_cache_queries;
    j["served_model_name"] = vmetrics::bench::RecorderOptionsFor(w).served_model_name;
    meta[name] = j;
    std::fprintf(stderr, "%s: %zu messages, %llu bytes, %llu outputs\n", path.c_str(),
                 w.messages.size(), static_cast<unsigned long long>(w.bytes),
                 static_cast<unsigned long long>(w.outputs));
  }
  std::ofstream m(dir + "/workloads.json", std::ios::trunc);
  m << meta.dump(2) << "\n";
  return m ? 0 : 1;
}
