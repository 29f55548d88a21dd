// SPDX-License-Identifier: Apache-2.0
// WriteOpenMetrics: OpenMetrics 1.0.0 as prometheus_client's openmetrics generate_latest
// writes it (openmetrics/exposition.py, 0.16). Per family, in registration order:
//
//   # HELP <name> <help, `\`, newline and `"` escaped>
//   # TYPE <name> counter|gauge|histogram
//   per child, in creation order:
//     counter:   <name>_total{...} v, then <name>_created{...} t
//     gauge:     <name>{...} v
//     histogram: _bucket lines, _count, _sum, then <name>_created{...} t
//
// and "# EOF\n" after the last family. The family name is the one without `_total`; the
// `_created` samples stay inline, right after their child's other samples. No `# UNIT`
// lines: no family here has a unit.
//
// Budget (bench/README.md, render_bench): W3 renders in 0.06 / 0.29 / 2.12 ms for 1 / 8 / 64
// engines; as the text writer's, a simpler version must stay inside these figures.
//
// Deliberate deviation: names keep their `vllm:` colons. prometheus_client 0.23+ rewrites
// them to underscores in OpenMetrics samples (client_python#1177), which breaks every
// dashboard; 0.16-0.22 keep them, and so do we.
#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "escape.h"
#include "sample_writer.h"
#include "vmetrics/exposition.h"

namespace vmetrics {
namespace {

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kSummary:
      return "summary";
  }
  return "unknown";
}

}  // namespace

void WriteOpenMetrics(const Registry& registry, const ExpositionOptions& options,
                      std::string* out) {
  // As WriteText: reserve what the last rendering wrote.
  static std::atomic<size_t> last_size{0};
  const size_t start = out->size();
  out->reserve(start + last_size.load(std::memory_order_relaxed) * 9 / 8);
  internal::LabelSets labels;
  for (const Family* family : registry.Families()) {
    const FamilySpec& spec = family->spec();
    const std::vector<const Child*> children = family->Children();
    labels.Reset(spec, children);

    out->append("# HELP ");
    out->append(spec.name);
    out->push_back(' ');
    internal::AppendEscapedHelpOpenMetrics(spec.help, out);
    out->append("\n# TYPE ");
    out->append(spec.name);
    out->push_back(' ');
    out->append(TypeName(spec.type));
    out->push_back('\n');

    for (size_t i = 0; i < children.size(); ++i) {
      const Child& child = *children[i];
      switch (spec.type) {
        case MetricType::kCounter:
          internal::AppendSample(spec.name, "_total", labels, i, child.value(), out);
          break;
        case MetricType::kGauge:
          internal::AppendSample(spec.name, "", labels, i, child.value(), out);
          break;
        case MetricType::kHistogram:
          internal::AppendHistogramSamples(spec.name, spec, labels, i, child, out);
          break;
        case MetricType::kSummary:
          internal::AppendSummarySamples(spec.name, labels, i, child, out);
          break;
      }
      if (options.created_series && spec.type != MetricType::kGauge) {
        internal::AppendSample(spec.name, "_created", labels, i, child.created(), out);
      }
    }
  }
  out->append("# EOF\n");
  last_size.store(out->size() - start, std::memory_order_relaxed);
}

}  // namespace vmetrics
