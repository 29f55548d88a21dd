// SPDX-License-Identifier: Apache-2.0
// File: requests.h
//
// RequestTracker: the frontend side of vLLM's per-request statistics. A frontend that sends
// requests to engines keeps, per live request, the state vLLM's Python frontend keeps
// (RequestStateStats plus prompt_len, max_tokens, n/parent, LoRA name, is_prefilling,
// num_cached_tokens), and turns every EngineCoreOutputs message with at least one output into
// one IterationStats, exactly as vLLM's OutputProcessor does (docs/recording.md, "The per-output
// and per-finish algorithm") — Python's quirks included, on purpose:
//   - a first output with no tokens (an abort/error before any token) still gives a TTFT sample;
//   - no guards against zero timestamps: a request finished without a SCHEDULED event gets a
//     prefill/inference time equal to a raw engine monotonic timestamp;
//   - NaN and infinite values are passed through (StatsRecorder::RecordIteration skips and
//     counts them: reporter.h, ObservationProblem; negative durations are observed);
//   - outputs for request ids that are not live (finished, aborted, never sent) are skipped;
//   - parallel sampling (n > 1): the parent's max generation tokens and n are appended when the
//     last child finishes; ordinary requests append their own count and 1 at finish;
//   - mean time per output token is 0 when the request generated at most one token.
// StatsRecorder::RecordIteration (recorder.h) applies an IterationStats to the registry.
//
// Clocks: `arrival_time` and `iteration_timestamp` are the frontend's wall clock (time.time()),
// given by the caller; output and event timestamps are the engine's monotonic clock. The only
// clock the tracker reads itself is Options::monotonic, for messages whose timestamp is 0.0
// (Python's EngineCoreOutputs.__post_init__ replaces it with the frontend's time.monotonic()).
//
// Thread safety: none. One thread (the output loop) owns a tracker; a caller that adds or aborts
// requests from other threads serialises the calls itself.
//
// Example:
//   RequestTracker tracker;
//   tracker.AddRequest({.request_id = "r1", .arrival_time = 100.0, .prompt_len = 7,
//                       .max_tokens = 16});
//   std::optional<IterationStats> it = tracker.ProcessOutputs(message, /*iteration_ts=*/100.5);
//   if (it) recorder.RecordIteration(*it, message.engine_index);
//   EXPECT_EQ(tracker.num_live_requests(), 0u);  // once r1 finished
#ifndef VMETRICS_REQUESTS_H_
#define VMETRICS_REQUESTS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/iteration_stats.h"

namespace vmetrics {

// What the frontend knows about a request when it sends it.
struct RequestInfo {
  std::string request_id;   // the id on the wire (EngineCoreRequest.request_id)
  double arrival_time = 0;  // frontend wall clock at intake (EngineCoreRequest.arrival_time)
  int64_t prompt_len = 0;   // len(prompt_token_ids)
  std::optional<int64_t> max_tokens = 16;  // SamplingParams.max_tokens; nullopt = None
  std::string parent_id;                   // parallel sampling: the parent request ("" = none)
  int64_t n = 1;          // the parent's n (children of one parent give the same n)
  std::string lora_name;  // "" = no LoRA
};

// vLLM's RequestStateStats (vllm/v1/metrics/stats.py) plus the request-level inputs the frontend
// keeps.
struct RequestState {
  RequestInfo info;
  int64_t num_generation_tokens = 0;
  double queued_ts = 0;
  double scheduled_ts = 0;
  double first_token_ts = 0;
  double last_token_ts = 0;
  double first_token_latency = 0;
  bool is_corrupted = false;
  bool is_prefilling = true;
  int64_t num_cached_tokens = 0;
  int64_t num_preemptions = 0;  // PREEMPTED events so far (vllm:request_num_preemptions)
};

class RequestTracker {
 public:
  struct Options {
    // VLLM_COMPUTE_NANS_IN_LOGITS: mark requests with num_nans_in_logits > 0 as corrupted.
    bool track_nans_in_logits = false;
    // The frontend's monotonic clock, read only for a message whose timestamp is 0.0;
    // nullptr = std::chrono::steady_clock.
    std::function<double()> monotonic;
  };

  RequestTracker();
  explicit RequestTracker(Options options);

  // AddRequest
  //
  // Starts tracking a request. Returns false (and changes nothing) if the id is already live.
  // For a child of a parallel-sampling parent (`parent_id` set), the first child creates the
  // parent with `n` children pending.
  bool AddRequest(RequestInfo info);

  // AbortRequest
  //
  // A client abort: forgets the request without any statistics (Python records none; the
  // engine sends no output for it, and a late output is skipped as unknown). Returns false if
  // the id was not live.
  bool AbortRequest(std::string_view request_id);

  // ProcessOutputs
  //
  // Applies the per-output and per-finish algorithm (docs/recording.md) to every output of
  // `message`, in wire order. Returns nullopt when the message
  // has no outputs (no IterationStats, Python's `IterationStats() if outputs else None`),
  // otherwise the IterationStats (stamped `iteration_timestamp`) even if every output was for
  // an unknown id. Finished requests are forgotten; their ids are in `finished_requests`.
  //
  // Example:
  //   auto it = tracker.ProcessOutputs(msg, 101.0);
  //   ASSERT_TRUE(it.has_value());
  //   EXPECT_EQ(it->time_to_first_tokens_iter.size(), 1u);
  std::optional<IterationStats> ProcessOutputs(const EngineCoreOutputs& message,
                                               double iteration_timestamp);

  // The live request, or nullptr.
  const RequestState* Find(std::string_view request_id) const;
  size_t num_live_requests() const { return ids_.size(); }
  size_t num_live_parents() const { return parents_.size(); }

  // LoRA request states (vLLM's LoRARequestStates): adapter name -> number of waiting / running
  // requests, for every adapter with a live request, in first-seen order.
  std::vector<std::pair<std::string, int64_t>> WaitingLoraAdapters() const;
  std::vector<std::pair<std::string, int64_t>> RunningLoraAdapters() const;

  // UpdateSchedulerStats
  //
  // Python's OutputProcessor.update_scheduler_stats (docs/recording.md, scheduler_stats item 8),
  // called after ProcessOutputs of the
  // message that carried `stats`: for every adapter with a live request, in first-seen order,
  // sets waiting_lora_adapters[name] and running_lora_adapters[name] to its request counts. A
  // name the engine already sent keeps its place; a new one is added at the end. The names
  // point into the tracker and are valid until its next non-const call.
  //
  // Example:
  //   tracker.UpdateSchedulerStats(&*message.scheduler_stats);
  //   recorder.Record(message);  // vllm:lora_requests_info{running_lora_adapters="sql",...}
  void UpdateSchedulerStats(SchedulerStats* stats) const;

 private:
  struct Parent {
    int64_t n = 1;
    int64_t pending = 1;  // children neither finished nor aborted
    int64_t max_num_generation_tokens = 0;
  };
  struct LoraStates {
    std::string name;
    std::set<std::string, std::less<>> waiting;
    std::set<std::string, std::less<>> running;
  };

  void Finish(RequestState& state, FinishReason reason, IterationStats& it);
  void LoraTransition(const RequestState& state, int to);  // 0 waiting, 1 running, 2 gone
  double Monotonic() const;

  // Hashed by the id's bytes, looked up with the string_view an output carries (no copy). A
  // frontend looks up every output's request: an ordered map's string comparisons of ids that
  // share their "cmpl-" prefix were a third of the output loop (bench/README.md).
  // Not noexcept on purpose: libstdc++ then keeps each node's hash code, so walking a bucket
  // compares codes instead of hashing every id in it again (W2 with its requests 25.6 -> 23 us).
  struct IdHash {
    using is_transparent = void;
    size_t operator()(std::string_view id) const {  // NOLINT(performance-noexcept-*)
      return std::hash<std::string_view>{}(id);
    }
  };
  template <typename T>
  using ById = std::unordered_map<std::string, T, IdHash, std::equal_to<>>;

  // A live request's state is in a slot of slots_ (a deque, so addresses stay put), found by
  // id through ids_. A slot is reused once its request is gone, with its generation counted
  // up: a SlotRef kept from before is then recognised as stale without reading freed memory.
  struct Slot {
    RequestState state;
    uint32_t generation = 0;
    bool live = false;
    uint32_t order_index = 0;  // where the request was put in its engine's batch order
  };
  struct SlotRef {
    uint32_t slot;
    uint32_t generation;
  };
  // The live requests of an engine's previous message, in output order. vLLM keeps its running
  // batch in order from step to step (new requests join at the end, finished ones leave), so
  // output i is most often the request after output i-1's in the previous message: one id
  // comparison finds it, where hashing the id and walking a bucket was a third of the output
  // loop. A guess that fails falls back to ids_, so any order gives the same result.
  struct BatchOrder {
    std::vector<SlotRef> previous;
    std::vector<SlotRef> current;
  };
  static constexpr int64_t kMaxOrderedEngines = 1024;  // higher engine indexes are not guessed

  Slot* Guess(const BatchOrder* order, size_t next, std::string_view request_id);
  void Erase(uint32_t slot);

  Options options_;
  ById<uint32_t> ids_;  // live request id -> slot
  std::deque<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<BatchOrder> batch_order_;  // by engine index
  ById<Parent> parents_;
  std::vector<LoraStates> lora_;  // first-seen order
};

}  // namespace vmetrics

#endif  // VMETRICS_REQUESTS_H_
