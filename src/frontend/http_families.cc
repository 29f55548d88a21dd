// SPDX-License-Identifier: Apache-2.0
#include "http_families.h"

#include <array>
#include <span>
#include <string>

#include "vmetrics/internal/declared_families.h"

namespace vmetrics::frontend {
namespace {

// The handlers vLLM excludes (vllm/entrypoints/serve/instrumentator/metrics.py at 6adad087).
constexpr std::array<std::string_view, 6> kExcludedHandlers = {
    "/metrics", "/health", "/load", "/ping", "/version", "/server_info"};

// "2xx" for 200 to 299 and so on: the status's first digit, as the middleware groups it.
std::string_view StatusGroup(unsigned status) {
  static constexpr std::array<std::string_view, 10> kGroups = {"0xx", "1xx", "2xx", "3xx", "4xx",
                                                               "5xx", "6xx", "7xx", "8xx", "9xx"};
  while (status >= 10) status /= 10;
  return kGroups[status];
}

}  // namespace

HttpFamilies::HttpFamilies(Registry* registry) {
  using internal::FamilyId;
  using internal::RegisterFamily;
  requests_ = RegisterFamily<FamilyId::kHttpRequests>(registry);
  request_size_ = RegisterFamily<FamilyId::kHttpRequestSizeBytes>(registry);
  response_size_ = RegisterFamily<FamilyId::kHttpResponseSizeBytes>(registry);
  const HistogramFamily highr =
      RegisterFamily<FamilyId::kHttpRequestDurationHighrSeconds>(registry);
  // prometheus_client creates an unlabelled metric's one child with the metric, so it renders
  // (zeros, and its _created) before any request.
  duration_highr_ = highr.GetOrCreate(std::span<const std::string_view>());
  duration_ = RegisterFamily<FamilyId::kHttpRequestDurationSeconds>(registry);
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
