// SPDX-License-Identifier: Apache-2.0
// Tests of src/protocol/msgpack_reader.cc: every msgpack format family, the bounds checks on
// hostile lengths, failure offsets, Skip/ReadRaw and ValidateOne.
#include "vmetrics/internal/msgpack_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace vmetrics::protocol {
namespace {

// "cc ff" -> the two bytes 0xcc 0xff. Spaces are ignored. The bytes are kept for the whole
// test run, so a reader built on the result never outlives its input.
std::string_view Hex(std::string_view hex) {
  static std::deque<std::string> kept;
  std::string out;
  int hi = -1;
  for (char c : hex) {
    if (c == ' ') continue;
    const int v = (c >= '0' && c <= '9') ? c - '0' : (c | 0x20) - 'a' + 10;
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<char>(hi * 16 + v));
      hi = -1;
    }
  }
  kept.push_back(std::move(out));
  return kept.back();
}

// Concatenation that stays alive like Hex().
std::string_view Cat(std::string_view a, std::string_view b) {
  static std::deque<std::string> kept;
  kept.emplace_back(a);
  kept.back().append(b);
  return kept.back();
}

int64_t IntOf(std::string_view bytes) {
  MsgpackReader r(bytes);
  int64_t v = 0;
  Status s = r.ReadInt(&v);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(r.at_end());
  return v;
}

uint64_t UintOf(std::string_view bytes) {
  MsgpackReader r(bytes);
  uint64_t v = 0;
  Status s = r.ReadUint(&v);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(r.at_end());
  return v;
}

double DoubleOf(std::string_view bytes) {
  MsgpackReader r(bytes);
  double v = 0;
  Status s = r.ReadDouble(&v);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(r.at_end());
  return v;
}

MsgpackType TypeOf(std::string_view bytes) {
  MsgpackReader r(bytes);
  MsgpackType t = MsgpackType::kNil;
  Status s = r.PeekType(&t);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(r.offset(), 0u) << "PeekType must not consume";
  return t;
}

TEST(MsgpackReader, PositiveFixintIsItsOwnValue) {
  EXPECT_EQ(IntOf(Hex("00")), 0);
  EXPECT_EQ(IntOf(Hex("2a")), 42);
  EXPECT_EQ(IntOf(Hex("7f")), 127);
  EXPECT_EQ(UintOf(Hex("7f")), 127u);
}

TEST(MsgpackReader, NegativeFixintIsSignExtended) {
  EXPECT_EQ(IntOf(Hex("ff")), -1);
  EXPECT_EQ(IntOf(Hex("e0")), -32);
}

TEST(MsgpackReader, UnsignedWidthsDecode) {
  EXPECT_EQ(IntOf(Hex("cc ff")), 255);
  EXPECT_EQ(IntOf(Hex("cd 01 00")), 256);
  EXPECT_EQ(IntOf(Hex("ce 00 01 11 70")), 70000);
  EXPECT_EQ(IntOf(Hex("cf 00 00 01 00 00 00 00 07")), (int64_t{1} << 40) + 7);
  EXPECT_EQ(IntOf(Hex("cf 7f ff ff ff ff ff ff ff")), std::numeric_limits<int64_t>::max());
}

TEST(MsgpackReader, SignedWidthsDecode) {
  EXPECT_EQ(IntOf(Hex("d0 80")), -128);
  EXPECT_EQ(IntOf(Hex("d0 7f")), 127);
  EXPECT_EQ(IntOf(Hex("d1 80 00")), -32768);
  EXPECT_EQ(IntOf(Hex("d1 ff fe")), -2);
  EXPECT_EQ(IntOf(Hex("d2 80 00 00 00")), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(IntOf(Hex("d2 00 01 00 00")), 65536);
  EXPECT_EQ(IntOf(Hex("d3 80 00 00 00 00 00 00 00")), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(IntOf(Hex("d3 ff ff ff ff ff ff ff ff")), -1);
}

TEST(MsgpackReader, Uint64MaxReadsAsUintButIsLimitExceededAsInt) {
  const std::string_view max = Hex("cf ff ff ff ff ff ff ff ff");
  EXPECT_EQ(UintOf(max), std::numeric_limits<uint64_t>::max());
  MsgpackReader r(max);
  int64_t v = 7;
  Status s = r.ReadInt(&v);
  EXPECT_EQ(s.code(), StatusCode::kLimitExceeded);
  EXPECT_EQ(v, 7) << "output untouched on failure";
  EXPECT_EQ(r.offset(), 0u) << "cursor untouched on failure";
}

TEST(MsgpackReader, NegativeIntIsRefusedByReadUint) {
  MsgpackReader r(Hex("ff"));
  uint64_t v = 0;
  EXPECT_EQ(r.ReadUint(&v).code(), StatusCode::kMalformed);
  EXPECT_EQ(r.offset(), 0u);
  MsgpackReader r2(Hex("d3 80 00 00 00 00 00 00 00"));
  EXPECT_FALSE(r2.ReadUint(&v).ok());
}

TEST(MsgpackReader, Float32AndFloat64Decode) {
  EXPECT_EQ(DoubleOf(Hex("ca 3f c0 00 00")), 1.5);
  EXPECT_EQ(DoubleOf(Hex("cb 3f f8 00 00 00 00 00 00")), 1.5);
  EXPECT_EQ(DoubleOf(Hex("cb bf d0 00 00 00 00 00 00")), -0.25);
  EXPECT_TRUE(std::isinf(DoubleOf(Hex("cb 7f f0 00 00 00 00 00 00"))));
  EXPECT_TRUE(std::isnan(DoubleOf(Hex("cb 7f f8 00 00 00 00 00 00"))));
  // float32 0.1 is not float64 0.1: the reader must widen the float, not reparse decimals.
  EXPECT_EQ(DoubleOf(Hex("ca 3d cc cc cd")), static_cast<double>(0.1f));
}

TEST(MsgpackReader, IntsOfEveryWidthReadAsDouble) {
  EXPECT_EQ(DoubleOf(Hex("05")), 5.0);
  EXPECT_EQ(DoubleOf(Hex("ff")), -1.0);
  EXPECT_EQ(DoubleOf(Hex("cd 10 00")), 4096.0);
  EXPECT_EQ(DoubleOf(Hex("d1 80 00")), -32768.0);
  EXPECT_EQ(DoubleOf(Hex("cf ff ff ff ff ff ff ff ff")), 18446744073709551615.0);
  EXPECT_EQ(DoubleOf(Hex("d3 80 00 00 00 00 00 00 00")), -9223372036854775808.0);
}

TEST(MsgpackReader, FloatIsRefusedAsIntLikeMsgspec) {
  MsgpackReader r(Hex("cb 3f f8 00 00 00 00 00 00"));
  int64_t v = 0;
  Status s = r.ReadInt(&v);
  EXPECT_EQ(s.code(), StatusCode::kMalformed);
  EXPECT_EQ(s.offset(), 0);
  EXPECT_EQ(r.offset(), 0u);
}

TEST(MsgpackReader, NilAndBoolDecode) {
  MsgpackReader r(Hex("c0 c2 c3"));
  EXPECT_TRUE(r.NextIsNil());
  EXPECT_TRUE(r.ReadNil().ok());
  EXPECT_FALSE(r.NextIsNil());
  bool b = true;
  EXPECT_TRUE(r.ReadBool(&b).ok());
  EXPECT_FALSE(b);
  EXPECT_TRUE(r.ReadBool(&b).ok());
  EXPECT_TRUE(b);
  EXPECT_TRUE(r.at_end());
  EXPECT_FALSE(r.NextIsNil()) << "at the end there is no nil";
}

TEST(MsgpackReader, StrOfEveryWidthDecodes) {
  for (const char* hex :
       {"a3 61 62 63", "d9 03 61 62 63", "da 00 03 61 62 63", "db 00 00 00 03 61 62 63"}) {
    const std::string_view bytes = Hex(hex);
    MsgpackReader r(bytes);
    std::string_view s;
    ASSERT_TRUE(r.ReadStr(&s).ok()) << hex;
    EXPECT_EQ(s, "abc") << hex;
    EXPECT_EQ(s.data(), bytes.data() + bytes.size() - 3) << "zero-copy view into the input";
    EXPECT_TRUE(r.at_end()) << hex;
  }
  MsgpackReader empty(Hex("a0"));
  std::string_view s = "x";
  ASSERT_TRUE(empty.ReadStr(&s).ok());
  EXPECT_TRUE(s.empty());
}

TEST(MsgpackReader, Str8LongerThanFixstrDecodes) {
  const std::string text(200, 'q');
  const std::string_view bytes = Cat(Hex("d9 c8"), text);
  MsgpackReader r(bytes);
  std::string_view s;
  ASSERT_TRUE(r.ReadStr(&s).ok());
  EXPECT_EQ(s, text);
}

TEST(MsgpackReader, BinOfEveryWidthDecodes) {
  for (const char* hex : {"c4 02 00 ff", "c5 00 02 00 ff", "c6 00 00 00 02 00 ff"}) {
    MsgpackReader r(Hex(hex));
    std::string_view b;
    ASSERT_TRUE(r.ReadBin(&b).ok()) << hex;
    EXPECT_EQ(b, std::string_view("\x00\xff", 2)) << hex;
    EXPECT_TRUE(r.at_end());
  }
}

TEST(MsgpackReader, StrAndBinAreDistinct) {
  std::string_view v;
  MsgpackReader r(Hex("c4 01 61"));
  EXPECT_EQ(r.ReadStr(&v).code(), StatusCode::kMalformed);
  MsgpackReader r2(Hex("a1 61"));
  EXPECT_EQ(r2.ReadBin(&v).code(), StatusCode::kMalformed);
}

TEST(MsgpackReader, ArrayHeadersOfEveryWidthDecode) {
  uint32_t n = 0;
  MsgpackReader fix(Hex("93 01 02 03"));
  ASSERT_TRUE(fix.ReadArrayHeader(&n).ok());
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(fix.offset(), 1u);
  MsgpackReader a16(Cat(Hex("dc 00 10"), std::string(16, '\x00')));
  ASSERT_TRUE(a16.ReadArrayHeader(&n).ok());
  EXPECT_EQ(n, 16u);
  EXPECT_EQ(a16.offset(), 3u);
  MsgpackReader a32(Hex("dd 00 00 00 02 c0 c0"));
  ASSERT_TRUE(a32.ReadArrayHeader(&n).ok());
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(a32.offset(), 5u);
  MsgpackReader empty(Hex("90"));
  ASSERT_TRUE(empty.ReadArrayHeader(&n).ok());
  EXPECT_EQ(n, 0u);
}

TEST(MsgpackReader, MapHeadersOfEveryWidthDecode) {
  uint32_t n = 0;
  MsgpackReader fix(Hex("81 a1 61 01"));
  ASSERT_TRUE(fix.ReadMapHeader(&n).ok());
  EXPECT_EQ(n, 1u);
  MsgpackReader m16(Hex("de 00 02 01 02 03 04"));
  ASSERT_TRUE(m16.ReadMapHeader(&n).ok());
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(m16.offset(), 3u);
  MsgpackReader m32(Hex("df 00 00 00 01 c0 c0"));
  ASSERT_TRUE(m32.ReadMapHeader(&n).ok());
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(m32.offset(), 5u);
}

TEST(MsgpackReader, ArrayAndMapAreDistinct) {
  uint32_t n = 0;
  MsgpackReader r(Hex("80"));
  EXPECT_EQ(r.ReadArrayHeader(&n).code(), StatusCode::kMalformed);
  MsgpackReader r2(Hex("90"));
  EXPECT_EQ(r2.ReadMapHeader(&n).code(), StatusCode::kMalformed);
}

TEST(MsgpackReader, RawViewExtOfEveryWidthDecodes) {
  struct Case {
    const char* hex;
    size_t length;
  } cases[] = {
      {"d4 03 aa", 1},
      {"d5 03 aa aa", 2},
      {"d6 03 aa aa aa aa", 4},
      {"d7 03 aa aa aa aa aa aa aa aa", 8},
      {"d8 03 aa aa aa aa aa aa aa aa aa aa aa aa aa aa aa aa", 16},
      {"c7 03 03 aa aa aa", 3},
      {"c8 00 03 03 aa aa aa", 3},
      {"c9 00 00 00 03 03 aa aa aa", 3},
      {"c7 00 03", 0},
  };
  for (const Case& c : cases) {
    const std::string_view bytes = Hex(c.hex);
    MsgpackReader r(bytes);
    int8_t type = 0;
    std::string_view data;
    Status s = r.ReadExt(&type, &data);
    ASSERT_TRUE(s.ok()) << c.hex << ": " << s.ToString();
    EXPECT_EQ(type, kExtRawView) << c.hex;
    EXPECT_EQ(data, std::string(c.length, '\xaa')) << c.hex;
    EXPECT_TRUE(r.at_end()) << c.hex;
    EXPECT_EQ(TypeOf(bytes), MsgpackType::kExt) << c.hex;
  }
}

TEST(MsgpackReader, PickleExtTypesAreUnsupported) {
  for (const char* hex : {"d4 01 00", "c7 02 01 80 2e", "d4 02 00", "c9 00 00 00 01 02 00"}) {
    MsgpackReader r(Hex(hex));
    int8_t type = 0;
    std::string_view data;
    Status s = r.ReadExt(&type, &data);
    EXPECT_EQ(s.code(), StatusCode::kUnsupported) << hex << ": " << s.ToString();
    EXPECT_EQ(r.offset(), 0u);
    MsgpackReader skip(Hex(hex));
    EXPECT_EQ(skip.Skip().code(), StatusCode::kUnsupported) << hex;
    EXPECT_EQ(skip.offset(), 0u);
  }
}

TEST(MsgpackReader, UnknownExtTypesAreUnsupported) {
  // 42: no vLLM code; -1: msgpack's timestamp extension, which vLLM never sends.
  for (const char* hex : {"d4 2a 00", "d6 ff 00 00 00 00"}) {
    MsgpackReader r(Hex(hex));
    int8_t type = 0;
    std::string_view data;
    EXPECT_EQ(r.ReadExt(&type, &data).code(), StatusCode::kUnsupported) << hex;
    MsgpackReader skip(Hex(hex));
    EXPECT_EQ(skip.Skip().code(), StatusCode::kUnsupported) << hex;
  }
}

TEST(MsgpackReader, ByteC1IsMalformedEverywhere) {
  const std::string_view c1 = Hex("c1");
  MsgpackType t;
  MsgpackReader r(c1);
  EXPECT_EQ(r.PeekType(&t).code(), StatusCode::kMalformed);
  int64_t i;
  EXPECT_EQ(r.ReadInt(&i).code(), StatusCode::kMalformed);
  EXPECT_EQ(r.Skip().code(), StatusCode::kMalformed);
  size_t len = 0;
  EXPECT_EQ(ValidateOne(c1, &len).code(), StatusCode::kMalformed);
  // Inside a container, reported at its own offset.
  MsgpackReader nested(Hex("92 01 c1"));
  Status s = nested.Skip();
  EXPECT_EQ(s.code(), StatusCode::kMalformed);
  EXPECT_EQ(s.offset(), 2);
  EXPECT_EQ(nested.offset(), 0u) << "a failed Skip leaves the cursor where it was";
}

TEST(MsgpackReader, PeekTypeNamesEveryFamily) {
  EXPECT_EQ(TypeOf(Hex("c0")), MsgpackType::kNil);
  EXPECT_EQ(TypeOf(Hex("c3")), MsgpackType::kBool);
  EXPECT_EQ(TypeOf(Hex("01")), MsgpackType::kInt);
  EXPECT_EQ(TypeOf(Hex("e5")), MsgpackType::kInt);
  EXPECT_EQ(TypeOf(Hex("cf 00 00 00 00 00 00 00 01")), MsgpackType::kInt);
  EXPECT_EQ(TypeOf(Hex("d3 00 00 00 00 00 00 00 01")), MsgpackType::kInt);
  EXPECT_EQ(TypeOf(Hex("ca 00 00 00 00")), MsgpackType::kFloat);
  EXPECT_EQ(TypeOf(Hex("cb 00 00 00 00 00 00 00 00")), MsgpackType::kFloat);
  EXPECT_EQ(TypeOf(Hex("a1 61")), MsgpackType::kStr);
  EXPECT_EQ(TypeOf(Hex("c4 00")), MsgpackType::kBin);
  EXPECT_EQ(TypeOf(Hex("91 01")), MsgpackType::kArray);
  EXPECT_EQ(TypeOf(Hex("81 01 01")), MsgpackType::kMap);
  EXPECT_EQ(TypeOf(Hex("d4 03 00")), MsgpackType::kExt);
  // The encodings PeekType answers inline, and their neighbours.
  EXPECT_EQ(TypeOf(Hex("cc ff")), MsgpackType::kInt);
  EXPECT_EQ(TypeOf(Hex("cd 01 00")), MsgpackType::kInt);
  EXPECT_EQ(TypeOf(Hex("ce 00 01 11 70")), MsgpackType::kInt);
  EXPECT_EQ(TypeOf(Hex("d9 01 61")), MsgpackType::kStr);
  EXPECT_EQ(TypeOf(Hex("dc 00 01 01")), MsgpackType::kArray);
  EXPECT_EQ(TypeOf(Hex("de 00 01 01 01")), MsgpackType::kMap);
  EXPECT_EQ(TypeOf(Hex("9f 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01")), MsgpackType::kArray);
  EXPECT_STREQ(MsgpackTypeName(MsgpackType::kMap), "map");
  EXPECT_STREQ(MsgpackTypeName(MsgpackType::kExt), "ext");
}

// PeekType's inline answers check the value's length as its general path does: a scalar or
// string cut short, or an array16 counting more elements than bytes remain, is malformed.
TEST(MsgpackReader, PeekTypeOfAValueCutShortIsMalformed) {
  for (const char* hex : {"cc ff", "cd 01 00", "ce 00 01 11 70", "cb 3f f8 00 00 00 00 00 00",
                          "a3 61 62 63", "dc 00 02 01 02"}) {
    const std::string full(Hex(hex));
    for (size_t cut = 1; cut < full.size(); ++cut) {
      const std::string prefix = full.substr(0, cut);  // exactly `cut` bytes, for ASan
      MsgpackReader r(prefix);
      MsgpackType t;
      EXPECT_FALSE(r.PeekType(&t).ok()) << hex << " cut at " << cut;
    }
  }
}

// SkipNils consumes the run of nils that comes next and nothing else: never more than asked,
// never past the input, and not a value that only starts like one.
TEST(MsgpackReader, SkipNilsConsumesOnlyTheRunOfNilsAhead) {
  struct Case {
    const char* hex;
    uint32_t max;
    uint32_t skipped;
  };
  for (const Case& c : std::vector<Case>{{"c0c0c001", 10, 3},  // stops at the fixint
                                         {"c0c0c0", 10, 3},    // stops at the end
                                         {"c0c0c0c0", 2, 2},   // stops at max
                                         {"c0", 0, 0},
                                         {"01c0", 10, 0},
                                         {"", 5, 0},
                                         {"c2c0", 5, 0}}) {  // false is not nil
    const std::string_view bytes = Hex(c.hex);
    MsgpackReader r(bytes);
    EXPECT_EQ(r.SkipNils(c.max), c.skipped) << c.hex;
    EXPECT_EQ(r.offset(), c.skipped) << c.hex;
  }
}

// Runs of nils are read a word at a time: a run of any length, ending at any byte of a word,
// cut by `max` anywhere, or by the end of the input (the last seven bytes are read one at a
// time), consumes exactly the nils ahead, up to `max`.
TEST(MsgpackReader, SkipNilsCountsEveryRunLengthAndCut) {
  for (size_t size = 0; size <= 26; ++size) {
    for (size_t first_value = 0; first_value <= size; ++first_value) {
      // `first_value` nils, then (when it fits) a fixint, then more nils that must not count.
      std::string bytes(size, '\xc0');
      if (first_value < size) bytes[first_value] = '\x01';
      for (uint32_t max = 0; max <= 28; ++max) {
        MsgpackReader r(bytes);
        const size_t want = std::min<size_t>(first_value, max);
        EXPECT_EQ(r.SkipNils(max), want) << size << " " << first_value << " " << max;
        EXPECT_EQ(r.offset(), want) << size << " " << first_value << " " << max;
      }
    }
  }
  // A value whose first byte is not 0xc0 but whose word has nils after it stops the run at once.
  const std::string bytes = "\x01\xc0\xc0\xc0\xc0\xc0\xc0\xc0\xc0\xc0";
  MsgpackReader r(bytes);
  EXPECT_EQ(r.SkipNils(9), 0u);
  EXPECT_EQ(r.offset(), 0u);
}

TEST(MsgpackReader, NextIsNumberIsTrueForIntsAndFloatsOnly) {
  for (const char* hex :
       {"01", "e5", "cc ff", "cd 01 00", "ce 00 01 11 70", "cf 00 00 00 00 00 00 00 01", "d0 80",
        "d3 00 00 00 00 00 00 00 01", "ca 00 00 00 00", "cb 00 00 00 00 00 00 00 00"}) {
    EXPECT_TRUE(MsgpackReader(Hex(hex)).NextIsNumber()) << hex;
  }
  for (const char* hex : {"c0", "c2", "c3", "a1 61", "c4 00", "91 01", "81 01 01", "d4 03 00",
                          "dc 00 01 01", "c1", ""}) {
    EXPECT_FALSE(MsgpackReader(Hex(hex)).NextIsNumber()) << hex;
  }
}

TEST(MsgpackReader, EmptyInputIsMalformed) {
  MsgpackReader r(std::string_view{});
  MsgpackType t;
  EXPECT_EQ(r.PeekType(&t).code(), StatusCode::kMalformed);
  EXPECT_EQ(r.Skip().code(), StatusCode::kMalformed);
  EXPECT_TRUE(r.at_end());
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(MsgpackReader, WrongTypeFailsWithTheValueOffsetAndKeepsTheCursor) {
  const std::string_view bytes = Hex("92 01 a1 61");
  MsgpackReader r(bytes, /*base_offset=*/100);
  uint32_t n = 0;
  ASSERT_TRUE(r.ReadArrayHeader(&n).ok());
  int64_t i = 0;
  ASSERT_TRUE(r.ReadInt(&i).ok());
  EXPECT_EQ(r.offset(), 102u);
  Status s = r.ReadInt(&i);
  EXPECT_EQ(s.code(), StatusCode::kMalformed);
  EXPECT_EQ(s.offset(), 102) << "offsets include base_offset";
  EXPECT_EQ(r.offset(), 102u);
  std::string_view str;
  ASSERT_TRUE(r.ReadStr(&str).ok()) << "the value is still there to read as its own type";
  EXPECT_EQ(str, "a");
}

// Every strict prefix of each encoding must fail with the cursor unmoved, and never read
// past the end (ASan builds catch an over-read).
TEST(MsgpackReader, EveryTruncationOfEveryFamilyFails) {
  const char* encodings[] = {
      "cc ff",
      "cd 01 00",
      "ce 00 01 11 70",
      "cf 00 00 01 00 00 00 00 07",
      "d0 80",
      "d1 80 00",
      "d2 80 00 00 00",
      "d3 80 00 00 00 00 00 00 00",
      "ca 3f c0 00 00",
      "cb 3f f8 00 00 00 00 00 00",
      "a3 61 62 63",
      "d9 03 61 62 63",
      "da 00 03 61 62 63",
      "db 00 00 00 03 61 62 63",
      "c4 02 00 ff",
      "c5 00 02 00 ff",
      "c6 00 00 00 02 00 ff",
      "92 01 02",
      "dc 00 02 01 02",
      "dd 00 00 00 02 01 02",
      "81 01 02",
      "de 00 01 01 02",
      "df 00 00 00 01 01 02",
      "d4 03 aa",
      "d8 03 aa aa aa aa aa aa aa aa aa aa aa aa aa aa aa aa",
      "c7 03 03 aa aa aa",
      "c8 00 03 03 aa aa aa",
      "c9 00 00 00 03 03 aa aa aa",
  };
  for (const char* hex : encodings) {
    const std::string full(Hex(hex));
    size_t len = 0;
    ASSERT_TRUE(ValidateOne(full, &len).ok()) << hex;
    EXPECT_EQ(len, full.size()) << hex;
    for (size_t cut = 0; cut < full.size(); ++cut) {
      // A fresh copy of exactly `cut` bytes so ASan sees any read past it.
      const std::string prefix = full.substr(0, cut);
      MsgpackReader r(prefix);
      EXPECT_FALSE(r.Skip().ok()) << hex << " cut at " << cut;
      EXPECT_EQ(r.offset(), 0u);
      EXPECT_FALSE(ValidateOne(prefix, &len).ok()) << hex << " cut at " << cut;
    }
  }
}

TEST(MsgpackReader, HostileLengthsAreMalformedNotTrusted) {
  const char* hostile[] = {
      "db ff ff ff ff 61",     // str32 claiming 4 GB
      "c6 ff ff ff ff 00",     // bin32
      "dd ff ff ff ff c0 c0",  // array32 claiming 2^32-1 elements
      "df ff ff ff ff c0 c0",  // map32
      "c9 ff ff ff ff 03 00",  // ext32
      "dc ff ff c0",           // array16 claiming 65535
      "da ff ff 61",           // str16
  };
  for (const char* hex : hostile) {
    MsgpackReader r(Hex(hex));
    MsgpackType t;
    EXPECT_FALSE(r.PeekType(&t).ok()) << hex;
    EXPECT_FALSE(r.Skip().ok()) << hex;
    std::string_view s;
    uint32_t n = 0;
    int8_t e;
    EXPECT_FALSE(r.ReadStr(&s).ok());
    EXPECT_FALSE(r.ReadBin(&s).ok());
    EXPECT_FALSE(r.ReadArrayHeader(&n).ok());
    EXPECT_FALSE(r.ReadMapHeader(&n).ok());
    EXPECT_FALSE(r.ReadExt(&e, &s).ok());
    EXPECT_EQ(n, 0u) << hex << ": no count escapes a failed header";
  }
}

TEST(MsgpackReader, ArrayCountIsBoundedByTheRemainingBytes) {
  uint32_t n = 0;
  // Two elements need at least two bytes.
  MsgpackReader ok(Hex("dc 00 02 c0 c0"));
  EXPECT_TRUE(ok.ReadArrayHeader(&n).ok());
  MsgpackReader short_by_one(Hex("dc 00 03 c0 c0"));
  EXPECT_FALSE(short_by_one.ReadArrayHeader(&n).ok());
  // A map pair needs at least two bytes.
  MsgpackReader map_ok(Hex("de 00 01 c0 c0"));
  EXPECT_TRUE(map_ok.ReadMapHeader(&n).ok());
  MsgpackReader map_short(Hex("de 00 01 c0"));
  EXPECT_FALSE(map_short.ReadMapHeader(&n).ok());
}

TEST(MsgpackReader, ReadNumbersReadsEveryNumberEncodingLikeReadDouble) {
  // [1.5, 2.5 (runs of float64), 7 (fixint), 70000 (uint32), 300 (uint16), 200 (uint8),
  //  -3 (negative fixint), 0.25 (float32), 2^40 (uint64), -129 (int16)] then nil.
  const std::string_view bytes =
      Hex("cb 3f f8 00 00 00 00 00 00 cb 40 04 00 00 00 00 00 00 07 ce 00 01 11 70 cd 01 2c "
          "cc c8 fd ca 3e 80 00 00 cf 00 00 01 00 00 00 00 00 d1 ff 7f c0");
  MsgpackReader r(bytes);
  std::vector<double> out = {99.0};  // appended to, not replaced
  ASSERT_TRUE(r.ReadNumbers(10, &out).ok());
  EXPECT_EQ(out, (std::vector<double>{99.0, 1.5, 2.5, 7, 70000, 300, 200, -3, 0.25, 1099511627776.0,
                                      -129}));
  EXPECT_TRUE(r.NextIsNil()) << "the reader stops after the tenth value";
}

// Runs of one encoding are read in a loop of their own: a run that another encoding breaks,
// resumes or ends early, and a value cut short inside a run, read exactly as one by one.
TEST(MsgpackReader, ReadNumbersReadsRunsAndStopsAtTheValueTheInputCuts) {
  // [0.5, 1.5, 2.5 (float64), 70000, 70001 (uint32), 300 (uint16), 70002 (uint32), 9 (fixint),
  //  301, 302 (uint16)]
  const std::string full(
      Hex("cb 3f e0 00 00 00 00 00 00 cb 3f f8 00 00 00 00 00 00 cb 40 04 00 00 00 00 00 00 "
          "ce 00 01 11 70 ce 00 01 11 71 cd 01 2c ce 00 01 11 72 09 cd 01 2d cd 01 2e"));
  const std::vector<double> all = {0.5, 1.5, 2.5, 70000, 70001, 300, 70002, 9, 301, 302};
  const std::vector<size_t> ends = {9, 18, 27, 32, 37, 40, 45, 46, 49, 52};  // of each value
  ASSERT_EQ(full.size(), ends.back());
  {
    MsgpackReader r(full);
    std::vector<double> out;
    ASSERT_TRUE(r.ReadNumbers(10, &out).ok());
    EXPECT_EQ(out, all);
    EXPECT_TRUE(r.at_end());
  }
  for (size_t cut = 0; cut < full.size(); ++cut) {
    const std::string prefix = full.substr(0, cut);  // exactly `cut` bytes, for ASan
    MsgpackReader r(prefix);
    std::vector<double> out;
    EXPECT_FALSE(r.ReadNumbers(10, &out).ok()) << cut;
    size_t whole = 0;  // values that end within the prefix
    while (whole < ends.size() && ends[whole] <= cut) ++whole;
    EXPECT_EQ(out, std::vector<double>(all.begin(), all.begin() + static_cast<long>(whole))) << cut;
    EXPECT_EQ(r.offset(), whole == 0 ? 0 : ends[whole - 1])
        << "the reader is at the value that was cut, " << cut;
  }
}

TEST(MsgpackReader, ReadNumbersStopsAtTheFirstNonNumberWithItsOffset) {
  // 1.5, 2, then "x": the reader stays at the string, the two numbers before it are kept.
  MsgpackReader r(Hex("cb 3f f8 00 00 00 00 00 00 02 a1 78 03"));
  std::vector<double> out;
  const Status s = r.ReadNumbers(4, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(r.offset(), 10u);
  EXPECT_EQ(out, (std::vector<double>{1.5, 2}));
}

TEST(MsgpackReader, ReadNumbersNeverTrustsTheCount) {
  // A list header claiming 2^32-1 elements over a few bytes: the output is sized by the bytes
  // and the read fails at the end of the input, at every cut of the last value.
  const std::string full(Hex("cb 3f f8 00 00 00 00 00 00 ce 00 01 11 70"));
  for (size_t cut = 9; cut <= full.size(); ++cut) {
    const std::string prefix = full.substr(0, cut);  // exactly `cut` bytes, for ASan
    MsgpackReader r(prefix);
    std::vector<double> out;
    EXPECT_FALSE(r.ReadNumbers(UINT32_MAX, &out).ok()) << cut;
    EXPECT_LE(out.size(), 2u) << cut;
    EXPECT_EQ(out.front(), 1.5) << cut;
    EXPECT_LE(out.capacity(), prefix.size()) << "sized by the bytes, not the count";
  }
}

TEST(MsgpackReader, SkipWalksNestedValuesAndReadRawReturnsTheirBytes) {
  // [1, {"a": [nil, true]}, "xy", 1.5, ext3 "z"] then 7.
  const std::string_view bytes =
      Hex("95 01 81 a1 61 92 c0 c3 a2 78 79 cb 3f f8 00 00 00 00 00 00 d4 03 7a 07");
  MsgpackReader r(bytes);
  std::string_view raw;
  ASSERT_TRUE(r.ReadRaw(&raw).ok());
  EXPECT_EQ(raw.size(), bytes.size() - 1);
  EXPECT_EQ(raw.data(), bytes.data());
  int64_t seven = 0;
  ASSERT_TRUE(r.ReadInt(&seven).ok());
  EXPECT_EQ(seven, 7);
  EXPECT_TRUE(r.at_end());
}

TEST(MsgpackReader, SkipRefusesPickleNestedDeepInside) {
  const std::string_view bytes = Hex("92 01 81 a1 61 91 d4 01 00");
  MsgpackReader r(bytes);
  Status s = r.Skip();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_EQ(r.offset(), 0u);
}

TEST(MsgpackReader, SkipHandlesDeepNestingWithoutRecursion) {
  constexpr size_t kDepth = 1000000;
  std::string bytes(kDepth, '\x91');
  bytes.push_back('\xc0');
  MsgpackReader r(bytes);
  ASSERT_TRUE(r.Skip().ok());
  EXPECT_TRUE(r.at_end());
  // The same nesting cut short fails cleanly.
  bytes.pop_back();
  MsgpackReader cut(bytes);
  EXPECT_FALSE(cut.Skip().ok());
}

// Lists of float64 and of uint32 are skipped a run at a time; whether the bytes left hold every
// value still pending or not (the value after the list, an outer container's), and wherever the
// input is cut, Skip ends where the value ends or fails without moving.
TEST(MsgpackReader, SkipRunsOfEqualTypeBytesEndWhereTheValueEnds) {
  // [[1.5, 2.5, 3.5], [70000, 70001, 300 (uint16 breaks the run), 70002], 7], then nil.
  const std::string full(
      Hex("93 93 cb 3f f8 00 00 00 00 00 00 cb 40 04 00 00 00 00 00 00 cb 40 0c 00 00 00 00 00 00 "
          "94 ce 00 01 11 70 ce 00 01 11 71 cd 01 2c ce 00 01 11 72 07 c0"));
  {
    MsgpackReader r(full);
    ASSERT_TRUE(r.Skip().ok());
    EXPECT_EQ(r.offset(), full.size() - 1);
    EXPECT_TRUE(r.NextIsNil());
  }
  for (size_t cut = 0; cut + 1 < full.size(); ++cut) {
    const std::string prefix = full.substr(0, cut);  // exactly `cut` bytes, for ASan
    MsgpackReader r(prefix);
    EXPECT_FALSE(r.Skip().ok()) << cut;
    EXPECT_EQ(r.offset(), 0u) << cut;
  }
}

TEST(MsgpackReader, ValidateOneMeasuresTheFirstValueOnly) {
  size_t len = 0;
  const std::string_view two = Hex("92 01 02 c3");
  ASSERT_TRUE(ValidateOne(two, &len).ok());
  EXPECT_EQ(len, 3u) << "trailing bytes are left for the caller";
  EXPECT_FALSE(ValidateOne(std::string_view{}, &len).ok());
  EXPECT_FALSE(ValidateOne(Hex("92 01"), &len).ok());
  EXPECT_EQ(ValidateOne(Hex("91 d4 02 00"), &len).code(), StatusCode::kUnsupported);
  ASSERT_TRUE(ValidateOne(Hex("c0"), &len).ok());
  EXPECT_EQ(len, 1u);
}

}  // namespace
}  // namespace vmetrics::protocol
