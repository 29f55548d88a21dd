// SPDX-License-Identifier: Apache-2.0
// File: float_format.h
//
// The buffer-level form of FormatGoFloat (include/vmetrics/exposition.h): writes
// prometheus_client's floatToGoString(v) into a caller's stack buffer, so the writers can
// append numbers without a temporary std::string.
//
// Thread safety: pure function.
//
// Example:
//   char buf[vmetrics::internal::kMaxGoFloatChars];
//   size_t n = vmetrics::internal::WriteGoFloat(1e6, buf);
//   EXPECT_EQ(std::string_view(buf, n), "1e+06");
#ifndef VMETRICS_SRC_EXPOSITION_FLOAT_FORMAT_H_
#define VMETRICS_SRC_EXPOSITION_FLOAT_FORMAT_H_

#include <cstddef>

namespace vmetrics::internal {

// The longest output is 24 characters ("-2.2250738585072014e-308"); 32 leaves room.
inline constexpr size_t kMaxGoFloatChars = 32;

// WriteGoFloat
//
// Writes floatToGoString(v) to buf (at least kMaxGoFloatChars bytes, not NUL-terminated) and
// returns the number of characters written. Never fails.
size_t WriteGoFloat(double v, char* buf);

}  // namespace vmetrics::internal

#endif  // VMETRICS_SRC_EXPOSITION_FLOAT_FORMAT_H_
