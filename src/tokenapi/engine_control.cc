// SPDX-License-Identifier: Apache-2.0
// Engine control routes; see engine_control.h.
#include "engine_control.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string_view>
#include <utility>

#include "json_fields.h"
#include "msgpack_from_json.h"
#include "openai_routes.h"
#include "request_service.h"
#include "vmetrics/internal/python_int.h"
#include "vmetrics/wire_decoder.h"

namespace vmetrics::frontend {

using json = nlohmann::json;

struct EngineControl::Op {
  DoneFn done;
  std::vector<EngineAnswer> answers;  // engine order
  std::map<int64_t, std::vector<Call>> plans;
  std::map<int64_t, size_t> next_call;    // per engine: the index of the next call to send
  std::map<int64_t, uint64_t> in_flight;  // per engine: the call_id it has not answered yet
  size_t remaining = 0;
  std::chrono::steady_clock::time_point deadline;
};

namespace {

constexpr unsigned kEngineFailed = 500;
constexpr unsigned kUnavailable = 503;

EngineControl::EngineAnswer Refusal(unsigned status, std::string why) {
  EngineControl::EngineAnswer a;
  a.engine_index = -1;
  a.status = status;
  a.error = std::move(why);
  return a;
}

std::string Seconds(std::chrono::milliseconds d) {
  const double s = std::chrono::duration<double>(d).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

}  // namespace

EngineControl::EngineControl(Options options) : options_(std::move(options)) {
  // Call ids as vLLM makes them (uuid1().int >> 64): unpredictable, so a reply to another
  // frontend's call (or a stale one) is not taken for ours.
  std::random_device rd;
  next_call_id_ = (uint64_t{rd()} << 32) ^ rd();
  expirer_ = std::thread([this] { ExpireLoop(); });
}

EngineControl::~EngineControl() {
  Shutdown();
  if (expirer_.joinable()) expirer_.join();
}

void EngineControl::SetEngineWire(int64_t engine_index, uint32_t candidates) {
  std::lock_guard<std::mutex> lock(mu_);
  candidates_[engine_index] = candidates;
}

void EngineControl::OnEngineReady(int64_t engine_index) {
  std::lock_guard<std::mutex> lock(mu_);
  dead_.erase(engine_index);
}

EngineControl::Send EngineControl::NextCallLocked(uint64_t op_id, int64_t engine) {
  Op& op = *ops_.at(op_id);
  size_t& next = op.next_call[engine];
  const Call& call = op.plans[engine][next++];
  const uint64_t call_id = next_call_id_++;
  pending_[call_id] = Pending{op_id, engine};
  op.in_flight[engine] = call_id;
  return Send{op_id, call_id, engine,
              EncodeUtilityCall(options_.client_index, call_id, call.method, call.args)};
}

void EngineControl::SettleLocked(uint64_t op_id, int64_t engine, EngineAnswer answer,
                                 std::vector<std::function<void()>>* finished) {
  auto it = ops_.find(op_id);
  if (it == ops_.end()) return;
  Op& op = *it->second;
  if (auto f = op.in_flight.find(engine); f != op.in_flight.end()) {
    pending_.erase(f->second);
    op.in_flight.erase(f);
  }
  answer.engine_index = engine;
  op.answers.push_back(std::move(answer));
  if (--op.remaining > 0) return;
  std::sort(op.answers.begin(), op.answers.end(), [](const EngineAnswer& a, const EngineAnswer& b) {
    return a.engine_index < b.engine_index;
  });
  finished->push_back([done = std::move(op.done), answers = std::move(op.answers)]() mutable {
    done(std::move(answers));
  });
  ops_.erase(it);
}

void EngineControl::Run(std::optional<int64_t> only, const PlanFn& plan, DoneFn done) {
  std::vector<int64_t> targets = options_.engine_indexes;
  if (only) {
    if (std::find(targets.begin(), targets.end(), *only) == targets.end()) {
      done({Refusal(400, "X-data-parallel-rank: there is no engine " + std::to_string(*only))});
      return;
    }
    targets = {*only};
  }
  if (targets.empty()) {
    done({Refusal(kUnavailable, "there is no engine")});
    return;
  }
  std::optional<EngineAnswer> refusal;
  DoneFn refused;  // `done`, when the request is refused
  std::vector<Send> sends;
  std::vector<std::function<void()>> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto op = std::make_unique<Op>();
    for (int64_t engine : targets) {
      if (stopped_) {
        refusal = Refusal(kUnavailable, "the server is stopping");
        break;
      }
      const auto c = candidates_.find(engine);
      Result<EngineControlCalls> calls =
          c == candidates_.end() ? Result<EngineControlCalls>(NewestWireGeneration().control)
                                 : ControlCallsFor(c->second);
      if (!calls.ok()) {
        refusal = Refusal(kUnavailable, "engine " + std::to_string(engine) + ": " +
                                            calls.status().message() + "; --engine-wire names it");
        break;
      }
      Result<std::vector<Call>> p = plan(*calls);
      if (!p.ok()) {
        const bool invalid = p.status().code() == StatusCode::kInvalidArgument;
        refusal = Refusal(invalid ? 400 : kUnavailable,
                          "engine " + std::to_string(engine) + ": " + p.status().message());
        break;
      }
      op->plans[engine] = std::move(*p);
    }
    if (refusal) {
      refused = std::move(done);
    } else {
      op->done = std::move(done);
      op->remaining = targets.size();
      op->deadline = std::chrono::steady_clock::now() + options_.timeout;
      const uint64_t op_id = next_op_++;
      ops_[op_id] = std::move(op);
      for (int64_t engine : targets) {
        if (dead_.contains(engine)) {
          EngineAnswer a;
          a.status = kUnavailable;
          a.error = "engine " + std::to_string(engine) + " is dead";
          SettleLocked(op_id, engine, std::move(a), &finished);
        } else if (ops_.at(op_id)->plans[engine].empty()) {
          EngineAnswer a;
          a.ok = true;
          SettleLocked(op_id, engine, std::move(a), &finished);
        } else {
          sends.push_back(NextCallLocked(op_id, engine));
        }
      }
    }
  }
  if (refused) {
    refused({std::move(*refusal)});
    return;
  }
  cv_.notify_all();  // a new deadline
  for (auto& f : finished) f();
  SendAll(std::move(sends));
}

void EngineControl::SendAll(std::vector<Send> sends) {
  std::vector<std::pair<Send, std::string>> failed;
  for (Send& s : sends) {
    Status ts =
        options_.send(static_cast<int>(s.engine_index), EngineCoreRequestType::kUtility, s.body);
    if (!ts.ok()) failed.emplace_back(std::move(s), ts.ToString());
  }
  if (failed.empty()) return;
  std::vector<std::function<void()>> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [s, why] : failed) {
      if (!pending_.contains(s.call_id)) continue;  // settled meanwhile
      EngineAnswer a;
      a.status = kUnavailable;
      a.error = "engine " + std::to_string(s.engine_index) + ": not sent: " + why;
      SettleLocked(s.op, s.engine_index, std::move(a), &finished);
    }
  }
  for (auto& f : finished) f();
}

void EngineControl::OnUtilityOutput(int64_t engine_index, const UtilityOutput& output) {
  if (!output.call_id_is_u64 && output.call_id < 0) return;  // elastic EP, fault tolerance
  const uint64_t call_id =
      output.call_id_is_u64 ? output.call_id_u64 : static_cast<uint64_t>(output.call_id);
  std::vector<Send> sends;
  std::vector<std::function<void()>> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto p = pending_.find(call_id);
    if (p == pending_.end() || p->second.engine_index != engine_index) return;
    const uint64_t op_id = p->second.op;
    pending_.erase(p);
    Op& op = *ops_.at(op_id);
    op.in_flight.erase(engine_index);
    EngineAnswer a;
    if (output.failure_message) {
      a.status = kEngineFailed;
      a.error =
          "engine " + std::to_string(engine_index) + ": " + std::string(*output.failure_message);
      SettleLocked(op_id, engine_index, std::move(a), &finished);
    } else if (Result<UtilityArg> value = DecodeUtilityResult(output.result); !value.ok()) {
      a.status = kEngineFailed;
      a.error = "engine " + std::to_string(engine_index) +
                ": an unreadable result: " + value.status().message();
      SettleLocked(op_id, engine_index, std::move(a), &finished);
    } else if (op.next_call[engine_index] < op.plans[engine_index].size()) {
      sends.push_back(NextCallLocked(op_id, engine_index));
    } else {
      a.ok = true;
      a.value = std::move(*value);
      SettleLocked(op_id, engine_index, std::move(a), &finished);
    }
  }
  for (auto& f : finished) f();
  SendAll(std::move(sends));
}

void EngineControl::OnEngineDead(int64_t engine_index, const std::string& reason) {
  std::vector<std::function<void()>> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dead_.insert(engine_index);
    std::vector<uint64_t> op_ids;
    for (const auto& [id, op] : ops_) {
      if (op->in_flight.contains(engine_index)) op_ids.push_back(id);
    }
    for (uint64_t id : op_ids) {
      EngineAnswer a;
      a.status = kUnavailable;
      a.error = "engine " + std::to_string(engine_index) + " died: " + reason;
      SettleLocked(id, engine_index, std::move(a), &finished);
    }
  }
  for (auto& f : finished) f();
}

void EngineControl::Shutdown() {
  std::vector<std::function<void()>> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    std::vector<std::pair<uint64_t, int64_t>> waiting;
    for (const auto& [id, op] : ops_) {
      for (const auto& [engine, call] : op->in_flight) waiting.emplace_back(id, engine);
    }
    for (const auto& [id, engine] : waiting) {
      EngineAnswer a;
      a.status = kUnavailable;
      a.error = "the server is stopping";
      SettleLocked(id, engine, std::move(a), &finished);
    }
  }
  cv_.notify_all();
  for (auto& f : finished) f();
}

void EngineControl::ExpireLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopped_) {
    auto earliest = std::chrono::steady_clock::time_point::max();
    for (const auto& [id, op] : ops_) earliest = std::min(earliest, op->deadline);
    if (earliest == std::chrono::steady_clock::time_point::max()) {
      cv_.wait(lock);
      continue;
    }
    if (cv_.wait_until(lock, earliest) != std::cv_status::timeout) continue;
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::pair<uint64_t, int64_t>> late;
    for (const auto& [id, op] : ops_) {
      if (op->deadline > now) continue;
      for (const auto& [engine, call] : op->in_flight) late.emplace_back(id, engine);
    }
    std::vector<std::function<void()>> finished;
    for (const auto& [id, engine] : late) {
      EngineAnswer a;
      a.status = kUnavailable;
      a.error = "engine " + std::to_string(engine) + ": no answer within " +
                Seconds(options_.timeout) + " (--engine-control-timeout)";
      SettleLocked(id, engine, std::move(a), &finished);
    }
    lock.unlock();
    for (auto& f : finished) f();
    lock.lock();
  }
}

namespace {

constexpr std::string_view kJsonType = "application/json";

// FastAPI's bool query parameter (pydantic): these words, in any case; anything else is a 400
// (vLLM answers validation errors 400 with an ErrorResponse).
std::optional<bool> QueryBool(std::string_view text) {
  std::string s(text);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* t : {"1", "on", "t", "true", "y", "yes"}) {
    if (s == t) return true;
  }
  for (const char* f : {"0", "off", "f", "false", "n", "no"}) {
    if (s == f) return false;
  }
  return std::nullopt;
}

bool IsPauseMode(std::string_view mode) {
  return mode == "abort" || mode == "wait" || mode == "keep";
}

using Call = EngineControl::Call;
using Answers = std::vector<EngineControl::EngineAnswer>;

// A route's request, checked: the engine asked for and the parsed query, or the refusal.
struct Checked {
  std::optional<int64_t> rank;
  std::optional<std::string> error;  // a 400
  std::string param;
};

Checked CheckRank(const HttpRequest& request) {
  Checked c;
  if (const std::string* v = request.header(kDataParallelRankHeader)) {
    bool overflow = false;
    const std::optional<int64_t> rank = internal::PythonIntOfText(*v, &overflow);
    if (!rank) {
      c.error = std::string(kDataParallelRankHeader) + " must be an integer, not \"" + *v + "\"";
    } else {
      c.rank = *rank;
    }
  }
  return c;
}

// Reads bool query parameter `name` (default `fallback`) into *out, or says why not.
bool ReadQueryBool(const HttpRequest& request, std::string_view name, bool fallback, bool* out,
                   Checked* c) {
  *out = fallback;
  const std::string* v = request.query_value(name);
  if (v == nullptr) return true;
  const std::optional<bool> b = QueryBool(*v);
  if (!b) {
    c->error = "query parameter " + std::string(name) + " must be a boolean, not \"" + *v + "\"";
    c->param = std::string(name);
    return false;
  }
  *out = *b;
  return true;
}

// The failures among `answers` as one message and the status to answer (503 when every failure
// is an engine that did not answer, else 500), or nullopt when all succeeded.
std::optional<std::pair<unsigned, std::string>> Failures(const Answers& answers) {
  std::string message;
  unsigned status = 0;
  for (const auto& a : answers) {
    if (a.ok) continue;
    if (!message.empty()) message += "; ";
    message += a.error;
    if (a.status == 400) return std::make_pair(400U, a.error);
    status = std::max(status, a.status == 503 ? 503U : 500U);
  }
  if (message.empty()) return std::nullopt;
  return std::make_pair(status == 503 ? 503U : 500U, message);
}

// Answers the failures among `answers` in vLLM's ErrorResponse (Failures); true when it did.
bool ReplyFailures(const std::shared_ptr<HttpExchange>& ex, const Answers& answers) {
  auto f = Failures(answers);
  if (f) ex->Reply(OpenAiErrorReply(f->first, f->second));
  return f.has_value();
}

json EngineList(const Answers& answers) {
  json engines = json::array();
  for (const auto& a : answers) engines.push_back(a.engine_index);
  return engines;
}

// The answer of a query call (is_sleeping, is_scheduler_paused): each engine's bool, the first
// engine's under `key` (vLLM's DP client returns the first engine's result).
void ReplyFlags(const std::shared_ptr<HttpExchange>& ex, const Answers& answers,
                const std::string& key, bool upstream_error_shape) {
  json per_engine = json::array();
  std::optional<bool> first;
  for (const auto& a : answers) {
    const bool* b = std::get_if<bool>(&a.value);
    if (b == nullptr) {
      const std::string why =
          "engine " + std::to_string(a.engine_index) + " answered something other than a bool";
      ex->Reply(upstream_error_shape
                    ? HttpReply{500, std::string(kJsonType), json({{"error", why}}).dump()}
                    : OpenAiErrorReply(500, why));
      return;
    }
    if (!first) first = *b;
    per_engine.push_back({{"engine_index", a.engine_index}, {key, *b}});
  }
  json body = {{key, first.value_or(false)}, {"engines", per_engine}};
  ex->Reply(200, kJsonType, body.dump());
}

HttpRoute ControlRoute(
    std::string method, std::string path, std::function<EngineControl*()> control,
    std::function<void(EngineControl&, const HttpRequest&, std::optional<int64_t>,
                       const std::shared_ptr<HttpExchange>&)>
        handle) {
  HttpRoute route;
  route.method = std::move(method);
  route.path = std::move(path);
  route.request_headers = {std::string(kDataParallelRankHeader)};
  route.error_reply = OpenAiErrorReply;
  route.handler = [control = std::move(control), handle = std::move(handle)](
                      const HttpRequest& request, const std::shared_ptr<HttpExchange>& ex) {
    EngineControl* c = control ? control() : nullptr;
    if (c == nullptr) {
      ex->Reply(OpenAiErrorReply(503, "the engines are not ready yet"));
      return;
    }
    // X-data-parallel-rank: the one engine asked for, or every engine.
    const Checked checked = CheckRank(request);
    if (checked.error) {
      ex->Reply(OpenAiErrorReply(400, *checked.error));
      return;
    }
    handle(*c, request, checked.rank, ex);
  };
  return route;
}

// Answers a 400 for `c`'s error; true when there was one.
bool RefuseInvalid(const Checked& c, const std::shared_ptr<HttpExchange>& ex) {
  if (!c.error) return false;
  ex->Reply(OpenAiErrorReply(400, *c.error));
  return true;
}

// The weight-transfer routes of dev/rlhf/api_router.py at 6adad087. The workers' methods are
// reached through collective_rpc(method, None, (), kwargs), as AsyncLLM.collective_rpc sends
// it; their JSON arguments go on as the msgpack Python's json and msgspec would make of them.
Call CollectiveRpc(std::string method, const std::optional<std::pair<std::string, Json>>& kwarg) {
  UtilityArg kwargs = nullptr;
  if (kwarg) kwargs = UtilityRaw{MsgpackMapFromJson({{kwarg->first, &kwarg->second}})};
  return Call{"collective_rpc",
              {std::move(method), nullptr, UtilityRaw{std::string("\x90", 1)}, kwargs}};
}

// The request body as vLLM's handlers read it (`await raw_request.json()`, then .get): an
// object, or a 400. An empty body is an empty object when `empty_ok` (FastAPI's embedded Body
// with a default).
std::optional<Json> BodyObject(const HttpRequest& r, bool empty_ok,
                               const std::shared_ptr<HttpExchange>& ex) {
  if (empty_ok && r.body.empty()) return Json::object();
  Json doc = Json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    ex->Reply(OpenAiErrorReply(400, "Invalid JSON format"));
    return std::nullopt;
  }
  if (!doc.is_object()) {
    ex->Reply(OpenAiErrorReply(400, "the request body must be a JSON object"));
    return std::nullopt;
  }
  if (JsonNestedDeeperThan(doc, kMaxJsonNestingDepth)) {
    ex->Reply(OpenAiErrorReply(400, "the request body nests deeper than " +
                                        std::to_string(kMaxJsonNestingDepth) + " levels"));
    return std::nullopt;
  }
  return doc;
}

// A refusal for an engine whose generation lacks the method.
Status NoSuchMethod(std::string_view method) {
  return Status::InvalidArgument("its generation has no " + std::string(method));
}

// Answers {"message": `message`} once every engine succeeded.
EngineControl::DoneFn MessageReply(const std::shared_ptr<HttpExchange>& ex, std::string message) {
  return [ex, message = std::move(message)](const Answers& answers) {
    if (ReplyFailures(ex, answers)) return;
    ex->Reply(200, kJsonType, json({{"message", message}}).dump());
  };
}

void AddWeightTransferRoutes(const std::function<EngineControl*()>& control,
                             std::vector<HttpRoute>* routes) {
  // POST /init_weight_transfer_engine {"init_info": {...}}, /update_weights {"update_info":
  // {...}}: the key is required (400 "Missing '<key>' in request body", as upstream).
  struct Keyed {
    const char* path;
    const char* key;
    const char* method;
    const char* message;
  };
  for (const Keyed k :
       {Keyed{"/init_weight_transfer_engine", "init_info", "init_weight_transfer_engine",
              "Weight transfer initialized"},
        Keyed{"/update_weights", "update_info", "update_weights", "Weights updated"}}) {
    routes->push_back(ControlRoute(
        "POST", k.path, control,
        [k](EngineControl& c, const HttpRequest& r, std::optional<int64_t> rank,
            const std::shared_ptr<HttpExchange>& ex) {
          std::optional<Json> body = BodyObject(r, false, ex);
          if (!body) return;
          const auto value = body->find(k.key);
          if (value == body->end() || value->is_null()) {
            ex->Reply(
                OpenAiErrorReply(400, std::string("Missing '") + k.key + "' in request body"));
            return;
          }
          c.Run(
              rank,
              [k, arg = *value](const EngineControlCalls& calls) -> Result<std::vector<Call>> {
                if (calls.weight_transfer < 1) return NoSuchMethod(k.method);
                return std::vector<Call>{
                    CollectiveRpc(k.method, std::make_pair(std::string(k.key), arg))};
              },
              MessageReply(ex, k.message));
        }));
  }
  // POST /start_weight_update, /start_draft_weight_update: no arguments.
  struct Bare {
    const char* path;
    const char* method;
    const char* message;
  };
  for (const Bare b : {Bare{"/start_weight_update", "start_weight_update", "Weight update started"},
                       Bare{"/start_draft_weight_update", "start_draft_weight_update",
                            "Draft weight update started"}}) {
    routes->push_back(
        ControlRoute("POST", b.path, control,
                     [b](EngineControl& c, const HttpRequest& /*request*/,
                         std::optional<int64_t> rank, const std::shared_ptr<HttpExchange>& ex) {
                       c.Run(
                           rank,
                           [b](const EngineControlCalls& calls) -> Result<std::vector<Call>> {
                             if (calls.weight_transfer < 2) return NoSuchMethod(b.method);
                             return std::vector<Call>{CollectiveRpc(b.method, std::nullopt)};
                           },
                           MessageReply(ex, b.message));
                     }));
  }
  // POST /finish_weight_update {"weight_version": str | null}: then the version is set, as
  // AsyncLLM.finish_weight_update does.
  routes->push_back(ControlRoute(
      "POST", "/finish_weight_update", control,
      [](EngineControl& c, const HttpRequest& r, std::optional<int64_t> rank,
         const std::shared_ptr<HttpExchange>& ex) {
        std::optional<Json> body = BodyObject(r, true, ex);
        if (!body) return;
        std::optional<std::string> version;
        if (const auto v = body->find("weight_version"); v != body->end() && !v->is_null()) {
          if (!v->is_string()) {
            ex->Reply(OpenAiErrorReply(400, "weight_version must be a string or null"));
            return;
          }
          version = v->get<std::string>();
        }
        c.Run(
            rank,
            [version](const EngineControlCalls& calls) -> Result<std::vector<Call>> {
              if (calls.weight_transfer < 2) return NoSuchMethod("finish_weight_update");
              std::vector<Call> plan{CollectiveRpc("finish_weight_update", std::nullopt)};
              if (version) {
                if (!calls.weight_version) return NoSuchMethod("set_weight_version");
                plan.push_back(Call{"set_weight_version", {*version}});
              }
              return plan;
            },
            MessageReply(ex, "Weight update finished"));
      }));
  // POST /update_weight_version {"new_version": str}.
  routes->push_back(ControlRoute(
      "POST", "/update_weight_version", control,
      [](EngineControl& c, const HttpRequest& r, std::optional<int64_t> rank,
         const std::shared_ptr<HttpExchange>& ex) {
        std::optional<Json> body = BodyObject(r, false, ex);
        if (!body) return;
        const auto v = body->find("new_version");
        if (v == body->end() || !v->is_string()) {
          ex->Reply(OpenAiErrorReply(400, "new_version is required and must be a string"));
          return;
        }
        const std::string version = v->get<std::string>();
        c.Run(
            rank,
            [version](const EngineControlCalls& calls) -> Result<std::vector<Call>> {
              if (!calls.weight_version) return NoSuchMethod("set_weight_version");
              return std::vector<Call>{{"set_weight_version", {version}}};
            },
            [ex, version](const Answers& answers) {
              if (ReplyFailures(ex, answers)) return;
              ex->Reply(200, kJsonType, json({{"success", true}, {"new_version", version}}).dump());
            });
      }));
  // GET /weight_info: the first engine's version, as vLLM's data-parallel client answers.
  routes->push_back(
      ControlRoute("GET", "/weight_info", control,
                   [](EngineControl& c, const HttpRequest& /*request*/, std::optional<int64_t> rank,
                      const std::shared_ptr<HttpExchange>& ex) {
                     c.Run(
                         rank,
                         [](const EngineControlCalls& calls) -> Result<std::vector<Call>> {
                           if (!calls.weight_version) return NoSuchMethod("get_weight_version");
                           return std::vector<Call>{{"get_weight_version", {}}};
                         },
                         [ex](const Answers& answers) {
                           if (ReplyFailures(ex, answers)) return;
                           json version = nullptr;
                           if (const auto* s = std::get_if<std::string>(&answers.front().value))
                             version = *s;
                           ex->Reply(200, kJsonType, json({{"weight_version", version}}).dump());
                         });
                   }));
}

}  // namespace

std::vector<HttpRoute> EngineControl::Routes(const std::function<EngineControl*()>& control) {
  std::vector<HttpRoute> routes;
  // POST /sleep?level=1&mode=abort (dev/sleep/api_router.py): level as Python's int(), mode
  // passed to the engine. An engine before sleep(level, mode) gets what its frontend sent:
  // reset_prefix_cache() then sleep(level); an explicit mode is refused for it.
  routes.push_back(ControlRoute(
      "POST", "/sleep", control,
      [](EngineControl& c, const HttpRequest& r, std::optional<int64_t> rank,
         const std::shared_ptr<HttpExchange>& ex) {
        Checked checked;
        int64_t level = 1;
        if (const std::string* v = r.query_value("level")) {
          bool overflow = false;
          const std::optional<int64_t> l = internal::PythonIntOfText(*v, &overflow);
          if (!l) checked.error = "query parameter level must be an integer, not \"" + *v + "\"";
          level = l.value_or(1);
        }
        const std::string* mode_given = r.query_value("mode");
        const std::string mode = mode_given != nullptr ? *mode_given : "abort";
        if (!IsPauseMode(mode)) {
          checked.error =
              "query parameter mode must be one of abort, wait, keep, not \"" + mode + "\"";
        }
        if (RefuseInvalid(checked, ex)) return;
        const bool explicit_mode = mode_given != nullptr;
        c.Run(
            rank,
            [level, mode,
             explicit_mode](const EngineControlCalls& calls) -> Result<std::vector<Call>> {
              if (calls.sleep_takes_mode) {
                return std::vector<Call>{{"sleep", {level, mode}}};
              }
              if (explicit_mode) {
                return Status::InvalidArgument(
                    "its generation's sleep(level) takes no mode; leave mode out");
              }
              std::vector<UtilityArg> reset_args;
              if (calls.reset_prefix_cache_flags) reset_args = {false, false};
              return std::vector<Call>{{"reset_prefix_cache", std::move(reset_args)},
                                       {"sleep", {level}}};
            },
            [ex, level, on = c.options_.on_sleep_state](const Answers& answers) {
              for (const auto& a : answers) {
                if (a.ok && on) on(a.engine_index, /*asleep=*/true, level);
              }
              if (ReplyFailures(ex, answers)) return;
              json body = {
                  {"status", "sleeping"}, {"level", level}, {"engines", EngineList(answers)}};
              ex->Reply(200, kJsonType, body.dump());
            });
      }));
  // POST /wake_up?tags=weights&tags=kv_cache: the tags given, or None for all.
  routes.push_back(
      ControlRoute("POST", "/wake_up", control,
                   [](EngineControl& c, const HttpRequest& r, std::optional<int64_t> rank,
                      const std::shared_ptr<HttpExchange>& ex) {
                     std::vector<std::string> tags;
                     for (const auto& [name, value] : r.query) {
                       if (name == "tags") tags.push_back(value);
                     }
                     UtilityArg arg = tags.empty() ? UtilityArg(nullptr) : UtilityArg(tags);
                     c.Run(
                         rank,
                         [arg](const EngineControlCalls&) -> Result<std::vector<Call>> {
                           return std::vector<Call>{{"wake_up", {arg}}};
                         },
                         [ex, on = c.options_.on_sleep_state](const Answers& answers) {
                           for (const auto& a : answers) {
                             if (a.ok && on) on(a.engine_index, /*asleep=*/false, 0);
                           }
                           if (ReplyFailures(ex, answers)) return;
                           json body = {{"status", "awake"}, {"engines", EngineList(answers)}};
                           ex->Reply(200, kJsonType, body.dump());
                         });
                   }));
  routes.push_back(
      ControlRoute("GET", "/is_sleeping", control,
                   [](EngineControl& c, const HttpRequest& /*request*/, std::optional<int64_t> rank,
                      const std::shared_ptr<HttpExchange>& ex) {
                     c.Run(
                         rank,
                         [](const EngineControlCalls&) -> Result<std::vector<Call>> {
                           return std::vector<Call>{{"is_sleeping", {}}};
                         },
                         [ex](const Answers& answers) {
                           if (ReplyFailures(ex, answers)) return;
                           ReplyFlags(ex, answers, "is_sleeping", false);
                         });
                   }));
  // The RLHF routes answer errors as {"error": "..."} (dev/rlhf/api_router.py).
  auto rlhf_failure = [](const std::shared_ptr<HttpExchange>& ex, const Answers& answers,
                         const char* what) {
    auto f = Failures(answers);
    if (!f) return false;
    const std::string message =
        f->first == 400 ? f->second : std::string("Failed to ") + what + ": " + f->second;
    ex->Reply(HttpReply{f->first, std::string(kJsonType), json({{"error", message}}).dump()});
    return true;
  };
  auto no_pause = [](const EngineControlCalls& calls) -> std::optional<Status> {
    if (calls.pause_scheduler) return std::nullopt;
    return Status::InvalidArgument(
        "its generation has no pause_scheduler (vLLM paused in its frontend then), and "
        "vmetrics does not pause in the frontend");
  };
  // POST /pause?mode=abort&wait_for_inflight_requests=false&clear_cache=true.
  routes.push_back(ControlRoute(
      "POST", "/pause", control,
      [rlhf_failure, no_pause](EngineControl& c, const HttpRequest& r, std::optional<int64_t> rank,
                               const std::shared_ptr<HttpExchange>& ex) {
        Checked checked;
        std::string mode = "abort";
        if (const std::string* v = r.query_value("mode")) mode = *v;
        if (!IsPauseMode(mode)) {
          checked.error =
              "query parameter mode must be one of abort, wait, keep, not \"" + mode + "\"";
        }
        bool wait = false;
        bool clear_cache = true;
        ReadQueryBool(r, "wait_for_inflight_requests", false, &wait, &checked);
        ReadQueryBool(r, "clear_cache", true, &clear_cache, &checked);
        if (RefuseInvalid(checked, ex)) return;
        if (wait) mode = "wait";  // the deprecated spelling of mode=wait
        c.Run(
            rank,
            [mode, clear_cache,
             no_pause](const EngineControlCalls& calls) -> Result<std::vector<Call>> {
              if (auto refused = no_pause(calls)) return *refused;
              return std::vector<Call>{{"pause_scheduler", {mode, clear_cache}}};
            },
            [ex, rlhf_failure](const Answers& answers) {
              if (rlhf_failure(ex, answers, "pause generation")) return;
              ex->Reply(200, kJsonType, json({{"status", "paused"}}).dump());
            });
      }));
  // POST /resume, GET /is_paused: one scheduler call without arguments, refused for a
  // generation without pause_scheduler, answered by `reply` unless an engine failed.
  auto scheduler_route =
      [&control, rlhf_failure, no_pause](
          const char* method, const char* path, const char* call, const char* what,
          std::function<void(const std::shared_ptr<HttpExchange>&, const Answers&)> reply) {
        return ControlRoute(
            method, path, control,
            [rlhf_failure, no_pause, call, what, reply = std::move(reply)](
                EngineControl& c, const HttpRequest& /*request*/, std::optional<int64_t> rank,
                const std::shared_ptr<HttpExchange>& ex) {
              c.Run(
                  rank,
                  [no_pause, call](const EngineControlCalls& calls) -> Result<std::vector<Call>> {
                    if (auto refused = no_pause(calls)) return *refused;
                    return std::vector<Call>{{call, {}}};
                  },
                  [ex, rlhf_failure, what, reply](const Answers& answers) {
                    if (rlhf_failure(ex, answers, what)) return;
                    reply(ex, answers);
                  });
            });
      };
  routes.push_back(
      scheduler_route("POST", "/resume", "resume_scheduler", "resume generation",
                      [](const std::shared_ptr<HttpExchange>& ex, const Answers& /*answers*/) {
                        ex->Reply(200, kJsonType, json({{"status", "resumed"}}).dump());
                      }));
  routes.push_back(
      scheduler_route("GET", "/is_paused", "is_scheduler_paused", "fetch pause status",
                      [](const std::shared_ptr<HttpExchange>& ex, const Answers& answers) {
                        ReplyFlags(ex, answers, "is_paused", true);
                      }));
  // POST /reset_prefix_cache?reset_running_requests=false&reset_external=false
  // (dev/cache/api_router.py): {"success": bool}, true when every engine reset. An engine
  // before the two flags resets with reset_prefix_cache() and reports nothing: its success is
  // the call's; setting either flag is refused for it.
  routes.push_back(ControlRoute(
      "POST", "/reset_prefix_cache", control,
      [](EngineControl& c, const HttpRequest& r, std::optional<int64_t> rank,
         const std::shared_ptr<HttpExchange>& ex) {
        Checked checked;
        bool running = false;
        bool external = false;
        ReadQueryBool(r, "reset_running_requests", false, &running, &checked);
        ReadQueryBool(r, "reset_external", false, &external, &checked);
        if (RefuseInvalid(checked, ex)) return;
        c.Run(
            rank,
            [running, external](const EngineControlCalls& calls) -> Result<std::vector<Call>> {
              if (calls.reset_prefix_cache_flags) {
                return std::vector<Call>{{"reset_prefix_cache", {running, external}}};
              }
              if (running || external) {
                return Status::InvalidArgument(
                    std::string("its generation's reset_prefix_cache() takes no ") +
                    (running ? "reset_running_requests" : "reset_external"));
              }
              return std::vector<Call>{{"reset_prefix_cache", {}}};
            },
            [ex](const Answers& answers) {
              if (ReplyFailures(ex, answers)) return;
              bool success = true;
              for (const auto& a : answers) {
                if (const bool* b = std::get_if<bool>(&a.value); b != nullptr && !*b) {
                  success = false;
                }
              }
              ex->Reply(200, kJsonType, json({{"success", success}}).dump());
            });
      }));
  AddWeightTransferRoutes(control, &routes);
  return routes;
}

std::vector<std::string> EngineControlPaths() {
  // Read from the routes, where each path is declared once.
  std::vector<std::string> paths;
  for (const HttpRoute& route : EngineControl::Routes({})) {
    if (std::find(paths.begin(), paths.end(), route.path) == paths.end()) {
      paths.push_back(route.path);
    }
  }
  return paths;
}

}  // namespace vmetrics::frontend
