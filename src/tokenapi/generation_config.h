// SPDX-License-Identifier: Apache-2.0
// File: generation_config.h
//
// GenerationConfig: what vLLM's frontend learns from a model's files and tokenizer and vmetrics,
// which has neither, is told: the EOS token, the generation config's extra EOS tokens and
// default sampling values, the vocabulary size. vLLM's frontend puts the tokenizer's EOS into
// every request as SamplingParams._eos_token_id (unless ignore_eos) and into
// _all_stop_token_ids, which min_tokens masks; the generation config's other eos_token_id
// values become stop_token_ids (SamplingParams.update_from_generation_config,
// vllm/sampling_params.py at vllm-project/vllm 00388f65); its temperature, top_k, top_p, min_p,
// repetition_penalty and max_new_tokens are the defaults of a request that leaves them unset
// (ModelConfig.get_diff_sampling_param). Without an EOS an engine never stops at one, which is
// why `vmetrics serve` takes --eos-token-id and --generation-config.
//
// LoadGenerationConfig reads a model directory as vLLM's `--generation-config DIR` does:
// DIR/generation_config.json (the defaults and eos_token_id, an int or a list) and
// DIR/config.json (vocab_size, and eos_token_id when no EOS is given otherwise). Either file may
// be missing; both missing, or one that is not a JSON object, is an error naming the flag.
//
// Thread safety: plain values; LoadGenerationConfig is reentrant.
//
// Example:
//   Result<GenerationConfig> g = LoadGenerationConfig("/models/qwen3-0.6b");
//   ASSERT_TRUE(g.ok()) << g.status().ToString();
//   EXPECT_EQ(g->eos_token_id, 151645);
#ifndef VMETRICS_FRONTEND_GENERATION_CONFIG_H_
#define VMETRICS_FRONTEND_GENERATION_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vmetrics/status.h"

namespace vmetrics::frontend {

struct GenerationConfig {
  // The tokenizer's EOS (--eos-token-id, else config.json's, else generation_config.json's
  // first): SamplingParams._eos_token_id.
  std::optional<int64_t> eos_token_id;
  // generation_config.json's eos_token_id, every value (stop tokens besides the EOS).
  std::vector<int64_t> generation_eos_token_ids;
  // config.json's vocab_size: token ids must be below it. nullopt = not known, not checked.
  std::optional<int64_t> vocab_size;
  // Defaults of a request that leaves these unset.
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<int64_t> max_tokens;  // max_new_tokens
};

// Reads DIR/generation_config.json and DIR/config.json (see the file comment).
// kInvalidArgument naming --generation-config when neither exists or one cannot be used.
Result<GenerationConfig> LoadGenerationConfig(const std::string& dir);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_GENERATION_CONFIG_H_
