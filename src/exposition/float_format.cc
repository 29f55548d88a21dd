// SPDX-License-Identifier: Apache-2.0
// floatToGoString (prometheus_client/utils.py, identical in 0.16 through 0.25):
//
//   +Inf / -Inf / NaN for the specials; otherwise s = repr(d), and if d > 0 and s has more
//   than six digits before its '.', the Go exponent form "<d>.<ddd>e+0<dot-1>".
//
// repr(float) is the shortest string that round-trips, printed by Python's rule: scientific
// when the decimal exponent is < -4 or >= 16 ("1e-05", "1e+16"; at least two exponent
// digits), else positional with at least one digit after the point ("3.0", "0.0001").
// std::to_chars(chars_format::scientific) without a precision gives exactly those shortest
// digits and their exponent (libstdc++ 12 uses Ryu), so we only re-lay them out.
#include "float_format.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "vmetrics/exposition.h"

namespace vmetrics {
namespace internal {
namespace {

size_t CopyLiteral(const char* literal, size_t n, char* buf) {
  std::memcpy(buf, literal, n);
  return n;
}

}  // namespace

size_t WriteGoFloat(double v, char* buf) {
  // Integral values below 10^6 (every bucket count and most counters) are "<digits>.0" in
  // Python's repr and below floatToGoString's exponent switch: written directly, without the
  // shortest-digits search. -0.0 is excluded (repr gives "-0.0"); the general path has it.
  if (v >= 0 && v < 1e6 && !std::signbit(v)) {
    const auto integral = static_cast<uint32_t>(v);
    if (static_cast<double>(integral) == v) {
      char* o = std::to_chars(buf, buf + kMaxGoFloatChars, integral).ptr;
      *o++ = '.';
      *o++ = '0';
      return static_cast<size_t>(o - buf);
    }
  }
  if (std::isnan(v)) return CopyLiteral("NaN", 3, buf);
  if (std::isinf(v)) return v > 0 ? CopyLiteral("+Inf", 4, buf) : CopyLiteral("-Inf", 4, buf);

  // Shortest round-trip digits as "[-]d[.ddd]e(+|-)xx". 0.0 comes out as "0e+00".
  char sci[kMaxGoFloatChars];
  const std::to_chars_result r =
      std::to_chars(sci, sci + sizeof(sci), v, std::chars_format::scientific);
  const char* p = sci;
  const bool negative = *p == '-';
  if (negative) ++p;
  char digits[20];  // at most 17 significant digits
  int num_digits = 0;
  digits[num_digits++] = *p++;
  if (*p == '.') {
    ++p;
    while (*p != 'e') digits[num_digits++] = *p++;
  }
  ++p;  // 'e'
  const bool negative_exp = *p == '-';
  ++p;  // exponent sign
  int exp = 0;
  while (p < r.ptr) exp = exp * 10 + (*p++ - '0');
  if (negative_exp) exp = -exp;

  char* o = buf;
  if (negative) *o++ = '-';
  if (exp < -4 || exp >= 16) {
    // repr's scientific form: "1e+16", "1.5e-07", "5e-324".
    *o++ = digits[0];
    if (num_digits > 1) {
      *o++ = '.';
      std::memcpy(o, digits + 1, num_digits - 1);
      o += num_digits - 1;
    }
    *o++ = 'e';
    *o++ = negative_exp ? '-' : '+';
    const int abs_exp = negative_exp ? -exp : exp;
    if (abs_exp < 10) *o++ = '0';
    o = std::to_chars(o, buf + kMaxGoFloatChars, abs_exp).ptr;
  } else if (!negative && exp >= 6) {
    // repr would have exp+1 > 6 digits before the point, so Python switches to Go's form.
    // Its mantissa is every digit of repr with trailing zeros (and a bare '.') stripped, which
    // is exactly the shortest digit string. Negative values keep repr: Python only checks
    // d > 0 ("we only need to care about positive values for le/quantile").
    *o++ = digits[0];
    if (num_digits > 1) {
      *o++ = '.';
      std::memcpy(o, digits + 1, num_digits - 1);
      o += num_digits - 1;
    }
    // "e+0" followed by the exponent, so 1e10..1e15 get three exponent digits ("e+011"):
    // prometheus_client's quirk up to 0.25, reproduced because we must match its bytes.
    *o++ = 'e';
    *o++ = '+';
    *o++ = '0';
    o = std::to_chars(o, buf + kMaxGoFloatChars, exp).ptr;
  } else if (exp >= 0) {
    // Positional, integer part of exp+1 digits (padded with zeros), at least one decimal.
    const int int_digits = exp + 1;
    for (int i = 0; i < int_digits; ++i) *o++ = i < num_digits ? digits[i] : '0';
    *o++ = '.';
    if (num_digits > int_digits) {
      std::memcpy(o, digits + int_digits, num_digits - int_digits);
      o += num_digits - int_digits;
    } else {
      *o++ = '0';
    }
  } else {
    // Positional below one: "0." then -exp-1 zeros then the digits ("0.0001").
    *o++ = '0';
    *o++ = '.';
    for (int i = 0; i < -exp - 1; ++i) *o++ = '0';
    std::memcpy(o, digits, num_digits);
    o += num_digits;
  }
  return static_cast<size_t>(o - buf);
}

}  // namespace internal

std::string FormatGoFloat(double v) {
  char buf[internal::kMaxGoFloatChars];
  return std::string(buf, internal::WriteGoFloat(v, buf));
}

void AppendGoFloat(double v, std::string* out) {
  char buf[internal::kMaxGoFloatChars];
  out->append(buf, internal::WriteGoFloat(v, buf));
}

}  // namespace vmetrics
