// SPDX-License-Identifier: Apache-2.0
#include "vmetrics/internal/msgpack_reader.h"

#include <algorithm>
#include <array>
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
    case MsgpackType::kNil:
      return "nil";
    case MsgpackType::kBool:
      return "bool";
    case MsgpackType::kInt:
      return "int";
    case MsgpackType::kFloat:
      return "float";
    case MsgpackType::kStr:
      return "str";
    case MsgpackType::kBin:
      return "bin";
    case MsgpackType::kArray:
      return "array";
    case MsgpackType::kMap:
      return "map";
    case MsgpackType::kExt:
      return "ext";
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
      case 0xc0:
        h->type = MsgpackType::kNil;
        break;
      case 0xc2:
      case 0xc3:
        h->type = MsgpackType::kBool;
        h->u = c == 0xc3;
        break;
      case 0xcc:
      case 0xcd:
      case 0xce:
      case 0xcf: {
        const int n = 1 << (c - 0xcc);
        if (!fixed(n)) return Fail("integer runs past the end of input");
        h->type = MsgpackType::kInt;
        h->u = LoadBE(p, n);
        p += n;
        break;
      }
      case 0xd0:
      case 0xd1:
      case 0xd2:
      case 0xd3: {
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
      case 0xd9:
      case 0xda:
      case 0xdb:
      case 0xc4:
      case 0xc5:
      case 0xc6: {
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
      case 0xdc:
      case 0xdd:
      case 0xde:
      case 0xdf: {
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
      case 0xd4:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8:
      case 0xc7:
      case 0xc8:
      case 0xc9: {
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

Status MsgpackReader::PeekTypeSlow(MsgpackType* type) const {
  // The common one-byte headers without a length to check against the input.
  if (cur_ < end_) {
    const uint8_t c = static_cast<uint8_t>(*cur_);
    if (c <= 0x7f || c >= 0xe0) {
      *type = MsgpackType::kInt;
      return Status::Ok();
    }
    if (c <= 0x8f) {
      *type = MsgpackType::kMap;
      return Status::Ok();
    }
    if (c <= 0x9f) {
      *type = MsgpackType::kArray;
      return Status::Ok();
    }
    if (c == 0xc0) {
      *type = MsgpackType::kNil;
      return Status::Ok();
    }
    if (c == 0xcb && remaining() >= 9) {
      *type = MsgpackType::kFloat;
      return Status::Ok();
    }
    if (c >= 0xcc && c <= 0xd3) {  // uint8..64, int8..64
      const size_t n = size_t{1} << ((c - 0xcc) & 3);
      if (remaining() > n) {
        *type = MsgpackType::kInt;
        return Status::Ok();
      }
    }
    if (c >= 0xa0 && c <= 0xbf && remaining() > static_cast<size_t>(c & 0x1f)) {
      *type = MsgpackType::kStr;
      return Status::Ok();
    }
  }
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

Status MsgpackReader::ReadNilSlow() {
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

Status MsgpackReader::ReadIntSlow(int64_t* out) {
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
  if (h.negative) {
    return Status::Malformed("expected a non-negative int", static_cast<int64_t>(offset()));
  }
  *out = h.u;
  cur_ = h.next;
  return Status::Ok();
}

Status MsgpackReader::ReadDoubleSlow(double* out) {
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

Status MsgpackReader::ReadStrSlow(std::string_view* out) {
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

Status MsgpackReader::ReadArrayHeaderSlow(uint32_t* count) {
  Header h;
  if (Status s = ReadHeader(&h); !s.ok()) return s;
  if (h.type != MsgpackType::kArray) return WrongType("array", h.type, offset());
  *count = h.length;
  cur_ = h.next;
  return Status::Ok();
}

Status MsgpackReader::ReadMapHeaderSlow(uint32_t* count) {
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

namespace {

// For every type byte, how many bytes follow it when that number is fixed by the byte itself:
// fixint, nil, bool, int/uint/float of every width, and fixstr (its length is in the byte).
// kVariable marks the rest: containers, str8/16/32, bin, ext and the unused 0xc1.
constexpr uint8_t kVariable = 0xff;
constexpr std::array<uint8_t, 256> kFixedPayload = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    uint8_t n = kVariable;
    if (c <= 0x7f || c >= 0xe0) n = 0;                               // fixint
    if (c >= 0xa0 && c <= 0xbf) n = static_cast<uint8_t>(c & 0x1f);  // fixstr
    if (c == 0xc0 || c == 0xc2 || c == 0xc3) n = 0;                  // nil, false, true
    if (c == 0xcc || c == 0xd0) n = 1;
    if (c == 0xcd || c == 0xd1) n = 2;
    if (c == 0xca || c == 0xce || c == 0xd2) n = 4;
    if (c == 0xcb || c == 0xcf || c == 0xd3) n = 8;
    t[static_cast<size_t>(c)] = n;
  }
  return t;
}();

// Skips the values of `step` bytes with type byte `c` that follow at *p (a list of float64, of
// uint32), as many as *pending allows and the bytes hold. When every pending value would fit in
// the bytes left — a list well before the end of the input, the usual case — the loop tests
// only the type byte and the count, not the bytes left as well.
inline void SkipRun(uint8_t c, size_t step, const char* end, const char** p, uint64_t* pending) {
  const char* q = *p;
  uint64_t left = *pending;
  if (static_cast<uint64_t>(end - q) >= left * step) {  // pending <= input size: no overflow
    while (left > 0 && static_cast<uint8_t>(*q) == c) {
      q += step;
      --left;
    }
  } else {
    while (left > 0 && static_cast<size_t>(end - q) >= step && static_cast<uint8_t>(*q) == c) {
      q += step;
      --left;
    }
  }
  *p = q;
  *pending = left;
}
}  // namespace

Status MsgpackReader::SkipValue() {
  // The fast walk: one pass over the bytes, no Header built, the encodings msgspec writes
  // most tested first (bench/README.md has the alternatives measured); containers add their
  // elements to `pending`. It checks exactly what
  // ReadHeader checks (every length against the bytes that remain, every array/map count
  // against them too); on anything unusual (a failure, an ext value whose type code needs
  // checking) it hands the whole value to SkipSlow, which reports the exact error the
  // per-header reader gives and leaves the cursor where it was.
  const char* p = cur_;
  const char* const end = end_;
  // Values still to skip; bounded by the input size as in SkipSlow.
  uint64_t pending = 1;
  while (pending > 0) {
    if (p >= end) return SkipSlow();
    const uint8_t c = static_cast<uint8_t>(*p);
    const size_t avail = static_cast<size_t>(end - p) - 1;  // bytes after the type byte
    --pending;
    if (c == 0xcb) {
      // float64, and the run that usually follows it (a list of latencies).
      if (avail < 8) return SkipSlow();
      p += 9;
      SkipRun(0xcb, 9, end, &p, &pending);
    } else if (c == 0xc0) {
      // nil, and the run that usually follows it (the unset positions of an output).
      ++p;
      while (pending > 0 && p < end && static_cast<uint8_t>(*p) == 0xc0) {
        ++p;
        --pending;
      }
    } else if (c <= 0x7f || c >= 0xe0) {  // fixint
      ++p;
    } else if (c >= 0xa0 && c <= 0xbf) {  // fixstr
      const size_t n = c & 0x1f;
      if (avail < n) return SkipSlow();
      p += 1 + n;
    } else if (c <= 0x8f) {  // fixmap
      pending += 2 * static_cast<uint64_t>(c & 0x0f);
      ++p;
    } else if (c <= 0x9f) {  // fixarray
      pending += c & 0x0f;
      ++p;
    } else if (const uint8_t fixed = kFixedPayload[c]; fixed != kVariable) {
      // The other scalars (bool, ints and floats of every width) by table, not by a switch:
      // their widths alternate within one list, which a jump table mispredicts. Lists of
      // sizes (uint32 after uint32) come in runs, skipped in a tight loop.
      if (avail < fixed) return SkipSlow();
      const size_t step = size_t{1} + fixed;
      p += step;
      SkipRun(c, step, end, &p, &pending);
    } else {
      size_t n = 0;  // bytes after the type byte
      switch (c) {
        case 0xd9:
        case 0xc4:  // str8, bin8
          if (avail < 1) return SkipSlow();
          n = 1 + static_cast<uint8_t>(p[1]);
          break;
        case 0xda:
        case 0xc5:  // str16, bin16
          if (avail < 2) return SkipSlow();
          n = 2 + LoadBE(p + 1, 2);
          break;
        case 0xdb:
        case 0xc6:  // str32, bin32
          if (avail < 4) return SkipSlow();
          n = 4 + LoadBE(p + 1, 4);
          break;
        case 0xdc:
        case 0xdd:
        case 0xde:
        case 0xdf: {  // array16/32, map16/32
          const bool is_array = c <= 0xdd;
          const size_t hdr = (c == 0xdc || c == 0xde) ? 2 : 4;
          if (avail < hdr) return SkipSlow();
          const uint64_t count = LoadBE(p + 1, static_cast<int>(hdr));
          // Every element takes at least one byte: a count above what remains is hostile.
          if (avail - hdr < count * (is_array ? 1 : 2)) return SkipSlow();
          pending += is_array ? count : 2 * count;
          n = hdr;
          break;
        }
        default:  // ext (its type code is checked there) and the unused 0xc1
          return SkipSlow();
      }
      if (avail < n) return SkipSlow();
      p += 1 + n;
    }
  }
  cur_ = p;
  return Status::Ok();
}

Status MsgpackReader::SkipSlow() {
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

namespace {

// Reads the run of elements with type byte `kType`, `kStep` bytes each, that starts at *cur
// into `values` (`load` reads one from the bytes after its type byte): at most `wanted`, and
// only as many as the `left` bytes hold. Each element's position comes from the run's start,
// not from the element before, so the loads overlap. Moves *cur past them and returns how many.
template <uint8_t kType, size_t kStep, typename Load>
size_t ReadRun(const char** cur, size_t left, size_t wanted, double* values, Load load) {
  const char* const p = *cur;
  const size_t most = std::min(wanted, left / kStep);
  size_t j = 0;
  for (; j < most && static_cast<uint8_t>(p[j * kStep]) == kType; ++j) {
    values[j] = load(p + j * kStep + 1);
  }
  *cur = p + j * kStep;
  return j;
}

}  // namespace

Status MsgpackReader::ReadNumbers(uint32_t n, std::vector<double>* out) {
  // Sized by what the bytes can hold, never by the claimed count alone: every element takes at
  // least one byte, so a hostile count fails at the end of the input before passing the size.
  const size_t base = out->size();
  out->resize(base + std::min<size_t>(n, remaining()));
  double* const values = out->data() + base;
  // The cursor is kept in a register and written back only around ReadDouble: stored through
  // `this` after every element, it was reloaded for the next one.
  const char* cur = cur_;
  const char* const end = end_;
  uint32_t i = 0;
  while (i < n) {
    const size_t left = static_cast<size_t>(end - cur);
    const uint8_t c = left > 0 ? static_cast<uint8_t>(*cur) : 0xc1;
    size_t run = 0;
    if (c == 0xcb) {  // float64: latencies
      run = ReadRun<0xcb, 9>(&cur, left, n - i, values + i,
                             [](const char* p) { return LoadFloat64(p); });
    } else if (c == 0xce) {  // uint32: byte counts
      run = ReadRun<0xce, 5>(&cur, left, n - i, values + i,
                             [](const char* p) -> double { return LoadBE32<4>(p); });
    } else if (c == 0xcd) {  // uint16: descriptor counts
      run = ReadRun<0xcd, 3>(&cur, left, n - i, values + i,
                             [](const char* p) -> double { return LoadBE32<2>(p); });
    } else if (c <= 0x7f) {  // positive fixint (0xc1, the end, is not one)
      values[i] = c;
      ++cur;
      run = 1;
    }
    if (run > 0) {
      i += static_cast<uint32_t>(run);
      continue;
    }
    // Anything else, or a value cut short by the end of the input: ReadDouble decides.
    cur_ = cur;
    if (Status s = ReadDouble(&values[i]); !s.ok()) {
      out->resize(base + i);
      return s;
    }
    cur = cur_;
    ++i;
  }
  cur_ = cur;
  out->resize(base + i);
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
