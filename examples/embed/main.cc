// SPDX-License-Identifier: Apache-2.0
// embed: the smallest C++ program that uses vmetrics as a library. It decodes EngineCoreOutputs
// messages, records them with StatsRecorder and prints what /metrics would serve, using only
// the installed public headers (<vmetrics/*.h>) and the CMake package or pkg-config file.
//
//   embed                 records the message embedded below (one NIXL engine)
//   embed CAPTURE         records every message of a capture file: concatenated msgpack
//                         EngineCoreOutputs, e.g. tests/fixtures/kv_nixl.msgpack
//
// Build against an installed vmetrics (see README.md next to this file):
//   cmake -S examples/embed -B build-embed -DCMAKE_PREFIX_PATH=/usr/local
//   cmake --build build-embed
//   g++ -std=c++20 main.cc $(pkg-config --cflags --libs vmetrics) -o embed
#include <vmetrics/engine_core_outputs.h>
#include <vmetrics/exposition.h>
#include <vmetrics/recorder.h>
#include <vmetrics/registry.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <string_view>

namespace {

// One EngineCoreOutputs message from engine 0, as msgpack: [engine_index, outputs,
// scheduler_stats, timestamp] with 3 running and 1 waiting request, a prefix-cache step, and a
// NixlConnector kv_connector_stats payload of two transfers. Made with python3-msgpack:
//   msgpack.packb([0, [], {"num_running_reqs": 3, "num_waiting_reqs": 1,
//     "kv_cache_usage": 0.25,
//     "prefix_cache_stats": {"reset": False, "requests": 2, "queries": 128, "hits": 96},
//     "kv_connector_stats": {"transfer_duration": [0.012, 0.034],
//       "post_duration": [0.001, 0.002], "bytes_transferred": [1048576, 2097152],
//       "num_descriptors": [32, 64], "num_failed_transfers": [],
//       "num_failed_notifications": [], "num_kv_expired_reqs": []}}, 1234.5])
constexpr unsigned char kMessage[] = {
    0x94, 0x00, 0x90, 0x85, 0xb0, 0x6e, 0x75, 0x6d, 0x5f, 0x72, 0x75, 0x6e, 0x6e, 0x69, 0x6e, 0x67,
    0x5f, 0x72, 0x65, 0x71, 0x73, 0x03, 0xb0, 0x6e, 0x75, 0x6d, 0x5f, 0x77, 0x61, 0x69, 0x74, 0x69,
    0x6e, 0x67, 0x5f, 0x72, 0x65, 0x71, 0x73, 0x01, 0xae, 0x6b, 0x76, 0x5f, 0x63, 0x61, 0x63, 0x68,
    0x65, 0x5f, 0x75, 0x73, 0x61, 0x67, 0x65, 0xcb, 0x3f, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xb2, 0x70, 0x72, 0x65, 0x66, 0x69, 0x78, 0x5f, 0x63, 0x61, 0x63, 0x68, 0x65, 0x5f, 0x73, 0x74,
    0x61, 0x74, 0x73, 0x84, 0xa5, 0x72, 0x65, 0x73, 0x65, 0x74, 0xc2, 0xa8, 0x72, 0x65, 0x71, 0x75,
    0x65, 0x73, 0x74, 0x73, 0x02, 0xa7, 0x71, 0x75, 0x65, 0x72, 0x69, 0x65, 0x73, 0xcc, 0x80, 0xa4,
    0x68, 0x69, 0x74, 0x73, 0x60, 0xb2, 0x6b, 0x76, 0x5f, 0x63, 0x6f, 0x6e, 0x6e, 0x65, 0x63, 0x74,
    0x6f, 0x72, 0x5f, 0x73, 0x74, 0x61, 0x74, 0x73, 0x87, 0xb1, 0x74, 0x72, 0x61, 0x6e, 0x73, 0x66,
    0x65, 0x72, 0x5f, 0x64, 0x75, 0x72, 0x61, 0x74, 0x69, 0x6f, 0x6e, 0x92, 0xcb, 0x3f, 0x88, 0x93,
    0x74, 0xbc, 0x6a, 0x7e, 0xfa, 0xcb, 0x3f, 0xa1, 0x68, 0x72, 0xb0, 0x20, 0xc4, 0x9c, 0xad, 0x70,
    0x6f, 0x73, 0x74, 0x5f, 0x64, 0x75, 0x72, 0x61, 0x74, 0x69, 0x6f, 0x6e, 0x92, 0xcb, 0x3f, 0x50,
    0x62, 0x4d, 0xd2, 0xf1, 0xa9, 0xfc, 0xcb, 0x3f, 0x60, 0x62, 0x4d, 0xd2, 0xf1, 0xa9, 0xfc, 0xb1,
    0x62, 0x79, 0x74, 0x65, 0x73, 0x5f, 0x74, 0x72, 0x61, 0x6e, 0x73, 0x66, 0x65, 0x72, 0x72, 0x65,
    0x64, 0x92, 0xce, 0x00, 0x10, 0x00, 0x00, 0xce, 0x00, 0x20, 0x00, 0x00, 0xaf, 0x6e, 0x75, 0x6d,
    0x5f, 0x64, 0x65, 0x73, 0x63, 0x72, 0x69, 0x70, 0x74, 0x6f, 0x72, 0x73, 0x92, 0x20, 0x40, 0xb4,
    0x6e, 0x75, 0x6d, 0x5f, 0x66, 0x61, 0x69, 0x6c, 0x65, 0x64, 0x5f, 0x74, 0x72, 0x61, 0x6e, 0x73,
    0x66, 0x65, 0x72, 0x73, 0x90, 0xb8, 0x6e, 0x75, 0x6d, 0x5f, 0x66, 0x61, 0x69, 0x6c, 0x65, 0x64,
    0x5f, 0x6e, 0x6f, 0x74, 0x69, 0x66, 0x69, 0x63, 0x61, 0x74, 0x69, 0x6f, 0x6e, 0x73, 0x90, 0xb3,
    0x6e, 0x75, 0x6d, 0x5f, 0x6b, 0x76, 0x5f, 0x65, 0x78, 0x70, 0x69, 0x72, 0x65, 0x64, 0x5f, 0x72,
    0x65, 0x71, 0x73, 0x90, 0xcb, 0x40, 0x93, 0x4a, 0x00, 0x00, 0x00, 0x00, 0x00};

// SkipMsgpackValue
//
// The size of the msgpack value at the start of `data`, or 0 when it is truncated or invalid.
// A capture is messages back to back, and DecodeEngineCoreOutputs takes exactly one value per
// frame (trailing bytes fail it), so the example finds each boundary itself. Iterative: deep
// nesting cannot overflow the stack, and a count larger than the bytes left is refused.
size_t SkipMsgpackValue(std::string_view data) {
  size_t pos = 0;
  uint64_t pending = 1;  // values still to skip
  auto need = [&](size_t n) { return data.size() - pos >= n; };
  auto be = [&](size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(data[pos + i]);
    pos += n;
    return v;
  };
  while (pending > 0) {
    if (!need(1)) return 0;
    const unsigned char t = static_cast<unsigned char>(data[pos++]);
    --pending;
    uint64_t skip = 0, items = 0;
    if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
      // fixint, nil, bool: nothing follows
    } else if (t >= 0x80 && t <= 0x8f) {
      items = 2 * (t & 0x0f);
    } else if (t >= 0x90 && t <= 0x9f) {
      items = t & 0x0f;
    } else if (t >= 0xa0 && t <= 0xbf) {
      skip = t & 0x1f;
    } else {
      switch (t) {
        case 0xc4:
        case 0xd9:
          if (!need(1)) return 0;
          skip = be(1);
          break;  // bin8, str8
        case 0xc5:
        case 0xda:
          if (!need(2)) return 0;
          skip = be(2);
          break;  // bin16, str16
        case 0xc6:
        case 0xdb:
          if (!need(4)) return 0;
          skip = be(4);
          break;  // bin32, str32
        case 0xc7:
          if (!need(1)) return 0;
          skip = be(1) + 1;
          break;  // ext8
        case 0xc8:
          if (!need(2)) return 0;
          skip = be(2) + 1;
          break;  // ext16
        case 0xc9:
          if (!need(4)) return 0;
          skip = be(4) + 1;
          break;  // ext32
        case 0xca:
        case 0xce:
        case 0xd2:
          skip = 4;
          break;  // float32, (u)int32
        case 0xcb:
        case 0xcf:
        case 0xd3:
          skip = 8;
          break;  // float64, (u)int64
        case 0xcc:
        case 0xd0:
          skip = 1;
          break;  // (u)int8
        case 0xcd:
        case 0xd1:
          skip = 2;
          break;  // (u)int16
        case 0xd4:
          skip = 2;
          break;  // fixext1
        case 0xd5:
          skip = 3;
          break;  // fixext2
        case 0xd6:
          skip = 5;
          break;  // fixext4
        case 0xd7:
          skip = 9;
          break;  // fixext8
        case 0xd8:
          skip = 17;
          break;  // fixext16
        case 0xdc:
          if (!need(2)) return 0;
          items = be(2);
          break;  // array16
        case 0xdd:
          if (!need(4)) return 0;
          items = be(4);
          break;  // array32
        case 0xde:
          if (!need(2)) return 0;
          items = 2 * be(2);
          break;  // map16
        case 0xdf:
          if (!need(4)) return 0;
          items = 2 * be(4);
          break;  // map32
        default:
          return 0;  // 0xc1: never used
      }
    }
    if (!need(skip)) return 0;
    pos += skip;
    // Every value still to come takes at least one byte.
    if (pending + items > data.size() - pos) return 0;
    pending += items;
  }
  return pos;
}

}  // namespace

int main(int argc, char** argv) {
  std::string capture;
  if (argc > 1) {
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "embed: cannot read %s\n", argv[1]);
      return 2;
    }
    capture.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } else {
    capture.assign(reinterpret_cast<const char*>(kMessage), sizeof kMessage);
  }

  // What the frontend serves: one engine of model "example", configured with NIXL as vLLM's
  // --kv-transfer-config would say. Families register here, in vLLM's order.
  vmetrics::RecorderOptions options;
  options.served_model_name = "example";
  vmetrics::Result<vmetrics::ConnectorConfig> connectors =
      vmetrics::ConnectorConfig::FromKvTransferConfigJson(R"({"kv_connector":"NixlConnector"})");
  if (!connectors.ok()) {
    std::fprintf(stderr, "embed: %s\n", connectors.status().ToString().c_str());
    return 2;
  }
  options.connectors = *connectors;
  vmetrics::Registry registry;
  vmetrics::StatsRecorder recorder(&registry, options);

  // Decode and record each message. A message that does not decode is counted in
  // vmetrics_decode_errors_total and skipped, as `vmetrics serve` does.
  std::string_view rest = capture;
  vmetrics::EngineCoreOutputs message;  // reused: its vectors keep their capacity
  uint64_t number = 0;
  int exit_code = 0;
  while (!rest.empty()) {
    const size_t size = SkipMsgpackValue(rest);
    if (size == 0) {
      std::fprintf(stderr, "embed: message %llu is truncated or not msgpack; stopping\n",
                   static_cast<unsigned long long>(number + 1));
      recorder.CountDecodeError();
      exit_code = 1;
      break;
    }
    const std::string_view frames[] = {rest.substr(0, size)};
    rest.remove_prefix(size);
    ++number;
    vmetrics::Status s =
        vmetrics::DecodeEngineCoreOutputs(frames, recorder.decode_context(number), &message);
    if (!s.ok()) {
      std::fprintf(stderr, "embed: message %llu: %s\n", static_cast<unsigned long long>(number),
                   s.ToString().c_str());
      recorder.CountDecodeError();
      exit_code = 1;
      continue;
    }
    recorder.Record(message);
  }

  // Render what GET /metrics returns by default (Prometheus text format 0.0.4).
  std::string text;
  vmetrics::WriteText(registry, vmetrics::ExpositionOptions{}, &text);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return exit_code;
}
