// SPDX-License-Identifier: Apache-2.0
// File: python_int.h
//
// PythonIntOfText: Python's int() of a string, for the places vLLM reads an integer with it
// (a request header, a kv_connector_extra_config setting, an environment variable): blanks
// around it, an optional sign, decimal digits with single underscores between them. Returns
// the value when it fits int64; nullopt otherwise, with `*overflow` set when the text is an
// integer Python reads but int64 cannot hold.
//
// Internal (include/vmetrics/internal/: shared by the libraries of this tree, not a stable
// API). Thread safety: a pure function.
//
// Example:
//   bool overflow = false;
//   PythonIntOfText(" -1_000 ", &overflow);             // -1000
//   PythonIntOfText("9223372036854775808", &overflow);  // nullopt, overflow
#ifndef VMETRICS_INTERNAL_PYTHON_INT_H_
#define VMETRICS_INTERNAL_PYTHON_INT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vmetrics::internal {

inline std::optional<int64_t> PythonIntOfText(std::string_view text, bool* overflow) {
  *overflow = false;
  const auto blank = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || text.front() == '_' || text.back() == '_') return std::nullopt;
  // The magnitude as unsigned, so that -2^63 fits.
  uint64_t magnitude = 0;
  bool too_large = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '_') {
      if (text[i - 1] == '_') return std::nullopt;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<uint64_t>(c - '0');
    if (magnitude > (UINT64_MAX - digit) / 10) {
      too_large = true;
    } else {
      magnitude = magnitude * 10 + digit;
    }
  }
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (too_large || magnitude > limit) {
    *overflow = true;
    return std::nullopt;
  }
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

}  // namespace vmetrics::internal

#endif  // VMETRICS_INTERNAL_PYTHON_INT_H_
