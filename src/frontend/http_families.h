// SPDX-License-Identifier: Apache-2.0
// File: http_families.h (internal to src/frontend)
//
// HttpFamilies: the HTTP request families vLLM's API server exports, as
// prometheus-fastapi-instrumentator's default instrumentation sets them up in the app that
// vllm/entrypoints/serve/instrumentator/metrics.py (vllm-project/vllm at 6adad087)
// instruments: http_requests_total, http_request_size_bytes, http_response_size_bytes,
// http_request_duration_highr_seconds and http_request_duration_seconds, with the library's
// names, HELP texts, label names, buckets and update rules (docs/design.md §2.6). `serve`
// registers them when it binds its HTTP server and records every request the server reports
// (HttpHandlers::observe).
//
// Record applies what the middleware decides per request:
//   - excluded: the handler (the route's path, or the request's path when no route matched)
//     contains one of vLLM's excluded handlers: /metrics, /health, /load, /ping, /version,
//     /server_info (the library searches each as a regular expression; none holds a special
//     character);
//   - handler label: the route's path, or "none" when no route matched (404, 405);
//   - status label: the first digit of the status and "xx";
//   - the request's and the reply's Content-Length (0 without one: a stream) into the two
//     summaries; the duration into both histograms.
// Children are created on first use, in the order prometheus_client creates them, so the
// rendering is the library's. A labelled family holds at most kMaxChildren children (the
// method of an unrouted request is the client's to choose); a request that would need one
// more is not recorded.
//
// Thread safety: Record may be called from any thread.
//
// Example:
//   Registry registry;
//   frontend::HttpFamilies http(&registry);
//   http.Record({.method = "POST", .path = "/v1/completions", .route_path = "/v1/completions",
//                .status = 200, .request_content_length = 57, .response_content_length = 310,
//                .duration_seconds = 0.25});
#ifndef VMETRICS_FRONTEND_HTTP_FAMILIES_H_
#define VMETRICS_FRONTEND_HTTP_FAMILIES_H_

#include <cstddef>
#include <string_view>

#include "vmetrics/http_server.h"
#include "vmetrics/registry.h"

namespace vmetrics::frontend {

class HttpFamilies {
 public:
  // Children a labelled family may hold: far more than the routes' label sets, few enough
  // that a client inventing methods on unknown paths cannot grow a scrape much.
  static constexpr size_t kMaxChildren = 512;

  // Registers the five families in the library's order (their rows in
  // include/vmetrics/internal/declared_families.inc, render group 1: serve registers them
  // before its own families, so they render after every vllm: family, before vmetrics').
  explicit HttpFamilies(Registry* registry);

  // Whether vLLM's instrumentator skips a request whose handler (route path, or request path
  // when no route matched) is `handler`.
  static bool Excluded(std::string_view handler);

  // Records one request (see above).
  void Record(const HttpRequestRecord& request) const;

 private:
  CounterFamily requests_;
  SummaryFamily request_size_;
  SummaryFamily response_size_;
  Histogram* duration_highr_ = nullptr;
  HistogramFamily duration_;
};

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_HTTP_FAMILIES_H_
