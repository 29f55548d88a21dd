#include "protocol/msgpack_reader.h"

#include <cstring>
#include <string>

namespace vmetrics::protocol {
namespace {

uint64_t LoadBE(const char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace

const char* MsgpackTypeName(MsgpackType type) {
  switch (type) {
    case MsgpackType::kNil: return "nil";
    case MsgpackType::kBool: return "bool";
    case MsgpackType::kInt: return "int";
    case MsgpackType::kFloat: return "float";
    case MsgpackType::kStr: return "str";
    case MsgpackType::kBin: return "bin";
    case MsgpackType::kArray: return "array";
    case MsgpackType::kMap: return "map";
    case MsgpackType::kExt: return "ext";
  }
  return "?";
}

Status MsgpackReader::Fail(const char* what) const {
  return Status::Malformed(what, static_cast<int64_t>(offset()));
}

Status MsgpackReader::ReadHeader(Header* h) const {
  const char* p = cur_;
  if (p >= end_) return Fail("unexpected end of input");
  const size_t avail = static_cast<size_t>(end_ - p) - 1;  // bytes after the type byte
  const uint8_t c = static_cast<uint8_t>(*p++);
  // `need` bytes of fixed-size payload must follow the type byte.
  auto fixed = [&](size_t need) -> bool { return avail >= need; };
  // A variable-size payload of `len` bytes after a `hdr`-byte length field.
  auto sized = [&](size_t hdr, uint64_t len) -> bool { return avail - hdr >= len; };

  h->negative = false;
  h->length = 0;
  if (c <= 0x7f) {
    h->type = MsgpackType::kInt;
    h->u = c;
  } else if (c <= 0x8f || (c >= 0x90 && c <= 0x9f)) {
    const bool is_map = c <= 0x8f;
    h->type = is_map ? MsgpackType::kMap : MsgpackType::kArray;
    h->length = c & 0x0f;
  } else if (c >= 0xa0 && c <= 0xbf) {
    h->type = MsgpackType::kStr;
    h->length = c & 0x1f;
    if (!sized(0, h->length)) return Fail("string runs past the end of input");
  } else if (c >= 0xe0) {
    h->type = MsgpackType::kInt;
    h->negative = true;
    h->u = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(c)));
  } else {
    switch (c) {
      case 0xc0: h->type = MsgpackType::kNil; break;
      case 0xc2:
      case 0xc3:
        h->type = MsgpackType::kBool;
        h->u = c == 0xc3;
        break;
      case 0xcc: case 0xcd: case 0xce: case 0xcf: {
        const int n = 1 << (c - 0xcc);
        if (!fixed(n)) return Fail("integer runs past the end of input");
        h->type = MsgpackType::kInt;
        h->u = LoadBE(p, n);
        p += n;
        break;
      }
      case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
        const int n = 1 << (c - 0xd0);
        if (!fixed(n)) return Fail("integer runs past the end of input");
        uint64_t raw = LoadBE(p, n);
        p += n;
        // Sign-extend from n bytes.
        int64_t v;
        if (n == 8) {
          std::memcpy(&v, &raw, 8);
        } else {
          const int shift = 64 - 8 * n;
          v = static_cast<int64_t>(raw << shift) >> shift;
        }
        h->type = MsgpackType::kInt;
        h->negative = v < 0;
        h->u = static_cast<uint64_t>(v);
        break;
      }
      case 0xca: {
        if (!fixed(4)) return Fail("float runs past the end of input");
        uint32_t bits = static_cast<uint32_t>(LoadBE(p, 4));
        float f;
        std::memcpy(&f, &bits, 4);
        h->type = MsgpackType::kFloat;
        h->f = f;
        p += 4;
        break;
      }
      case 0xcb: {
        if (!fixed(8)) return Fail("float runs past the end of input");
        uint64_t bits = LoadBE(p, 8);
        std::memcpy(&h->f, &bits, 8);
        h->type = MsgpackType::kFloat;
        p += 8;
        break;
      }
      case 0xd9: case 0xda: case 0xdb:
      case 0xc4: case 0xc5: case 0xc6: {
        const bool is_str = c >= 0xd9;
        const int n = 1 << (is_str ? c - 0xd9 : c - 0xc4);
        if (!fixed(n)) return Fail("length runs past the end of input");
        h->length = static_cast<uint32_t>(LoadBE(p, n));
        p += n;
        if (!sized(n, h->length)) {
          return Fail(is_str ? "string length exceeds the remaining input"
                             : "binary length exceeds the remaining input");
        }
        h->type = is_str ? MsgpackType::kStr : MsgpackType::kBin;
        break;
      }
      case 0xdc: case 0xdd: case 0xde: case 0xdf: {
        const bool is_array = c <= 0xdd;
        const int n = (c == 0xdc || c == 0xde) ? 2 : 4;
        if (!fixed(n)) return Fail("length runs past the end of input");
        h->length = static_cast<uint32_t>(LoadBE(p, n));
        p += n;
        // Every element takes at least one byte: a count above what remains is hostile.
        const uint64_t min_bytes = static_cast<uint64_t>(h->length) * (is_array ? 1 : 2);
        if (!sized(n, min_bytes)) {
          return Fail(is_array ? "array length exceeds the remaining input"
                               : "map length exceeds the remaining input");
        }
        h->type = is_array ? MsgpackType::kArray : MsgpackType::kMap;
        break;
      }
      case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
      case 0xc7: case 0xc8: case 0xc9: {
        size_t hdr = 0;
        if (c >= 0xd4) {
          h->length = 1u << (c - 0xd4);
        } else {
          hdr = size_t{1} << (c - 0xc7);
          if (!fixed(hdr)) return Fail("ext length runs past the end of input");
          h->length = static_cast<uint32_t>(LoadBE(p, static_cast<int>(hdr)));
          p += hdr;
        }
        if (!fixed(hdr + 1)) return Fail("ext type runs past the end of input");
        h->ext_type = static_cast<int8_t>(*p++);
        if (!sized(hdr + 1, h->length)) return Fail("ext length exceeds the remaining input");
        h->type = MsgpackType::kExt;
        break;
      }
      default:
        return Fail("byte 0xc1 is never used in msgpack");
    }
  }
  h->next = p;
  return Status::Ok();
}

Status MsgpackReader::PeekType(MsgpackType* type) const {
  Header h;
  if (Status s = ReadHeader(&h); !s.ok()) return s;
  *type = h.type;
  return Status::Ok();
}

namespace {
Status WrongType(const char* want, MsgpackType got, size_t offset) {
  return Status::Malformed(std::string("expected ") + want + ", got " + MsgpackTypeName(got),
                           static_cast<int64_t>(offset));
}
}  // namespace

Status MsgpackReader::ReadNil() {
  Header h;
  if (Status s = ReadHeader(&h); !s.ok()) return s;
  if (h.type != MsgpackType::kNil) return WrongType("nil", h.type, offset());
  cur_ = h.next;
  return Status::Ok();
}

Status MsgpackReader::ReadBool(bool* out) {
  Header h;
  if (Status s = ReadHeader(&h); !s.ok()) return s;
  if (h.type != MsgpackType::kBool) return WrongType("bool", h.type, offset());
  *out = h.u != 0;
  cur_ = h.next;
  return Status::Ok();
}

Status MsgpackReader::ReadInt(int64_t* out) {
  Header h;
  if (Status s = ReadHeader(&h); !s.ok()) return s;
  if (h.type != MsgpackType::kInt) return WrongType("int", h.type, offset());
  if (!h.negative && h.u > static_cast<uint64_t>(INT64_MAX)) {
    return Status::LimitExceeded("integer above 2^63-1", static_cast<int64_t>(offset()));
  }
  *out = static_cast<int64_t>(h.u);
  cur_ = h.next;
  return Status::Ok();
}

Status MsgpackReader::ReadUint(uint64_t* out) {
  Header h;
  if (Status s = ReadHeader(&h); !s.ok()) return s;
  if (h.type != MsgpackType::kInt) return WrongType("int", h.type, offset());
  if (h.negative) return Status::Malformed("expected a non-negative int", offset());
  *out = h.u;
  cur_ = h.next;
  return Status::Ok();
}

Status MsgpackReader::ReadDouble(double* out) {
  Header h;
  if (Status s = ReadHeader(&h); !s.ok()) return s;
  if (h.type == MsgpackType::kFloat) {
    *out = h.f;
  } else if (h.type == MsgpackType::kInt) {
    *out = h.negative ? static_cast<double>(static_cast<int64_t>(h.u)) : static_cast<double>(h.u);
  } else {
    return WrongType("float", h.type, offset());
  }
  cur_ = h.next;
  return Status::Ok();
}

Status MsgpackReader::ReadStr(std::string_view* out) {
  Header h;
  if (Status s = ReadHeader(&h); !s.ok()) return s;
  if (h.type != MsgpackType::kStr) return WrongType("str", h.type, offset());
  *out = std::string_view(h.next, h.length);
  cur_ = h.next + h.length;
  return Status::Ok();
}

Status MsgpackReader::ReadBin(std::string_view* out) {
  Header h;
  if (Status s = ReadHeader(&h); !s.ok()) return s;
  if (h.type != MsgpackType::kBin) return WrongType("bin", h.type, offset());
  *out = std::string_view(h.next, h.length);
  cur_ = h.next + h.length;
  return Status::Ok();
}

Status MsgpackReader::ReadArrayHeader(uint32_t* count) {
  Header h;
  if (Status s = ReadHeader(&h); !s.ok()) return s;
  if (h.type != MsgpackType::kArray) return WrongType("array", h.type, offset());
  *count = h.length;
  cur_ = h.next;
  return Status::Ok();
}

Status MsgpackReader::ReadMapHeader(uint32_t* count) {
  Header h;
  if (Status s = ReadHeader(&h); !s.ok()) return s;
  if (h.type != MsgpackType::kMap) return WrongType("map", h.type, offset());
  *count = h.length;
  cur_ = h.next;
  return Status::Ok();
}

namespace {
Status CheckExtType(int8_t type, size_t offset) {
  if (type == kExtPickle || type == kExtCloudPickle) {
    return Status::Unsupported("pickle ext type " + std::to_string(type) + " refused",
                               static_cast<int64_t>(offset));
  }
  if (type != kExtRawView) {
    return Status::Unsupported("unknown ext type " + std::to_string(type),
                               static_cast<int64_t>(offset));
  }
  return Status::Ok();
}
}  // namespace

Status MsgpackReader::ReadExt(int8_t* type, std::string_view* data) {
  Header h;
  if (Status s = ReadHeader(&h); !s.ok()) return s;
  if (h.type != MsgpackType::kExt) return WrongType("ext", h.type, offset());
  if (Status s = CheckExtType(h.ext_type, offset()); !s.ok()) return s;
  *type = h.ext_type;
  *data = std::string_view(h.next, h.length);
  cur_ = h.next + h.length;
  return Status::Ok();
}

Status MsgpackReader::Skip() {
  const char* const start = cur_;
  // Values still to skip. Each counted value takes at least one byte of input and headers
  // are checked against the remaining bytes, so this never exceeds the input size.
  uint64_t pending = 1;
  while (pending > 0) {
    Header h;
    if (Status s = ReadHeader(&h); !s.ok()) {
      cur_ = start;
      return s;
    }
    --pending;
    switch (h.type) {
      case MsgpackType::kStr:
      case MsgpackType::kBin:
        cur_ = h.next + h.length;
        break;
      case MsgpackType::kExt:
        if (Status s = CheckExtType(h.ext_type, offset()); !s.ok()) {
          cur_ = start;
          return s;
        }
        cur_ = h.next + h.length;
        break;
      case MsgpackType::kArray:
        pending += h.length;
        cur_ = h.next;
        break;
      case MsgpackType::kMap:
        pending += 2 * static_cast<uint64_t>(h.length);
        cur_ = h.next;
        break;
      default:
        cur_ = h.next;
        break;
    }
  }
  return Status::Ok();
}

Status MsgpackReader::ReadRaw(std::string_view* raw) {
  const char* start = cur_;
  if (Status s = Skip(); !s.ok()) return s;
  *raw = std::string_view(start, static_cast<size_t>(cur_ - start));
  return Status::Ok();
}

Status ValidateOne(std::string_view data, size_t* length) {
  MsgpackReader r(data);
  if (Status s = r.Skip(); !s.ok()) return s;
  *length = r.offset();
  return Status::Ok();
}

}  // namespace vmetrics::protocol
