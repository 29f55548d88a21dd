// SPDX-License-Identifier: Apache-2.0
// UTILITY call bodies and results; see utility_call.h.
#include "vmetrics/utility_call.h"

#include <msgpack.hpp>
#include <string>
#include <type_traits>
#include <utility>

#include "vmetrics/internal/msgpack_reader.h"
#include "vmetrics/wire_decoder.h"

namespace vmetrics {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void PackStr(Packer& pk, std::string_view s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

void PackArg(msgpack::sbuffer& buf, Packer& pk, const UtilityArg& arg) {
  std::visit(
      [&buf, &pk](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>) {
          pk.pack_nil();
        } else if constexpr (std::is_same_v<T, bool>) {
          if (v) {
            pk.pack_true();
          } else {
            pk.pack_false();
          }
        } else if constexpr (std::is_same_v<T, int64_t>) {
          pk.pack_int64(v);  // msgpack-cxx writes the shortest form, as msgspec does
        } else if constexpr (std::is_same_v<T, std::string>) {
          PackStr(pk, v);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          pk.pack_array(static_cast<uint32_t>(v.size()));
          for (const std::string& s : v) PackStr(pk, s);
        } else {
          buf.write(v.msgpack.data(), v.msgpack.size());
        }
      },
      arg);
}

Status ReadRawArg(protocol::MsgpackReader& r, UtilityArg* out) {
  std::string_view raw;
  if (Status s = r.ReadRaw(&raw); !s.ok()) return s;
  *out = UtilityRaw{std::string(raw)};
  return Status::Ok();
}

Status ReadArg(protocol::MsgpackReader& r, UtilityArg* out) {
  protocol::MsgpackType type{};
  if (Status s = r.PeekType(&type); !s.ok()) return s;
  switch (type) {
    case protocol::MsgpackType::kNil:
      *out = nullptr;
      return r.ReadNil();
    case protocol::MsgpackType::kBool: {
      bool b = false;
      if (Status s = r.ReadBool(&b); !s.ok()) return s;
      *out = b;
      return Status::Ok();
    }
    case protocol::MsgpackType::kInt: {
      int64_t i = 0;
      if (Status s = r.ReadInt(&i); !s.ok()) return s;
      *out = i;
      return Status::Ok();
    }
    case protocol::MsgpackType::kStr: {
      std::string_view v;
      if (Status s = r.ReadStr(&v); !s.ok()) return s;
      *out = std::string(v);
      return Status::Ok();
    }
    case protocol::MsgpackType::kArray: {
      protocol::MsgpackReader strings = r;  // a list of str, if it is one
      uint32_t n = 0;
      if (Status s = strings.ReadArrayHeader(&n); !s.ok()) return s;
      std::vector<std::string> list;
      bool all_str = true;
      for (uint32_t i = 0; i < n && all_str; ++i) {
        protocol::MsgpackType t{};
        std::string_view v;
        all_str = strings.PeekType(&t).ok() && t == protocol::MsgpackType::kStr &&
                  strings.ReadStr(&v).ok();
        if (all_str) list.emplace_back(v);
      }
      if (all_str) {
        r = strings;
        *out = std::move(list);
        return Status::Ok();
      }
      return ReadRawArg(r, out);
    }
    case protocol::MsgpackType::kMap:
    case protocol::MsgpackType::kFloat:
      return ReadRawArg(r, out);
    default:
      return Status::Malformed(
          std::string("a utility value is not plain data but ") + protocol::MsgpackTypeName(type),
          static_cast<int64_t>(r.offset()));
  }
}

}  // namespace

std::string EncodeUtilityCall(int64_t client_index, uint64_t call_id, std::string_view method,
                              std::span<const UtilityArg> args) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_array(4);
  pk.pack_int64(client_index);
  pk.pack_uint64(call_id);
  PackStr(pk, method);
  pk.pack_array(static_cast<uint32_t>(args.size()));
  for (const UtilityArg& arg : args) PackArg(buf, pk, arg);
  return std::string(buf.data(), buf.size());
}

Result<UtilityCall> DecodeUtilityCall(std::string_view body) {
  protocol::MsgpackReader r(body);
  uint32_t count = 0;
  if (Status s = r.ReadArrayHeader(&count); !s.ok()) return s;
  if (count != 4) {
    return Status::Malformed("a UTILITY body has 4 values, not " + std::to_string(count), 0);
  }
  UtilityCall call;
  std::string_view method;
  uint32_t nargs = 0;
  if (Status s = r.ReadInt(&call.client_index); !s.ok()) return s;
  if (Status s = r.ReadUint(&call.call_id); !s.ok()) return s;
  if (Status s = r.ReadStr(&method); !s.ok()) return s;
  if (Status s = r.ReadArrayHeader(&nargs); !s.ok()) return s;
  call.method = std::string(method);
  for (uint32_t i = 0; i < nargs; ++i) {
    UtilityArg arg;
    if (Status s = ReadArg(r, &arg); !s.ok()) return s;
    call.args.push_back(std::move(arg));
  }
  if (!r.at_end()) {
    return Status::Malformed("bytes after the UTILITY body", static_cast<int64_t>(r.offset()));
  }
  return call;
}

Result<UtilityArg> DecodeUtilityResult(std::string_view result) {
  if (result.empty()) return UtilityArg(nullptr);
  protocol::MsgpackReader r(result);
  uint32_t count = 0;
  if (Status s = r.ReadArrayHeader(&count); !s.ok()) return s;
  if (count != 2) {
    return Status::Malformed("a UtilityResult has 2 values, not " + std::to_string(count), 0);
  }
  if (Status s = r.Skip(); !s.ok()) return s;  // type_info: what Python would convert to
  UtilityArg value;
  if (Status s = ReadArg(r, &value); !s.ok()) return s;
  if (!r.at_end()) {
    return Status::Malformed("bytes after the UtilityResult", static_cast<int64_t>(r.offset()));
  }
  return value;
}

Result<EngineControlCalls> ControlCallsFor(uint32_t candidates) {
  const std::span<const WireGeneration> all = WireGenerations();
  const EngineControlCalls* first = nullptr;
  for (size_t i = 0; i < all.size(); ++i) {
    if (((candidates >> i) & 1U) == 0) continue;
    if (first == nullptr) {
      first = &all[i].control;
    } else if (!(all[i].control == *first)) {
      return Status::Unavailable("the engine may be " + WireCandidateNames(candidates) +
                                 ", whose utility methods differ");
    }
  }
  if (first == nullptr) return Status::InvalidArgument("no wire generation to call");
  return *first;
}

}  // namespace vmetrics
