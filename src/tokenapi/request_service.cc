// SPDX-License-Identifier: Apache-2.0
// RequestService: token requests in, EngineCoreRequests out, outputs back; see
// request_service.h.
#include "request_service.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <utility>

#include "api_common.h"
#include "completion_api.h"
#include "generate_api.h"
#include "json_fields.h"
#include "msgpack_from_json.h"
#include "vmetrics/http_route.h"

namespace vmetrics::frontend {

namespace {

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kEventStream = "text/event-stream";

std::string Hex(uint64_t v, int digits) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(v));
  return std::string(buf).substr(0, static_cast<size_t>(digits));
}

// A 64-bit mix (splitmix64's finaliser): ids from a counter that do not look sequential.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

Json StopReasonJson(const StopReason& s) {
  switch (s.kind) {
    case StopReason::Kind::kTokenId:
      return s.token_id;
    case StopReason::Kind::kString:
      return std::string(s.text);
    case StopReason::Kind::kNone:
      break;
  }
  return nullptr;
}

// The logprob rows of one output, one per new token (nullopt where none decoded).
void AppendRows(const std::optional<Logprobs>& wire, int64_t num, size_t count,
                std::vector<std::optional<PositionLogprobs>>* out) {
  std::vector<PositionLogprobs> rows;
  if (wire) (void)DecodeLogprobRows(*wire, num, &rows);
  for (size_t i = 0; i < count; ++i) {
    if (i < rows.size()) {
      out->push_back(std::move(rows[i]));
    } else {
      out->push_back(std::nullopt);
    }
  }
}

}  // namespace

// One HTTP request: its prompts and choices (prompt p, sample i at index p * n + i), each an
// engine request.
struct RequestService::Job {
  uint64_t key = 0;
  ResponseIdentity identity;
  TokenRequest request;
  std::shared_ptr<HttpExchange> exchange;
  std::vector<PromptState> prompts;
  std::vector<std::string> external_ids;  // per prompt
  std::vector<ChoiceState> choices;
  std::vector<std::string> request_ids;  // per choice
  std::vector<bool> done;
  std::vector<ChoiceDelta> pending;  // per choice: streamed tokens not yet written
  std::vector<bool> started;         // per choice: its first chunk was written
  size_t unfinished = 0;
  std::optional<ApiError> error;  // an engine died or failed under one of its choices
};

RequestService::RequestService(Options options)
    : options_(std::move(options)),
      router_(options_.engine_indexes),
      tracker_(RequestTracker::Options{.track_nans_in_logits = options_.track_nans_in_logits}) {
  std::random_device rd;
  id_salt_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

RequestService::~RequestService() { Shutdown(); }

double RequestService::WallClock() const {
  if (options_.wall_clock) return options_.wall_clock();
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

size_t RequestService::num_live_requests() const {
  std::lock_guard<std::mutex> lock(tracker_mu_);
  return tracker_.num_live_requests();
}

size_t RequestService::num_live_completions() const {
  std::lock_guard<std::mutex> lock(jobs_mu_);
  return jobs_.size();
}

namespace {

// X-data-parallel-rank: the engine to use (vLLM's _get_data_parallel_rank: an unparsable
// value is no rank).
std::optional<int64_t> DataParallelRank(const HttpRequest& http) {
  const std::string* h = http.header(kDataParallelRankHeader);
  if (h == nullptr) return std::nullopt;
  try {
    size_t used = 0;
    const long long v = std::stoll(*h, &used);
    if (used == h->size()) return v;
  } catch (...) {
  }
  return std::nullopt;
}

// max_model_len 0: neither --max-model-len nor the engines' handshake said it.
bool RefuseWithoutContextLength(const ServingConfig& config, HttpExchange& exchange) {
  if (config.max_model_len > 0) return false;
  exchange.Reply(503, kJson,
                 ErrorJson(MakeError(503,
                                     "the model's context length is unknown (the engines' "
                                     "handshake does not report max_model_len): start vmetrics "
                                     "with --max-model-len")));
  return true;
}

// `parsed` with what the request's headers say (X-Request-Id checked, X-Session-ID and
// X-Vllm-Priority applied), read in one place for both APIs.
ParsedRequest WithHeaders(ParsedRequest parsed, const HttpRequest& http) {
  return ApplyRequestHeaders(CheckRequestIdHeader(std::move(parsed), http.header(kRequestIdHeader)),
                             http.header(kSessionIdHeader), http.header(kPriorityHeader));
}

}  // namespace

void RequestService::HandleCompletion(const HttpRequest& request,
                                      std::shared_ptr<HttpExchange> exchange) {
  if (!RefuseWithoutContextLength(options_.config, *exchange) &&
      Submit(WithHeaders(ParseCompletionRequest(request.body, options_.config), request), request,
             std::move(exchange))) {
    return;
  }
  ReleaseRemotePrefill(request);
}

void RequestService::ReleaseRemotePrefill(const HttpRequest& http) {
  // vLLM's _with_kv_transfer_rejection_cleanup (entrypoints/generate/base/serving.py at
  // 6adad087): with a KV connector configured, a completion refused before it reached an
  // engine whose kv_transfer_params ask for a remote prefill is sent as a request the engine
  // aborts at once (AsyncLLM.notify_kv_transfer_request_rejected), so that the connector frees
  // the blocks the prefill instance pinned for it.
  if (!options_.kv_connector) return;
  const Json doc = Json::parse(http.body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return;
  const auto kv = doc.find("kv_transfer_params");
  if (kv == doc.end() || !kv->is_object() || kv->empty()) return;
  const auto remote = kv->find("do_remote_prefill");
  if (remote == kv->end() || remote->is_null() || (remote->is_boolean() && !remote->get<bool>()) ||
      (remote->is_number() && remote->get<double>() == 0) ||
      (remote->is_string() && remote->get_ref<const std::string&>().empty())) {
    return;
  }
  EngineCoreRequestSpec spec;
  const auto id = doc.find("request_id");
  if (id != doc.end() && id->is_string() && !id->get_ref<const std::string&>().empty()) {
    spec.request_id = id->get<std::string>();
  } else {
    spec.request_id = Hex(Mix(id_salt_ ^ 0x5eed), 16) + Hex(Mix(id_salt_ + 0x5eed), 16);
  }
  if (CheckClientId(spec.request_id, "request_id")) return;  // as a request's own id is
  spec.prompt_token_ids = {0};
  spec.sampling.max_tokens = 1;
  spec.sampling.stop.emplace();
  spec.sampling.stop_token_ids.emplace();
  spec.sampling.bad_words.emplace();
  spec.sampling.skip_reading_prefix_cache = false;
  Json extra = Json::object();
  extra["kv_transfer_params"] = *kv;
  spec.sampling.extra_args = MsgpackFromJson(extra);
  spec.arrival_time = WallClock();
  spec.abort_immediately = true;
  const std::optional<int64_t> rank = DataParallelRank(http);
  spec.data_parallel_rank = rank;
  if (shut_down_.load()) return;
  int64_t engine = -1;
  bool known = false;  // SetEngineWire was called for it
  std::shared_ptr<const EngineRequestLayout> wire;
  {
    std::lock_guard<std::mutex> lock(engines_mu_);
    engine = ChooseLocked(rank);
    if (engine < 0) return;
    if (auto w = wires_.find(engine); w != wires_.end()) {
      known = true;
      wire = w->second.layout;
    }
  }
  const RequestLayout layout = !known ? NewestWireGeneration().request
                               : wire ? wire->view()
                                      : RequestLayout{};
  // Only generations that have the field (from g20260712): older vLLMs send nothing.
  if (layout.PositionOf(RequestField::kAbortImmediately) < 0 ||
      !CheckRequestFits(spec, layout).ok()) {
    return;
  }
  (void)options_.send(static_cast<int>(engine), EngineCoreRequestType::kAdd,
                      EncodeEngineCoreRequest(spec, layout));
}

void RequestService::HandleGenerate(const HttpRequest& request,
                                    std::shared_ptr<HttpExchange> exchange) {
  if (RefuseWithoutContextLength(options_.config, *exchange)) return;
  Submit(WithHeaders(ParseGenerateRequest(request.body, options_.config), request), request,
         std::move(exchange));
}

bool RequestService::Submit(ParsedRequest parsed, const HttpRequest& http,
                            std::shared_ptr<HttpExchange> exchange) {
  if (!parsed.ok()) {
    exchange->Reply(parsed.error->status, kJson, ErrorJson(*parsed.error));
    return false;
  }
  if (options_.on_ignored_field) {
    for (const std::string& field : parsed.ignored_fields) options_.on_ignored_field(field);
  }
  if (shut_down_.load()) {
    exchange->Reply(503, kJson, ErrorJson(MakeError(503, "the server is stopping")));
    return false;
  }
  const std::optional<int64_t> rank = DataParallelRank(http);
  const double arrival = WallClock();

  // The request, its ids and its engine requests are built by this thread alone: nothing
  // here is shared until the request is registered below.
  auto job = std::make_unique<Job>();
  Job& j = *job;
  j.key = next_id_.fetch_add(1) + 1;
  j.request = std::move(parsed.request);
  const TokenRequest& r = j.request;
  std::string base;
  if (const std::string* h = http.header(kRequestIdHeader); h != nullptr && !h->empty()) {
    base = *h;
  } else if (!r.request_id.empty()) {
    base = r.request_id;
  } else {
    base = Hex(Mix(id_salt_ ^ j.key), 16) + Hex(Mix(id_salt_ + j.key), 16);
  }
  const bool generate = r.api == TokenApi::kGenerate;
  j.identity.id = (generate ? "generate-tokens-" : "cmpl-") + base;
  j.identity.created = static_cast<int64_t>(arrival);
  // vLLM answers with the adapter's name when the request named one.
  j.identity.model = r.lora ? r.lora->name : options_.config.served_model_name;
  j.exchange = std::move(exchange);  // the job owns it; j.exchange from here on
  const size_t n = static_cast<size_t>(r.sampling.n);
  j.prompts.resize(r.prompts.size());
  j.choices.resize(r.prompts.size() * n);
  j.done.assign(j.choices.size(), false);
  j.started.assign(j.choices.size(), false);
  j.pending.resize(j.choices.size());
  j.unfinished = j.choices.size();
  std::vector<RequestInfo> infos;  // per choice
  for (size_t p = 0; p < r.prompts.size(); ++p) {
    PromptState& prompt = j.prompts[p];
    prompt.token_ids = r.prompts[p];
    if (r.sampling.prompt_logprobs) {
      prompt.has_prompt_logprobs = true;
      prompt.prompt_logprobs.assign(1, std::nullopt);  // position 0 has none
    }
    // vLLM: completions give prompt p the id "<response id>-<p>", generate the response id;
    // the engine id is that plus a unique suffix.
    const std::string external = generate ? j.identity.id : j.identity.id + "-" + std::to_string(p);
    j.external_ids.push_back(external);
    const std::string engine_id =
        options_.engine_request_id ? options_.engine_request_id(external)
                                   : external + "-" + Hex(Mix(id_salt_ * 31 + j.key * 1024 + p), 8);
    const auto prompt_len = static_cast<int64_t>(r.prompts[p].size());
    for (size_t i = 0; i < n; ++i) {
      const size_t index = p * n + i;
      RequestInfo info;
      // Parallel sampling: children "<i>_<parent>" (vLLM's ParentRequest), each with n = 1.
      info.request_id = n > 1 ? std::to_string(i) + "_" + engine_id : engine_id;
      info.arrival_time = arrival;
      info.prompt_len = prompt_len;
      info.max_tokens = r.sampling.max_tokens;
      if (n > 1) info.parent_id = engine_id;
      info.n = r.sampling.n;
      if (r.lora) info.lora_name = r.lora->name;
      j.request_ids.push_back(info.request_id);
      j.pending[index].index = index;
      j.pending[index].prompt = p;
      infos.push_back(std::move(info));
    }
  }

  // Every engine is chosen first, and each one's layout read: with none alive, or one that
  // cannot carry the request, nothing is recorded or sent.
  std::vector<int64_t> engines;
  std::map<int64_t, std::shared_ptr<const EngineRequestLayout>> wires;  // null: newest layout
  std::optional<ApiError> refusal;
  {
    std::lock_guard<std::mutex> lock(engines_mu_);
    if (rank && !router_.Has(*rank)) {
      refusal = BadRequest("data_parallel_rank " + std::to_string(*rank) + " is out of range [0, " +
                           std::to_string(options_.engine_indexes.size()) + ").");
    }
    for (size_t k = 0; !refusal && k < j.choices.size(); ++k) {
      const int64_t engine = ChooseLocked(rank);
      if (engine < 0) {
        refusal = MakeError(
            503, rank ? "engine " + std::to_string(*rank) + " (X-data-parallel-rank) is not alive"
                      : "no engine is alive to serve it");
      }
      engines.push_back(engine);
    }
    for (size_t k = 0; !refusal && k < engines.size(); ++k) {
      const int64_t engine = engines[k];
      if (wires.contains(engine)) continue;
      auto w = wires_.find(engine);
      if (w == wires_.end()) {
        wires.emplace(engine, nullptr);
      } else if (!w->second.layout) {
        refusal = MakeError(503, w->second.refusal);
      } else if (w->second.list_logprobs && (r.sampling.logprobs || r.sampling.logprob_token_ids)) {
        refusal = BadRequest("logprobs cannot be read from engine " + std::to_string(engine) +
                                 ": its wire generation sends them as lists, which this server "
                                 "does not read",
                             "logprobs");
      } else {
        wires.emplace(engine, w->second.layout);
      }
    }
  }
  if (refusal) {
    j.exchange->Reply(refusal->status, kJson, ErrorJson(*refusal));
    return false;
  }
  // Encoded outside every lock. What varies between the choices (ids, seeds, prompts) is
  // carried by every layout: one check per engine.
  std::map<int64_t, RequestLayout> layouts;
  for (const auto& [engine, wire] : wires) {
    const RequestLayout layout = wire ? wire->view() : NewestWireGeneration().request;
    const Status fits = CheckRequestFits(MakeSpec(j, 0, 0, std::string(), arrival, rank), layout);
    if (!fits.ok()) {
      const ApiError unfit = ErrorFromStatus(fits, "engine " + std::to_string(engine) + ": ");
      j.exchange->Reply(unfit.status, kJson, ErrorJson(unfit));
      return false;
    }
    layouts.emplace(engine, layout);
  }
  std::vector<std::pair<int64_t, std::string>> adds;  // (engine, ADD body)
  for (size_t index = 0; index < engines.size(); ++index) {
    const EngineCoreRequestSpec spec =
        MakeSpec(j, index / n, index % n, j.request_ids[index], arrival, rank);
    adds.emplace_back(engines[index], EncodeEngineCoreRequest(spec, layouts.at(engines[index])));
  }

  // Registered before anything is sent, so that the outputs find their request.
  const uint64_t key = j.key;
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    if (shut_down_.load()) {
      j.exchange->Reply(503, kJson, ErrorJson(MakeError(503, "the server is stopping")));
      return false;
    }
    {
      std::lock_guard<std::mutex> engines_lock(engines_mu_);
      // An engine chosen above may have died or been fenced since.
      for (int64_t engine : engines) {
        if (!router_.IsAlive(engine)) {
          refusal = MakeError(503, "engine " + std::to_string(engine) + " is not alive");
          break;
        }
      }
      for (size_t index = 0; !refusal && index < engines.size(); ++index) {
        // The stall watch counts an idle engine's silence from when it gets work.
        if (router_.InFlight(engines[index]) == 0) last_heard_[engines[index]] = MonotonicNow();
        router_.Assign(j.request_ids[index], engines[index]);
      }
    }
    if (refusal) {
      j.exchange->Reply(refusal->status, kJson, ErrorJson(*refusal));
      return false;
    }
    {
      std::lock_guard<std::mutex> tracker_lock(tracker_mu_);
      for (RequestInfo& info : infos) tracker_.AddRequest(std::move(info));
    }
    for (const std::string& external : j.external_ids) external_.emplace(external, key);
    for (size_t index = 0; index < j.request_ids.size(); ++index) {
      choices_[j.request_ids[index]] = Choice{&j, index};
    }
    j.exchange->SetOnClientGone([this, key] { AbortJob(key); });
    if (r.stream) j.exchange->StartStream(kEventStream);
    jobs_.emplace(key, std::move(job));
  }
  // Outside the lock: a send never waits for the output thread, which may need the lock.
  for (auto& [engine, add] : adds) {
    Status s = options_.send(static_cast<int>(engine), EngineCoreRequestType::kAdd, std::move(add));
    if (!s.ok()) {
      // The engine went away between the choice and the send (its death, if it is one, is
      // handled when the client reports it). The request cannot finish: it is answered with
      // the error (a 503 whatever the code: the request was fine, the way to the engine was
      // not), and the requests already sent elsewhere are aborted.
      std::vector<Abort> aborts;
      {
        std::lock_guard<std::mutex> lock(jobs_mu_);
        auto it = jobs_.find(key);
        if (it == jobs_.end()) break;
        Job& failed_job = *it->second;
        failed_job.error =
            MakeError(503, "cannot send to engine " + std::to_string(engine) + ": " + s.ToString());
        aborts = AbortJobLocked(failed_job, "");
      }
      const int64_t failed = engine;  // a structured binding: clang 14 cannot capture it
      std::erase_if(aborts, [failed](const Abort& a) { return a.engine_index == failed; });
      SendAborts(std::move(aborts));
      break;
    }
  }
  return true;
}

EngineCoreRequestSpec RequestService::MakeSpec(const Job& j, size_t prompt, size_t sample,
                                               const std::string& request_id, double arrival,
                                               std::optional<int64_t> rank) const {
  const TokenRequest& r = j.request;
  EngineCoreRequestSpec spec;
  spec.request_id = request_id;
  spec.prompt_token_ids = r.prompts[prompt];
  spec.sampling = r.sampling;
  spec.sampling.n = 1;
  if (r.sampling.n > 1 && r.sampling.seed) {
    spec.sampling.seed = *r.sampling.seed + static_cast<int64_t>(sample);
  }
  // Up to g20260204 the EOS travels in EngineCoreRequest, also with ignore_eos.
  spec.eos_token_id = options_.config.generation.eos_token_id;
  spec.arrival_time = arrival;
  spec.external_req_id = j.external_ids.size() > prompt ? j.external_ids[prompt] : "";
  if (r.lora) {
    spec.lora_name = r.lora->name;
    spec.lora_int_id = r.lora->lora_int_id;
    spec.lora_path = r.lora->path;
    spec.lora_base_model_name = options_.config.served_model_name;
  }
  spec.cache_salt = r.cache_salt;
  spec.data_parallel_rank = rank;
  spec.priority = r.priority;
  spec.session_id = r.session_id;
  return spec;
}

RequestService::EngineWireChoice RequestService::SetEngineWire(int64_t engine_index,
                                                               uint32_t candidates) {
  Result<EngineRequestLayout> layout = RequestLayoutFor(candidates);
  std::lock_guard<std::mutex> lock(engines_mu_);
  EngineWire& w = wires_[engine_index];
  w.list_logprobs = false;
  const std::span<const WireGeneration> all = WireGenerations();
  for (size_t i = 0; i < all.size(); ++i) {
    if (((candidates >> i) & 1U) != 0 && all[i].logprobs != LogprobsForm::kTensors) {
      w.list_logprobs = true;
    }
  }
  if (layout.ok()) {
    w.layout = std::make_shared<const EngineRequestLayout>(std::move(*layout));
    w.refusal.clear();
    return {.refused = false, .description = w.layout->name};
  }
  w.layout.reset();
  w.refusal = "engine " + std::to_string(engine_index) +
              " is refused requests: " + layout.status().message() +
              ". Start vmetrics with --engine-wire <generation or vLLM release> to name it";
  return {.refused = true, .description = "refused (" + layout.status().message() + ")"};
}

void RequestService::OnEngineReady(int engine_index) {
  std::lock_guard<std::mutex> lock(engines_mu_);
  router_.MarkAlive(engine_index);
  fenced_.erase(engine_index);
  last_heard_[engine_index] = MonotonicNow();
}

std::chrono::steady_clock::time_point RequestService::MonotonicNow() const {
  return options_.monotonic_clock ? options_.monotonic_clock() : std::chrono::steady_clock::now();
}

void RequestService::SetOnEngineBack(std::function<void(int engine_index)> on_engine_back) {
  std::lock_guard<std::mutex> lock(engines_mu_);
  on_engine_back_ = std::move(on_engine_back);
}

std::vector<std::pair<int, std::string>> RequestService::FenceStalled(
    std::chrono::milliseconds bound) {
  std::vector<std::pair<int, std::string>> fenced;
  std::vector<Abort> aborts;
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    std::vector<std::vector<std::string>> ids;  // per fenced engine: its requests in flight
    {
      std::lock_guard<std::mutex> engines_lock(engines_mu_);
      const auto now = MonotonicNow();
      for (int64_t engine : router_.BusyEngines()) {
        if (fenced_.contains(engine)) continue;
        const auto heard = last_heard_.find(engine);
        if (heard == last_heard_.end() || now - heard->second < bound) continue;
        const int64_t in_flight = router_.InFlight(engine);
        fenced.emplace_back(
            static_cast<int>(engine),
            "engine " + std::to_string(engine) + " stopped answering: nothing from it for " +
                std::to_string(
                    std::chrono::duration_cast<std::chrono::milliseconds>(now - heard->second)
                        .count()) +
                " ms with " + std::to_string(in_flight) + " request(s) in flight");
        fenced_.insert(engine);
        ids.push_back(router_.MarkDead(engine));
      }
    }
    {
      std::lock_guard<std::mutex> tracker_lock(tracker_mu_);
      for (const std::vector<std::string>& engine_ids : ids) {
        for (const std::string& id : engine_ids) tracker_.AbortRequest(id);
      }
    }
    for (size_t e = 0; e < fenced.size(); ++e) {
      const auto& [engine, why] = fenced[e];
      for (const std::string& id : ids[e]) {
        aborts.push_back({engine, id});
        auto choice = choices_.find(id);
        if (choice == choices_.end()) continue;
        Job& j = *choice->second.job;
        if (!j.error) j.error = MakeError(503, why);
        const uint64_t key = j.key;
        FinishChoiceLocked(j, choice->second.index, "");
        // The request's choices on other engines stop too: the answer is the error.
        if (auto still = jobs_.find(key); still != jobs_.end()) {
          std::vector<Abort> more = AbortJobLocked(*still->second, "");
          aborts.insert(aborts.end(), more.begin(), more.end());
        }
      }
    }
  }
  SendAborts(std::move(aborts));
  return fenced;
}

int64_t RequestService::ChooseLocked(std::optional<int64_t> rank) {
  if (rank) return router_.IsAlive(*rank) ? *rank : -1;
  return router_.Choose();
}

int64_t RequestService::ForgetLocked(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(tracker_mu_);
    tracker_.AbortRequest(id);
  }
  std::lock_guard<std::mutex> lock(engines_mu_);
  const int64_t engine = router_.EngineOf(id);
  router_.Release(id);
  return engine;
}

std::vector<RequestService::Abort> RequestService::AbortJobLocked(Job& j,
                                                                  const std::string& reason) {
  std::vector<Abort> aborts;
  const uint64_t key = j.key;
  for (size_t k = 0; k < j.request_ids.size(); ++k) {
    if (j.done[k]) continue;
    const std::string id = j.request_ids[k];
    const int64_t engine = ForgetLocked(id);
    if (engine >= 0) aborts.push_back({static_cast<int>(engine), id});
    FinishChoiceLocked(j, k, reason);  // the last one answers and frees `j`
    if (jobs_.find(key) == jobs_.end()) break;
  }
  return aborts;
}

void RequestService::FlushLocked(Job& j, size_t index) {
  ChoiceDelta& d = j.pending[index];
  if (d.token_ids.empty() && d.finish_reason.empty()) return;
  d.first = !j.started[index];
  j.started[index] = true;
  if (j.request.continuous_usage) {
    d.completion_tokens = static_cast<int64_t>(j.choices[index].token_ids.size());
  }
  const std::string event = j.request.api == TokenApi::kGenerate
                                ? GenerateChunkEvent(j.request, j.identity, j.prompts[0], d)
                                : CompletionChunkEvent(j.request, j.identity, j.prompts, d);
  j.exchange->Write(event);
  d.token_ids.clear();
  d.logprobs.clear();
  d.finish_reason.clear();
  d.stop_reason = nullptr;
  d.completion_tokens.reset();
  d.routed_experts.clear();
}

void RequestService::FinishChoiceLocked(Job& j, size_t index, const std::string& reason) {
  if (j.done[index]) return;
  j.done[index] = true;
  choices_.erase(j.request_ids[index]);
  j.choices[index].finish_reason = reason.empty() ? "error" : reason;
  if (j.request.stream && !reason.empty() && !j.error) {
    j.pending[index].finish_reason = reason;
    // vLLM concatenates the routing once the request finished: its last chunk carries it.
    if (j.request.api == TokenApi::kGenerate) {
      j.pending[index].routed_experts = j.choices[index].routed_experts.NpyBase64();
    }
    FlushLocked(j, index);
  }
  if (--j.unfinished == 0) CompleteLocked(j);
}

void RequestService::CompleteLocked(Job& j) {
  HttpExchange& ex = *j.exchange;
  ex.SetOnClientGone(nullptr);
  const bool generate = j.request.api == TokenApi::kGenerate;
  if (j.request.stream) {
    if (j.error) {
      ex.Write(ErrorEvent(*j.error));
    } else if (j.request.include_usage) {
      ex.Write(generate ? GenerateUsageEvent(options_.config, j.identity, j.prompts[0], j.choices)
                        : CompletionUsageEvent(options_.config, j.identity, j.prompts, j.choices));
    }
    ex.Write(std::string(kDoneEvent));
    ex.End();
  } else if (j.error) {
    ex.Reply(j.error->status, kJson, ErrorJson(*j.error));
  } else {
    ex.Reply(
        200, kJson,
        generate
            ? GenerateResponseJson(options_.config, j.request, j.identity, j.prompts[0], j.choices)
            : CompletionResponseJson(options_.config, j.request, j.identity, j.prompts, j.choices));
  }
  for (const std::string& external : j.external_ids) {
    for (auto [it, end] = external_.equal_range(external); it != end; ++it) {
      if (it->second == j.key) {
        external_.erase(it);
        break;
      }
    }
  }
  jobs_.erase(j.key);  // destroys `j`
}

std::optional<IterationStats> RequestService::Track(EngineCoreOutputs* m,
                                                    uint64_t /*message_number*/) {
  const EngineCoreOutputs& message = *m;
  settling_.clear();
  settling_back_ = nullptr;
  {
    std::lock_guard<std::mutex> lock(engines_mu_);
    last_heard_[message.engine_index] = MonotonicNow();
    if (fenced_.erase(message.engine_index) != 0) {
      // A fenced engine answers again: it takes requests again.
      router_.MarkAlive(message.engine_index);
      settling_back_ = on_engine_back_;
    }
    if (message.scheduler_stats)
      router_.ObserveStats(message.engine_index, *message.scheduler_stats);
  }
  // Tokens and finish reasons to the requests first; the tracker (which forgets finished
  // requests) after, on the same message. A stats-only message concerns no request.
  if (!message.outputs.empty()) {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    for (const EngineCoreOutput& o : message.outputs) {
      auto it = choices_.find(o.request_id);
      if (it == choices_.end()) continue;
      Job& j = *it->second.job;
      const size_t index = it->second.index;
      const TokenRequest& r = j.request;
      const size_t p = index / static_cast<size_t>(r.sampling.n);
      ChoiceState& c = j.choices[index];
      PromptState& prompt = j.prompts[p];
      c.token_ids.insert(c.token_ids.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      const bool wants_logprobs = r.sampling.logprobs || r.sampling.logprob_token_ids;
      std::vector<std::optional<PositionLogprobs>> rows;
      if (wants_logprobs) {
        const int64_t num = r.sampling.logprob_token_ids
                                ? static_cast<int64_t>(r.sampling.logprob_token_ids->size())
                                : *r.sampling.logprobs;
        AppendRows(o.new_logprobs, num, o.new_token_ids.size(), &rows);
        c.logprobs.insert(c.logprobs.end(), rows.begin(), rows.end());
      }
      // Prompt logprobs: each sample of a prompt is scored alike; the first sample's count.
      if (prompt.has_prompt_logprobs && index % static_cast<size_t>(r.sampling.n) == 0 &&
          o.new_prompt_logprobs_tensors) {
        std::vector<PositionLogprobs> prompt_rows;
        if (DecodeLogprobRows(*o.new_prompt_logprobs_tensors, *r.sampling.prompt_logprobs,
                              &prompt_rows)) {
          for (PositionLogprobs& row : prompt_rows)
            prompt.prompt_logprobs.emplace_back(std::move(row));
        }
      }
      if (o.routed_experts) c.routed_experts.Append(*o.routed_experts);
      if (o.new_sampling_mask) c.sampling_mask.Append(*o.new_sampling_mask);
      if (!o.spec_decode_metrics.empty() &&
          options_.config.spec_decode_metrics != SpecDecodeMetricsLevel::kNone) {
        // Checked by the decoder: decoding again cannot fail.
        RequestSpecDecodeMetrics metrics;
        if (DecodeSpecDecodeMetrics(o.spec_decode_metrics, &metrics).ok()) {
          c.spec_decode = std::move(metrics);
        }
      }
      if (o.prefill_stats && !prompt.cached_tokens) {
        prompt.cached_tokens = o.prefill_stats->num_cached_tokens;
      }
      if (!o.kv_transfer_params.empty() && prompt.kv_transfer_params.empty()) {
        prompt.kv_transfer_params.assign(o.kv_transfer_params);
      }
      if (o.stop_reason.kind != StopReason::Kind::kNone)
        c.stop_reason = StopReasonJson(o.stop_reason);
      std::optional<std::string> reason;
      if (o.finish_reason) reason = FinishReasonName(*o.finish_reason);
      if (r.stream) {
        ChoiceDelta& d = j.pending[index];
        d.token_ids.insert(d.token_ids.end(), o.new_token_ids.begin(), o.new_token_ids.end());
        d.logprobs.insert(d.logprobs.end(), rows.begin(), rows.end());
        if (o.stop_reason.kind != StopReason::Kind::kNone) d.stop_reason = c.stop_reason;
        // stream_interval: tokens are batched; the first chunk and the last go at once.
        const auto interval = static_cast<size_t>(r.sampling.stream_interval.value_or(1));
        if (!reason && (!j.started[index] || d.token_ids.size() >= interval)) {
          FlushLocked(j, index);
        }
      }
      if (reason) settling_.emplace_back(std::string(o.request_id), *reason);
    }
  }
  if (!settling_.empty()) {
    std::lock_guard<std::mutex> lock(engines_mu_);
    for (const auto& [id, reason] : settling_) router_.Release(id);
  }
  std::optional<IterationStats> it;
  {
    std::lock_guard<std::mutex> lock(tracker_mu_);
    it = tracker_.ProcessOutputs(message, WallClock());
    if (m->scheduler_stats) tracker_.UpdateSchedulerStats(&*m->scheduler_stats);
  }
  // --enable-per-request-metrics: the finished requests' timestamps, before Settle answers
  // them (jobs_mu_ after tracker_mu_ is released: the two are never held together).
  if (it && options_.config.enable_per_request_metrics && !it->finished_requests.empty()) {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    for (const FinishedRequestStats& f : it->finished_requests) {
      auto choice = choices_.find(f.request_id);
      if (choice == choices_.end()) continue;
      choice->second.job->choices[choice->second.index].timestamps =
          RequestTimestamps{.queued_ts = f.queued_ts,
                            .scheduled_ts = f.scheduled_ts,
                            .first_token_ts = f.first_token_ts,
                            .last_token_ts = f.last_token_ts};
    }
  }
  return it;
}

void RequestService::Settle(const EngineCoreOutputs& message) {
  std::vector<Abort> aborts;
  if (!settling_.empty() || (message.finished_requests && !message.finished_requests->empty())) {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    // Looked up again by id: finishing one choice may complete (and free) its request.
    for (auto& [id, reason] : settling_) {
      auto choice = choices_.find(id);
      if (choice == choices_.end()) continue;
      Job& j = *choice->second.job;
      if (reason == "error") {
        // vLLM's _raise_if_error: the whole answer is a 500; the other choices stop.
        if (!j.error) j.error = MakeError(500, "Internal server error");
        const uint64_t key = j.key;
        FinishChoiceLocked(j, choice->second.index, "");
        auto still = jobs_.find(key);
        if (still != jobs_.end()) {
          std::vector<Abort> more = AbortJobLocked(*still->second, "");
          aborts.insert(aborts.end(), more.begin(), more.end());
        }
        continue;
      }
      FinishChoiceLocked(j, choice->second.index, reason);
    }
    // finished_requests: the engine is done with these; any still live ended without an output
    // (an engine-side abort).
    if (message.finished_requests) {
      for (std::string_view id : *message.finished_requests) {
        auto choice = choices_.find(id);
        if (choice == choices_.end()) {
          std::lock_guard<std::mutex> engines_lock(engines_mu_);
          router_.Release(std::string(id));
          continue;
        }
        ForgetLocked(std::string(id));
        FinishChoiceLocked(*choice->second.job, choice->second.index, "abort");
      }
    }
  }
  settling_.clear();
  SendAborts(std::move(aborts));
  if (settling_back_) {
    std::function<void(int)> back = std::move(settling_back_);
    settling_back_ = nullptr;
    back(static_cast<int>(message.engine_index));
  }
}

void RequestService::OnOutputs(EngineCoreOutputs* message, const RecordFn& record) {
  const std::optional<IterationStats> it = Track(message, 0);
  record(*message, it ? &*it : nullptr);
  Settle(*message);
}

void RequestService::OnEngineDead(int engine_index, const std::string& reason) {
  std::lock_guard<std::mutex> lock(jobs_mu_);
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> engines_lock(engines_mu_);
    ids = router_.MarkDead(engine_index);
  }
  {
    std::lock_guard<std::mutex> tracker_lock(tracker_mu_);
    for (const std::string& id : ids) tracker_.AbortRequest(id);
  }
  for (const std::string& id : ids) {
    auto choice = choices_.find(id);
    if (choice == choices_.end()) continue;
    Job& j = *choice->second.job;
    // vLLM answers an EngineDeadError with a 500 InternalServerError.
    if (!j.error) {
      j.error = MakeError(500, "engine " + std::to_string(engine_index) + " died: " + reason);
    }
    FinishChoiceLocked(j, choice->second.index, "");
  }
}

void RequestService::AbortJob(uint64_t key) {
  std::vector<Abort> aborts;
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    auto it = jobs_.find(key);
    if (it == jobs_.end()) return;
    Job& j = *it->second;
    for (size_t k = 0; k < j.request_ids.size(); ++k) {
      if (j.done[k]) continue;
      const int64_t engine = ForgetLocked(j.request_ids[k]);
      choices_.erase(j.request_ids[k]);
      if (engine >= 0) aborts.push_back({static_cast<int>(engine), j.request_ids[k]});
    }
    for (const std::string& external : j.external_ids) {
      for (auto [e, end] = external_.equal_range(external); e != end; ++e) {
        if (e->second == key) {
          external_.erase(e);
          break;
        }
      }
    }
    jobs_.erase(it);
  }
  SendAborts(std::move(aborts));
}

void RequestService::HandleAbortRequests(const HttpRequest& request,
                                         const std::shared_ptr<HttpExchange>& exchange) {
  const Json doc = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    exchange->Reply(400, kJson, ErrorJson(BadRequest("JSON decode error: the body is not JSON")));
    return;
  }
  if (!doc.is_object() || !doc.contains("request_ids")) {
    exchange->Reply(400, kJson,
                    ErrorJson(BadRequest("Missing 'request_ids' in request body", "request_ids")));
    return;
  }
  const Json& ids = doc["request_ids"];
  if (!ids.is_array() ||
      !std::all_of(ids.begin(), ids.end(), [](const Json& v) { return v.is_string(); })) {
    exchange->Reply(400, kJson,
                    ErrorJson(BadRequest("request_ids must be a list of strings", "request_ids")));
    return;
  }
  std::vector<Abort> aborts;
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    for (const Json& id : ids) {
      const std::string& external = id.get_ref<const std::string&>();
      // Every request in flight under that external id (ids may be reused).
      std::vector<uint64_t> keys;
      for (auto [it, end] = external_.equal_range(external); it != end; ++it) {
        keys.push_back(it->second);
      }
      for (uint64_t key : keys) {
        auto job = jobs_.find(key);
        if (job == jobs_.end()) continue;
        Job& j = *job->second;
        const size_t n = static_cast<size_t>(j.request.sampling.n);
        std::vector<size_t> indexes;  // the choices of the prompts with that id
        for (size_t p = 0; p < j.external_ids.size(); ++p) {
          if (j.external_ids[p] != external) continue;
          for (size_t k = p * n; k < (p + 1) * n; ++k) {
            if (!j.done[k]) indexes.push_back(k);
          }
        }
        for (size_t k : indexes) {
          const std::string engine_id = j.request_ids[k];
          const int64_t engine = ForgetLocked(engine_id);
          if (engine >= 0) aborts.push_back({static_cast<int>(engine), engine_id});
          FinishChoiceLocked(j, k, "abort");  // the last one completes and frees `j`
          if (jobs_.find(key) == jobs_.end()) break;
        }
      }
    }
  }
  SendAborts(std::move(aborts));
  exchange->Reply(200, "", "");
}

void RequestService::SendAborts(std::vector<Abort> aborts) const {
  std::map<int, std::vector<std::string>> by_engine;
  for (Abort& a : aborts) by_engine[a.engine_index].push_back(std::move(a.request_id));
  for (auto& [engine, ids] : by_engine) {
    (void)options_.send(engine, EngineCoreRequestType::kAbort, EncodeAbort(ids));
  }
}

void RequestService::Shutdown() {
  std::vector<Abort> aborts;
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    if (shut_down_.exchange(true)) return;
    while (!jobs_.empty()) {
      Job& j = *jobs_.begin()->second;
      const uint64_t key = j.key;
      if (!j.error) j.error = MakeError(503, "the server is stopping");
      std::vector<Abort> more = AbortJobLocked(j, "");
      aborts.insert(aborts.end(), more.begin(), more.end());
      jobs_.erase(key);  // in case nothing was pending
    }
  }
  // The engines stop computing for nobody: the ABORTs leave before the engine client closes
  // (its input socket lingers for them, EngineCoreClient::Stop).
  SendAborts(std::move(aborts));
}

}  // namespace vmetrics::frontend
