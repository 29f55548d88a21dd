// SPDX-License-Identifier: Apache-2.0
// The stall watch of RequestService (FenceStalled), on its own clock: an engine silent with
// requests in flight is fenced after the bound, its requests end with a 503 and are aborted at
// it, it gets no new request, and its next message takes it back. An idle engine is never
// fenced. e2e_silent_engine does the same with a real frozen process. Also: an engine that died
// and registered again is routed to again.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "request_service.h"
#include "vmetrics/engine_request.h"
#include "vmetrics/http_server.h"

namespace vmetrics::frontend {
namespace {

using std::chrono::seconds;

struct Sent {
  int engine;
  EngineCoreRequestType type;
  std::string body;
};

class StallWatchTest : public ::testing::Test {
 protected:
  StallWatchTest() {
    RequestService::Options o;
    o.config.max_model_len = 4096;
    o.engine_indexes = {0, 1};
    o.send = [this](int engine, EngineCoreRequestType type, std::string body) {
      sent_.push_back({engine, type, std::move(body)});
      return Status::Ok();
    };
    o.monotonic_clock = [this] { return now_; };
    service_ = std::make_unique<RequestService>(o);
    service_->SetOnEngineBack([this](int engine) { back_.push_back(engine); });
  }
  ~StallWatchTest() override { service_->Shutdown(); }

  std::shared_ptr<HttpExchange> Complete(int engine) {
    HttpRequest http;
    http.body = R"({"prompt": [1, 2], "max_tokens": 4})";
    http.headers.emplace_back(std::string(kDataParallelRankHeader), std::to_string(engine));
    auto exchange = std::make_shared<HttpExchange>(nullptr);
    service_->HandleCompletion(http, exchange);
    return exchange;
  }
  static unsigned AnswerStatus(HttpExchange& exchange, std::string* body) {
    unsigned status = 0;
    std::string type;
    if (exchange.TakeAnswer(&status, &type, body) != HttpExchange::Phase::kReplied) return 0;
    return status;
  }
  void MessageFrom(int engine) {
    EngineCoreOutputs m;
    m.engine_index = engine;
    service_->OnOutputs(&m, [](const EngineCoreOutputs&, const IterationStats*) {});
  }

  std::chrono::steady_clock::time_point now_{};
  std::vector<Sent> sent_;
  std::vector<int> back_;
  std::unique_ptr<RequestService> service_;
};

TEST_F(StallWatchTest, ASilentEngineIsFencedAfterTheBoundAndTakenBackWhenItSends) {
  auto first = Complete(0);
  ASSERT_EQ(sent_.size(), 1U);
  EXPECT_EQ(sent_[0].type, EngineCoreRequestType::kAdd);
  now_ += seconds(9);
  EXPECT_TRUE(service_->FenceStalled(seconds(10)).empty());
  now_ += seconds(2);
  const auto fenced = service_->FenceStalled(seconds(10));
  ASSERT_EQ(fenced.size(), 1U);
  EXPECT_EQ(fenced[0].first, 0);
  EXPECT_NE(fenced[0].second.find("engine 0 stopped answering"), std::string::npos)
      << fenced[0].second;
  std::string body;
  EXPECT_EQ(AnswerStatus(*first, &body), 503U);
  EXPECT_NE(body.find("engine 0 stopped answering"), std::string::npos) << body;
  ASSERT_EQ(sent_.size(), 2U);
  EXPECT_EQ(sent_[1].type, EngineCoreRequestType::kAbort);  // read if it ever reads again
  EXPECT_EQ(sent_[1].engine, 0);
  EXPECT_EQ(service_->num_live_requests(), 0U);
  // Fenced: refused at once, nothing sent; fenced once, not again.
  auto refused = Complete(0);
  EXPECT_EQ(AnswerStatus(*refused, &body), 503U);
  EXPECT_EQ(sent_.size(), 2U);
  EXPECT_TRUE(service_->FenceStalled(seconds(10)).empty());
  // Its next message takes it back.
  MessageFrom(0);
  EXPECT_EQ(back_, std::vector<int>{0});
  auto again = Complete(0);
  ASSERT_EQ(sent_.size(), 3U);
  EXPECT_EQ(sent_[2].type, EngineCoreRequestType::kAdd);
  MessageFrom(0);
  EXPECT_EQ(back_.size(), 1U);  // only a fenced engine comes back
}

// The silence of an engine that had nothing to do counts from when it got work, and an idle
// engine is never fenced.
TEST_F(StallWatchTest, SilenceCountsFromWorkAndAnIdleEngineIsNotWatched) {
  now_ += seconds(100);  // engine 0 idle and silent for long
  EXPECT_TRUE(service_->FenceStalled(seconds(10)).empty());
  auto r = Complete(0);
  now_ += seconds(5);
  EXPECT_TRUE(service_->FenceStalled(seconds(10)).empty());
  MessageFrom(0);  // a step: heard from
  now_ += seconds(9);
  EXPECT_TRUE(service_->FenceStalled(seconds(10)).empty());
  now_ += seconds(2);
  const auto fenced = service_->FenceStalled(seconds(10));
  ASSERT_EQ(fenced.size(), 1U);
  EXPECT_EQ(fenced[0].first, 0);  // engine 1, idle all along, is not
}

// An engine that died and registered again (a replacement at the same rank) gets requests
// again; before, a dead engine was never routed to again.
TEST_F(StallWatchTest, AnEngineThatRegistersAgainIsRoutedToAgain) {
  auto first = Complete(0);
  service_->OnEngineDead(0, "input connection closed");
  std::string body;
  EXPECT_EQ(AnswerStatus(*first, &body), 500U);
  auto while_dead = Complete(0);
  EXPECT_EQ(AnswerStatus(*while_dead, &body), 503U);
  EXPECT_EQ(sent_.size(), 1U);
  service_->OnEngineReady(0);
  auto after = Complete(0);
  ASSERT_EQ(sent_.size(), 2U);
  EXPECT_EQ(sent_[1].type, EngineCoreRequestType::kAdd);
  EXPECT_EQ(sent_[1].engine, 0);
}

// SIGTERM (Frontend::Stop -> Shutdown): every request in flight is answered 503 and aborted at
// its engine, so the engines stop computing for nobody.
TEST_F(StallWatchTest, ShutdownAbortsEveryRequestInFlightAtItsEngine) {
  auto on0 = Complete(0);
  auto on1 = Complete(1);
  ASSERT_EQ(sent_.size(), 2U);
  service_->Shutdown();
  std::string body;
  EXPECT_EQ(AnswerStatus(*on0, &body), 503U);
  EXPECT_EQ(AnswerStatus(*on1, &body), 503U);
  ASSERT_EQ(sent_.size(), 4U);
  for (size_t k = 2; k < 4; ++k) {
    EXPECT_EQ(sent_[k].type, EngineCoreRequestType::kAbort);
    Result<std::vector<std::string>> ids = DecodeAbort(sent_[k].body);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(ids->size(), 1U);
  }
  EXPECT_NE(sent_[2].engine, sent_[3].engine);
  service_->Shutdown();  // idempotent: nothing more
  EXPECT_EQ(sent_.size(), 4U);
}

}  // namespace
}  // namespace vmetrics::frontend
