// SPDX-License-Identifier: Apache-2.0
// Wire text checks (include/vmetrics/internal/wire_text.h): the UTF-8 check agrees with
// Python's strict decoder on the classic bad forms, and the log escaping leaves no control
// character or invalid byte in a line.
#include "vmetrics/internal/wire_text.h"

#include <gtest/gtest.h>

#include <string>

namespace vmetrics::internal {
namespace {

using namespace std::string_literals;

TEST(IsValidUtf8, AcceptsAsciiAndWellFormedSequences) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("batch_put"));
  EXPECT_TRUE(IsValidUtf8("a longer ascii string that takes the eight-byte steps"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9"));                         // U+00E9
  EXPECT_TRUE(IsValidUtf8("\xe2\x82\xac 12345678 \xe2\x82\xac"));  // U+20AC around ASCII
  EXPECT_TRUE(IsValidUtf8("\xf0\x9f\x98\x80"));                    // U+1F600
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));                    // U+10FFFF
  EXPECT_TRUE(IsValidUtf8("\xed\x9f\xbf"));                        // U+D7FF, just below surrogates
  EXPECT_TRUE(IsValidUtf8("nul\0inside"s));                        // NUL is valid UTF-8
}

TEST(IsValidUtf8, RefusesWhatPythonRefuses) {
  EXPECT_FALSE(IsValidUtf8("op\xfe"));
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation byte
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xc1\xbf"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong 3-byte
  EXPECT_FALSE(IsValidUtf8("\xf0\x80\x80\xaf"));  // overlong 4-byte
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // U+D800 surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xf5\x80\x80\x80"));
  EXPECT_FALSE(IsValidUtf8("caf\xc3"));  // cut short at the end
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));
  EXPECT_FALSE(IsValidUtf8("\xc3\x28"));      // bad continuation
  EXPECT_FALSE(IsValidUtf8("01234567\xfe"));  // after a whole fast-path word
  EXPECT_FALSE(IsValidUtf8("0123456789abcdef01234567\x80xyz"));
}

TEST(IsValidUtf8, EveryTwoByteLeadAgreesWithTheTable) {
  // 0xc2..0xdf followed by a continuation byte is valid; 0x80..0xc1 and 0xf5..0xff never lead.
  for (int lead = 0x80; lead <= 0xff; ++lead) {
    const std::string s = {static_cast<char>(lead), '\x80'};
    EXPECT_EQ(IsValidUtf8(s), lead >= 0xc2 && lead <= 0xdf) << std::hex << lead;
  }
}

TEST(EscapeForLog, ControlCharactersAndInvalidBytesBecomeHexEscapes) {
  EXPECT_EQ(EscapeForLog("plain text: ok"), "plain text: ok");
  EXPECT_EQ(EscapeForLog("a\nb"), "a\\x0ab");
  EXPECT_EQ(EscapeForLog("\r\t\x1b[31mred"), "\\x0d\\x09\\x1b[31mred");
  EXPECT_EQ(EscapeForLog("del\x7f"), "del\\x7f");
  EXPECT_EQ(EscapeForLog("op\xfe"), "op\\xfe");
  EXPECT_EQ(EscapeForLog("nul\0"s), "nul\\x00");
  EXPECT_EQ(EscapeForLog("caf\xc3\xa9"), "caf\xc3\xa9");  // valid UTF-8 is kept
  EXPECT_EQ(EscapeForLog("\xc2\x9b"
                         "2J"),
            "\\xc2\\x9b2J");  // C1 CSI
  EXPECT_EQ(EscapeForLog("\xed\xa0\x80"), "\\xed\\xa0\\x80");
}

TEST(EscapeForLog, OutputIsAlwaysValidUtf8WithoutControlCharacters) {
  // Every byte value, alone and after a lead byte: the escaped text is one printable line.
  for (int a = 0; a < 256; ++a) {
    for (int b : {0x00, 0x0a, 0x41, 0x80, 0x9b, 0xbf, 0xc3, 0xff}) {
      const std::string in = {static_cast<char>(a), static_cast<char>(b)};
      const std::string out = EscapeForLog(in);
      EXPECT_TRUE(IsValidUtf8(out)) << a << " " << b;
      for (char c : out) {
        const auto u = static_cast<unsigned char>(c);
        EXPECT_FALSE(u < 0x20 || u == 0x7f) << a << " " << b;
      }
    }
  }
}

}  // namespace
}  // namespace vmetrics::internal
