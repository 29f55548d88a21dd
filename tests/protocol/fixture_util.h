// SPDX-License-Identifier: Apache-2.0
// File: fixture_util.h
//
// Helpers shared by the protocol tests: reading the committed fixtures of tests/fixtures/
// (written by tools/gen_fixtures.py; nothing runs Python at test time), splitting concatenated
// messages, a Reporter that keeps every problem, and a walk over a raw msgpack map.
#ifndef VMETRICS_TESTS_PROTOCOL_FIXTURE_UTIL_H_
#define VMETRICS_TESTS_PROTOCOL_FIXTURE_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/internal/msgpack_reader.h"
#include "vmetrics/reporter.h"

namespace vmetrics::testing {

inline std::string FixturePath(std::string_view file) {
  return std::string(VMETRICS_FIXTURE_DIR) + "/" + std::string(file);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The bytes of tests/fixtures/<name>.msgpack.
inline std::string ReadFixture(std::string_view name) {
  return ReadFile(FixturePath(std::string(name) + ".msgpack"));
}

// A multi-frame fixture: tests/fixtures/<name>.frames is a msgpack array of bin frames. The
// frames are copied into owned strings so each has its own buffer, as ZeroMQ frames do.
struct Frames {
  std::vector<std::string> owned;
  std::vector<std::string_view> views;
  std::span<const std::string_view> span() const { return views; }
};

inline Frames ParseFramesContainer(std::string_view data) {
  Frames f;
  protocol::MsgpackReader r(data);
  uint32_t n = 0;
  EXPECT_TRUE(r.ReadArrayHeader(&n).ok());
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view bin;
    EXPECT_TRUE(r.ReadBin(&bin).ok());
    f.owned.emplace_back(bin);
  }
  for (const std::string& s : f.owned) f.views.emplace_back(s);
  return f;
}

inline Frames ReadFramesFixture(std::string_view name) {
  return ParseFramesContainer(ReadFile(FixturePath(std::string(name) + ".frames")));
}

// Splits concatenated msgpack messages (one complete value each) with ValidateOne.
// The views point into `data`, which must outlive them.
inline std::vector<std::string_view> SplitMessages(std::string_view data) {
  std::vector<std::string_view> messages;
  while (!data.empty()) {
    size_t len = 0;
    Status s = protocol::ValidateOne(data, &len);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok() || len == 0) break;
    messages.push_back(data.substr(0, len));
    data.remove_prefix(len);
  }
  return messages;
}

// Like SplitMessages, but a remainder that is not one complete value (a hostile fixture)
// becomes the last message as it is.
inline std::vector<std::string_view> SplitMessagesLenient(std::string_view data) {
  std::vector<std::string_view> messages;
  while (!data.empty()) {
    size_t len = 0;
    if (!protocol::ValidateOne(data, &len).ok() || len == 0) len = data.size();
    messages.push_back(data.substr(0, len));
    data.remove_prefix(len);
  }
  return messages;
}

// Every fixture file name in tests/fixtures with this extension (".msgpack" or ".frames"),
// sorted, without the extension.
inline std::vector<std::string> FixtureNames(std::string_view extension) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(VMETRICS_FIXTURE_DIR)) {
    const std::filesystem::path& p = entry.path();
    if (p.extension() == extension) names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A Reporter that keeps a copy of every problem.
struct KeptProblem {
  uint64_t message_number = 0;
  int64_t offset = -1;
  std::string connector;
  std::string key;
  std::string what;
};

class RecordingReporter : public Reporter {
 public:
  void Report(const Problem& p) override {
    problems.push_back(
        {p.message_number, p.offset, std::string(p.connector), std::string(p.key), p.what});
  }
  // Problems whose key is `key` or ends in ".<key>" (a nested path).
  std::vector<KeptProblem> ForKey(std::string_view key) const {
    std::vector<KeptProblem> out;
    for (const KeptProblem& p : problems) {
      const std::string dotted = "." + std::string(key);
      if (p.key == key ||
          (p.key.size() > dotted.size() &&
           p.key.compare(p.key.size() - dotted.size(), dotted.size(), dotted) == 0)) {
        out.push_back(p);
      }
    }
    return out;
  }
  std::string Dump() const {
    std::ostringstream os;
    for (const KeptProblem& p : problems) {
      os << "  message " << p.message_number << " byte " << p.offset << " connector '"
         << p.connector << "' key '" << p.key << "': " << p.what << "\n";
    }
    return os.str();
  }
  std::vector<KeptProblem> problems;
};

// Decodes a single-frame message.
inline Status DecodeOne(std::string_view frame0, const DecodeContext& ctx, EngineCoreOutputs* out) {
  std::string_view frames[] = {frame0};
  return DecodeEngineCoreOutputs(frames, ctx, out);
}

// A raw msgpack map read into key -> raw value (string keys only; others are skipped).
inline std::map<std::string, std::string_view> MapEntries(std::string_view raw_map) {
  std::map<std::string, std::string_view> entries;
  protocol::MsgpackReader r(raw_map);
  uint32_t n = 0;
  EXPECT_TRUE(r.ReadMapHeader(&n).ok()) << "not a map";
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key, value;
    protocol::MsgpackType t;
    EXPECT_TRUE(r.PeekType(&t).ok());
    if (t == protocol::MsgpackType::kStr) {
      EXPECT_TRUE(r.ReadStr(&key).ok());
      EXPECT_TRUE(r.ReadRaw(&value).ok());
      entries.emplace(std::string(key), value);
    } else {
      EXPECT_TRUE(r.Skip().ok());
      EXPECT_TRUE(r.Skip().ok());
    }
  }
  return entries;
}

// The keys of a raw msgpack map, in wire order.
inline std::vector<std::string> MapKeys(std::string_view raw_map) {
  std::vector<std::string> keys;
  protocol::MsgpackReader r(raw_map);
  uint32_t n = 0;
  if (!r.ReadMapHeader(&n).ok()) return keys;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!r.ReadStr(&key).ok()) return keys;
    keys.emplace_back(key);
    if (!r.Skip().ok()) return keys;
  }
  return keys;
}

// True if `inner` lies entirely within `outer` (a view into the frame, not a copy).
inline bool ViewsInto(std::string_view inner, std::string_view outer) {
  return inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size();
}

// Little-endian tensor bytes as values.
template <typename T>
std::vector<T> TensorValues(std::string_view bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

}  // namespace vmetrics::testing

#endif  // VMETRICS_TESTS_PROTOCOL_FIXTURE_UTIL_H_
