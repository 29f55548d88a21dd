// SPDX-License-Identifier: Apache-2.0
// DecimalInRange: strict integer flags; see commands.h.
#include <cstdint>
#include <string>

#include "commands.h"

namespace vmetrics::cli {

CLI::Validator DecimalInRange(uint64_t min, uint64_t max) {
  const std::string range = std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        std::string wanted =
            "an integer from " + range + " (decimal digits only), got '" + text + "'";
        if (text.empty() || text.size() > 20) return wanted;
        uint64_t value = 0;
        for (const char c : text) {
          if (c < '0' || c > '9') return wanted;
          const auto digit = static_cast<uint64_t>(c - '0');
          if (value > (UINT64_MAX - digit) / 10) return wanted;  // past 2^64 - 1
          value = value * 10 + digit;
        }
        return value >= min && value <= max ? std::string() : wanted;
      },
      "INT in [" + range + "]");
}

}  // namespace vmetrics::cli
