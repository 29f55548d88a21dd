// SPDX-License-Identifier: Apache-2.0
#include "sample_writer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "escape.h"
#include "float_format.h"
#include "vmetrics/exposition.h"

namespace vmetrics::internal {
namespace {

constexpr std::string_view kLe = "le";

// Bounds the registry stores exclude the implied +Inf; a spec that lists +Inf itself gets one
// "+Inf" bucket all the same, as prometheus_client appends +Inf only when it is missing.
size_t NumFiniteBounds(const FamilySpec& spec) {
  size_t n = spec.buckets.size();
  if (n > 0 && std::isinf(spec.buckets[n - 1]) && spec.buckets[n - 1] > 0) --n;
  return n;
}

void AppendLabelList(const FamilySpec& spec, const Child& child, const size_t* first,
                     const size_t* last, std::string* out) {
  const std::span<const std::string_view> values = child.label_values();
  for (const size_t* it = first; it != last; ++it) {
    if (it != first) out->push_back(',');
    out->append(spec.label_names[*it]);
    out->append("=\"", 2);
    if (*it < values.size()) AppendEscapedLabelValue(values[*it], out);
    out->push_back('"');
  }
}

}  // namespace

void LabelSets::Reset(const FamilySpec& spec, std::span<const Child* const> children) {
  const std::vector<std::string>& names = spec.label_names;
  order_.resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) order_[i] = i;
  std::sort(order_.begin(), order_.end(),
            [&names](size_t a, size_t b) { return names[a] < names[b]; });
  // Where `le` would land among the sorted names. prometheus_client sorts the whole label
  // dict of a bucket sample, `le` included, so it is not simply appended.
  const size_t* const sorted = order_.data();
  const size_t* const le_split =
      std::lower_bound(sorted, sorted + order_.size(), kLe,
                       [&names](size_t idx, std::string_view le) { return names[idx] < le; });

  text_.clear();
  spans_.clear();
  spans_.reserve(children.size());
  for (const Child* child : children) {
    Span span;
    span.begin = text_.size();
    AppendLabelList(spec, *child, sorted, le_split, &text_);
    span.before_end = text_.size();
    AppendLabelList(spec, *child, le_split, sorted + order_.size(), &text_);
    span.end = text_.size();
    spans_.push_back(span);
  }

  le_text_.clear();
  le_ends_.clear();
  if (spec.type == MetricType::kHistogram) {
    const size_t finite = NumFiniteBounds(spec);
    for (size_t b = 0; b < finite; ++b) {
      AppendGoFloat(spec.buckets[b], &le_text_);
      le_ends_.push_back(le_text_.size());
    }
    le_text_.append("+Inf");
    le_ends_.push_back(le_text_.size());
  }
}

void LabelSets::AppendPlain(size_t i, std::string* out) const {
  const Span& s = spans_[i];
  if (s.begin == s.end) return;  // no labels: prometheus_client writes no "{}"
  out->push_back('{');
  out->append(text_, s.begin, s.before_end - s.begin);
  if (s.before_end != s.begin && s.end != s.before_end) out->push_back(',');
  out->append(text_, s.before_end, s.end - s.before_end);
  out->push_back('}');
}

void LabelSets::AppendWithLe(size_t i, std::string_view le, std::string* out) const {
  const Span& s = spans_[i];
  out->push_back('{');
  if (s.before_end != s.begin) {
    out->append(text_, s.begin, s.before_end - s.begin);
    out->push_back(',');
  }
  out->append("le=\"", 4);
  out->append(le);
  out->push_back('"');
  if (s.end != s.before_end) {
    out->push_back(',');
    out->append(text_, s.before_end, s.end - s.before_end);
  }
  out->push_back('}');
}

std::string_view LabelSets::le(size_t b) const {
  const size_t begin = b == 0 ? 0 : le_ends_[b - 1];
  return std::string_view(le_text_).substr(begin, le_ends_[b] - begin);
}

namespace {

// One sample line under construction. Pieces go to a stack buffer; the line reaches `out` in
// one append when it is done, or earlier, piece by piece, when a long label value overflows
// the buffer (the bytes and their order are the same either way).
class Line {
 public:
  explicit Line(std::string* out) : out_(out) {}
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;
  ~Line() { Flush(); }

  void Add(std::string_view piece) {
    if (piece.size() > sizeof(buf_) - n_) {
      Flush();
      if (piece.size() > sizeof(buf_)) {
        out_->append(piece);
        return;
      }
    }
    std::memcpy(buf_ + n_, piece.data(), piece.size());
    n_ += piece.size();
  }
  void Add(char c) { Add(std::string_view(&c, 1)); }
  // " <value>\n".
  void AddValueEnd(double value) {
    if (sizeof(buf_) - n_ < kMaxGoFloatChars + 2) Flush();
    buf_[n_++] = ' ';
    n_ += WriteGoFloat(value, buf_ + n_);
    buf_[n_++] = '\n';
  }
  void Flush() {
    out_->append(buf_, n_);
    n_ = 0;
  }

 private:
  std::string* out_;
  size_t n_ = 0;
  char buf_[512];
};

// "{before,after}", "{before}", "{after}" or nothing.
void AddLabels(Line& line, std::string_view before, std::string_view after) {
  if (before.empty() && after.empty()) return;  // prometheus_client writes no "{}"
  line.Add('{');
  line.Add(before);
  if (!before.empty() && !after.empty()) line.Add(',');
  line.Add(after);
  line.Add('}');
}

}  // namespace

void AppendSample(std::string_view name, std::string_view suffix, const LabelSets& labels, size_t i,
                  double value, std::string* out) {
  Line line(out);
  line.Add(name);
  line.Add(suffix);
  AddLabels(line, labels.before_le(i), labels.after_le(i));
  line.AddValueEnd(value);
}

void AppendValueEnd(double value, std::string* out) {
  char buf[kMaxGoFloatChars + 2];
  buf[0] = ' ';
  const size_t n = WriteGoFloat(value, buf + 1);
  buf[n + 1] = '\n';
  out->append(buf, n + 2);
}

void AppendHistogramSamples(std::string_view name, const FamilySpec& spec, const LabelSets& labels,
                            size_t i, const Child& child, std::string* out) {
  const size_t finite = labels.num_buckets() - 1;
  const std::string_view before = labels.before_le(i);
  const std::string_view after = labels.after_le(i);
  // prometheus_client accumulates the counts as floats (`acc += bucket.get()`); integer
  // counts below 2^53 sum exactly either way.
  double acc = 0.0;
  for (size_t b = 0; b < labels.num_buckets(); ++b) {
    if (b < finite) {
      acc += static_cast<double>(child.bucket_count(b));
    } else {
      // The +Inf bucket also takes anything counted against a +Inf bound the spec listed.
      for (size_t j = finite; j <= spec.buckets.size(); ++j) {
        acc += static_cast<double>(child.bucket_count(j));
      }
    }
    Line line(out);
    line.Add(name);
    line.Add("_bucket{");
    if (!before.empty()) {
      line.Add(before);
      line.Add(',');
    }
    line.Add("le=\"");
    line.Add(labels.le(b));
    line.Add('"');
    if (!after.empty()) {
      line.Add(',');
      line.Add(after);
    }
    line.Add('}');
    line.AddValueEnd(acc);
  }
  AppendSample(name, "_count", labels, i, acc, out);
  // prometheus_client: `if self._upper_bounds[0] >= 0` (a sum of negative observations
  // could go down, which a counter-like `_sum` must not); false for NaN too.
  const double first_bound = spec.buckets.empty() ? INFINITY : spec.buckets[0];
  if (first_bound >= 0) AppendSample(name, "_sum", labels, i, child.sum(), out);
}

void AppendSummarySamples(std::string_view name, const LabelSets& labels, size_t i,
                          const Child& child, std::string* out) {
  AppendSample(name, "_count", labels, i, static_cast<double>(child.bucket_count(0)), out);
  AppendSample(name, "_sum", labels, i, child.sum(), out);
}

}  // namespace vmetrics::internal
