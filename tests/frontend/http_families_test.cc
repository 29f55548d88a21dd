// SPDX-License-Identifier: Apache-2.0
// frontend::HttpFamilies: prometheus-fastapi-instrumentator's http_* families as vLLM's API
// server exports them. Against a golden rendered by prometheus_client from the same requests
// (tools/gen_http_goldens.py), and fed by a real HttpServer's request observations.
#include "http_families.h"

#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "http_test_client.h"
#include "vmetrics/exposition.h"
#include "vmetrics/http_server.h"
#include "vmetrics/registry.h"

namespace vmetrics::frontend {
namespace {

std::string ReadGolden(const std::string& name) {
  std::ifstream in(std::string(VMETRICS_GOLDEN_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> out;
  size_t begin = 0;
  for (size_t tab = line.find('\t'); tab != std::string::npos; tab = line.find('\t', begin)) {
    out.push_back(line.substr(begin, tab - begin));
    begin = tab + 1;
  }
  out.push_back(line.substr(begin));
  return out;
}

// The generator's requests, recorded in its order.
void RecordGoldenRequests(const HttpFamilies& families) {
  std::istringstream lines(ReadGolden("inputs/http_requests.tsv"));
  std::string line;
  int recorded = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> f = SplitTabs(line);
    ASSERT_EQ(f.size(), 7u) << line;
    HttpRequestRecord r;
    r.method = f[0];
    r.path = f[1];
    r.route_path = f[2] == "-" ? std::string_view() : std::string_view(f[2]);
    r.status = static_cast<unsigned>(std::stoul(f[3]));
    r.request_content_length = std::stoull(f[4]);
    r.response_content_length = std::stoull(f[5]);
    r.duration_seconds = std::stod(f[6]);
    families.Record(r);
    ++recorded;
  }
  EXPECT_GT(recorded, 10);
}

TEST(HttpFamilies, TextIsPrometheusClientsForTheSameRequests) {
  FixedClock clock(123.456);
  Registry registry(&clock);
  HttpFamilies families(&registry);
  RecordGoldenRequests(families);
  std::string out;
  WriteText(registry, ExpositionOptions{}, &out);
  EXPECT_EQ(out, ReadGolden("http_families.txt"));
}

TEST(HttpFamilies, OpenMetricsIsPrometheusClientsForTheSameRequests) {
  FixedClock clock(123.456);
  Registry registry(&clock);
  HttpFamilies families(&registry);
  RecordGoldenRequests(families);
  std::string out;
  WriteOpenMetrics(registry, ExpositionOptions{}, &out);
  EXPECT_EQ(out, ReadGolden("http_families.om"));
}

TEST(HttpFamilies, ExclusionIsASearchOfTheHandler) {
  EXPECT_TRUE(HttpFamilies::Excluded("/metrics"));
  EXPECT_TRUE(HttpFamilies::Excluded("/metrics/"));
  EXPECT_TRUE(HttpFamilies::Excluded("/v1/load_lora_adapter"));  // holds "/load"
  EXPECT_TRUE(HttpFamilies::Excluded("/x/health"));
  EXPECT_TRUE(HttpFamilies::Excluded("/server_info"));
  EXPECT_FALSE(HttpFamilies::Excluded("/v1/completions"));
  EXPECT_FALSE(HttpFamilies::Excluded("/inference/v1/generate"));
  EXPECT_FALSE(HttpFamilies::Excluded("/abort_requests"));
  EXPECT_FALSE(HttpFamilies::Excluded("/v1/models"));
  EXPECT_FALSE(HttpFamilies::Excluded("none"));
}

TEST(HttpFamilies, LabelSetsAreBounded) {
  FixedClock clock(1);
  Registry registry(&clock);
  HttpFamilies families(&registry);
  std::vector<std::string> methods;
  for (size_t i = 0; i < HttpFamilies::kMaxChildren + 10; ++i)
    methods.push_back("M" + std::to_string(i));
  for (const std::string& m : methods) {
    families.Record({.method = m, .path = "/x", .route_path = {}, .status = 404});
  }
  EXPECT_EQ(registry.Find("http_requests")->Children().size(), HttpFamilies::kMaxChildren);
  EXPECT_EQ(registry.Find("http_request_duration_seconds")->Children().size(),
            HttpFamilies::kMaxChildren);
  // The label sets it has keep counting.
  families.Record({.method = "M0", .path = "/x", .route_path = {}, .status = 404});
  EXPECT_EQ(registry.Find("http_requests")->Children()[0]->value(), 2.0);
}

// Duration values depend on the machine: in the duration families' lines only the +Inf bucket
// and _count (how many requests) are kept; the other values become "*".
std::string MaskDurations(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) {
    const bool duration = line.starts_with("http_request_duration") &&
                          !line.starts_with("http_request_duration_highr_seconds_created") &&
                          line.find("_created") == std::string::npos;
    const bool kept =
        line.find("le=\"+Inf\"") != std::string::npos || line.find("_count") != std::string::npos;
    if (duration && !kept) line = line.substr(0, line.rfind(' ')) + " *";
    out += line + "\n";
  }
  return out;
}

// A server whose observations feed HttpFamilies; Send waits until the request's observation
// is recorded (it lands after the reply is sent), so children are created in request order.
class ObservedServer {
 public:
  ObservedServer() : clock_(123.456), registry_(&clock_), families_(&registry_) {
    HttpHandlers handlers;
    handlers.render_metrics = [this](ExpositionFormat) {
      std::string out;
      WriteText(registry_, ExpositionOptions{}, &out);
      return out;
    };
    handlers.observe = [this](const HttpRequestRecord& r) {
      families_.Record(r);
      std::lock_guard<std::mutex> lock(mu_);
      ++observed_;
      cv_.notify_all();
    };
    auto reply = [](unsigned status, const std::string& body) {
      return [status, body](const HttpRequest&, const std::shared_ptr<HttpExchange>& ex) {
        ex->Reply(status, "application/json", body);
      };
    };
    handlers.routes.push_back(
        {.method = "POST", .path = "/v1/completions", .handler = reply(200, R"({"ok":1})")});
    handlers.routes.push_back({.method = "POST", .path = "/bad", .handler = reply(400, "{}")});
    handlers.routes.push_back({.method = "GET", .path = "/ping", .handler = reply(200, "{}")});
    handlers.routes.push_back(
        {.method = "POST",
         .path = "/stream",
         .handler = [](const HttpRequest&, const std::shared_ptr<HttpExchange>& ex) {
           ex->StartStream("text/event-stream");
           ex->Write("data: 1\n\n");
           ex->Write("data: [DONE]\n\n");
           ex->End();
         }});
    HttpServerOptions options;
    options.port = 0;
    Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, std::move(handlers));
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (server.ok()) server_ = std::move(*server);
  }

  // Sends `raw`, returns the status, and waits for `observations` to have been made in all.
  int Send(const std::string& raw, int observations) {
    const http_test::HttpResponse r = http_test::Exchange(server_->port(), raw);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return observed_ >= observations; });
    return r.status;
  }
  std::string Render() const {
    std::string out;
    WriteText(registry_, ExpositionOptions{}, &out);
    return out;
  }

 private:
  FixedClock clock_;
  Registry registry_;
  HttpFamilies families_;
  std::mutex mu_;
  std::condition_variable cv_;
  int observed_ = 0;
  std::unique_ptr<HttpServer> server_;
};

std::string Post(std::string_view target, std::string_view body) {
  return "POST " + std::string(target) +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + std::string(body);
}

TEST(HttpFamilies, ServerRequestsAreRecordedAsTheInstrumentatorDoes) {
  ObservedServer server;
  EXPECT_EQ(server.Send(Post("/v1/completions", "hello"), 1), 200);
  EXPECT_EQ(server.Send(Post("/bad", "abc"), 2), 400);
  EXPECT_EQ(server.Send(http_test::Request("GET", "/ping"), 3), 200);     // excluded
  EXPECT_EQ(server.Send(http_test::Request("GET", "/nope"), 4), 404);     // "none"
  EXPECT_EQ(server.Send(http_test::Request("GET", "/metrics"), 5), 200);  // excluded
  EXPECT_EQ(server.Send(Post("/stream", ""), 6), 200);  // chunked: no Content-Length
  EXPECT_EQ(server.Send(http_test::Request("GET", "/v1/completions"), 7), 405);      // "none"
  EXPECT_EQ(server.Send(http_test::Request("GET", "/metrics/health?x=1"), 8), 404);  // excluded
  const std::string expected =
      R"(# HELP http_requests_total Total number of requests by method, status and handler.
# TYPE http_requests_total counter
http_requests_total{handler="/v1/completions",method="POST",status="2xx"} 1.0
http_requests_total{handler="/bad",method="POST",status="4xx"} 1.0
http_requests_total{handler="none",method="GET",status="4xx"} 2.0
http_requests_total{handler="/stream",method="POST",status="2xx"} 1.0
# HELP http_requests_created Total number of requests by method, status and handler.
# TYPE http_requests_created gauge
http_requests_created{handler="/v1/completions",method="POST",status="2xx"} 123.456
http_requests_created{handler="/bad",method="POST",status="4xx"} 123.456
http_requests_created{handler="none",method="GET",status="4xx"} 123.456
http_requests_created{handler="/stream",method="POST",status="2xx"} 123.456
# HELP http_request_size_bytes Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. 
# TYPE http_request_size_bytes summary
http_request_size_bytes_count{handler="/v1/completions"} 1.0
http_request_size_bytes_sum{handler="/v1/completions"} 5.0
http_request_size_bytes_count{handler="/bad"} 1.0
http_request_size_bytes_sum{handler="/bad"} 3.0
http_request_size_bytes_count{handler="none"} 2.0
http_request_size_bytes_sum{handler="none"} 0.0
http_request_size_bytes_count{handler="/stream"} 1.0
http_request_size_bytes_sum{handler="/stream"} 0.0
# HELP http_request_size_bytes_created Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. 
# TYPE http_request_size_bytes_created gauge
http_request_size_bytes_created{handler="/v1/completions"} 123.456
http_request_size_bytes_created{handler="/bad"} 123.456
http_request_size_bytes_created{handler="none"} 123.456
http_request_size_bytes_created{handler="/stream"} 123.456
# HELP http_response_size_bytes Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. 
# TYPE http_response_size_bytes summary
http_response_size_bytes_count{handler="/v1/completions"} 1.0
http_response_size_bytes_sum{handler="/v1/completions"} 8.0
http_response_size_bytes_count{handler="/bad"} 1.0
http_response_size_bytes_sum{handler="/bad"} 2.0
http_response_size_bytes_count{handler="none"} 2.0
http_response_size_bytes_sum{handler="none"} 53.0
http_response_size_bytes_count{handler="/stream"} 1.0
http_response_size_bytes_sum{handler="/stream"} 0.0
# HELP http_response_size_bytes_created Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. 
# TYPE http_response_size_bytes_created gauge
http_response_size_bytes_created{handler="/v1/completions"} 123.456
http_response_size_bytes_created{handler="/bad"} 123.456
http_response_size_bytes_created{handler="none"} 123.456
http_response_size_bytes_created{handler="/stream"} 123.456
# HELP http_request_duration_highr_seconds Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. 
# TYPE http_request_duration_highr_seconds histogram
http_request_duration_highr_seconds_bucket{le="0.01"} *
http_request_duration_highr_seconds_bucket{le="0.025"} *
http_request_duration_highr_seconds_bucket{le="0.05"} *
http_request_duration_highr_seconds_bucket{le="0.075"} *
http_request_duration_highr_seconds_bucket{le="0.1"} *
http_request_duration_highr_seconds_bucket{le="0.25"} *
http_request_duration_highr_seconds_bucket{le="0.5"} *
http_request_duration_highr_seconds_bucket{le="0.75"} *
http_request_duration_highr_seconds_bucket{le="1.0"} *
http_request_duration_highr_seconds_bucket{le="1.5"} *
http_request_duration_highr_seconds_bucket{le="2.0"} *
http_request_duration_highr_seconds_bucket{le="2.5"} *
http_request_duration_highr_seconds_bucket{le="3.0"} *
http_request_duration_highr_seconds_bucket{le="3.5"} *
http_request_duration_highr_seconds_bucket{le="4.0"} *
http_request_duration_highr_seconds_bucket{le="4.5"} *
http_request_duration_highr_seconds_bucket{le="5.0"} *
http_request_duration_highr_seconds_bucket{le="7.5"} *
http_request_duration_highr_seconds_bucket{le="10.0"} *
http_request_duration_highr_seconds_bucket{le="30.0"} *
http_request_duration_highr_seconds_bucket{le="60.0"} *
http_request_duration_highr_seconds_bucket{le="+Inf"} 5.0
http_request_duration_highr_seconds_count 5.0
http_request_duration_highr_seconds_sum *
# HELP http_request_duration_highr_seconds_created Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. 
# TYPE http_request_duration_highr_seconds_created gauge
http_request_duration_highr_seconds_created 123.456
# HELP http_request_duration_seconds Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. 
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{handler="/v1/completions",le="0.1",method="POST"} *
http_request_duration_seconds_bucket{handler="/v1/completions",le="0.5",method="POST"} *
http_request_duration_seconds_bucket{handler="/v1/completions",le="1.0",method="POST"} *
http_request_duration_seconds_bucket{handler="/v1/completions",le="+Inf",method="POST"} 1.0
http_request_duration_seconds_count{handler="/v1/completions",method="POST"} 1.0
http_request_duration_seconds_sum{handler="/v1/completions",method="POST"} *
http_request_duration_seconds_bucket{handler="/bad",le="0.1",method="POST"} *
http_request_duration_seconds_bucket{handler="/bad",le="0.5",method="POST"} *
http_request_duration_seconds_bucket{handler="/bad",le="1.0",method="POST"} *
http_request_duration_seconds_bucket{handler="/bad",le="+Inf",method="POST"} 1.0
http_request_duration_seconds_count{handler="/bad",method="POST"} 1.0
http_request_duration_seconds_sum{handler="/bad",method="POST"} *
http_request_duration_seconds_bucket{handler="none",le="0.1",method="GET"} *
http_request_duration_seconds_bucket{handler="none",le="0.5",method="GET"} *
http_request_duration_seconds_bucket{handler="none",le="1.0",method="GET"} *
http_request_duration_seconds_bucket{handler="none",le="+Inf",method="GET"} 2.0
http_request_duration_seconds_count{handler="none",method="GET"} 2.0
http_request_duration_seconds_sum{handler="none",method="GET"} *
http_request_duration_seconds_bucket{handler="/stream",le="0.1",method="POST"} *
http_request_duration_seconds_bucket{handler="/stream",le="0.5",method="POST"} *
http_request_duration_seconds_bucket{handler="/stream",le="1.0",method="POST"} *
http_request_duration_seconds_bucket{handler="/stream",le="+Inf",method="POST"} 1.0
http_request_duration_seconds_count{handler="/stream",method="POST"} 1.0
http_request_duration_seconds_sum{handler="/stream",method="POST"} *
# HELP http_request_duration_seconds_created Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. 
# TYPE http_request_duration_seconds_created gauge
http_request_duration_seconds_created{handler="/v1/completions",method="POST"} 123.456
http_request_duration_seconds_created{handler="/bad",method="POST"} 123.456
http_request_duration_seconds_created{handler="none",method="GET"} 123.456
http_request_duration_seconds_created{handler="/stream",method="POST"} 123.456
)";
  EXPECT_EQ(MaskDurations(server.Render()), expected);
}

}  // namespace
}  // namespace vmetrics::frontend
