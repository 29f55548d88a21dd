// SPDX-License-Identifier: Apache-2.0
// File: wire_text.h
//
// Text that came from the wire, on its way to a label value, a log line or JSON output.
//
// IsValidUtf8: the check every label value from the wire passes before a child is created
// for it (CardinalityGuard). The exposition formats carry label values as UTF-8; one invalid
// byte makes the whole scrape unparsable (promtool: `invalid label value`, Prometheus marks
// the target down). The check is RFC 3629 strict, as Python's `bytes.decode("utf-8")` (what
// vLLM's msgspec decoder applies to every msgpack str): no overlong forms, no surrogates
// (U+D800..U+DFFF), nothing above U+10FFFF. It runs only where a new child would be made, not
// per sample, and ASCII (all real label values) goes 8 bytes per step.
//
// EscapeForLog: what a log line shows of wire text. Bytes that are not valid UTF-8, C0
// control characters (newline, ESC, ...), DEL and the C1 controls U+0080..U+009F come out as
// `\xNN` per byte, so a hostile string can neither forge a log line nor drive a terminal,
// and the JSON log writer is never handed invalid UTF-8. Everything else is copied.
//
// Internal (include/vmetrics/internal/: shared by the libraries of this tree, not a stable
// API). Thread safety: pure functions.
//
// Example:
//   IsValidUtf8("op\xfe");         // false
//   EscapeForLog("a\nb\xfe");      // "a\\x0ab\\xfe"
#ifndef VMETRICS_INTERNAL_WIRE_TEXT_H_
#define VMETRICS_INTERNAL_WIRE_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace vmetrics::internal {

// The length of the valid UTF-8 sequence at s[i] (1..4), or 0 if it is not one.
inline size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = [&s](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) return 1;
  const size_t left = s.size() - i;
  const auto cont = [&](size_t k) { return (b(i + k) & 0xc0) == 0x80; };
  if (c >= 0xc2 && c <= 0xdf) return left >= 2 && cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (left < 3 || !cont(1) || !cont(2)) return 0;
    if (c == 0xe0 && b(i + 1) < 0xa0) return 0;   // overlong
    if (c == 0xed && b(i + 1) >= 0xa0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (left < 4 || !cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xf0 && b(i + 1) < 0x90) return 0;   // overlong
    if (c == 0xf4 && b(i + 1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;  // 0x80..0xc1 (continuation or overlong lead), 0xf5..0xff
}

inline bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // ASCII fast path: eight bytes at a time while none has the high bit.
    while (i + 8 <= n) {
      uint64_t word;
      std::memcpy(&word, s.data() + i, 8);
      if ((word & 0x8080808080808080ull) != 0) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

inline std::string EscapeForLog(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  const auto escape = [&out](uint8_t c) {
    out.append("\\x");
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  };
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) {
        escape(c);
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(s, i);
    if (len == 0) {
      escape(c);
      ++i;
    } else if (len == 2 && c == 0xc2 && static_cast<uint8_t>(s[i + 1]) < 0xa0) {
      escape(c);  // C1 control U+0080..U+009F (U+009B is a terminal's CSI)
      escape(static_cast<uint8_t>(s[i + 1]));
      i += 2;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

}  // namespace vmetrics::internal

#endif  // VMETRICS_INTERNAL_WIRE_TEXT_H_
