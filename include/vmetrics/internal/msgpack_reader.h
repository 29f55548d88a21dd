// SPDX-License-Identifier: Apache-2.0
// File: msgpack_reader.h
//
// MsgpackReader: a bounded, zero-copy cursor over one msgpack buffer. It never allocates,
// never reads past the end, and checks every length against the bytes that remain before
// anyone can size an allocation by it: an array header whose count exceeds the remaining
// bytes is malformed (each element takes at least one byte), so `reserve(count)` after
// ReadArrayHeader is always bounded by the input size.
//
// Why not a library reader: msgpack-cxx's unpack() allocates count*sizeof(object) from the
// header before reading an element (a 5-byte array32 asks for 100 GB), and msgpuck 1.0.3's
// mp_check() adds 32-bit lengths to an int and to the cursor before comparing them with the
// end (overflow on hostile input) and has no ext decoder. Encoding (simulator, tests) uses
// msgpack-cxx's packer.
//
// Every failing call returns a non-ok Status whose offset is the absolute byte offset of the
// value that failed, and leaves the cursor where it was.
//
// Internal (include/vmetrics/internal/: shared by the libraries of this tree, not a stable API):
// the protocol library's reader, also used by transport (engine liveness), requests (request
// bodies), metrics (the connector walk), the simulator and the frontend.
//
// Thread safety: a reader is a value; use one per thread.
//
// Example:
//   MsgpackReader r(std::string_view("\x92\x01\xa1x", 4));
//   uint32_t n; ASSERT_TRUE(r.ReadArrayHeader(&n).ok());  // n == 2
//   int64_t i;  ASSERT_TRUE(r.ReadInt(&i).ok());          // i == 1
//   std::string_view s; ASSERT_TRUE(r.ReadStr(&s).ok());  // s == "x"
#ifndef VMETRICS_INTERNAL_MSGPACK_READER_H_
#define VMETRICS_INTERNAL_MSGPACK_READER_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "vmetrics/status.h"

namespace vmetrics::protocol {

enum class MsgpackType : uint8_t { kNil, kBool, kInt, kFloat, kStr, kBin, kArray, kMap, kExt };

const char* MsgpackTypeName(MsgpackType type);

// Extension type codes of vllm/v1/serial_utils.py. Pickle codes are refused everywhere.
inline constexpr int8_t kExtPickle = 1;
inline constexpr int8_t kExtCloudPickle = 2;
inline constexpr int8_t kExtRawView = 3;

class MsgpackReader {
 public:
  // `base_offset` is added to every reported offset (a reader over a slice of a frame
  // reports offsets in the frame).
  explicit MsgpackReader(std::string_view data, size_t base_offset = 0)
      : begin_(data.data()),
        cur_(data.data()),
        end_(data.data() + data.size()),
        base_(base_offset) {}

  size_t offset() const { return base_ + static_cast<size_t>(cur_ - begin_); }
  size_t remaining() const { return static_cast<size_t>(end_ - cur_); }
  bool at_end() const { return cur_ >= end_; }
  const char* position() const { return cur_; }
  // Back to a position() this reader returned earlier (a decoder stepping over a value it
  // could not read); one pointer to keep instead of a copy of the reader.
  void Rewind(const char* position) { cur_ = position; }

  // The type of the next value; kMalformed at the end of input or on the unused byte 0xc1.
  Status PeekType(MsgpackType* type) const {
    if (cur_ < end_) {  // fixint, fixmap, fixarray, nil: no length to check; float64
      const uint8_t c = static_cast<uint8_t>(*cur_);
      if (c <= 0x9f) {
        *type = c <= 0x7f ? MsgpackType::kInt : c <= 0x8f ? MsgpackType::kMap : MsgpackType::kArray;
        return Status::Ok();
      }
      if (c == 0xc0 || (c == 0xcb && remaining() >= 9)) {
        *type = c == 0xc0 ? MsgpackType::kNil : MsgpackType::kFloat;
        return Status::Ok();
      }
      if (c >= 0xcc && c <= 0xce && remaining() > (size_t{1} << (c - 0xcc))) {  // uint8..32
        *type = MsgpackType::kInt;
        return Status::Ok();
      }
      if ((c & 0xe0) == 0xa0 && remaining() > (c & 0x1fu)) {  // fixstr: keys
        *type = MsgpackType::kStr;
        return Status::Ok();
      }
      if (Array16Count() != kNoCount) {
        *type = MsgpackType::kArray;
        return Status::Ok();
      }
    }
    return PeekTypeSlow(type);
  }
  // True if the next value is nil (without consuming it).
  bool NextIsNil() const { return cur_ < end_ && static_cast<uint8_t>(*cur_) == 0xc0; }
  // True if the next value's type byte is an int or a float (its bytes may still be cut short).
  bool NextIsNumber() const {
    if (cur_ >= end_) return false;
    const uint8_t c = static_cast<uint8_t>(*cur_);
    return c <= 0x7f || c >= 0xe0 || (c >= 0xca && c <= 0xd3);
  }

  // The Read* calls below handle the encodings msgspec writes most (fixint, fixstr, fixmap,
  // fixarray, float64, nil) inline and everything else, including every failure, in the
  // out-of-line slow path, so a successful read of a common value is a few instructions.
  Status ReadNil() {
    if (NextIsNil()) {
      ++cur_;
      return Status::Ok();
    }
    return ReadNilSlow();
  }
  // Consumes the nils that come next, at most `max` of them, and returns how many (0 when the
  // next value is not nil). A struct's unset positions come in runs (most of an
  // EngineCoreOutput's fields, every step), so the run is read eight bytes at a time: the first
  // byte that is not 0xc0 ends it. Words may reach past `max` (the count is cut to it), never
  // past the input; its last seven bytes are read one at a time.
  uint32_t SkipNils(uint32_t max) {
    const auto left = static_cast<size_t>(end_ - cur_);
    const size_t limit = left < max ? left : max;
    size_t i = 0;
    if (left >= 8) {
      const size_t last_word = left - 8;
      for (;;) {
        uint64_t word;
        std::memcpy(&word, cur_ + i, sizeof(word));
        const uint64_t not_nil = word ^ 0xc0c0c0c0c0c0c0c0ULL;  // zero bytes: nils
        if (not_nil != 0) {
          // The zero bytes before the first non-zero one, in memory order.
          i += static_cast<size_t>(std::endian::native == std::endian::little
                                       ? std::countr_zero(not_nil)
                                       : std::countl_zero(not_nil)) /
               8;
          return Consume(i < limit ? i : limit);
        }
        i += 8;
        if (i >= limit || i > last_word) break;
      }
    }
    while (i < limit && static_cast<uint8_t>(cur_[i]) == 0xc0) ++i;
    return Consume(i < limit ? i : limit);
  }
  Status ReadBool(bool* out);
  // Any int encoding whose value fits int64 (uint64 above INT64_MAX is LimitExceeded).
  // Always inlined: a decoder reading one int field per struct (num_nans_in_logits on every
  // EngineCoreOutput) otherwise pays a call and a returned Status per read.
  [[gnu::always_inline]] Status ReadInt(int64_t* out) {
    if (cur_ < end_) {
      const uint8_t c = static_cast<uint8_t>(*cur_);
      if (c <= 0x7f || c >= 0xe0) {  // positive / negative fixint
        *out = c <= 0x7f ? static_cast<int64_t>(c) : static_cast<int64_t>(static_cast<int8_t>(c));
        ++cur_;
        return Status::Ok();
      }
      if (c >= 0xcc && c <= 0xce) {  // uint8/16/32: token ids, counts
        const size_t n = size_t{1} << (c - 0xcc);
        if (remaining() > n) {
          *out = LoadBE32(cur_ + 1, n);
          cur_ += 1 + n;
          return Status::Ok();
        }
      }
    }
    return ReadIntSlow(out);
  }
  // Any non-negative int encoding.
  Status ReadUint(uint64_t* out);
  // float32, float64 or any int (Python float fields accept ints, like msgspec).
  Status ReadDouble(double* out) {
    if (cur_ < end_) {
      const uint8_t c = static_cast<uint8_t>(*cur_);
      if (c == 0xcb && remaining() >= 9) {
        *out = LoadFloat64(cur_ + 1);
        cur_ += 9;
        return Status::Ok();
      }
      if (c <= 0x7f) {  // positive fixint: the list elements of counters, small sizes
        *out = c;
        ++cur_;
        return Status::Ok();
      }
      if (c >= 0xcc && c <= 0xce) {  // uint8/16/32: byte counts, descriptor counts
        const size_t n = size_t{1} << (c - 0xcc);
        if (remaining() > n) {
          *out = LoadBE32(cur_ + 1, n);
          cur_ += 1 + n;
          return Status::Ok();
        }
      }
    }
    return ReadDoubleSlow(out);
  }
  Status ReadStr(std::string_view* out) {
    if (cur_ < end_) {
      const uint8_t c = static_cast<uint8_t>(*cur_);
      const size_t n = c & 0x1f;
      if ((c & 0xe0) == 0xa0 && remaining() > n) {  // fixstr that fits
        *out = std::string_view(cur_ + 1, n);
        cur_ += 1 + n;
        return Status::Ok();
      }
      if (c == 0xd9 && remaining() >= 2) {  // str8: request ids of 32 bytes and more
        const size_t len = static_cast<uint8_t>(cur_[1]);
        if (remaining() - 2 >= len) {
          *out = std::string_view(cur_ + 2, len);
          cur_ += 2 + len;
          return Status::Ok();
        }
      }
    }
    return ReadStrSlow(out);
  }
  Status ReadBin(std::string_view* out);
  Status ReadArrayHeader(uint32_t* count) {
    if (cur_ < end_ && (static_cast<uint8_t>(*cur_) & 0xf0) == 0x90) {  // fixarray
      *count = static_cast<uint8_t>(*cur_) & 0x0f;
      ++cur_;
      return Status::Ok();
    }
    if (const uint32_t n = Array16Count(); n != kNoCount) {  // array16: lists of 16 and more
      *count = n;
      cur_ += 3;
      return Status::Ok();
    }
    return ReadArrayHeaderSlow(count);
  }
  Status ReadMapHeader(uint32_t* count) {
    if (cur_ < end_ && (static_cast<uint8_t>(*cur_) & 0xf0) == 0x80) {  // fixmap
      *count = static_cast<uint8_t>(*cur_) & 0x0f;
      ++cur_;
      return Status::Ok();
    }
    return ReadMapHeaderSlow(count);
  }
  // Appends the next `n` values, each read as ReadDouble reads it, to `out` (a list's
  // elements after its header). Runs of float64 and of uint16/uint32 take a tight loop. On
  // failure the reader is at the element that failed and `out` holds the ones before it.
  Status ReadNumbers(uint32_t n, std::vector<double>* out);
  // Ext types other than kExtRawView are refused (Unsupported).
  Status ReadExt(int8_t* type, std::string_view* data);

  // Skips one complete value of any depth (iteratively: no recursion, no depth limit needed).
  // Refuses pickle and unknown ext codes like Python's decoder does. A fixint, float64 or
  // fixstr that fits is skipped inline.
  Status Skip() {
    if (cur_ < end_) {
      const uint8_t c = static_cast<uint8_t>(*cur_);
      const size_t n = c <= 0x7f ? 1 : c == 0xcb ? 9 : (c & 0xe0) == 0xa0 ? 1 + (c & 0x1f) : 0;
      if (n != 0 && remaining() >= n) {
        cur_ += n;
        return Status::Ok();
      }
    }
    return SkipValue();
  }
  // Skips one value and returns the bytes it spans.
  Status ReadRaw(std::string_view* raw);

 private:
  // Steps over `n` bytes (at most remaining()); returns n as a count of values (SkipNils).
  uint32_t Consume(size_t n) {
    cur_ += n;
    return static_cast<uint32_t>(n);
  }
  // Reads the header of the next value. For str/bin/ext `length` is the payload length and
  // `payload` points at it; for array/map `length` is the element/pair count.
  struct Header {
    MsgpackType type;
    uint32_t length = 0;  // str/bin/ext bytes, array elements, map pairs
    uint64_t u = 0;       // int payload bits
    bool negative = false;
    double f = 0;
    int8_t ext_type = 0;
    const char* next = nullptr;  // first byte after the header (and after a scalar payload)
  };
  Status ReadHeader(Header* h) const;
  Status Fail(const char* what) const;

  // The element count of an array16 header at the cursor whose elements can fit in the input
  // (each takes at least a byte, as ReadHeader checks), or kNoCount.
  static constexpr uint32_t kNoCount = UINT32_MAX;
  uint32_t Array16Count() const {
    if (remaining() < 3 || static_cast<uint8_t>(*cur_) != 0xdc) return kNoCount;
    const uint32_t n = LoadBE32<2>(cur_ + 1);
    return n <= remaining() - 3 ? n : kNoCount;
  }
  // The big-endian unsigned integer of n <= 4 bytes at p.
  static uint32_t LoadBE32(const char* p, size_t n) {
    uint32_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
    return v;
  }
  // The same for a width known when compiling: one load and a byte swap (g++ does not turn
  // LoadBE32's loop into one).
  template <size_t kBytes>
  static uint32_t LoadBE32(const char* p) {
    static_assert(kBytes == 2 || kBytes == 4);
    if constexpr (kBytes == 2) {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      return __builtin_bswap16(bits);
    } else {
      uint32_t bits;
      std::memcpy(&bits, p, 4);
      return __builtin_bswap32(bits);
    }
  }
  static double LoadFloat64(const char* p) {
    uint64_t bits;
    std::memcpy(&bits, p, 8);
    bits = __builtin_bswap64(bits);  // msgpack is big-endian
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  // The general forms behind the inline fast paths above.
  Status PeekTypeSlow(MsgpackType* type) const;
  Status ReadNilSlow();
  Status ReadIntSlow(int64_t* out);
  Status ReadDoubleSlow(double* out);
  Status ReadStrSlow(std::string_view* out);
  Status ReadArrayHeaderSlow(uint32_t* count);
  Status ReadMapHeaderSlow(uint32_t* count);
  // Skip's one-pass walk over any value.
  Status SkipValue();
  // Skip one header at a time through ReadHeader: exact errors, ext type checks.
  Status SkipSlow();

  const char* begin_;
  const char* cur_;
  const char* end_;
  size_t base_;
};

// Validates that `data` starts with exactly one complete msgpack value and stores its length.
// This is the "floor" of decoding: it touches every byte and builds nothing.
Status ValidateOne(std::string_view data, size_t* length);

}  // namespace vmetrics::protocol

#endif  // VMETRICS_INTERNAL_MSGPACK_READER_H_
