// SPDX-License-Identifier: Apache-2.0
// vmetrics_bench_push: the engine side of the end-to-end benchmark. It plays every engine of a
// workload in bootstrapped mode (a DEALER per engine registering on the frontend's input
// ROUTER with a ready response, and a PUSH per engine to its output PULL), then pushes the
// workload's messages, each on its engine's PUSH, as fast as the frontend takes them
// (ZeroMQ's high-water mark blocks the sender when the frontend falls behind), `--passes`
// times. bench/compare starts `vmetrics serve` in bootstrapped mode, runs this, and measures
// messages/s and the serve process's CPU time per message from /proc.
//
//   vmetrics serve --input-address tcp://127.0.0.1:5601 --output-address tcp://127.0.0.1:5602
//       --engine-count 8 --kv-transfer-config '...' --port 8000 &
//   vmetrics_bench_push --input-address tcp://127.0.0.1:5601
//       --output-address tcp://127.0.0.1:5602 --workload w1 --passes 20 --hold
//
// Prints one JSON line: {"workload", "messages", "bytes", "seconds"} (the sender's view; the
// frontend's view comes from its /metrics).
//
// Unlike `vmetrics simulate`, which models an engine and encodes every step as it goes (and on
// a 2-core machine competes with the frontend for CPU), this sends pre-encoded W1/W2 frames:
// the bytes of the captures the other benchmarks use. `--capture FILE --engines N` sends any
// capture instead (bench/compare uses one written by `vmetrics simulate --capture`).
#include <zmq.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/workloads.h"
#include "vmetrics/handshake.h"
#include "vmetrics/internal/msgpack_reader.h"
#include "wire_encode.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: vmetrics_bench_push --input-address A --output-address B "
               "(--workload w1|w2 | --capture FILE --engines N) [--passes N] [--smoke] [--hold]\n");
  return 2;
}

void* Socket(void* ctx, int type) {
  void* s = zmq_socket(ctx, type);
  const int linger = 5000;
  zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string input, output, name;
  int passes = 1;
  bool smoke = false;
  bool hold = false;
  std::string capture;
  int engines = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--input-address") {
      input = next();
    } else if (a == "--output-address") {
      output = next();
    } else if (a == "--workload") {
      name = next();
    } else if (a == "--passes") {
      passes = std::atoi(next().c_str());
    } else if (a == "--capture") {
      capture = next();
    } else if (a == "--engines") {
      engines = std::atoi(next().c_str());
    } else if (a == "--smoke") {
      smoke = true;
    } else if (a == "--hold") {
      hold = true;
    } else {
      return Usage();
    }
  }
  if (input.empty() || output.empty() || passes < 1) return Usage();
  vmetrics::bench::Workload w;
  if (name == "w1" || name == "w2") {
    w = vmetrics::bench::LoadOrMake(name, smoke);
  } else if (!capture.empty() && engines > 0) {
    // Any capture, e.g. `vmetrics simulate --capture`: each frame goes to the engine its
    // engine_index names.
    w.name = "capture";
    w.engines = engines;
    w.messages = vmetrics::bench::SplitCapture(vmetrics::bench::ReadFileOrDie(capture));
  } else {
    return Usage();
  }

  void* ctx = zmq_ctx_new();
  std::vector<void*> dealers, pushes;
  for (int e = 0; e < w.engines; ++e) {
    // Registration: DEALER with the 2-byte identity, ready response as the only frame.
    void* d = Socket(ctx, ZMQ_DEALER);
    const std::string id = vmetrics::EngineIdentity(static_cast<uint16_t>(e));
    zmq_setsockopt(d, ZMQ_ROUTING_ID, id.data(), id.size());
    if (zmq_connect(d, input.c_str()) != 0) {
      std::fprintf(stderr, "vmetrics_bench_push: connect %s: %s\n", input.c_str(),
                   zmq_strerror(zmq_errno()));
      return 1;
    }
    vmetrics::EngineCoreReadyResponse r;
    r.max_model_len = 8192;
    r.num_gpu_blocks = 8192;
    r.block_size = 16;
    r.dtype = "bfloat16";
    r.vllm_version = "0.0.0+vmetrics.bench";
    r.data_parallel_size = w.engines;
    r.data_parallel_rank = e;
    r.instance_id = "bench-" + std::to_string(e);
    const std::string ready = vmetrics::internal::EncodeReadyResponse(r);
    zmq_send(d, ready.data(), ready.size(), 0);
    dealers.push_back(d);
    void* p = Socket(ctx, ZMQ_PUSH);
    if (zmq_connect(p, output.c_str()) != 0) {
      std::fprintf(stderr, "vmetrics_bench_push: connect %s: %s\n", output.c_str(),
                   zmq_strerror(zmq_errno()));
      return 1;
    }
    pushes.push_back(p);
  }
  // The frontend starts its output loop once every engine registered; PUSH queues until then.
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t sent = 0, bytes = 0;
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t i = 0; i < w.messages.size(); ++i) {
      const std::string& m = w.messages[i];
      size_t engine = w.engines == 1 ? 0 : i % static_cast<size_t>(w.engines);
      if (w.name == "capture") {
        int64_t index = 0;
        vmetrics::protocol::MsgpackReader r(m);
        uint32_t n = 0;
        if (r.ReadArrayHeader(&n).ok() && n > 0 && r.ReadInt(&index).ok() && index >= 0 &&
            index < w.engines) {
          engine = static_cast<size_t>(index);
        }
      }
      while (zmq_send(pushes[engine], m.data(), m.size(), 0) < 0) {
        if (zmq_errno() != EINTR) {
          std::fprintf(stderr, "vmetrics_bench_push: send: %s\n", zmq_strerror(zmq_errno()));
          return 1;
        }
      }
      ++sent;
      bytes += m.size();
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"workload\":\"%s\",\"messages\":%llu,\"bytes\":%llu,\"seconds\":%.6f}\n",
              name.c_str(), static_cast<unsigned long long>(sent),
              static_cast<unsigned long long>(bytes), seconds);
  std::fflush(stdout);
  // --hold keeps the engines connected until the driver stops this process: closing right
  // away would look like every engine dying while the frontend still reads its queue.
  if (hold) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  for (void* s : pushes) zmq_close(s);
  for (void* s : dealers) zmq_close(s);
  zmq_ctx_term(ctx);
  return 0;
}
