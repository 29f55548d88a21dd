// SPDX-License-Identifier: Apache-2.0
// RequestTracker: vLLM's OutputProcessor statistics, step by step. The step numbers in the
// comments are those of docs/recording.md, "The per-output and per-finish algorithm".
#include <algorithm>
#include <chrono>

#include "vmetrics/requests.h"

namespace vmetrics {

RequestTracker::RequestTracker() = default;
RequestTracker::RequestTracker(Options options) : options_(std::move(options)) {}

double RequestTracker::Monotonic() const {
  if (options_.monotonic) return options_.monotonic();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool RequestTracker::AddRequest(RequestInfo info) {
  if (ids_.find(info.request_id) != ids_.end()) return false;
  if (!info.parent_id.empty()) {
    auto [it, created] = parents_.try_emplace(info.parent_id);
    if (created) {
      it->second.n = info.n;
      it->second.pending = info.n;
    }
  }
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  ids_.emplace(info.request_id, slot);
  s.state = RequestState{};
  s.state.info = std::move(info);
  s.live = true;
  return true;
}

void RequestTracker::Erase(uint32_t slot) {
  Slot& s = slots_[slot];
  ids_.erase(ids_.find(std::string_view(s.state.info.request_id)));
  s.state = RequestState{};  // its strings freed now, not when the slot is reused
  s.live = false;
  ++s.generation;
  free_slots_.push_back(slot);
}

bool RequestTracker::AbortRequest(std::string_view request_id) {
  auto it = ids_.find(request_id);
  if (it == ids_.end()) return false;
  const uint32_t slot = it->second;
  const RequestState& state = slots_[slot].state;
  LoraTransition(state, 2);
  if (!state.info.parent_id.empty()) {
    auto p = parents_.find(state.info.parent_id);
    // An aborted child appends nothing; the parent goes once no child is pending.
    if (p != parents_.end() && --p->second.pending <= 0) parents_.erase(p);
  }
  Erase(slot);
  return true;
}

const RequestState* RequestTracker::Find(std::string_view request_id) const {
  auto it = ids_.find(request_id);
  return it == ids_.end() ? nullptr : &slots_[it->second].state;
}

RequestTracker::Slot* RequestTracker::Guess(const BatchOrder* order, size_t next,
                                            std::string_view request_id) {
  if (order == nullptr || next >= order->previous.size()) return nullptr;
  const SlotRef ref = order->previous[next];
  Slot& s = slots_[ref.slot];
  if (!s.live || s.generation != ref.generation || s.state.info.request_id != request_id) {
    return nullptr;
  }
  return &s;
}

std::optional<IterationStats> RequestTracker::ProcessOutputs(const EngineCoreOutputs& message,
                                                             double iteration_timestamp) {
  if (message.outputs.empty()) return std::nullopt;
  IterationStats it;
  it.iteration_timestamp = iteration_timestamp;
  // EngineCoreOutputs.__post_init__: a 0.0 timestamp becomes the frontend's monotonic time.
  const double t = message.timestamp == 0.0 ? Monotonic() : message.timestamp;
  BatchOrder* order = nullptr;
  if (message.engine_index >= 0 && message.engine_index < kMaxOrderedEngines) {
    const auto engine = static_cast<size_t>(message.engine_index);
    if (batch_order_.size() <= engine) batch_order_.resize(engine + 1);
    order = &batch_order_[engine];
    order->current.clear();
  }
  size_t next = 0;  // the guess: where in the previous order the next output's request is
  for (const EngineCoreOutput& o : message.outputs) {
    uint32_t slot_index;
    Slot* slot = Guess(order, next, o.request_id);
    if (slot != nullptr) {
      slot_index = order->previous[next].slot;
      ++next;
    } else {
      auto found = ids_.find(o.request_id);
      if (found == ids_.end()) continue;  // 0. not live: no stats at all
      slot_index = found->second;
      slot = &slots_[slot_index];
      // Guess on from where this request was, if it was in the previous message.
      const uint32_t k = slot->order_index;
      if (order != nullptr && k < order->previous.size() && order->previous[k].slot == slot_index &&
          order->previous[k].generation == slot->generation) {
        next = k + 1;
      }
    }
    RequestState& s = slot->state;
    const auto num_new = static_cast<int64_t>(o.new_token_ids.size());
    it.num_generation_tokens += num_new;  // 1.
    // An older engine's prefill numbers, as the PrefillStats a newer one sends (only read
    // while prefilling: steps 2 and 8).
    std::optional<PrefillStats> older;
    if (s.is_prefilling && !o.prefill_stats && o.has_num_cached_tokens) {
      older = PrefillStatsOfOlderEngine(s.info.prompt_len, o.num_cached_tokens,
                                        o.num_external_computed_tokens);
    }
    const std::optional<PrefillStats>& prefill = o.prefill_stats ? o.prefill_stats : older;
    if (s.is_prefilling) {  // 2. TTFT even when no token came (quirk)
      if (prefill) it.prompt_token_stats.UpdateFromOutput(*prefill);
      const double ttft = iteration_timestamp - s.info.arrival_time;
      it.time_to_first_tokens_iter.push_back(ttft);
      s.first_token_latency = ttft;
    }
    s.num_generation_tokens += num_new;  // 3.
    if (options_.track_nans_in_logits && !s.is_corrupted && o.num_nans_in_logits > 0) {
      s.is_corrupted = true;  // 4.
    }
    if (o.events) {  // 5.
      for (const EngineCoreEvent& e : *o.events) {
        switch (e.type) {
          case EventType::kQueued:
            s.queued_ts = e.timestamp;
            LoraTransition(s, 0);
            break;
          case EventType::kScheduled:
            // Only the first SCHEDULED counts; compared with 0.0 exactly, as Python does.
            if (s.scheduled_ts == 0.0) s.scheduled_ts = e.timestamp;
            LoraTransition(s, 1);
            break;
          case EventType::kPreempted:
            it.num_preempted_reqs += 1;
            s.num_preemptions += 1;
            LoraTransition(s, 0);
            break;
        }
      }
    }
    if (s.is_prefilling) {  // 6. one ITL per output, however many tokens it carries
      s.first_token_ts = t;
    } else {
      it.inter_token_latencies_iter.push_back(t - s.last_token_ts);
    }
    s.last_token_ts = t;    // 7.
    if (s.is_prefilling) {  // 8.
      if (prefill) s.num_cached_tokens = prefill->num_cached_tokens;
      s.is_prefilling = false;
    }
    // 9. (stop strings) needs a detokenizer: not part of vmetrics.
    if (o.finish_reason) {  // 10.
      Finish(s, *o.finish_reason, it);
      Erase(slot_index);
    } else if (order != nullptr) {
      slot->order_index = static_cast<uint32_t>(order->current.size());
      order->current.push_back({slot_index, slot->generation});
    }
  }
  if (order != nullptr) std::swap(order->previous, order->current);
  return it;
}

void RequestTracker::Finish(RequestState& s, FinishReason reason, IterationStats& it) {
  FinishedRequestStats f;
  f.finish_reason = reason;
  f.request_id = s.info.request_id;
  // No guards against zero timestamps (Python has none).
  f.e2e_latency = it.iteration_timestamp - s.info.arrival_time;
  f.num_prompt_tokens = s.info.prompt_len;
  f.num_generation_tokens = s.num_generation_tokens;
  f.max_tokens_param = s.info.max_tokens;
  f.queued_time = s.scheduled_ts - s.queued_ts;
  f.prefill_time = s.first_token_ts - s.scheduled_ts;
  f.decode_time = s.last_token_ts - s.first_token_ts;
  f.inference_time = s.last_token_ts - s.scheduled_ts;
  f.mean_time_per_output_token =
      s.num_generation_tokens - 1 > 0
          ? f.decode_time / static_cast<double>(s.num_generation_tokens - 1)
          : 0.0;
  f.is_corrupted = s.is_corrupted;
  f.num_cached_tokens = s.num_cached_tokens;
  f.num_preemptions = s.num_preemptions;
  f.queued_ts = s.queued_ts;
  f.scheduled_ts = s.scheduled_ts;
  f.first_token_ts = s.first_token_ts;
  f.last_token_ts = s.last_token_ts;
  it.finished_requests.push_back(std::move(f));
  if (s.is_corrupted) it.num_corrupted_reqs += 1;
  LoraTransition(s, 2);
  if (s.info.parent_id.empty()) {
    it.max_num_generation_tokens_iter.push_back(s.num_generation_tokens);
    it.n_params_iter.push_back(1);
    return;
  }
  auto p = parents_.find(s.info.parent_id);
  if (p == parents_.end()) return;
  Parent& parent = p->second;
  parent.max_num_generation_tokens =
      std::max(parent.max_num_generation_tokens, s.num_generation_tokens);
  if (--parent.pending <= 0) {  // the last child: the parent's numbers, once
    it.max_num_generation_tokens_iter.push_back(parent.max_num_generation_tokens);
    it.n_params_iter.push_back(parent.n);
    parents_.erase(p);
  }
}

// QUEUED/PREEMPTED -> waiting, SCHEDULED -> running, finish/abort -> gone; an adapter with no
// request left is forgotten.
void RequestTracker::LoraTransition(const RequestState& state, int to) {
  const std::string& name = state.info.lora_name;
  if (name.empty()) return;
  auto entry = lora_.begin();
  while (entry != lora_.end() && entry->name != name) ++entry;
  if (entry == lora_.end()) {
    if (to == 2) return;
    lora_.push_back(LoraStates{name, {}, {}});
    entry = lora_.end() - 1;
  }
  const std::string& id = state.info.request_id;
  entry->waiting.erase(id);
  entry->running.erase(id);
  if (to == 0) entry->waiting.insert(id);
  if (to == 1) entry->running.insert(id);
  if (entry->waiting.empty() && entry->running.empty()) lora_.erase(entry);
}

std::vector<std::pair<std::string, int64_t>> RequestTracker::WaitingLoraAdapters() const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const LoraStates& l : lora_)
    out.emplace_back(l.name, static_cast<int64_t>(l.waiting.size()));
  return out;
}

std::vector<std::pair<std::string, int64_t>> RequestTracker::RunningLoraAdapters() const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const LoraStates& l : lora_)
    out.emplace_back(l.name, static_cast<int64_t>(l.running.size()));
  return out;
}

void RequestTracker::UpdateSchedulerStats(SchedulerStats* stats) const {
  using Adapters = std::vector<std::pair<std::string_view, int64_t>>;
  const auto put = [](Adapters& adapters, std::string_view name, size_t count) {
    const auto value = static_cast<int64_t>(count);
    for (auto& [key, old_value] : adapters) {
      if (key == name) {
        old_value = value;
        return;
      }
    }
    adapters.emplace_back(name, value);
  };
  for (const LoraStates& l : lora_) {
    put(stats->waiting_lora_adapters, l.name, l.waiting.size());
    put(stats->running_lora_adapters, l.name, l.running.size());
  }
}

}  // namespace vmetrics
