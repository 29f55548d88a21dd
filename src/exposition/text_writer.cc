// SPDX-License-Identifier: Apache-2.0
// WriteText: Prometheus text format 0.0.4 as prometheus_client's generate_latest writes it
// (exposition.py; the same bytes from 0.16 through 0.25 for these names). Per family, in
// registration order:
//
//   # HELP <name>[_total] <help, `\` and newline escaped>
//   # TYPE <name>[_total] counter|gauge|histogram
//   one line per sample, children in creation order (histogram child: buckets, _count, _sum)
//   then, for counters and histograms with at least one child and _created enabled:
//   # HELP <name>_created <help>
//   # TYPE <name>_created gauge
//   <name>_created{<labels>} <creation time>, one per child
//
// prometheus_client treats `_created` as an OpenMetrics-only sample and moves it into a gauge
// family of its own after the family; a family without children has no such samples and
// therefore no `_created` block, only its HELP and TYPE lines.
//
// Budget (bench/README.md, render_bench): W3 (every family populated) renders in 0.07 ms for
// 1 engine, 0.29 ms for 8 and 2.11 ms for 64 (5.4 MB of text), 100× prometheus_client. A
// render copies each family's child list under its mutex and reads atomics, into a buffer
// that keeps its capacity; simpler code is welcome while it stays inside these figures.
#include <atomic>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "escape.h"
#include "sample_writer.h"
#include "vmetrics/exposition.h"

namespace vmetrics {
namespace {

void AppendHelpAndType(std::string_view name, std::string_view suffix, std::string_view help,
                       std::string_view type, std::string* out) {
  out->append("# HELP ");
  internal::AppendName(name, suffix, out);
  out->push_back(' ');
  internal::AppendEscapedHelpText(help, out);
  out->append("\n# TYPE ");
  internal::AppendName(name, suffix, out);
  out->push_back(' ');
  out->append(type);
  out->push_back('\n');
}

void AppendCreatedBlock(const FamilySpec& spec, std::span<const Child* const> children,
                        const internal::LabelSets& labels, std::string* out) {
  if (children.empty()) return;
  AppendHelpAndType(spec.name, "_created", spec.help, "gauge", out);
  for (size_t i = 0; i < children.size(); ++i) {
    internal::AppendSample(spec.name, "_created", labels, i, children[i]->created(), out);
  }
}

}  // namespace

void WriteText(const Registry& registry, const ExpositionOptions& options, std::string* out) {
  // Scrapes of one registry are about the same size: reserving what the last one wrote saves
  // the string's doubling (a fifth of a 5 MB render).
  static std::atomic<size_t> last_size{0};
  const size_t start = out->size();
  out->reserve(start + last_size.load(std::memory_order_relaxed) * 9 / 8);
  internal::LabelSets labels;
  for (const Family* family : registry.Families()) {
    const FamilySpec& spec = family->spec();
    const std::vector<const Child*> children = family->Children();
    labels.Reset(spec, children);
    switch (spec.type) {
      case MetricType::kCounter:
        // The text format names a counter family after its sample, `<name>_total`.
        AppendHelpAndType(spec.name, "_total", spec.help, "counter", out);
        for (size_t i = 0; i < children.size(); ++i) {
          internal::AppendSample(spec.name, "_total", labels, i, children[i]->value(), out);
        }
        if (options.created_series) AppendCreatedBlock(spec, children, labels, out);
        break;
      case MetricType::kGauge:
        AppendHelpAndType(spec.name, "", spec.help, "gauge", out);
        for (size_t i = 0; i < children.size(); ++i) {
          internal::AppendSample(spec.name, "", labels, i, children[i]->value(), out);
        }
        break;
      case MetricType::kHistogram:
        AppendHelpAndType(spec.name, "", spec.help, "histogram", out);
        for (size_t i = 0; i < children.size(); ++i) {
          internal::AppendHistogramSamples(spec.name, spec, labels, i, *children[i], out);
        }
        if (options.created_series) AppendCreatedBlock(spec, children, labels, out);
        break;
      case MetricType::kSummary:
        AppendHelpAndType(spec.name, "", spec.help, "summary", out);
        for (size_t i = 0; i < children.size(); ++i) {
          internal::AppendSummarySamples(spec.name, labels, i, *children[i], out);
        }
        if (options.created_series) AppendCreatedBlock(spec, children, labels, out);
        break;
    }
  }
  last_size.store(out->size() - start, std::memory_order_relaxed);
}

}  // namespace vmetrics
