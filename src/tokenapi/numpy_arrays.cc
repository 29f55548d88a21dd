// SPDX-License-Identifier: Apache-2.0
// The engine's numpy arrays in answers; see numpy_arrays.h.
#include "numpy_arrays.h"

#include <algorithm>
#include <cstddef>

namespace vmetrics::frontend {
namespace {

// numpy/lib/format.py: headers are padded so that the data starts on this boundary, and leave
// room for the first dimension to grow to this many digits (GROWTH_AXIS_MAX_DIGITS).
constexpr size_t kArrayAlign = 64;
constexpr size_t kGrowthAxisMaxDigits = 21;

// The integers of a 1-D integer array the decoder accepted, little-endian.
int64_t IntAt(const Tensor& t, size_t i) {
  const size_t item = NumpyItemSize(t.dtype);
  const auto* p = reinterpret_cast<const unsigned char*>(t.data.data()) + i * item;
  uint64_t v = 0;
  for (size_t b = 0; b < item; ++b) v |= static_cast<uint64_t>(p[b]) << (8 * b);
  if (t.dtype[1] == 'i' && item < 8 && (v >> (8 * item - 1)) != 0) v |= ~uint64_t{0} << (8 * item);
  return static_cast<int64_t>(v);
}

}  // namespace

std::string NpyFile(std::string_view dtype, const std::vector<int64_t>& shape,
                    std::string_view data) {
  // repr() of the shape tuple: "()", "(3,)", "(3, 2)".
  std::string shape_repr = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) shape_repr += ", ";
    shape_repr += std::to_string(shape[i]);
  }
  if (shape.size() == 1) shape_repr += ",";
  shape_repr += ")";
  std::string header = "{'descr': '";
  header.append(dtype).append("', 'fortran_order': False, 'shape': ").append(shape_repr);
  header += ", }";
  if (!shape.empty()) {
    const size_t digits = std::to_string(shape[0]).size();
    if (digits < kGrowthAxisMaxDigits) header.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  // Version 1.0 has a 2-byte header length, 2.0 a 4-byte one (_wrap_header_guess_version).
  const size_t header_len = header.size() + 1;  // with the newline
  const bool v1 = [&] {
    const size_t pad = kArrayAlign - ((6 + 2 + header_len) % kArrayAlign);
    return header_len + pad <= 0xffff;
  }();
  const size_t prefix = 6 + 2 + (v1 ? 2 : 4);
  const size_t pad = kArrayAlign - ((prefix + header_len) % kArrayAlign);
  const size_t stored = header_len + pad;
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(v1 ? 1 : 2));
  out.push_back(0);
  for (size_t b = 0; b < (v1 ? 2U : 4U); ++b)
    out.push_back(static_cast<char>((stored >> (8 * b)) & 0xff));
  out += header;
  out.append(pad, ' ');
  out.push_back('\n');
  out.append(data);
  return out;
}

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16) |
                       (static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  if (const size_t rest = bytes.size() - i; rest > 0) {
    uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (rest == 2) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

void ArrayConcat::Append(const Tensor& chunk) {
  if (broken_) return;
  if (chunk.shape.empty()) {
    broken_ = true;  // a 0-d array cannot be concatenated
    return;
  }
  if (chunks_++ == 0) {
    dtype_.assign(chunk.dtype);
    shape_ = chunk.shape;
    data_.assign(chunk.data);
    return;
  }
  if (chunk.dtype != dtype_ || chunk.shape.size() != shape_.size() ||
      !std::equal(chunk.shape.begin() + 1, chunk.shape.end(), shape_.begin() + 1)) {
    broken_ = true;
    data_.clear();
    return;
  }
  shape_[0] += chunk.shape[0];
  data_.append(chunk.data);
}

std::string ArrayConcat::NpyBase64() const {
  if (chunks_ == 0 || broken_) return "";
  return Base64(NpyFile(dtype_, shape_, data_));
}

void SamplingMaskMerge::Append(const SamplingMaskLists& mask) {
  any_ = true;
  const auto ids = static_cast<size_t>(mask.token_ids.shape[0]);
  for (size_t k = 0; k < ids; ++k) token_ids_.push_back(IntAt(mask.token_ids, k));
  const auto offsets = static_cast<size_t>(mask.offsets.shape[0]);
  for (size_t i = 1; i < offsets; ++i) {
    counts_.push_back(IntAt(mask.offsets, i) - IntAt(mask.offsets, i - 1));
  }
}

std::vector<std::vector<int64_t>> SamplingMaskMerge::Positions() const {
  // merge() keeps each chunk's counts (np.diff of its offsets) over the concatenated ids, so a
  // chunk whose offsets do not start at 0 shifts what follows, as it does in Python; a slice
  // past the end is cut there, as numpy cuts it.
  std::vector<std::vector<int64_t>> out;
  out.reserve(counts_.size());
  size_t begin = 0;
  for (const int64_t count : counts_) {
    const size_t end = std::min(token_ids_.size(), begin + static_cast<size_t>(count));
    const size_t from = std::min(begin, end);
    out.emplace_back(token_ids_.begin() + static_cast<std::ptrdiff_t>(from),
                     token_ids_.begin() + static_cast<std::ptrdiff_t>(end));
    begin += static_cast<size_t>(count);
  }
  return out;
}

}  // namespace vmetrics::frontend
