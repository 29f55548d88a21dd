// SPDX-License-Identifier: Apache-2.0
// Routing and reply rules of src/server/request_handler.cc, without sockets.
#include "request_handler.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "http_test_client.h"  // Gunzip
#include "security_test_util.h"

namespace vmetrics::internal {
namespace {

constexpr unsigned kMaxHeaders = 100;
constexpr RequestRules kRules{.max_headers = kMaxHeaders};

HttpHandlers FixedHandlers() {
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat format) {
    return std::string(format == ExpositionFormat::kOpenMetrics ? "om\n# EOF\n" : "text\n");
  };
  handlers.health = [] { return HealthReport{false, "engine 0 is dead"}; };
  return handlers;
}

// A well-formed HTTP/1.1 request head: method, path and its one Host line.
RequestHead Head(std::string_view method, std::string_view path) {
  RequestHead head;
  head.method = method;
  head.path = path;
  head.version = "HTTP/1.1";
  head.host_count = 1;
  return head;
}

TEST(RouteFor, KnownPathsAndTheirNeighbours) {
  EXPECT_EQ(RouteFor("/metrics"), Endpoint::kMetrics);
  EXPECT_EQ(RouteFor("/metrics/"), Endpoint::kMetrics);
  EXPECT_EQ(RouteFor("/health"), Endpoint::kHealth);
  EXPECT_EQ(RouteFor("/health/"), Endpoint::kNotFound);
  EXPECT_EQ(RouteFor("/metricsz"), Endpoint::kNotFound);
  EXPECT_EQ(RouteFor("/Metrics"), Endpoint::kNotFound);
  EXPECT_EQ(RouteFor("/"), Endpoint::kNotFound);
  EXPECT_EQ(RouteFor(""), Endpoint::kNotFound);
}

TEST(BuildReply, MetricsDefaultsToText) {
  Reply r = BuildReply(FixedHandlers(), kRules, Head("GET", "/metrics"));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "text\n");
  EXPECT_EQ(r.content_type, kContentTypeText004);
  EXPECT_EQ(r.content_encoding, "");
}

TEST(BuildReply, MetricsHonoursAcceptAndAcceptEncoding) {
  RequestHead head = Head("HEAD", "/metrics");
  head.accept = "application/openmetrics-text; version=1.0.0";
  head.accept_encoding = "gzip";
  Reply r = BuildReply(FixedHandlers(), kRules, head);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, kContentTypeOpenMetrics100);
  EXPECT_EQ(r.content_encoding, "gzip");
  std::string inflated;
  ASSERT_TRUE(http_test::Gunzip(r.body, &inflated));
  EXPECT_EQ(inflated, "om\n# EOF\n");
}

TEST(BuildReply, UnhealthyIs503WithTheReason) {
  Reply r = BuildReply(FixedHandlers(), kRules, Head("GET", "/health"));
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(r.body, "engine 0 is dead");
  EXPECT_EQ(r.content_type, "text/plain; charset=utf-8");
}

TEST(BuildReply, UnknownPathIs404BeforeTheMethodIsLookedAt) {
  Reply r = BuildReply(FixedHandlers(), kRules, Head("POST", "/v1/completions"));
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(r.body, R"({"detail":"Not Found"})");
  EXPECT_EQ(r.content_type, "application/json");
}

TEST(RejectReply, RoutesAreAdmittedOnlyForTheirMethods) {
  const std::vector<HttpRoute> routes = {
      {.method = "POST", .path = "/submit", .handler = [](HttpRequest, auto) {}},
      {.method = "GET", .path = "/submit", .handler = [](HttpRequest, auto) {}},
      {.method = "POST", .path = "/other", .handler = [](HttpRequest, auto) {}},
  };
  Result<RouteTable> table = RouteTable::Build(routes);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  RequestRules rules = kRules;
  rules.routes = &*table;
  EXPECT_EQ(RouteFor("/submit"), Endpoint::kNotFound) << "a route is not the server's own path";
  EXPECT_FALSE(RejectReply(rules, Head("POST", "/submit")).has_value());
  EXPECT_EQ(FindRoute(rules, Head("POST", "/submit")), &routes[0]);
  EXPECT_EQ(FindRoute(rules, Head("GET", "/submit")), &routes[1]);
  EXPECT_EQ(FindRoute(rules, Head("GET", "/metrics")), nullptr);
  std::optional<Reply> put = RejectReply(rules, Head("PUT", "/submit"));
  ASSERT_TRUE(put.has_value());
  EXPECT_EQ(put->status, 405u);
  EXPECT_EQ(put->allow, "POST, GET");
  EXPECT_EQ(RejectReply(rules, Head("GET", "/other"))->allow, "POST");
  EXPECT_EQ(RejectReply(rules, Head("POST", "/nowhere"))->status, 404u);
  // Without the table the paths do not exist, whatever the method.
  EXPECT_EQ(RejectReply(kRules, Head("POST", "/submit"))->status, 404u);
  // The server's own paths keep their rules beside the routes.
  EXPECT_EQ(RejectReply(rules, Head("POST", "/metrics"))->allow, "GET, HEAD");
}

TEST(BuildReply, WrongMethodIs405WithAllow) {
  Reply r = BuildReply(FixedHandlers(), kRules, Head("POST", "/metrics"));
  EXPECT_EQ(r.status, 405u);
  EXPECT_EQ(r.allow, "GET, HEAD");
  EXPECT_EQ(r.body, R"({"detail":"Method Not Allowed"})");
}

TEST(BuildReply, TooManyHeadersIs431WhateverThePath) {
  for (std::string_view path : {"/metrics", "/nowhere"}) {
    RequestHead head = Head("GET", path);
    head.header_count = kMaxHeaders + 1;
    EXPECT_EQ(BuildReply(FixedHandlers(), kRules, head).status, 431u) << path;
  }
  RequestHead at_limit = Head("GET", "/metrics");
  at_limit.header_count = kMaxHeaders;
  EXPECT_EQ(BuildReply(FixedHandlers(), kRules, at_limit).status, 200u);
}

TEST(BuildReply, HandlerExceptionsBecome500AndAreLogged) {
  std::vector<std::string> logged;
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) -> std::string {
    throw std::runtime_error("boom");
  };
  handlers.health = []() -> HealthReport { throw 42; };
  handlers.log = [&](std::string_view message) { logged.emplace_back(message); };

  EXPECT_EQ(BuildReply(handlers, kRules, Head("GET", "/metrics")).status, 500u);
  EXPECT_EQ(BuildReply(handlers, kRules, Head("GET", "/health")).status, 500u);
  ASSERT_EQ(logged.size(), 2u);
  EXPECT_EQ(logged[0], "handler for /metrics threw: boom");
  EXPECT_EQ(logged[1], "handler for /health threw");
}

TEST(BuildReply, RequestWithoutAnHttp1VersionIs400) {
  for (std::string_view version : {"", "HTTP/2.0", "http/1.1"}) {
    RequestHead head = Head("GET", "/metrics");
    head.version = version;
    EXPECT_EQ(BuildReply(FixedHandlers(), kRules, head).status, 400u) << version;
  }
  RequestHead old = Head("GET", "/metrics");
  old.version = "HTTP/1.0";
  EXPECT_EQ(BuildReply(FixedHandlers(), kRules, old).status, 200u);
}

TEST(RejectReply, GoodRequestsAreLeftToTheHandlers) {
  for (std::string_view method : {"GET", "HEAD"}) {
    for (std::string_view path : {"/metrics", "/metrics/", "/health"}) {
      EXPECT_FALSE(RejectReply(kRules, Head(method, path)).has_value()) << method << path;
    }
  }
}

TEST(RejectReply, BadVersionComesBeforeTheOtherChecks) {
  RequestHead head = Head("POST", "/nowhere");
  head.version = "";
  head.header_count = kMaxHeaders + 1;
  EXPECT_EQ(RejectReply(kRules, head)->status, 400u);
  head.version = "HTTP/1.1";
  EXPECT_EQ(RejectReply(kRules, head)->status, 431u);
  head.header_count = 1;
  EXPECT_EQ(RejectReply(kRules, head)->status, 404u);
  head.path = "/health";
  EXPECT_EQ(RejectReply(kRules, head)->status, 405u);
}

TEST(BuildReply, EmptyHeaderNameIs400) {
  RequestHead head = Head("GET", "/metrics");
  head.header_count = 1;
  head.empty_header_name = true;
  EXPECT_EQ(BuildReply(FixedHandlers(), kRules, head).status, 400u);
}

TEST(BuildReply, UnsetHealthHandlerIsAnEmpty200) {
  HttpHandlers handlers = FixedHandlers();
  handlers.health = nullptr;
  Reply r = BuildReply(handlers, kRules, Head("GET", "/health"));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "");
  EXPECT_EQ(r.content_type, "");
}

TEST(AddHeader, CountsJoinsAndKeepsAuthorization) {
  RequestHead head;
  AddHeader("accept", "text/plain", &head);
  AddHeader("ACCEPT", "application/openmetrics-text", &head);
  AddHeader("Accept-Encoding", "gzip", &head);
  AddHeader("authorization", "Basic YWxpY2U6c2VjcmV0", &head);
  AddHeader("Content-Length", "0", &head);
  EXPECT_EQ(head.header_count, 5u);
  EXPECT_EQ(head.accept, "text/plain,application/openmetrics-text");
  EXPECT_EQ(head.accept_encoding, "gzip");
  EXPECT_EQ(head.authorization, "Basic YWxpY2U6c2VjcmV0");
  EXPECT_EQ(head.authorization_count, 1u);
  EXPECT_FALSE(head.has_body);
  EXPECT_FALSE(head.empty_header_name);
  AddHeader("Transfer-Encoding", "chunked", &head);
  AddHeader("", "x", &head);
  EXPECT_TRUE(head.has_body);
  EXPECT_TRUE(head.empty_header_name);
}

// RFC 9112 §3.2: HTTP/1.1 needs exactly one Host; HTTP/1.0 may go without, never with two.
TEST(RejectReply, MissingOrRepeatedHostIs400) {
  RequestHead head = Head("GET", "/metrics");
  head.host_count = 0;
  EXPECT_EQ(RejectReply(kRules, head)->status, 400u);
  head.host_count = 2;
  EXPECT_EQ(RejectReply(kRules, head)->status, 400u);
  head.version = "HTTP/1.0";
  EXPECT_EQ(RejectReply(kRules, head)->status, 400u);
  head.host_count = 0;
  EXPECT_FALSE(RejectReply(kRules, head).has_value());
  head.host_count = 1;
  EXPECT_FALSE(RejectReply(kRules, head).has_value());
  // Before the header count: a missing Host is a malformed request whatever else it has.
  head.version = "HTTP/1.1";
  head.host_count = 0;
  head.header_count = kMaxHeaders + 1;
  EXPECT_EQ(RejectReply(kRules, head)->status, 400u);
}

TEST(AddHeader, ReadsHostContentLengthExpectAndTransferEncoding) {
  RequestHead head;
  AddHeader("host", "example", &head);
  AddHeader("Content-Length", " 1073741824 ", &head);
  AddHeader("EXPECT", "100-Continue", &head);
  EXPECT_EQ(head.host_count, 1u);
  EXPECT_TRUE(head.content_length_valid);
  EXPECT_EQ(head.content_length, uint64_t{1} << 30);
  EXPECT_TRUE(head.expect_continue);
  EXPECT_TRUE(head.has_body);
  EXPECT_FALSE(head.transfer_encoding);
  AddHeader("Host", "other", &head);
  AddHeader("Transfer-Encoding", "chunked", &head);
  AddHeader("Expect", "something-else", &head);
  EXPECT_EQ(head.host_count, 2u);
  EXPECT_TRUE(head.transfer_encoding);
  EXPECT_FALSE(head.expect_continue);
  for (std::string_view bad : {"", "-1", "1e3", "0x10", "12 34", "99999999999999999999"}) {
    RequestHead h;
    AddHeader("Content-Length", bad, &h);
    EXPECT_FALSE(h.content_length_valid) << bad;
  }
}

// RFC 9112 §6.3 and §5.2, RFC 9110 §5.1: heads whose framing or fields could be read two ways
// are 400 with Connection: close, before credentials and routing.
TEST(RejectReply, AmbiguousFramingIs400AndCloses) {
  auto refuse = [](const std::function<void(RequestHead*)>& change) {
    RequestHead head = Head("POST", "/submit");
    change(&head);
    std::optional<Reply> r = RejectMalformed(kRules, head);
    return r.has_value() && r->status == 400u && r->close;
  };
  EXPECT_FALSE(refuse([](RequestHead* h) { AddHeader("Content-Length", "2", h); }));
  EXPECT_TRUE(refuse([](RequestHead* h) {
    AddHeader("Content-Length", "2", h);
    AddHeader("content-length", "2", h);
  }));
  EXPECT_TRUE(refuse([](RequestHead* h) {
    AddHeader("Content-Length", "0", h);
    AddHeader("Content-Length", "31", h);
  }));
  for (std::string_view bad : {"+31", "-1", "0x20", "", "2, 2"}) {
    EXPECT_TRUE(refuse([&](RequestHead* h) { AddHeader("Content-Length", bad, h); })) << bad;
  }
  EXPECT_TRUE(refuse([](RequestHead* h) {
    AddHeader("Content-Length", "2", h);
    AddHeader("Transfer-Encoding", "chunked", h);
  }));
  for (std::string_view name : {" Host", "X A", "X\tA", "X(A)", "X\x01A", "X\xc3\xa9"}) {
    EXPECT_TRUE(refuse([&](RequestHead* h) { AddHeader(name, "1", h); })) << name;
  }
  EXPECT_FALSE(refuse([](RequestHead* h) { AddHeader("X-A_b.c!#$%&'*+^`|~9", "1", h); }));
  EXPECT_TRUE(refuse([](RequestHead* h) { h->folded_header = true; }));
  EXPECT_TRUE(refuse([](RequestHead* h) { h->bad_target = true; }));
}

TEST(TargetHasControlBytes, RawOrPercentEncoded) {
  for (std::string_view bad : std::vector<std::string_view>{
           "/abort_requests%00.png", "/v1/completions%00junk", "/a%0a", "/a%0D", "/a%1f", "/a%7f",
           "/a?x=%00", "/a\x01", "/a b", "/a\x7f", std::string_view("/a\0b", 4)}) {
    EXPECT_TRUE(TargetHasControlBytes(bad)) << bad;
  }
  for (std::string_view good : {"/metrics", "/metrics?name%5B%5D=a%2Fb", "/a%21", "/a%", "/a%0",
                                "/a%zz", "/a%e2%82%ac", "/a%80", "/metrics?q=a%20b"}) {
    EXPECT_FALSE(TargetHasControlBytes(good)) << good;
  }
}

TEST(RejectRouteBody, TransferEncodingIs411AndAnOversizedExpectationIs417) {
  constexpr size_t kLimit = 1 << 20;
  RequestHead head = Head("POST", "/v1/completions");
  EXPECT_FALSE(RejectRouteBody(head, kLimit).has_value());
  head.transfer_encoding = true;
  std::optional<BodyRefusal> chunked = RejectRouteBody(head, kLimit);
  ASSERT_TRUE(chunked.has_value());
  EXPECT_EQ(chunked->status, 411u);
  EXPECT_NE(chunked->message.find("Content-Length"), std::string::npos) << chunked->message;

  head = Head("POST", "/v1/completions");
  head.content_length_valid = true;
  head.content_length = kLimit + 1;
  // Without the expectation the body is read and refused with 413 once in.
  EXPECT_FALSE(RejectRouteBody(head, kLimit).has_value());
  head.expect_continue = true;
  std::optional<BodyRefusal> expectation = RejectRouteBody(head, kLimit);
  ASSERT_TRUE(expectation.has_value());
  EXPECT_EQ(expectation->status, 417u);
  EXPECT_EQ(expectation->message, "request body of 1048577 bytes is larger than 1048576 bytes");
  head.content_length = kLimit;
  EXPECT_FALSE(RejectRouteBody(head, kLimit).has_value());
}

class RequestRulesWithUsersTest : public ::testing::Test {
 protected:
  RequestHead WithCredentials(std::string_view method, std::string_view path,
                              std::string_view password) {
    RequestHead head = Head(method, path);
    credentials_ = security_test::BasicAuthorization("alice", password);
    AddHeader("Authorization", credentials_, &head);
    return head;
  }

  std::string credentials_;
  BasicAuthVerifier verifier_{{{"alice", security_test::BcryptHash("secret")}}};
  const RequestRules rules_{kMaxHeaders, &verifier_};
};

// 400 and 431 before credentials; credentials before 404 and 405.
TEST_F(RequestRulesWithUsersTest, RefusalOrder) {
  RequestHead head = Head("POST", "/nowhere");
  head.version = "";
  EXPECT_EQ(RejectReply(rules_, head)->status, 400u);
  head.version = "HTTP/1.1";
  head.header_count = kMaxHeaders + 1;
  EXPECT_EQ(RejectReply(rules_, head)->status, 431u);
  head.header_count = 0;
  std::optional<Reply> unauthorized = RejectReply(rules_, head);
  EXPECT_EQ(unauthorized->status, 401u);
  EXPECT_EQ(unauthorized->www_authenticate, kBasicAuthChallenge);
  EXPECT_EQ(RejectReply(rules_, WithCredentials("POST", "/nowhere", "secret"))->status, 404u);
  EXPECT_EQ(RejectReply(rules_, WithCredentials("POST", "/health", "secret"))->status, 405u);
  EXPECT_FALSE(RejectReply(rules_, WithCredentials("GET", "/health", "secret")).has_value());
  EXPECT_EQ(RejectReply(rules_, WithCredentials("GET", "/health", "wrong"))->status, 401u);
}

TEST_F(RequestRulesWithUsersTest, QuickCheckNeedsBcryptOnlyForUncachedCredentials) {
  EXPECT_EQ(CheckCredentialsQuickly({}, Head("GET", "/metrics")).outcome,
            CredentialsOutcome::kAccepted);
  EXPECT_EQ(CheckCredentialsQuickly(rules_, Head("GET", "/metrics")).outcome,
            CredentialsOutcome::kRefused);
  CredentialsCheck first = CheckCredentialsQuickly(rules_, WithCredentials("GET", "/", "secret"));
  ASSERT_EQ(first.outcome, CredentialsOutcome::kNeedsVerification);
  EXPECT_EQ(first.credentials.user, "alice");
  EXPECT_EQ(first.credentials.password, "secret");
  ASSERT_TRUE(verifier_.Verify(first.credentials));
  EXPECT_EQ(CheckCredentialsQuickly(rules_, WithCredentials("GET", "/", "secret")).outcome,
            CredentialsOutcome::kAccepted);
  // Wrong passwords are never cached, so they always need the bcrypt.
  EXPECT_EQ(CheckCredentialsQuickly(rules_, WithCredentials("GET", "/", "wrong")).outcome,
            CredentialsOutcome::kNeedsVerification);
  RequestHead twice = WithCredentials("GET", "/", "secret");
  AddHeader("Authorization", credentials_, &twice);
  EXPECT_EQ(CheckCredentialsQuickly(rules_, twice).outcome, CredentialsOutcome::kRefused);
}

// A pair that failed its check is refused at once from then on: a flood repeating one wrong
// password costs one bcrypt, not one per request.
TEST_F(RequestRulesWithUsersTest, QuickCheckRefusesAPairThatFailedBefore) {
  CredentialsCheck guess = CheckCredentialsQuickly(rules_, WithCredentials("GET", "/", "guess"));
  ASSERT_EQ(guess.outcome, CredentialsOutcome::kNeedsVerification);
  ASSERT_FALSE(verifier_.Verify(guess.credentials));
  const uint64_t runs = verifier_.bcrypt_runs();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(CheckCredentialsQuickly(rules_, WithCredentials("GET", "/", "guess")).outcome,
              CredentialsOutcome::kRefused);
  }
  EXPECT_EQ(verifier_.bcrypt_runs(), runs);
  // Another guess is still checked, and the right password still passes.
  EXPECT_EQ(CheckCredentialsQuickly(rules_, WithCredentials("GET", "/", "guess2")).outcome,
            CredentialsOutcome::kNeedsVerification);
  EXPECT_FALSE(RejectReply(rules_, WithCredentials("GET", "/health", "secret")).has_value());
}

TEST(FixedReplies, TooManyRequestsAndServiceUnavailable) {
  Reply busy = TooManyRequestsReply();
  EXPECT_EQ(busy.status, 429u);
  EXPECT_EQ(busy.retry_after, "1");
  EXPECT_EQ(ServiceUnavailableReply().status, 503u);
}

}  // namespace
}  // namespace vmetrics::internal
