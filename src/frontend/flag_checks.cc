// SPDX-License-Identifier: Apache-2.0
// Checks of serve's and replay's options; see flag_checks.h.
#include "flag_checks.h"

#include <nlohmann/json.hpp>
#include <string>

#include "token_request.h"
#include "vmetrics/frontend.h"
#include "vmetrics/internal/wire_text.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics::frontend {

Result<int64_t> ParseNumSpeculativeTokens(std::string_view speculative_config) {
  if (speculative_config.empty()) return int64_t{0};
  const nlohmann::json doc = nlohmann::json::parse(speculative_config, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::InvalidArgument("--speculative-config must be a JSON object");
  }
  const auto k = doc.find("num_speculative_tokens");
  if (k == doc.end() || k->is_null()) return int64_t{0};
  const std::string range = "an integer from 1 to " + std::to_string(kMaxSpeculativeTokens);
  if (!k->is_number_integer()) {
    // The type, not the value: dump() recurses, and the value may nest arbitrarily deep.
    return Status::InvalidArgument("--speculative-config: num_speculative_tokens must be " + range +
                                   ", got a " + k->type_name());
  }
  // Unsigned above INT64_MAX reads as negative here: refused with the rest.
  const bool fits = k->is_number_unsigned() ? k->get<uint64_t>() <= uint64_t{kMaxSpeculativeTokens}
                                            : k->get<int64_t>() <= kMaxSpeculativeTokens;
  if (!fits || k->get<int64_t>() < 1) {
    return Status::InvalidArgument("--speculative-config: num_speculative_tokens must be " + range +
                                   ", got " + k->dump());
  }
  return k->get<int64_t>();
}

Result<SpecDecodeMetricsLevel> CheckSpecDecodeMetrics(std::string_view level,
                                                      int64_t num_speculative_tokens,
                                                      const WireGeneration* pinned) {
  SpecDecodeMetricsLevel checked;
  if (level == "none") return SpecDecodeMetricsLevel::kNone;
  if (level == "summary") {
    checked = SpecDecodeMetricsLevel::kSummary;
  } else if (level == "detailed") {
    checked = SpecDecodeMetricsLevel::kDetailed;
  } else {
    return Status::InvalidArgument(
        "--per-request-spec-decode-metrics must be none, summary or detailed, got '" +
        std::string(level) + "'");
  }
  if (num_speculative_tokens == 0) {
    return Status::InvalidArgument(
        "--per-request-spec-decode-metrics " + std::string(level) +
        " needs speculative decoding: --speculative-config with num_speculative_tokens");
  }
  if (pinned != nullptr && pinned->PositionOf(OutputField::kSpecDecodeMetrics) < 0) {
    return Status::InvalidArgument("--per-request-spec-decode-metrics " + std::string(level) +
                                   ": engines of --engine-wire " + std::string(pinned->name) +
                                   " never send spec_decode_metrics");
  }
  return checked;
}

Status CheckMaxModelLen(int64_t max_model_len, bool zero_is_from_engines) {
  if (max_model_len > 0 || (max_model_len == 0 && zero_is_from_engines)) return Status::Ok();
  return Status::InvalidArgument("--max-model-len must be a positive integer, got " +
                                 std::to_string(max_model_len));
}

Status CheckMaxLabelValueBytes(size_t max_label_value_bytes) {
  if (max_label_value_bytes >= 1 && max_label_value_bytes <= kMaxLabelValueBytesLimit) {
    return Status::Ok();
  }
  return Status::InvalidArgument("--max-label-value-bytes must be from 1 to " +
                                 std::to_string(kMaxLabelValueBytesLimit) + ", got " +
                                 std::to_string(max_label_value_bytes));
}

Status CheckServedModelName(std::string_view name, size_t max_label_value_bytes) {
  if (name.empty()) return Status::InvalidArgument("--served-model-name must not be empty");
  if (!internal::IsValidUtf8(name)) {
    return Status::InvalidArgument("--served-model-name must be valid UTF-8");
  }
  if (name.size() > max_label_value_bytes) {
    return Status::InvalidArgument("--served-model-name is " + std::to_string(name.size()) +
                                   " bytes, more than --max-label-value-bytes (" +
                                   std::to_string(max_label_value_bytes) +
                                   "): it is the model_name label of every series");
  }
  return Status::Ok();
}

Status CheckLoraModules(const std::vector<LoraModule>& modules, size_t max_label_value_bytes) {
  auto check = [](const std::string& name, const std::string& what, const std::string& value,
                  size_t max_bytes) -> Status {
    const std::string where = "--lora-modules: " + what + " of " + name;
    if (value.empty()) return Status::InvalidArgument(where + " is empty");
    if (!internal::IsValidUtf8(value))
      return Status::InvalidArgument(where + " is not valid UTF-8");
    for (const char c : value) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        return Status::InvalidArgument(where + " holds a control character");
      }
    }
    if (value.size() > max_bytes) {
      return Status::InvalidArgument(where + " is " + std::to_string(value.size()) +
                                     " bytes, more than " + std::to_string(max_bytes));
    }
    return Status::Ok();
  };
  for (size_t i = 0; i < modules.size(); ++i) {
    const std::string name = "adapter " + std::to_string(i + 1);
    if (Status s = check(name, "the name", modules[i].name, max_label_value_bytes); !s.ok()) {
      return s;
    }
    if (Status s = check(name, "the path", modules[i].path, kMaxLoraPathBytes); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace vmetrics::frontend
