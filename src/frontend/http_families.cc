// SPDX-License-Identifier: Apache-2.0
#include "http_families.h"

#include <array>
#include <string>

namespace vmetrics::frontend {
namespace {

// The handlers vLLM excludes (vllm/entrypoints/serve/instrumentator/metrics.py at 6adad087).
constexpr std::array<std::string_view, 6> kExcludedHandlers = {
    "/metrics", "/health", "/load", "/ping", "/version", "/server_info"};

// prometheus-fastapi-instrumentator's defaults (metrics.default() and
// PrometheusFastApiInstrumentator.instrument(), trallnag/prometheus-fastapi-instrumentator
// at v8.0.2, docs/design.md §2.6).
const std::vector<double> kHighrBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5,
                                           0.75, 1,     1.5,  2,     2.5, 3,    3.5,
                                           4,    4.5,   5,    7.5,   10,  30,   60};
const std::vector<double> kLowrBuckets = {0.1, 0.5, 1};

// "2xx" for 200 to 299 and so on: the status's first digit, as the middleware groups it.
std::string_view StatusGroup(unsigned status) {
  static constexpr std::array<std::string_view, 10> kGroups = {"0xx", "1xx", "2xx", "3xx", "4xx",
                                                               "5xx", "6xx", "7xx", "8xx", "9xx"};
  while (status >= 10) status /= 10;
  return kGroups[status];
}

}  // namespace

HttpFamilies::HttpFamilies(Registry* registry, int render_group) {
  requests_ =
      CounterFamily(&registry->AddFamily({"http_requests_total",
                                          MetricType::kCounter,
                                          "Total number of requests by method, status and handler.",
                                          {"method", "status", "handler"},
                                          {},
                                          render_group}));
  request_size_ = SummaryFamily(&registry->AddFamily(
      {"http_request_size_bytes",
       MetricType::kSummary,
       "Content length of incoming requests by handler. Only value of header is respected. "
       "Otherwise ignored. No percentile calculated. ",
       {"handler"},
       {},
       render_group}));
  response_size_ = SummaryFamily(&registry->AddFamily(
      {"http_response_size_bytes",
       MetricType::kSummary,
       "Content length of outgoing responses by handler. Only value of header is respected. "
       "Otherwise ignored. No percentile calculated. ",
       {"handler"},
       {},
       render_group}));
  HistogramFamily highr(&registry->AddFamily(
      {"http_request_duration_highr_seconds",
       MetricType::kHistogram,
       "Latency with many buckets but no API specific labels. Made for more accurate "
       "percentile calculations. ",
       {},
       kHighrBuckets,
       render_group}));
  // prometheus_client creates an unlabelled metric's one child with the metric, so it renders
  // (zeros, and its _created) before any request.
  duration_highr_ = highr.GetOrCreate(std::span<const std::string_view>());
  duration_ = HistogramFamily(&registry->AddFamily(
      {"http_request_duration_seconds",
       MetricType::kHistogram,
       "Latency with only few buckets by handler. Made to be only used if aggregation by "
       "handler is important. ",
       {"method", "handler"},
       kLowrBuckets,
       render_group}));
}

bool HttpFamilies::Excluded(std::string_view handler) {
  for (std::string_view excluded : kExcludedHandlers) {
    if (handler.find(excluded) != std::string_view::npos) return true;
  }
  return false;
}

void HttpFamilies::Record(const HttpRequestRecord& request) const {
  const bool templated = !request.route_path.empty();
  // The middleware checks the template, or the path as sent when there is none, before it
  // groups untemplated requests under "none".
  if (Excluded(templated ? request.route_path : request.path)) return;
  const std::string_view handler = templated ? request.route_path : std::string_view("none");
  const std::string_view status = StatusGroup(request.status);

  // In the instrumentation's order, so children are created in prometheus_client's order.
  const std::string_view total_labels[] = {request.method, status, handler};
  Counter* total = requests_.GetOrCreateBounded(total_labels, kMaxChildren);
  const std::string_view handler_label[] = {handler};
  Summary* in = request_size_.GetOrCreateBounded(handler_label, kMaxChildren);
  Summary* out = response_size_.GetOrCreateBounded(handler_label, kMaxChildren);
  const std::string_view duration_labels[] = {request.method, handler};
  Histogram* duration = duration_.GetOrCreateBounded(duration_labels, kMaxChildren);
  if (total == nullptr || in == nullptr || out == nullptr || duration == nullptr) return;
  total->Add(1);
  in->Observe(static_cast<double>(request.request_content_length));
  out->Observe(static_cast<double>(request.response_content_length));
  duration_highr_->Observe(request.duration_seconds);
  duration->Observe(request.duration_seconds);
}

}  // namespace vmetrics::frontend
