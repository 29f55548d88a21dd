// SPDX-License-Identifier: Apache-2.0
// What vmetrics sends an engine of each wire generation, against what that generation's own
// vLLM frontend sent for the same user requests (tests/fixtures/requests/: the ADD and ABORT
// bodies and what that generation's msgspec decoder read back from them).
//
// - Every capture decodes under its own generation's table with the strict decoder (msgspec's
//   array_like rules) to the fields vLLM's decoder read.
// - The strict decoder accepts and refuses other generations' bytes exactly as msgspec did
//   (the cross-decode matrix measured with each generation's own decoder), at the same path.
// - A RequestService whose engine is of that generation, given each user request with the
//   ids and clock pinned, sends the same bytes (the one exception named below).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "request_service.h"
#include "token_request.h"
#include "vmetrics/engine_request.h"
#include "vmetrics/http_server.h"
#include "vmetrics/internal/json_from_msgpack.h"
#include "vmetrics/wire_decoder.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics::frontend {
namespace {

// Ordered: a user request's objects keep their key order, as Python's dicts do.
using json = nlohmann::ordered_json;

constexpr const char* kGenerations[] = {
    "g20250927-6f5c0931", "g20251105-65ac8d8d", "g20260112-0565f1fd", "g20260204-08e09499",
    "g20260413-f72b2097", "g20260712-370b678a", "g20260812-f4e9bb01", "g20260814-6adad087"};

std::vector<json> Load(const std::string& generation) {
  std::ifstream in(std::string(VMETRICS_REQUEST_CAPTURES_DIR) + "/" + generation +
                   "_requests.jsonl");
  std::vector<json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

const WireGeneration& Gen(const std::string& name) {
  const WireGeneration* g = FindWireGeneration(name);
  EXPECT_NE(g, nullptr) << name;
  return *g;
}

json OptJson(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }

// The fields EngineCoreRequestSpec holds, named as vLLM's decoder names them.
void ExpectFields(const json& want, const EngineCoreRequestSpec& got, const RequestLayout& layout,
                  const std::string& where) {
  EXPECT_EQ(want["request_id"], got.request_id) << where;
  EXPECT_EQ(want["prompt_token_ids"], json(got.prompt_token_ids)) << where;
  EXPECT_EQ(want["arrival_time"].get<double>(), got.arrival_time) << where;
  EXPECT_EQ(want["cache_salt"], got.cache_salt ? json(*got.cache_salt) : json(nullptr)) << where;
  EXPECT_EQ(want["priority"], got.priority) << where;
  EXPECT_EQ(want["client_index"], got.client_index) << where;
  EXPECT_EQ(want["data_parallel_rank"], OptJson(got.data_parallel_rank)) << where;
  if (layout.PositionOf(RequestField::kEosTokenId) >= 0) {
    EXPECT_EQ(want["eos_token_id"], OptJson(got.eos_token_id)) << where;
  }
  if (layout.PositionOf(RequestField::kExternalReqId) >= 0) {
    EXPECT_EQ(want["external_req_id"],
              got.external_req_id.empty() ? json(nullptr) : json(got.external_req_id))
        << where;
  }
  if (want["lora_request"].is_null()) {
    EXPECT_TRUE(got.lora_name.empty()) << where;
  } else {
    EXPECT_EQ(want["lora_request"]["lora_name"], got.lora_name) << where;
    EXPECT_EQ(want["lora_request"]["lora_int_id"], got.lora_int_id) << where;
    EXPECT_EQ(want["lora_request"]["lora_path"], got.lora_path) << where;
  }
  const json& sp = want["sampling_params"];
  const SamplingParams& p = got.sampling;
  EXPECT_EQ(sp["n"], p.n) << where;
  EXPECT_EQ(sp["temperature"].get<double>(), p.temperature) << where;
  EXPECT_EQ(sp["top_p"].get<double>(), p.top_p) << where;
  EXPECT_EQ(sp["top_k"], p.top_k) << where;
  EXPECT_EQ(sp["min_p"].get<double>(), p.min_p) << where;
  EXPECT_EQ(sp["presence_penalty"].get<double>(), p.presence_penalty) << where;
  EXPECT_EQ(sp["frequency_penalty"].get<double>(), p.frequency_penalty) << where;
  EXPECT_EQ(sp["repetition_penalty"].get<double>(), p.repetition_penalty) << where;
  EXPECT_EQ(sp["seed"], OptJson(p.seed)) << where;
  EXPECT_EQ(sp["max_tokens"], OptJson(p.max_tokens)) << where;
  EXPECT_EQ(sp["min_tokens"], p.min_tokens) << where;
  EXPECT_EQ(sp["ignore_eos"], p.ignore_eos) << where;
  EXPECT_EQ(sp["logprobs"], OptJson(p.logprobs)) << where;
  EXPECT_EQ(sp["prompt_logprobs"], OptJson(p.prompt_logprobs)) << where;
  EXPECT_EQ(sp["output_kind"], p.output_kind) << where;
  EXPECT_EQ(sp["stop_token_ids"], p.stop_token_ids ? json(*p.stop_token_ids) : json(nullptr))
      << where;
  EXPECT_EQ(sp["detokenize"], p.detokenize) << where;
  if (sp.contains("_eos_token_id")) {
    EXPECT_EQ(sp["_eos_token_id"], OptJson(p.eos_token_id)) << where;
  }
  // A set: compared as one. g20250927's frontend built n > 1 children from the parameters
  // before EOS was added to their stop set (fixed upstream by #26032); vmetrics sends the stop
  // set the engine needs for min_tokens.
  const std::set<int64_t> all_stop(p.all_stop_token_ids.begin(), p.all_stop_token_ids.end());
  const bool children_without_eos =
      where.starts_with("g20250927") && where.find(" n") != std::string::npos;
  if (!children_without_eos || !sp["_all_stop_token_ids"].empty()) {
    EXPECT_EQ(sp["_all_stop_token_ids"].get<std::set<int64_t>>(), all_stop) << where;
  }
  if (sp["logit_bias"].is_null()) {
    EXPECT_FALSE(p.logit_bias.has_value()) << where;
  } else {
    ASSERT_TRUE(p.logit_bias.has_value()) << where;
    EXPECT_EQ(sp["logit_bias"].size(), p.logit_bias->size()) << where;
    for (const auto& [token, bias] : *p.logit_bias) {
      EXPECT_EQ(sp["logit_bias"][std::to_string(token)].get<double>(), bias) << where;
    }
  }
  EXPECT_EQ(sp["extra_args"].is_null(), p.extra_args.empty()) << where;
}

TEST(RequestCaptures, EveryCaptureDecodesUnderItsOwnTableAsItsDecoderReadIt) {
  int checked = 0;
  for (const char* name : kGenerations) {
    const RequestLayout& layout = Gen(name).request;
    for (const json& m : Load(name)) {
      const std::string body = Unhex(m["body_hex"]);
      const std::string where = std::string(name) + " " + m["case"].get<std::string>();
      if (m["type"] == "ABORT") {
        Result<std::vector<std::string>> ids = DecodeAbort(body);
        ASSERT_TRUE(ids.ok()) << where;
        EXPECT_EQ(json(*ids), m["decoded"]) << where;
        EXPECT_EQ(EncodeAbort(*ids), body) << where;
        continue;
      }
      Result<EngineCoreRequestSpec> got = DecodeEngineCoreRequest(body, layout);
      ASSERT_TRUE(got.ok()) << where << ": " << got.status().ToString();
      ExpectFields(m["decoded"], *got, layout, where);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 8 * 18);
}

// Which generations' decoders accepted which generations' ADDs (18 each), measured with every
// generation's own MsgpackDecoder(EngineCoreRequest), and msgspec's path of the first error.
struct Cross {
  int bytes;
  int decoder;
  int accepted;
  const char* first_error_path;  // "" when all 18 were accepted
};
constexpr Cross kMatrix[] = {
    // g20250927 and g20251105 bytes: older decoders read them; g20260204 refuses the LoRA case.
    {0, 1, 18, ""},        {0, 2, 18, ""},     {0, 3, 17, "$[7][5]"}, {0, 4, 0, "$[6]"},
    {0, 5, 0, "$[6]"},     {0, 7, 0, "$[6]"},  {1, 0, 18, ""},        {1, 3, 17, "$[7][5]"},
    {1, 4, 0, "$[6]"},     {2, 0, 18, ""},     {2, 3, 0, "$[15]"},    {2, 4, 0, "$[6]"},
    {3, 0, 17, "$[7][5]"}, {3, 2, 0, "$[15]"}, {3, 4, 0, "$[6]"},     {4, 0, 0, "$[5]"},
    {4, 3, 0, "$[5]"},     {4, 5, 0, "$[10]"}, {4, 7, 0, "$[10]"},    {5, 0, 0, "$[5]"},
    {5, 4, 0, "$[10]"},    {5, 6, 18, ""},     {5, 7, 18, ""},        {6, 4, 0, "$[10]"},
    {6, 5, 18, ""},        {7, 3, 0, "$[5]"},  {7, 4, 0, "$[10]"},    {7, 5, 18, ""},
};

TEST(RequestCaptures, TheStrictDecoderAcceptsAndRefusesAsEachGenerationsMsgspecDid) {
  for (const Cross& c : kMatrix) {
    const RequestLayout& layout = Gen(kGenerations[c.decoder]).request;
    int accepted = 0;
    std::string first_error;
    for (const json& m : Load(kGenerations[c.bytes])) {
      if (m["type"] != "ADD") continue;
      Result<EngineCoreRequestSpec> got = DecodeEngineCoreRequest(Unhex(m["body_hex"]), layout);
      if (got.ok()) {
        ++accepted;
      } else if (first_error.empty()) {
        first_error = got.status().message();
      }
    }
    const std::string where =
        std::string(kGenerations[c.bytes]) + " decoded as " + kGenerations[c.decoder];
    EXPECT_EQ(accepted, c.accepted) << where << ": " << first_error;
    if (c.accepted < 18) {
      EXPECT_NE(first_error.find(std::string("at `") + c.first_error_path + "`"), std::string::npos)
          << where << ": " << first_error;
    }
  }
}

// The serving configuration of the captures: a 4096-token model with EOS 2, 32000 tokens,
// --max-logprobs 20, LoRA adapter sql-adapter (id 1).
ServingConfig CaptureConfig() {
  ServingConfig config;
  config.max_model_len = 4096;
  config.served_model_name = "acme/dev-wire-3b";
  config.max_logprobs = 20;
  config.generation.eos_token_id = 2;
  config.generation.vocab_size = 32000;
  LoraModule lora;
  lora.name = "sql-adapter";
  lora.path = "/models/lora/sql-adapter";
  lora.lora_int_id = 1;
  config.lora_modules.push_back(lora);
  return config;
}

void ExpectRefused(HttpExchange& exchange, unsigned want, const std::string& naming,
                   const std::string& where) {
  unsigned status = 0;
  std::string type;
  std::string body;
  ASSERT_EQ(exchange.TakeAnswer(&status, &type, &body), HttpExchange::Phase::kReplied) << where;
  EXPECT_EQ(status, want) << where << ": " << body;
  EXPECT_NE(body.find(naming), std::string::npos) << where << ": " << body;
}

struct Sent {
  EngineCoreRequestType type;
  std::string body;
};

// A RequestService of one engine with the captures' configuration and clock, whose sends land
// in `sent`.
RequestService::Options CaptureOptions(std::vector<Sent>* sent) {
  RequestService::Options o;
  o.config = CaptureConfig();
  o.engine_indexes = {0};
  o.send = [sent](int, EngineCoreRequestType type, std::string body) {
    sent->push_back({type, std::move(body)});
    return Status::Ok();
  };
  o.wall_clock = [] { return 1767225600.25; };
  return o;
}

uint32_t Only(const char* name) { return uint32_t{1} << WireGenerationIndex(Gen(name)); }

std::shared_ptr<HttpExchange> Complete(RequestService& service, const std::string& body) {
  HttpRequest http;
  http.body = body;
  auto exchange = std::make_shared<HttpExchange>(nullptr);
  service.HandleCompletion(http, exchange);
  return exchange;
}

TEST(RequestCaptures, VmetricsSendsEachGenerationWhatItsOwnFrontendSent) {
  for (const char* name : kGenerations) {
    const WireGeneration& gen = Gen(name);
    // The ADDs of each user request, by case ("n3_seed#1" is child 1 of "n3_seed").
    std::map<std::string, std::vector<json>> by_case;
    std::vector<std::string> order;
    for (const json& m : Load(name)) {
      if (m["type"] != "ADD") continue;
      std::string c = m["case"];
      c = c.substr(0, c.find('#'));
      if (!by_case.contains(c)) order.push_back(c);
      by_case[c].push_back(m);
    }
    for (const std::string& c : order) {
      const std::vector<json>& adds = by_case[c];
      std::vector<Sent> sent;
      RequestService::Options o = CaptureOptions(&sent);
      // The id vLLM's frontend gave the (parent) request, as the capture has it.
      std::string id = adds[0]["decoded"]["request_id"];
      if (adds.size() > 1) id = id.substr(id.find('_') + 1);
      o.engine_request_id = [id](const std::string&) { return id; };
      RequestService service(o);
      EXPECT_EQ(service.SetEngineWire(0, Only(name)).description, gen.name);
      const json body = adds[0]["user_request"]["body"];
      auto exchange = Complete(service, body.dump());
      const std::string where = std::string(name) + " " + c;
      if (body.contains("logprobs") && gen.logprobs != LogprobsForm::kTensors) {
        // Its engines send sample logprobs as lists, which vmetrics does not read: refused.
        ExpectRefused(*exchange, 400, "logprobs", where);
        EXPECT_TRUE(sent.empty()) << where;
        service.Shutdown();
        continue;
      }
      ASSERT_EQ(sent.size(), adds.size()) << where;
      for (size_t k = 0; k < adds.size(); ++k) {
        EXPECT_EQ(sent[k].type, EngineCoreRequestType::kAdd) << where;
        const std::string want = Unhex(adds[k]["body_hex"]);
        Result<EngineCoreRequestSpec> got = DecodeEngineCoreRequest(sent[k].body, gen.request);
        ASSERT_TRUE(got.ok()) << where << ": " << got.status().ToString();
        ExpectFields(adds[k]["decoded"], *got, gen.request, where);
        // g20250927's frontend built n > 1 children from the parameters before EOS was added
        // to their stop set (fixed upstream by #26032); vmetrics sends the stop set the
        // engine needs for min_tokens, so only those bytes differ.
        if (gen.name.starts_with("g20250927") && adds.size() > 1) continue;
        EXPECT_EQ(sent[k].body, want) << where << " (ADD " << k << ")";
      }
      service.Shutdown();
    }
  }
}

// An engine whose handshake leaves g20250927, g20251105, g20260112 and g20260204 (an empty
// registration: nothing tells them apart): every user request of the captures is sent in the
// layout all four read alike, and each of the four decodes every ADD to the fields its own
// frontend would have sent (the stop set aside for g20250927's children, as above).
TEST(RequestCaptures, AnAmbiguousHandshakeGetsAddsEveryCandidateReadsAlike) {
  const char* old[] = {kGenerations[0], kGenerations[1], kGenerations[2], kGenerations[3]};
  uint32_t candidates = 0;
  for (const char* name : old) candidates |= uint32_t{1} << WireGenerationIndex(Gen(name));
  int decoded = 0;
  for (const json& m : Load(kGenerations[3])) {
    if (m["type"] != "ADD" || m["case"].get<std::string>().find('#') != std::string::npos) {
      continue;  // one request per user request
    }
    std::vector<Sent> sent;
    RequestService service(CaptureOptions(&sent));
    EXPECT_TRUE(service.SetEngineWire(0, candidates).description.starts_with("common to "));
    auto exchange = Complete(service, m["user_request"]["body"].dump());
    if (m["user_request"]["body"].contains("logprobs")) {
      // g20250927 and g20251105 send sample logprobs as lists: refused while they are possible.
      ExpectRefused(*exchange, 400, "logprobs", m["case"]);
      EXPECT_TRUE(sent.empty());
      service.Shutdown();
      continue;
    }
    ASSERT_EQ(sent.size(), 1U) << m["case"];
    for (const char* name : old) {
      const std::string where = std::string(name) + " " + m["case"].get<std::string>();
      Result<EngineCoreRequestSpec> got = DecodeEngineCoreRequest(sent[0].body, Gen(name).request);
      ASSERT_TRUE(got.ok()) << where << ": " << got.status().ToString();
      // What that generation's own frontend sent for the same request, but the id.
      for (const json& own : Load(name)) {
        if (own["case"] != m["case"]) continue;
        json want = own["decoded"];
        want["request_id"] = got->request_id;
        if (want.contains("external_req_id")) want["external_req_id"] = nullptr;
        EngineCoreRequestSpec read = *got;
        read.external_req_id.clear();
        ExpectFields(want, read, Gen(name).request, where);
        ++decoded;
      }
    }
    service.Shutdown();
  }
  EXPECT_EQ(decoded, 4 * 12);
}

// Candidates that no array reads alike (EOS at position 5 for one, arrival_time for the
// other): the request is refused with a 503 naming them and --engine-wire, and nothing is sent.
TEST(RequestCaptures, CandidatesWithoutACommonLayoutAreRefusedAndSentNothing) {
  std::vector<Sent> sent;
  RequestService service(CaptureOptions(&sent));
  EXPECT_TRUE(service.SetEngineWire(0, Only(kGenerations[3]) | Only(kGenerations[4])).refused);
  const std::string request = R"({"prompt": [1, 2, 3], "max_tokens": 4})";
  auto exchange = Complete(service, request);
  ExpectRefused(*exchange, 503, "--engine-wire", "");
  auto named = Complete(service, request);
  ExpectRefused(*named, 503, "g20260413-f72b2097, g20260204-08e09499", "");
  EXPECT_TRUE(sent.empty());
  EXPECT_EQ(service.num_live_requests(), 0U);
  // Once the engine is known, requests go out.
  EXPECT_EQ(service.SetEngineWire(0, Only(kGenerations[4])).description, kGenerations[4]);
  auto again = Complete(service, request);
  EXPECT_EQ(sent.size(), 1U);
  service.Shutdown();
}

// A request the engine's generation cannot carry is refused by name before anything is sent.
TEST(RequestCaptures, AFeatureTheEnginesGenerationLacksIsRefusedByName) {
  std::vector<Sent> sent;
  RequestService service(CaptureOptions(&sent));
  (void)service.SetEngineWire(0, Only(kGenerations[3]));
  auto exchange =
      Complete(service, R"({"prompt": [1, 2, 3], "max_tokens": 4, "thinking_token_budget": 8})");
  ExpectRefused(*exchange, 400, "thinking_token_budget", "");
  EXPECT_TRUE(sent.empty());
  service.Shutdown();
}

// vLLM's _with_kv_transfer_rejection_cleanup: a completion refused before it reaches an engine
// whose kv_transfer_params ask for a remote prefill is sent as a request the engine aborts at
// once (prompt [0], max_tokens 1, the params in extra_args, the body's request_id), so that the
// connector frees the prefill's blocks; only to generations that have abort_immediately, and
// only with a KV connector configured.
// X-Vllm-Priority and X-Session-ID reach the EngineCoreRequest as vLLM's serving code puts
// them there (ApplyRequestHeaders).
TEST(RequestHeaders, PriorityAndSessionHeadersReachTheEngineRequest) {
  const char* name = kGenerations[7];
  std::vector<Sent> sent;
  RequestService service(CaptureOptions(&sent));
  (void)service.SetEngineWire(0, Only(name));
  HttpRequest http;
  http.body = R"({"prompt":[1,2],"max_tokens":2,"priority":1})";
  http.headers = {{std::string(kPriorityHeader), "-5"},
                  {std::string(kSessionIdHeader), "conversation-9"}};
  auto exchange = std::make_shared<HttpExchange>(nullptr);
  service.HandleCompletion(http, exchange);
  ASSERT_EQ(sent.size(), 1U);
  Result<EngineCoreRequestSpec> got = DecodeEngineCoreRequest(sent[0].body, Gen(name).request);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->priority, -5);
  EXPECT_EQ(got->session_id, "conversation-9");
  service.Shutdown();
}

TEST(RemotePrefillRelease, ARefusedDecodeRequestIsSentAsAnImmediateAbort) {
  const std::string refused =
      R"({"prompt": [1, 2, 3], "max_tokens": 99999, "request_id": "req-pd-1",)"
      R"( "kv_transfer_params": {"do_remote_decode": false, "do_remote_prefill": true,)"
      R"( "remote_engine_id": "p0", "remote_block_ids": [3, 4], "remote_port": 5600}})";
  for (const char* name : {kGenerations[4], kGenerations[5], kGenerations[7]}) {
    for (const bool kv_connector : {false, true}) {
      std::vector<Sent> sent;
      RequestService::Options o = CaptureOptions(&sent);
      o.kv_connector = kv_connector;
      RequestService service(o);
      (void)service.SetEngineWire(0, Only(name));
      auto exchange = Complete(service, refused);
      ExpectRefused(*exchange, 400, "cannot be greater than max_model_len", name);
      const bool has_field = Gen(name).request.PositionOf(RequestField::kAbortImmediately) >= 0;
      if (!kv_connector || !has_field) {
        EXPECT_TRUE(sent.empty()) << name;
        continue;
      }
      ASSERT_EQ(sent.size(), 1U) << name;
      EXPECT_EQ(sent[0].type, EngineCoreRequestType::kAdd);
      Result<EngineCoreRequestSpec> got = DecodeEngineCoreRequest(sent[0].body, Gen(name).request);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_TRUE(got->abort_immediately);
      EXPECT_EQ(got->request_id, "req-pd-1");
      EXPECT_EQ(got->prompt_token_ids, (std::vector<int64_t>{0}));
      EXPECT_EQ(got->sampling.max_tokens, std::optional<int64_t>(1));
      Result<nlohmann::ordered_json> extra = protocol::MsgpackToJson(got->sampling.extra_args);
      ASSERT_TRUE(extra.ok());
      EXPECT_EQ(extra->dump(),
                R"({"kv_transfer_params":{"do_remote_decode":false,"do_remote_prefill":true,)"
                R"("remote_engine_id":"p0","remote_block_ids":[3,4],"remote_port":5600}})");
      service.Shutdown();
    }
  }
}

}  // namespace
}  // namespace vmetrics::frontend
