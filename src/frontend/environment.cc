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

}  // namespace vmetrics::frontend
