// SPDX-License-Identifier: Apache-2.0
// File: logprobs.h
//
// The engine's logprobs as vLLM's frontend turns them into per-position dictionaries
// (LogprobsProcessor, vllm/v1/engine/logprobs.py at vllm-project/vllm dfafe710): an output's
// new_logprobs (LogprobsLists) or new_prompt_logprobs_tensors (LogprobsTensors) holds, per
// position, a row of token ids and logprobs — column 0 the sampled (or actual prompt) token,
// then the top k in rank order — and the rank of the column-0 token. A row becomes an ordered
// token id -> (logprob, rank) map: column 0 with its own rank, column j with rank j, the first
// `num_logprobs` + 1 columns (all of them for -1); a token that appears twice keeps its first
// place and takes the later column's values, as a Python dict comprehension does.
//
// Tensors: dtype "<i4", "<i8", "<f4", "<f8" (numpy) or "int32", "int64", "float32", "float64"
// (torch), data little-endian; shape [rows, columns] for ids and logprobs, [rows] for ranks.
// Anything else is not decoded (a caller answers those positions as having no logprobs).
//
// Pure functions: safe from any thread.
//
// Example:
//   std::vector<PositionLogprobs> rows;
//   ASSERT_TRUE(DecodeLogprobRows(*output.new_logprobs, 2, &rows));
//   EXPECT_EQ(rows[0][0].token_id, output.new_token_ids[0]);
#ifndef VMETRICS_FRONTEND_LOGPROBS_H_
#define VMETRICS_FRONTEND_LOGPROBS_H_

#include <cstdint>
#include <vector>

#include "vmetrics/engine_core_outputs.h"

namespace vmetrics::frontend {

struct Logprob {
  int64_t token_id = 0;
  double logprob = 0;
  int64_t rank = 0;
};

// One position's map, in dict order (the column-0 token first).
using PositionLogprobs = std::vector<Logprob>;

// Appends one PositionLogprobs per row of `wire` to `out`. False (nothing appended) when the
// value is not three decodable tensors of matching shapes.
bool DecodeLogprobRows(const Logprobs& wire, int64_t num_logprobs,
                       std::vector<PositionLogprobs>* out);

// The entry for `token_id` in a position's map, or nullptr.
const Logprob* FindLogprob(const PositionLogprobs& position, int64_t token_id);

// vLLM clamps logprobs to -9999.0 for JSON (-inf is not JSON); NaN becomes -9999.0 too.
double ClampLogprob(double logprob);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_LOGPROBS_H_
