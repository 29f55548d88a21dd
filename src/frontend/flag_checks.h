// SPDX-License-Identifier: Apache-2.0
// File: flag_checks.h
//
// Checks of `serve`'s and `replay`'s options that the flag parser cannot make, shared by
// Frontend::Bind (FrontendOptions, so embedders get them too) and Replay: each refuses a value
// that would be silently clamped, ignored or turned into "no limit", with a message naming the
// flag (docs/reliability.md §8).
//
// Pure functions: safe from any thread.
#ifndef VMETRICS_FRONTEND_FLAG_CHECKS_H_
#define VMETRICS_FRONTEND_FLAG_CHECKS_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "vmetrics/frontend.h"
#include "vmetrics/status.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics::frontend {

// The most speculative tokens a --speculative-config may give: the per-position families get
// one child per position per engine, so the number is a cost in series, and vLLM's drafters
// propose a handful.
inline constexpr int64_t kMaxSpeculativeTokens = 128;

// ParseNumSpeculativeTokens
//
// `--speculative-config '<JSON>'`'s num_speculative_tokens: 0 when the text is empty, or the
// key absent or null; else a JSON integer from 1 to kMaxSpeculativeTokens (vLLM's
// SpeculativeConfig: an int greater than 0). A string, a float, a boolean, 0, a negative
// number or a text that is not a JSON object is refused, naming the flag.
//
// Example:
//   EXPECT_EQ(*ParseNumSpeculativeTokens(R"({"num_speculative_tokens":3})"), 3);
//   EXPECT_FALSE(ParseNumSpeculativeTokens(R"({"num_speculative_tokens":"3"})").ok());
Result<int64_t> ParseNumSpeculativeTokens(std::string_view speculative_config);

enum class SpecDecodeMetricsLevel : uint8_t;  // token_request.h

// CheckSpecDecodeMetrics
//
// `--per-request-spec-decode-metrics none|summary|detailed` as its level. Not "none" needs
// speculative decoding (`num_speculative_tokens` > 0), as vLLM's config check refuses it
// without --speculative-config, and, when --engine-wire pins a generation (`pinned`, else
// null), one whose outputs carry spec_decode_metrics: answers could never have the object.
Result<SpecDecodeMetricsLevel> CheckSpecDecodeMetrics(std::string_view level,
                                                      int64_t num_speculative_tokens,
                                                      const WireGeneration* pinned);

// CheckMaxModelLen
//
// --max-model-len: a positive integer (the int64 range is the flag parser's). 0 is accepted
// only as FrontendOptions' "from the engines" (`zero_is_from_engines`), which the flag never
// gives.
Status CheckMaxModelLen(int64_t max_model_len, bool zero_is_from_engines);

// CheckMaxLabelValueBytes: --max-label-value-bytes from 1 to kMaxLabelValueBytesLimit
// (vmetrics/frontend.h).
Status CheckMaxLabelValueBytes(size_t max_label_value_bytes);

// CheckServedModelName
//
// --served-model-name is the model_name label of every series and the `model` of every answer,
// so it passes what label values from the wire pass (docs/recording.md): valid UTF-8 (RFC
// 3629) and at most `max_label_value_bytes` bytes; and it is not empty.
Status CheckServedModelName(std::string_view name, size_t max_label_value_bytes);

// The longest LoRA adapter path --lora-modules may give (Linux's PATH_MAX).
inline constexpr size_t kMaxLoraPathBytes = 4096;

// CheckLoraModules
//
// --lora-modules: each adapter's name and path go into every EngineCoreRequest that names the
// adapter (LoRARequest's lora_name and lora_path, msgpack str), and a vLLM engine's msgspec
// decoder refuses a str that is not UTF-8, which ends its input thread. So each name and path
// is non-empty valid UTF-8 without control characters; a name is at most
// `max_label_value_bytes` bytes (it is a label value of vllm:lora_requests_info), a path at
// most kMaxLoraPathBytes.
Status CheckLoraModules(const std::vector<LoraModule>& modules, size_t max_label_value_bytes);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_FLAG_CHECKS_H_
