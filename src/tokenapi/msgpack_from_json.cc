// SPDX-License-Identifier: Apache-2.0
// JSON values as msgspec encodes their Python counterparts; see msgpack_from_json.h.
#include "msgpack_from_json.h"

#include <cstring>
#include <msgpack.hpp>
#include <vector>

namespace vmetrics::frontend {
namespace {

using Json = nlohmann::ordered_json;
using Packer = msgpack::packer<msgpack::sbuffer>;

void PackString(Packer& pk, const std::string& s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

// One value's own bytes: a scalar whole, an array or map its header only (Pack writes the
// elements).
void PackHead(msgpack::sbuffer& buf, Packer& pk, const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
    case Json::value_t::discarded:
      pk.pack_nil();
      return;
    case Json::value_t::boolean:
      v.get<bool>() ? pk.pack_true() : pk.pack_false();
      return;
    case Json::value_t::number_integer:
      pk.pack_int64(v.get<int64_t>());  // smallest encoding, as msgspec
      return;
    case Json::value_t::number_unsigned:
      pk.pack_uint64(v.get<uint64_t>());
      return;
    case Json::value_t::number_float: {
      // msgspec writes every float as float64; msgpack-cxx's pack_double would write 2.0 as
      // an int.
      const double d = v.get<double>();
      uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      char bytes[9];
      bytes[0] = static_cast<char>(0xcb);
      for (int i = 0; i < 8; ++i) bytes[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
      buf.write(bytes, sizeof bytes);
      return;
    }
    case Json::value_t::string:
      PackString(pk, v.get_ref<const std::string&>());
      return;
    case Json::value_t::binary:
      pk.pack_bin(static_cast<uint32_t>(v.get_binary().size()));
      pk.pack_bin_body(reinterpret_cast<const char*>(v.get_binary().data()),
                       static_cast<uint32_t>(v.get_binary().size()));
      return;
    case Json::value_t::array:
      pk.pack_array(static_cast<uint32_t>(v.size()));
      return;
    case Json::value_t::object:
      pk.pack_map(static_cast<uint32_t>(v.size()));
      return;
  }
}

// The whole value, depth first with an explicit stack of the containers being written: the
// request parsers bound what reaches here (kMaxJsonNestingDepth), and whatever does, no depth
// can exhaust the thread's stack.
void Pack(msgpack::sbuffer& buf, Packer& pk, const Json& v) {
  struct Open {
    const Json* container;
    Json::const_iterator next;
  };
  std::vector<Open> open;
  auto write = [&](const Json& value) {
    PackHead(buf, pk, value);
    if (value.is_structured() && !value.empty()) open.push_back({&value, value.cbegin()});
  };
  write(v);
  while (!open.empty()) {
    Open& top = open.back();
    if (top.next == top.container->cend()) {
      open.pop_back();
      continue;
    }
    const Json::const_iterator it = top.next++;
    if (top.container->is_object()) PackString(pk, it.key());
    write(*it);  // may grow `open`: `top` is not used after this
  }
}

}  // namespace

std::string MsgpackFromJson(const Json& value) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  Pack(buf, pk, value);
  return std::string(buf.data(), buf.size());
}

std::string MsgpackMapFromJson(const std::vector<std::pair<std::string, const Json*>>& entries) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_map(static_cast<uint32_t>(entries.size()));
  for (const auto& [key, value] : entries) {
    PackString(pk, key);
    Pack(buf, pk, *value);
  }
  return std::string(buf.data(), buf.size());
}

}  // namespace vmetrics::frontend
