// SPDX-License-Identifier: Apache-2.0
// The ingest path (ingest.h) and RequestService's locks (request_service.h): a message is
// tracked, recorded, then settled, so the request it finishes is answered only after its
// records; recording holds no lock that HTTP submission takes, so a submission completes while
// a message (with outputs, or stats only) is being recorded; a request is built and encoded
// outside the lock the output thread takes, so the output thread answers requests while a
// submission is still building its own.
//
// Each cross-thread wait is bounded (kBound) so that a lock held where it must not be fails the
// test instead of hanging it; the held thread is then released before it is joined.
#include "ingest.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "request_service.h"
#include "vmetrics/engine_request.h"
#include "vmetrics/exposition.h"
#include "vmetrics/http_server.h"
#include "vmetrics/recorder.h"
#include "vmetrics/registry.h"

namespace vmetrics::frontend {
namespace {

constexpr auto kBound = std::chrono::seconds(10);

constexpr std::string_view kRunning =
    "vllm:num_requests_running{engine=\"0\",model_name=\"model\"} 3.0";

// Track -> Record -> Settle, seen from the bookkeeping: whether the message's SchedulerStats
// are in the exposition at each step.
class OrderBookkeeping final : public IngestBookkeeping {
 public:
  OrderBookkeeping(const Registry* registry, std::vector<std::string>* calls)
      : registry_(registry), calls_(calls) {}
  std::optional<IterationStats> Track(EngineCoreOutputs* message, uint64_t number) override {
    calls_->push_back("track " + std::to_string(number) + Seen());
    if (message->outputs.empty()) return std::nullopt;
    return IterationStats{};
  }
  void Settle(const EngineCoreOutputs& /*message*/) override {
    calls_->push_back("settle" + Seen());
  }

 private:
  std::string Seen() const {
    std::string text;
    WriteText(*registry_, {}, &text);
    return text.find(kRunning) != std::string::npos ? ", recorded" : ", not recorded";
  }
  const Registry* registry_;
  std::vector<std::string>* calls_;
};

TEST(IngestTest, TracksThenRecordsThenSettles) {
  Registry registry;
  StatsRecorder recorder(&registry, RecorderOptions{});
  std::vector<std::string> calls;
  OrderBookkeeping bookkeeping(&registry, &calls);
  Ingest ingest(&recorder, &bookkeeping);
  EngineCoreOutputs m;
  m.scheduler_stats.emplace();
  m.scheduler_stats->num_running_reqs = 3;
  ingest.Message(&m, 7);
  EXPECT_EQ(calls, (std::vector<std::string>{"track 7, not recorded", "settle, recorded"}));
}

class RequestLocksTest : public ::testing::Test {
 protected:
  RequestLocksTest() {
    RequestService::Options o;
    o.config.max_model_len = 4096;
    o.engine_indexes = {0};
    o.send = [this](int /*engine*/, EngineCoreRequestType type, const std::string& body) {
      std::lock_guard<std::mutex> lock(sent_mu_);
      if (type == EngineCoreRequestType::kAdd) {
        Result<EngineCoreRequestSpec> spec = DecodeEngineCoreRequest(body);
        if (spec.ok()) added_.push_back(spec->request_id);
      }
      return Status::Ok();
    };
    o.engine_request_id = [this](const std::string& external) {
      if (hold_ids_) {
        in_id_.set_value();
        release_id_.get_future().wait();
      }
      return external + "-id";
    };
    service_ = std::make_unique<RequestService>(o);
  }
  ~RequestLocksTest() override { service_->Shutdown(); }

  std::shared_ptr<HttpExchange> Complete(const std::string& id) {
    HttpRequest http;
    http.body = R"({"prompt": [1, 2], "max_tokens": 1})";
    http.headers.emplace_back(std::string(kRequestIdHeader), id);
    auto exchange = std::make_shared<HttpExchange>(nullptr);
    service_->HandleCompletion(http, exchange);
    return exchange;
  }
  std::vector<std::string> Added() {
    std::lock_guard<std::mutex> lock(sent_mu_);
    return added_;
  }
  // One token for `request_id` that finishes it ("length"), and the engine's stats. A literal:
  // EngineCoreOutputs holds views, so `request_id` must outlive the message.
  static EngineCoreOutputs Finishing(std::string_view request_id) {
    EngineCoreOutputs m;
    EngineCoreOutput o;
    o.request_id = request_id;
    o.new_token_ids = {5};
    o.finish_reason = FinishReason::kLength;
    m.outputs.push_back(o);
    m.scheduler_stats.emplace();
    return m;
  }
  static bool Answered(HttpExchange& exchange) {
    unsigned status = 0;
    std::string type;
    std::string body;
    return exchange.TakeAnswer(&status, &type, &body) == HttpExchange::Phase::kReplied &&
           status == 200;
  }
  // While `message` is recorded, a completion ("during") is submitted from another thread:
  // whether it was sent before recording ended.
  bool SubmittedDuringRecording(EngineCoreOutputs* message, bool* answered_during) {
    bool sent_during = false;
    service_->OnOutputs(message, [&](const EngineCoreOutputs&, const IterationStats*) {
      if (answered_during != nullptr) *answered_during = Answered(*first_);
      std::packaged_task<void()> submit([this] { during_ = Complete("during"); });
      std::future<void> done = submit.get_future();
      submitter_ = std::thread(std::move(submit));
      sent_during = done.wait_for(kBound) == std::future_status::ready;
    });
    submitter_.join();
    return sent_during;
  }

  std::mutex sent_mu_;
  std::vector<std::string> added_;
  bool hold_ids_ = false;
  std::promise<void> in_id_;
  std::promise<void> release_id_;
  std::unique_ptr<RequestService> service_;
  std::shared_ptr<HttpExchange> first_;
  std::shared_ptr<HttpExchange> during_;
  std::thread submitter_;
};

// The ordering guarantee, and recording outside the requests' lock: the request a message
// finishes is not answered while the message is recorded (another request is submitted and
// sent meanwhile), and is answered once Settle ran.
TEST_F(RequestLocksTest, ASubmissionCompletesWhileAFinishingMessageIsRecorded) {
  first_ = Complete("first");
  ASSERT_EQ(Added(), std::vector<std::string>{"cmpl-first-0-id"});
  EngineCoreOutputs m = Finishing("cmpl-first-0-id");
  bool answered_during = true;
  EXPECT_TRUE(SubmittedDuringRecording(&m, &answered_during));
  EXPECT_FALSE(answered_during);
  EXPECT_TRUE(Answered(*first_));
  EXPECT_EQ(Added(), (std::vector<std::string>{"cmpl-first-0-id", "cmpl-during-0-id"}));
  EXPECT_EQ(service_->num_live_completions(), 1U);  // "during", sent, not finished
}

TEST_F(RequestLocksTest, ASubmissionCompletesWhileAStatsOnlyMessageIsRecorded) {
  EngineCoreOutputs m;
  m.scheduler_stats.emplace();
  EXPECT_TRUE(SubmittedDuringRecording(&m, nullptr));
  EXPECT_EQ(Added(), std::vector<std::string>{"cmpl-during-0-id"});
}

// A submission still building its request (here: its engine request id) holds nothing the
// output thread needs: another request's last token is recorded and answered meanwhile.
TEST_F(RequestLocksTest, OutputsAreAnsweredWhileARequestIsBuilt) {
  first_ = Complete("first");
  ASSERT_EQ(Added(), std::vector<std::string>{"cmpl-first-0-id"});
  hold_ids_ = true;
  std::thread submitter([this] { during_ = Complete("during"); });
  in_id_.get_future().wait();  // the submitter is building its request
  std::packaged_task<void()> deliver([this] {
    EngineCoreOutputs m = Finishing("cmpl-first-0-id");
    service_->OnOutputs(&m, [](const EngineCoreOutputs&, const IterationStats*) {});
  });
  std::future<void> delivered = deliver.get_future();
  std::thread output_thread(std::move(deliver));
  const bool in_time = delivered.wait_for(kBound) == std::future_status::ready;
  release_id_.set_value();
  output_thread.join();
  submitter.join();
  EXPECT_TRUE(in_time);
  EXPECT_TRUE(Answered(*first_));
  EXPECT_EQ(Added(), (std::vector<std::string>{"cmpl-first-0-id", "cmpl-during-0-id"}));
}

}  // namespace
}  // namespace vmetrics::frontend
