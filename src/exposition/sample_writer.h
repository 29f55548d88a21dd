// SPDX-License-Identifier: Apache-2.0
// File: sample_writer.h
//
// What the text 0.0.4 and OpenMetrics writers share: the sample line
// `<name><suffix>{<labels>} <value>\n`, each family's label sets rendered once per scrape,
// and a histogram child's `_bucket`/`_count`/`_sum` lines. The writers differ only in HELP
// escaping, family names and where `_created` goes (text_writer.cc, openmetrics_writer.cc).
//
// Label order, as prometheus_client writes every sample (`sorted(labels.items())`): sorted by
// label name, byte-wise (names are ASCII), with a histogram's `le` sorted in among the others
// rather than appended, so `engine`, `le`, `model_name`. Values are escaped with
// AppendEscapedLabelValue.
//
// Thread safety: a LabelSets is scratch space for one writer call; use one per thread.
//
// Example:
//   internal::LabelSets sets;
//   sets.Reset(family.spec(), family.Children());
//   std::string out;
//   sets.AppendWithLe(0, "0.5", &out);  // {engine="0",le="0.5",model_name="m"}
#ifndef VMETRICS_SRC_EXPOSITION_SAMPLE_WRITER_H_
#define VMETRICS_SRC_EXPOSITION_SAMPLE_WRITER_H_

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/registry.h"

namespace vmetrics::internal {

// The rendered label sets of one family's children, plus its histogram `le` values.
class LabelSets {
 public:
  // Renders the labels of `children` (which must belong to the family described by `spec`)
  // and, for histograms, formats the bucket bounds. Reuses the previous buffers.
  void Reset(const FamilySpec& spec, std::span<const Child* const> children);

  // Appends "{<labels>}" of child `i`, or nothing when the family has no labels.
  void AppendPlain(size_t i, std::string* out) const;
  // Appends "{<labels with le=\"<le>\" in its sorted place>}" of child `i`.
  void AppendWithLe(size_t i, std::string_view le, std::string* out) const;
  // Child i's label text in two parts: the names sorting before "le", those after.
  std::string_view before_le(size_t i) const {
    return std::string_view(text_).substr(spans_[i].begin, spans_[i].before_end - spans_[i].begin);
  }
  std::string_view after_le(size_t i) const {
    return std::string_view(text_).substr(spans_[i].before_end,
                                          spans_[i].end - spans_[i].before_end);
  }

  // Histograms: the `le` text of bucket b (FormatGoFloat of the bound; "+Inf" for the last).
  size_t num_buckets() const { return le_ends_.size(); }
  std::string_view le(size_t b) const;

 private:
  // Child i's labels are text_[begin, before_end) (names sorting before "le") followed by
  // text_[before_end, end) (names after "le"), each a comma-joined `name="value"` list.
  struct Span {
    size_t begin;
    size_t before_end;
    size_t end;
  };
  std::vector<size_t> order_;  // label indices sorted by name
  std::string text_;
  std::vector<Span> spans_;
  std::string le_text_;
  std::vector<size_t> le_ends_;
};

// Appends "<name><suffix>".
inline void AppendName(std::string_view name, std::string_view suffix, std::string* out) {
  out->append(name);
  out->append(suffix);
}

// Appends " <FormatGoFloat(value)>\n", the end of every sample line (we never write
// timestamps, as prometheus_client writes none for its own metrics).
void AppendValueEnd(double value, std::string* out);

// Appends the whole sample line "<name><suffix>{<labels of child i>} <value>\n" (no braces
// without labels) with one append to `out`: a line is built in a stack buffer first, since
// per-piece appends of a few bytes each were most of a scrape's time.
void AppendSample(std::string_view name, std::string_view suffix, const LabelSets& labels, size_t i,
                  double value, std::string* out);

// Appends child `i`'s histogram samples in prometheus_client's order: every `_bucket`
// (cumulative, ascending `le`, ending at "+Inf"), `_count`, then `_sum` unless the first
// bucket bound is negative (prometheus_client drops `_sum` then, since it could decrease).
void AppendHistogramSamples(std::string_view name, const FamilySpec& spec, const LabelSets& labels,
                            size_t i, const Child& child, std::string* out);

// Appends child `i`'s summary samples in prometheus_client's order (a Summary without
// quantiles): `_count`, then `_sum`.
void AppendSummarySamples(std::string_view name, const LabelSets& labels, size_t i,
                          const Child& child, std::string* out);

}  // namespace vmetrics::internal

#endif  // VMETRICS_SRC_EXPOSITION_SAMPLE_WRITER_H_
