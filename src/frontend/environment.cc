// SPDX-License-Identifier: Apache-2.0
// Environment switches; see environment.h.
#include "environment.h"

#include <cctype>
#include <cstdlib>
#include <string>

namespace vmetrics::frontend {

bool CreatedDisabledByEnvironment() {
  const char* v = std::getenv("PROMETHEUS_DISABLE_CREATED_SERIES");
  if (v == nullptr) return false;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "true" || s == "1" || s == "t";
}

Result<bool> ComputeNansInLogitsFromEnvironment() {
  constexpr char kName[] = "VLLM_COMPUTE_NANS_IN_LOGITS";
  const char* v = std::getenv(kName);
  if (v == nullptr) return false;
  const std::string s(v);
  const auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  size_t begin = 0;
  size_t end = s.size();
  while (begin < end && blank(s[begin])) ++begin;
  while (end > begin && blank(s[end - 1])) --end;
  if (begin < end && (s[begin] == '+' || s[begin] == '-')) ++begin;
  bool digits = begin < end;
  bool nonzero = false;
  for (size_t i = begin; i < end; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) digits = false;
    if (s[i] != '0') nonzero = true;
  }
  if (!digits) {
    return Status::InvalidArgument(std::string("environment variable ") + kName +
                                   " must be an integer (0 = off), not \"" + s + "\"");
  }
  return nonzero;
}

}  // namespace vmetrics::frontend
