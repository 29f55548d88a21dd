// SPDX-License-Identifier: Apache-2.0
// File: msgspec_writer.h
//
// MsgspecWriter: a thin layer over msgpack-cxx's packer that writes values the way vLLM's
// msgspec encoder does (floats always as float64, never as ints), for the stand-in engine
// (wire_encode.cc) and the benchmark workloads (bench/workloads.cc).
//
// Example:
//   MsgspecWriter w;
//   w.Map(1);
//   w.Key("hits").Int(3);
//   std::string bytes = w.Take();
#ifndef VMETRICS_SIMULATE_MSGSPEC_WRITER_H_
#define VMETRICS_SIMULATE_MSGSPEC_WRITER_H_

#include <cstdint>
#include <cstring>
#include <msgpack.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vmetrics::internal {

class MsgspecWriter {
 public:
  MsgspecWriter() : pk_(&buf_) {}
  void Map(uint32_t n) { pk_.pack_map(n); }
  void Array(uint32_t n) { pk_.pack_array(n); }
  void Nil() { pk_.pack_nil(); }
  void Bool(bool v) { v ? pk_.pack_true() : pk_.pack_false(); }
  void Int(int64_t v) { pk_.pack_int64(v); }
  void Uint(uint64_t v) { pk_.pack_uint64(v); }
  // Python floats are always float64 (0xcb). Not pk_.pack_double: msgpack-cxx 4 writes a
  // double with an integral value (2.0, 0.0) as an int, which msgspec never does.
  void Double(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    char buf[9];
    buf[0] = static_cast<char>(0xcb);
    for (int i = 0; i < 8; ++i) buf[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
    buf_.write(buf, sizeof buf);
  }
  void Str(std::string_view s) {
    pk_.pack_str(static_cast<uint32_t>(s.size()));
    pk_.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
  }
  // Writes a map key; chain the value: w.Key("hits").Int(3).
  MsgspecWriter& Key(std::string_view k) {
    Str(k);
    return *this;
  }
  void Ext(int8_t type, std::string_view data) {
    pk_.pack_ext(data.size(), type);
    pk_.pack_ext_body(data.data(), static_cast<uint32_t>(data.size()));
  }
  void Raw(std::string_view bytes) { buf_.write(bytes.data(), bytes.size()); }
  void OptInt(const std::optional<int64_t>& v) { v ? Int(*v) : Nil(); }
  void OptDouble(const std::optional<double>& v) { v ? Double(*v) : Nil(); }
  void OptStr(const std::optional<std::string>& v) { v ? Str(*v) : Nil(); }
  void IntList(const std::vector<int64_t>& v) {
    Array(static_cast<uint32_t>(v.size()));
    for (int64_t x : v) Int(x);
  }
  void DoubleList(const std::vector<double>& v) {
    Array(static_cast<uint32_t>(v.size()));
    for (double x : v) Double(x);
  }
  // The bytes written so far; the writer starts over empty.
  std::string Take() {
    std::string s(buf_.data(), buf_.size());
    buf_.clear();
    return s;
  }

 private:
  msgpack::sbuffer buf_;
  msgpack::packer<msgpack::sbuffer> pk_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_SIMULATE_MSGSPEC_WRITER_H_
