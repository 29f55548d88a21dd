// SPDX-License-Identifier: Apache-2.0
// File: numpy_arrays.h
//
// The engine's numpy arrays as vLLM's frontend turns them into answers: routed_experts, whose
// per-output chunks OutputProcessor concatenates on axis 0 when the request finishes and the
// serving code sends as base64 of the `.npy` file np.save writes (numpy2base64,
// vllm/utils/serial_utils.py at vllm-project/vllm 6adad087); and the sampling mask, whose
// per-output SamplingMaskLists SamplingMaskLists.merge joins into one list of id lists
// (vllm/v1/outputs.py, vllm/v1/engine/output_processor.py at 6adad087).
//
// Plain values: one per choice, used under the request service's lock.
//
// Example:
//   ArrayConcat experts;
//   experts.Append(*output.routed_experts);  // each output's chunk, in order
//   std::string b64 = experts.NpyBase64();   // np.load(io.BytesIO(base64.b64decode(b64)))
#ifndef VMETRICS_FRONTEND_NUMPY_ARRAYS_H_
#define VMETRICS_FRONTEND_NUMPY_ARRAYS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/engine_core_outputs.h"

namespace vmetrics::frontend {

// The `.npy` file (format 1.0, or 2.0 for a header past 65535 bytes) np.save writes for a
// C-order array of `dtype` (a numpy descriptor, "<u2") and `shape` holding `data`: the magic,
// the header dict {'descr', 'fortran_order': False, 'shape'} with numpy's spare room for the
// first dimension, padded with blanks to a multiple of 64 bytes and ended by a newline.
std::string NpyFile(std::string_view dtype, const std::vector<int64_t>& shape,
                    std::string_view data);

// Standard base64 with padding (RFC 4648 section 4), as pybase64.b64encode writes it.
std::string Base64(std::string_view bytes);

// np.concatenate(chunks, axis=0) of arrays the decoder accepted (NumpyArrayProblem, rank >= 1).
class ArrayConcat {
 public:
  // Adds the next chunk. A chunk whose dtype or dimensions past the first differ from the
  // first chunk's breaks the concatenation (numpy raises there): the result is then none.
  void Append(const Tensor& chunk);
  // Base64 of the concatenation's .npy file; "" when there was no chunk or it broke.
  std::string NpyBase64() const;
  bool empty() const { return chunks_ == 0; }

 private:
  size_t chunks_ = 0;
  bool broken_ = false;
  std::string dtype_;
  std::vector<int64_t> shape_;  // the first dimension summed over the chunks
  std::string data_;
};

// SamplingMaskLists.merge of each output's mask, then to_nested_list: one list of vocabulary
// ids per position, in order.
class SamplingMaskMerge {
 public:
  // Adds the next output's mask (as the decoder checked it: offsets non-decreasing, within
  // token_ids).
  void Append(const SamplingMaskLists& mask);
  bool empty() const { return !any_; }
  // to_nested_list() of the merge: one list of vocabulary ids per position.
  std::vector<std::vector<int64_t>> Positions() const;

 private:
  bool any_ = false;
  std::vector<int64_t> token_ids_;  // every chunk's, concatenated
  std::vector<int64_t> counts_;     // ids per position
};

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_NUMPY_ARRAYS_H_
