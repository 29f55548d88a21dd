// SPDX-License-Identifier: Apache-2.0
#include <zlib.h>

#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "vmetrics/exposition.h"

namespace vmetrics {
namespace {

// What Prometheus 2.x sends when scraping (scrape.go, acceptHeader for OpenMetrics).
constexpr std::string_view kPrometheusAccept =
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

TEST(Negotiate, PrometheusScrapeGetsOpenMetrics) {
  const Negotiated n = Negotiate(kPrometheusAccept, "gzip");
  EXPECT_EQ(n.format, ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(n.content_type, kContentTypeOpenMetrics100);
  EXPECT_EQ(n.content_type, "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_TRUE(n.gzip);
}

TEST(Negotiate, OpenMetricsAnywhereInTheList) {
  EXPECT_EQ(Negotiate("text/plain, application/openmetrics-text ; version=1.0.0", "").format,
            ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(Negotiate("application/openmetrics-text", "").format, ExpositionFormat::kOpenMetrics);
}

TEST(Negotiate, EverythingElseGetsText004) {
  for (const std::string_view accept :
       {"", "*/*", "text/plain", "text/plain;version=0.0.4", "application/json",
        "application/openmetrics-textual", "application/openmetrics", ",,;"}) {
    const Negotiated n = Negotiate(accept, "");
    EXPECT_EQ(n.format, ExpositionFormat::kText) << accept;
    EXPECT_EQ(n.content_type, "text/plain; version=0.0.4; charset=utf-8") << accept;
    EXPECT_FALSE(n.gzip) << accept;
  }
}

TEST(Negotiate, MediaTypeComparisonIsCaseSensitiveLikePython) {
  // choose_encoder compares with ==; we do not widen what Python accepts.
  EXPECT_EQ(Negotiate("Application/OpenMetrics-Text", "").format, ExpositionFormat::kText);
}

TEST(Negotiate, GzipVariants) {
  EXPECT_TRUE(Negotiate("", "gzip").gzip);
  EXPECT_TRUE(Negotiate("", "GZIP").gzip);
  EXPECT_TRUE(Negotiate("", "deflate, gzip;q=0.5, br").gzip);
  EXPECT_TRUE(Negotiate("", " gzip ; q=1.0").gzip);
  EXPECT_TRUE(Negotiate("", "gzip;q=0.001").gzip);
  EXPECT_FALSE(Negotiate("", "").gzip);
  EXPECT_FALSE(Negotiate("", "identity").gzip);
  EXPECT_FALSE(Negotiate("", "deflate, br").gzip);
  EXPECT_FALSE(Negotiate("", "x-gzip").gzip);
  // gzip_accepted does not treat "*" as gzip; neither do we.
  EXPECT_FALSE(Negotiate("", "*").gzip);
}

TEST(Negotiate, ZeroQualityRefuses) {
  // Deliberate deviation from prometheus_client, which ignores q: q=0 means "not acceptable"
  // (RFC 9110 §12.4.2), so we do not send it.
  EXPECT_FALSE(Negotiate("", "gzip;q=0").gzip);
  EXPECT_FALSE(Negotiate("", "gzip; Q=0.000").gzip);
  EXPECT_FALSE(Negotiate("", "gzip;q=0.").gzip);
  EXPECT_TRUE(Negotiate("", "gzip;q=0, gzip;q=0.5").gzip);
  EXPECT_EQ(Negotiate("application/openmetrics-text;q=0,text/plain", "").format,
            ExpositionFormat::kText);
  // A malformed q counts as accepted, as Python accepts everything.
  EXPECT_TRUE(Negotiate("", "gzip;q=zero").gzip);
}

std::string Gunzip(std::string_view in) {
  z_stream s{};
  if (inflateInit2(&s, 15 + 16) != Z_OK) return "<inflateInit2 failed>";
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  s.avail_in = static_cast<uInt>(in.size());
  std::string out;
  int rc = Z_OK;
  while (rc == Z_OK) {
    char buf[4096];
    s.next_out = reinterpret_cast<Bytef*>(buf);
    s.avail_out = sizeof(buf);
    rc = inflate(&s, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - s.avail_out);
  }
  inflateEnd(&s);
  if (rc != Z_STREAM_END) return "<inflate failed: " + std::to_string(rc) + ">";
  if (s.avail_in != 0) return "<trailing bytes>";
  return out;
}

TEST(GzipCompress, RoundTripsThroughInflate) {
  std::string text;
  for (int i = 0; i < 5000; ++i) {
    text += "vllm:prompt_tokens_total{engine=\"" + std::to_string(i % 64) +
            "\",model_name=\"m\"} " + std::to_string(i) + ".0\n";
  }
  std::string gz;
  ASSERT_TRUE(GzipCompress(text, &gz));
  // A gzip member: magic 1f 8b, method 8 (deflate).
  ASSERT_GE(gz.size(), 18u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_EQ(gz[2], 8);
  EXPECT_LT(gz.size(), text.size() / 4);
  EXPECT_EQ(Gunzip(gz), text);
}

TEST(GzipCompress, EmptyInputAndAppending) {
  std::string gz = "prefix";
  ASSERT_TRUE(GzipCompress("", &gz));
  ASSERT_GT(gz.size(), 6u);
  EXPECT_EQ(gz.substr(0, 6), "prefix");
  EXPECT_EQ(Gunzip(std::string_view(gz).substr(6)), "");
}

}  // namespace
}  // namespace vmetrics
