// SPDX-License-Identifier: Apache-2.0
// The engine's logprob rows as vLLM's frontend reads them; see logprobs.h.
#include "logprobs.h"

#include <cmath>
#include <cstring>
#include <optional>

namespace vmetrics::frontend {
namespace {

// Reads element `i` of a tensor of ints or floats as a double; nullopt for an unknown dtype or
// an index beyond the data.
class TensorView {
 public:
  explicit TensorView(const Tensor& t) : data_(t.data) {
    const std::string_view d = t.dtype;
    if (d == "<i4" || d == "int32") {
      kind_ = kI32;
    } else if (d == "<i8" || d == "int64") {
      kind_ = kI64;
    } else if (d == "<f4" || d == "float32") {
      kind_ = kF32;
    } else if (d == "<f8" || d == "float64") {
      kind_ = kF64;
    }
  }
  bool ok() const { return kind_ != kUnknown; }
  size_t size() const { return kind_ == kUnknown ? 0 : data_.size() / Width(); }
  double At(size_t i) const {
    const char* p = data_.data() + i * Width();
    switch (kind_) {
      case kI32: {
        int32_t v;
        std::memcpy(&v, p, sizeof v);
        return v;
      }
      case kI64: {
        int64_t v;
        std::memcpy(&v, p, sizeof v);
        return static_cast<double>(v);
      }
      case kF32: {
        float v;
        std::memcpy(&v, p, sizeof v);
        return v;
      }
      case kF64: {
        double v;
        std::memcpy(&v, p, sizeof v);
        return v;
      }
      case kUnknown:
        break;
    }
    return 0;
  }
  int64_t IntAt(size_t i) const {
    const char* p = data_.data() + i * Width();
    if (kind_ == kI32) {
      int32_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    if (kind_ == kI64) {
      int64_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    return static_cast<int64_t>(At(i));
  }
  bool is_int() const { return kind_ == kI32 || kind_ == kI64; }

 private:
  enum Kind { kUnknown, kI32, kI64, kF32, kF64 };
  size_t Width() const { return kind_ == kI32 || kind_ == kF32 ? 4 : 8; }
  std::string_view data_;
  Kind kind_ = kUnknown;
};

}  // namespace

bool DecodeLogprobRows(const Logprobs& wire, int64_t num_logprobs,
                       std::vector<PositionLogprobs>* out) {
  if (wire.fields.size() < 3 || !wire.fields[0] || !wire.fields[1] || !wire.fields[2]) {
    return false;
  }
  const Tensor& ids_t = *wire.fields[0];
  const Tensor& lps_t = *wire.fields[1];
  const Tensor& ranks_t = *wire.fields[2];
  if (ids_t.shape.size() != 2 || lps_t.shape != ids_t.shape || ranks_t.shape.size() != 1 ||
      ranks_t.shape[0] != ids_t.shape[0] || ids_t.shape[0] < 0 || ids_t.shape[1] < 1) {
    return false;
  }
  const TensorView ids(ids_t), lps(lps_t), ranks(ranks_t);
  if (!ids.is_int() || !lps.ok() || lps.is_int() || !ranks.is_int()) return false;
  const auto rows = static_cast<size_t>(ids_t.shape[0]);
  const auto cols = static_cast<size_t>(ids_t.shape[1]);
  if (rows > ids.size() || ids.size() / (rows == 0 ? 1 : rows) < cols || lps.size() < rows * cols ||
      ranks.size() < rows) {
    return false;
  }
  const size_t used =
      num_logprobs < 0 ? cols : std::min(cols, static_cast<size_t>(num_logprobs) + 1);
  for (size_t r = 0; r < rows; ++r) {
    PositionLogprobs position;
    position.reserve(used);
    for (size_t c = 0; c < used; ++c) {
      Logprob lp;
      lp.token_id = ids.IntAt(r * cols + c);
      lp.logprob = lps.At(r * cols + c);
      lp.rank = c == 0 ? ranks.IntAt(r) : static_cast<int64_t>(c);
      bool seen = false;
      for (Logprob& e : position) {
        if (e.token_id == lp.token_id) {  // a dict keeps the first place, takes the new value
          e = lp;
          seen = true;
          break;
        }
      }
      if (!seen) position.push_back(lp);
    }
    out->push_back(std::move(position));
  }
  return true;
}

const Logprob* FindLogprob(const PositionLogprobs& position, int64_t token_id) {
  for (const Logprob& e : position) {
    if (e.token_id == token_id) return &e;
  }
  return nullptr;
}

double ClampLogprob(double logprob) {
  if (std::isnan(logprob)) return -9999.0;
  return std::max(logprob, -9999.0);
}

}  // namespace vmetrics::frontend
