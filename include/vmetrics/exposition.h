// SPDX-License-Identifier: Apache-2.0
// File: exposition.h
//
// Writers for the two exposition formats prometheus_client 0.22 produces, and content
// negotiation between them. Both writers walk a Registry in registration order and children
// in creation order, sort labels by name (with `le` among them) and format every number with
// FormatGoFloat (prometheus_client's floatToGoString).
//
// Thread safety: writers read atomics and copy child lists; they may run concurrently with
// recording and with each other.
#ifndef VMETRICS_EXPOSITION_H_
#define VMETRICS_EXPOSITION_H_

#include <string>
#include <string_view>

#include "vmetrics/registry.h"

namespace vmetrics {

inline constexpr std::string_view kContentTypeText004 = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr std::string_view kContentTypeOpenMetrics100 =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

enum class ExpositionFormat : uint8_t { kText, kOpenMetrics };

struct ExpositionOptions {
  bool created_series = true;  // emit `_created` (off: --disable-created-series)
};

// FormatGoFloat
//
// prometheus_client's floatToGoString: "+Inf", "-Inf", "NaN"; otherwise Python's repr(float)
// (shortest round trip), switched to Go's exponent form for positive values with more than six
// digits before the point.
//
// Example:
//   EXPECT_EQ(FormatGoFloat(1e6), "1e+06");
//   EXPECT_EQ(FormatGoFloat(0.1 + 0.2), "0.30000000000000004");
//   EXPECT_EQ(FormatGoFloat(3), "3.0");
std::string FormatGoFloat(double v);
// Appends FormatGoFloat(v) to `out` without a temporary string.
void AppendGoFloat(double v, std::string* out);

// WriteText: Prometheus text format 0.0.4, byte-identical to prometheus_client's
// generate_latest for the same registry. Appends to `out`.
void WriteText(const Registry& registry, const ExpositionOptions& options, std::string* out);

// WriteOpenMetrics: OpenMetrics 1.0.0 as prometheus_client's openmetrics generate_latest writes
// it, ending with "# EOF\n". Deliberate deviation: metric names keep their `vllm:` colons
// (prometheus_client 0.23+ rewrites them to underscores in samples, client_python#1177).
void WriteOpenMetrics(const Registry& registry, const ExpositionOptions& options, std::string* out);

// What to send for a scrape, chosen from the request headers.
struct Negotiated {
  ExpositionFormat format = ExpositionFormat::kText;
  bool gzip = false;
  std::string_view content_type = kContentTypeText004;
};

// Negotiate
//
// OpenMetrics when `accept` names application/openmetrics-text (with q > 0), text 0.0.4
// otherwise; gzip when `accept_encoding` lists gzip (with q > 0). Mirrors prometheus_client's
// choose_encoder and gzip_accepted.
//
// Example:
//   EXPECT_EQ(Negotiate("application/openmetrics-text;version=1.0.0", "gzip").format,
//             ExpositionFormat::kOpenMetrics);
Negotiated Negotiate(std::string_view accept, std::string_view accept_encoding);

// Gzip-compresses `in` (zlib, gzip wrapper) into `out`. Returns false on zlib failure.
bool GzipCompress(std::string_view in, std::string* out);

}  // namespace vmetrics

#endif  // VMETRICS_EXPOSITION_H_
