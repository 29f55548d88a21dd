// RequestService: completions in, EngineCoreRequests out, outputs back; see request_service.h.
#include "request_service.h"

#include <chrono>
#include <cstdio>
#include <random>
#include <utility>

namespace vmetrics::frontend {

namespace {

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kEventStream = "text/event-stream";

}  // namespace

// One HTTP completion: its choices (prompt p, sample i at index p * n + i), each an engine
// request.
struct RequestService::Completion {
  CompletionIdentity identity;
  CompletionRequest request;
  std::shared_ptr<HttpExchange> exchange;
  int64_t prompt_tokens = 0;
  std::vector<std::string> request_ids;  // per choice
  std::vector<CompletionChoice> choices;
  std::vector<bool> done;
  size_t pending = 0;             // choices not finished
  std::optional<ApiError> error;  // an engine died under one of its choices
};

RequestService::RequestService(Options options)
    : options_(std::move(options)), router_(options_.engine_indexes) {
  std::random_device rd;
  id_salt_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

RequestService::~RequestService() { Shutdown(); }

double RequestService::WallClock() const {
  if (options_.wall_clock) return options_.wall_clock();
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

size_t RequestService::num_live_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tracker_.num_live_requests();
}

size_t RequestService::num_live_completions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return completions_.size();
}

void RequestService::HandleCompletion(std::string body, std::shared_ptr<HttpExchange> exchange) {
  ParsedCompletion parsed = ParseCompletionRequest(body, options_.limits);
  if (!parsed.ok()) {
    exchange->Reply(parsed.error->status, kJson, ErrorJson(*parsed.error));
    return;
  }
  const double arrival = WallClock();
  std::vector<std::pair<int64_t, std::string>> adds;  // (engine, ADD body)
  std::string completion_id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_) {
      exchange->Reply(503, kJson,
                      ErrorJson({503, "ServiceUnavailableError", "the server is stopping"}));
      return;
    }
    auto c = std::make_unique<Completion>();
    char id[48];
    std::snprintf(id, sizeof id, "cmpl-%016llx%08llx", static_cast<unsigned long long>(id_salt_),
                  static_cast<unsigned long long>(++next_id_));
    c->identity.id = id;
    c->identity.created = static_cast<int64_t>(arrival);
    c->request = std::move(parsed.request);
    // vLLM answers with the adapter's name when the request named one.
    c->identity.model = c->request.lora ? c->request.lora->name : options_.limits.served_model_name;
    c->exchange = exchange;
    const CompletionRequest& r = c->request;
    const size_t n = static_cast<size_t>(r.n);
    c->choices.resize(r.prompts.size() * n);
    c->done.assign(c->choices.size(), false);
    c->pending = c->choices.size();
    // Choose every engine first: with none alive nothing is sent.
    std::vector<int64_t> engines;
    for (size_t k = 0; k < c->choices.size(); ++k) {
      const int64_t engine = router_.Choose();
      if (engine < 0) {
        exchange->Reply(503, kJson,
                        ErrorJson({503, "EngineDeadError", "no engine is alive to serve it"}));
        return;
      }
      engines.push_back(engine);
    }
    for (size_t p = 0; p < r.prompts.size(); ++p) {
      // vLLM's completions give prompt p the id "<completion id>-<p>".
      const std::string prompt_id = c->identity.id + "-" + std::to_string(p);
      const auto prompt_len = static_cast<int64_t>(r.prompts[p].size());
      c->prompt_tokens += prompt_len;
      for (size_t i = 0; i < n; ++i) {
        const size_t index = p * n + i;
        RequestInfo info;
        // Parallel sampling: children "<i>_<parent>" (vLLM's ParentRequest), each with n = 1.
        info.request_id = n > 1 ? std::to_string(i) + "_" + prompt_id : prompt_id;
        info.arrival_time = arrival;
        info.prompt_len = prompt_len;
        info.max_tokens = r.max_tokens;
        if (n > 1) info.parent_id = prompt_id;
        info.n = r.n;
        if (r.lora) info.lora_name = r.lora->name;
        tracker_.AddRequest(info);
        router_.Assign(info.request_id, engines[index]);
        choices_[info.request_id] = Choice{c.get(), index};
        c->request_ids.push_back(info.request_id);

        EngineCoreRequestSpec spec;
        spec.request_id = info.request_id;
        spec.prompt_token_ids = r.prompts[p];
        spec.arrival_time = arrival;
        spec.external_req_id = c->identity.id;
        if (r.lora) {
          spec.lora_name = r.lora->name;
          spec.lora_int_id = r.lora->lora_int_id;
          spec.lora_path = r.lora->path;
        }
        spec.sampling.temperature = r.temperature;
        if (r.seed) spec.sampling.seed = *r.seed + static_cast<int64_t>(i);
        spec.sampling.ignore_eos = r.ignore_eos;
        spec.sampling.max_tokens = r.max_tokens;
        spec.sampling.output_kind = 1;  // DELTA: each output carries only its new tokens
        adds.emplace_back(engines[index], EncodeEngineCoreRequest(spec));
      }
    }
    completion_id = c->identity.id;
    exchange->SetOnClientGone([this, completion_id] { AbortCompletion(completion_id); });
    if (c->request.stream) exchange->StartStream(kEventStream);
    completions_.emplace(completion_id, std::move(c));
  }
  // Outside the lock: a send never waits for the output thread, which may need the lock.
  for (auto& [engine, add] : adds) {
    TransportStatus s =
        options_.send(static_cast<int>(engine), EngineCoreRequestType::kAdd, std::move(add));
    if (!s.ok()) {
      // The engine went away between the choice and the send (its death, if it is one, is
      // handled when the client reports it). The completion cannot finish: it is answered
      // with the error, and the requests already sent elsewhere are aborted.
      std::vector<Abort> aborts;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = completions_.find(completion_id);
        if (it == completions_.end()) break;
        Completion& c = *it->second;
        c.error = ApiError{503, "EngineDeadError",
                           "cannot send to engine " + std::to_string(engine) + ": " + s.ToString()};
        for (size_t k = 0; k < c.request_ids.size(); ++k) {
          if (c.done[k]) continue;
          const std::string id = c.request_ids[k];
          const int64_t on = ForgetLocked(id);
          if (on >= 0 && on != engine) aborts.push_back({static_cast<int>(on), id});
          FinishChoiceLocked(c, k, "");  // the last one answers and frees `c`
          if (completions_.find(completion_id) == completions_.end()) break;
        }
      }
      SendAborts(std::move(aborts));
      break;
    }
  }
}

int64_t RequestService::ForgetLocked(const std::string& id) {
  tracker_.AbortRequest(id);
  const int64_t engine = router_.EngineOf(id);
  router_.Release(id);
  return engine;
}

void RequestService::FinishChoiceLocked(Completion& c, size_t index, std::string reason) {
  if (c.done[index]) return;
  c.done[index] = true;
  choices_.erase(c.request_ids[index]);
  c.choices[index].finish_reason = reason.empty() ? "error" : std::move(reason);
  if (--c.pending == 0) CompleteLocked(c);
}

void RequestService::CompleteLocked(Completion& c) {
  HttpExchange& ex = *c.exchange;
  ex.SetOnClientGone(nullptr);
  int64_t completion_tokens = 0;
  for (const CompletionChoice& choice : c.choices) {
    completion_tokens += static_cast<int64_t>(choice.token_ids.size());
  }
  if (c.request.stream) {
    if (c.error) {
      ex.Write(ErrorEvent(*c.error));
    } else if (c.request.include_usage) {
      ex.Write(UsageChunkEvent(c.identity, c.prompt_tokens, completion_tokens));
    }
    ex.Write(std::string(kDoneEvent));
    ex.End();
  } else if (c.error) {
    ex.Reply(c.error->status, kJson, ErrorJson(*c.error));
  } else {
    ex.Reply(200, kJson, CompletionResponseJson(c.identity, c.choices, c.prompt_tokens));
  }
  completions_.erase(c.identity.id);  // destroys `c`
}

void RequestService::OnOutputs(EngineCoreOutputs* m, const RecordFn& record) {
  const EngineCoreOutputs& message = *m;
  std::lock_guard<std::mutex> lock(mu_);
  if (message.scheduler_stats) router_.ObserveStats(message.engine_index, *message.scheduler_stats);
  // Tokens and finish reasons to the completions first; the tracker (which forgets finished
  // requests) after, on the same message.
  std::vector<std::pair<std::string, std::string>> finished;  // (request id, finish reason)
  for (const EngineCoreOutput& o : message.outputs) {
    auto it = choices_.find(o.request_id);
    if (it == choices_.end()) continue;
    Completion& c = *it->second.completion;
    const size_t index = it->second.index;
    std::vector<int64_t>& tokens = c.choices[index].token_ids;
    tokens.insert(tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
    std::optional<std::string> reason;
    if (o.finish_reason) reason = FinishReasonName(*o.finish_reason);
    if (c.request.stream && (!o.new_token_ids.empty() || reason)) {
      c.exchange->Write(CompletionChunkEvent(c.identity, index, o.new_token_ids, reason));
    }
    if (reason) {
      router_.Release(std::string(o.request_id));
      finished.emplace_back(std::string(o.request_id), *reason);
    }
  }
  const std::optional<IterationStats> it = tracker_.ProcessOutputs(message, WallClock());
  if (m->scheduler_stats) tracker_.UpdateSchedulerStats(&*m->scheduler_stats);
  record(message, it ? &*it : nullptr);
  // Looked up again by id: finishing one choice may complete (and free) its completion.
  for (auto& [id, reason] : finished) {
    auto choice = choices_.find(id);
    if (choice == choices_.end()) continue;
    FinishChoiceLocked(*choice->second.completion, choice->second.index, std::move(reason));
  }
  // finished_requests: the engine is done with these; any still live ended without an output
  // (an engine-side abort).
  if (message.finished_requests) {
    for (std::string_view id : *message.finished_requests) {
      auto choice = choices_.find(id);
      if (choice == choices_.end()) {
        router_.Release(std::string(id));
        continue;
      }
      ForgetLocked(std::string(id));
      FinishChoiceLocked(*choice->second.completion, choice->second.index, "abort");
    }
  }
}

void RequestService::OnEngineDead(int engine_index, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& id : router_.MarkDead(engine_index)) {
    tracker_.AbortRequest(id);
    auto choice = choices_.find(id);
    if (choice == choices_.end()) continue;
    Completion& c = *choice->second.completion;
    if (!c.error) {
      c.error = ApiError{500, "EngineDeadError",
                         "engine " + std::to_string(engine_index) + " died: " + reason};
    }
    FinishChoiceLocked(c, choice->second.index, "");
  }
}

void RequestService::AbortCompletion(const std::string& completion_id) {
  std::vector<Abort> aborts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = completions_.find(completion_id);
    if (it == completions_.end()) return;
    Completion& c = *it->second;
    for (size_t k = 0; k < c.request_ids.size(); ++k) {
      if (c.done[k]) continue;
      const int64_t engine = ForgetLocked(c.request_ids[k]);
      choices_.erase(c.request_ids[k]);
      if (engine >= 0) aborts.push_back({static_cast<int>(engine), c.request_ids[k]});
    }
    completions_.erase(it);
  }
  SendAborts(std::move(aborts));
}

void RequestService::SendAborts(std::vector<Abort> aborts) {
  std::map<int, std::vector<std::string>> by_engine;
  for (Abort& a : aborts) by_engine[a.engine_index].push_back(std::move(a.request_id));
  for (auto& [engine, ids] : by_engine) {
    (void)options_.send(engine, EngineCoreRequestType::kAbort, EncodeAbort(ids));
  }
}

void RequestService::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_) return;
  shut_down_ = true;
  while (!completions_.empty()) {
    Completion& c = *completions_.begin()->second;
    if (!c.error) c.error = ApiError{503, "ServiceUnavailableError", "the server is stopping"};
    const std::string id = c.identity.id;
    for (size_t k = 0; k < c.request_ids.size(); ++k) {
      if (c.done[k]) continue;
      ForgetLocked(c.request_ids[k]);
      FinishChoiceLocked(c, k, "");  // the last one completes and erases `c`
      if (completions_.find(id) == completions_.end()) break;
    }
    completions_.erase(id);  // in case nothing was pending
  }
}

}  // namespace vmetrics::frontend
