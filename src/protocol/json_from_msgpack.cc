// SPDX-License-Identifier: Apache-2.0
#include "vmetrics/internal/json_from_msgpack.h"

#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics::protocol {
namespace {

using Json = nlohmann::ordered_json;

Status Convert(MsgpackReader& r, int depth, Json* out) {
  MsgpackType t;
  if (Status s = r.PeekType(&t); !s.ok()) return s;
  if (depth <= 0 && (t == MsgpackType::kArray || t == MsgpackType::kMap)) {
    *out = "<too deep>";
    return r.Skip();
  }
  switch (t) {
    case MsgpackType::kNil:
      *out = nullptr;
      return r.ReadNil();
    case MsgpackType::kBool: {
      bool b;
      if (Status s = r.ReadBool(&b); !s.ok()) return s;
      *out = b;
      return Status::Ok();
    }
    case MsgpackType::kInt: {
      MsgpackReader peek = r;
      int64_t i;
      if (peek.ReadInt(&i).ok()) {
        r = peek;
        *out = i;
        return Status::Ok();
      }
      uint64_t u;
      if (Status s = r.ReadUint(&u); !s.ok()) return s;
      *out = u;
      return Status::Ok();
    }
    case MsgpackType::kFloat: {
      double d;
      if (Status s = r.ReadDouble(&d); !s.ok()) return s;
      *out = d;
      return Status::Ok();
    }
    case MsgpackType::kStr: {
      std::string_view sv;
      if (Status s = r.ReadStr(&sv); !s.ok()) return s;
      *out = std::string(sv);
      return Status::Ok();
    }
    case MsgpackType::kBin: {
      std::string_view sv;
      if (Status s = r.ReadBin(&sv); !s.ok()) return s;
      *out = Json{{"$bin", true}, {"len", sv.size()}};
      return Status::Ok();
    }
    case MsgpackType::kExt: {
      int8_t type;
      std::string_view sv;
      if (Status s = r.ReadExt(&type, &sv); !s.ok()) return s;
      *out = Json{{"$ext", type}, {"len", sv.size()}};
      return Status::Ok();
    }
    case MsgpackType::kArray: {
      uint32_t n;
      if (Status s = r.ReadArrayHeader(&n); !s.ok()) return s;
      *out = Json::array();
      for (uint32_t i = 0; i < n; ++i) {
        Json v;
        if (Status s = Convert(r, depth - 1, &v); !s.ok()) return s;
        out->push_back(std::move(v));
      }
      return Status::Ok();
    }
    case MsgpackType::kMap: {
      uint32_t n;
      if (Status s = r.ReadMapHeader(&n); !s.ok()) return s;
      *out = Json::object();
      for (uint32_t i = 0; i < n; ++i) {
        std::string key;
        MsgpackType kt;
        if (Status s = r.PeekType(&kt); !s.ok()) return s;
        if (kt == MsgpackType::kStr) {
          std::string_view sv;
          if (Status s = r.ReadStr(&sv); !s.ok()) return s;
          key = std::string(sv);
        } else {
          Json k;
          if (Status s = Convert(r, depth - 1, &k); !s.ok()) return s;
          key = k.dump(-1, ' ', false, Json::error_handler_t::replace);
        }
        Json v;
        if (Status s = Convert(r, depth - 1, &v); !s.ok()) return s;
        (*out)[key] = std::move(v);
      }
      return Status::Ok();
    }
  }
  return Status::Malformed("unknown msgpack type", static_cast<int64_t>(r.offset()));
}

}  // namespace

Result<nlohmann::ordered_json> MsgpackToJson(std::string_view raw, int max_depth) {
  MsgpackReader r(raw);
  Json out;
  if (Status s = Convert(r, max_depth, &out); !s.ok()) return s;
  return out;
}

}  // namespace vmetrics::protocol
