// SPDX-License-Identifier: Apache-2.0
// Environment switches; see environment.h.
#include "environment.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "vmetrics/internal/python_int.h"

namespace vmetrics::frontend {

bool CreatedDisabledByEnvironment() {
  const char* v = std::getenv("PROMETHEUS_DISABLE_CREATED_SERIES");
  if (v == nullptr) return false;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "true" || s == "1" || s == "t";
}

Result<bool> PythonIntSwitchFromEnvironment(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  const std::string s(v);
  bool overflow = false;
  const std::optional<int64_t> value = internal::PythonIntOfText(s, &overflow);
  if (!value && !overflow) {
    return Status::InvalidArgument(std::string("environment variable ") + name +
                                   " must be an integer (0 = off), not \"" + s + "\"");
  }
  return overflow || *value != 0;  // an integer past int64 is not 0 either
}

Result<bool> ServerDevModeFromEnvironment() {
  return PythonIntSwitchFromEnvironment("VLLM_SERVER_DEV_MODE");
}

Result<bool> ComputeNansInLogitsFromEnvironment() {
  return PythonIntSwitchFromEnvironment("VLLM_COMPUTE_NANS_IN_LOGITS");
}

}  // namespace vmetrics::frontend
