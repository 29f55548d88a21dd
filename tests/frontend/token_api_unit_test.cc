// SPDX-License-Identifier: Apache-2.0
// The pieces of the token APIs without a server: request JSON -> msgpack as vLLM's Python
// frontend encodes it (kv_transfer_params), logprob rows decoded with vLLM's dict semantics,
// the generate request parser against vLLM's test_protocol.py, the error types per status.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api_common.h"
#include "api_error.h"
#include "completion_api.h"
#include "generate_api.h"
#include "json_fields.h"
#include "logprobs.h"
#include "msgpack_from_json.h"
#include "vllm_request_fields.h"
#include "vmetrics/engine_request.h"
#include "vmetrics/internal/python_int.h"

namespace vmetrics::frontend {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

// Every kind of JSON value as msgspec writes it: ints in their smallest encoding (unsigned
// formats for non-negative values), floats always float64 (1.0 stays a float), maps in the
// JSON's key order.
TEST(MsgpackFromJson, EncodesAsPythonsFrontendDoes) {
  const Json v = Json::parse(
      R"({"t":true,"i":[300,-7,-200],"f":1.0,"n":null,"b":9223372036854775807,"s":"x","m":{}})");
  const std::string expected =
      Bytes({0x87, 0xa1, 't',  0xc3, 0xa1, 'i',  0x93, 0xcd, 0x01, 0x2c, 0xf9, 0xd1,
             0xff, 0x38, 0xa1, 'f',  0xcb, 0x3f, 0xf0, 0,    0,    0,    0,    0,
             0,    0xa1, 'n',  0xc0, 0xa1, 'b',  0xcf, 0x7f, 0xff, 0xff, 0xff, 0xff,
             0xff, 0xff, 0xff, 0xa1, 's',  0xa1, 'x',  0xa1, 'm',  0x80});
  EXPECT_EQ(MsgpackFromJson(v), expected);
  // And back, as the response renders what the engine returned: the same JSON text.
  EXPECT_EQ(MsgpackValueJson(expected).dump(), v.dump());
}

// The engine request carries kv_transfer_params inside SamplingParams.extra_args.
TEST(MsgpackFromJson, KvTransferParamsReachTheEngineRequest) {
  ServingConfig config;
  config.served_model_name = "m";
  ParsedRequest p = ParseGenerateRequest(
      R"({"token_ids":[1,2],"sampling_params":{"max_tokens":2},)"
      R"("kv_transfer_params":{"do_remote_prefill":true,"remote_block_ids":[4,5]}})",
      config);
  ASSERT_TRUE(p.ok()) << p.error->message;
  const Json kv = Json::parse(R"({"do_remote_prefill":true,"remote_block_ids":[4,5]})");
  EXPECT_EQ(p.request.sampling.extra_args,
            Bytes({0x81, 0xb2}) + "kv_transfer_params" + MsgpackFromJson(kv));
  EngineCoreRequestSpec spec;
  spec.request_id = "r";
  spec.prompt_token_ids = {1, 2};
  spec.sampling = p.request.sampling;
  const std::string wire = EncodeEngineCoreRequest(spec);
  Result<EngineCoreRequestSpec> back = DecodeEngineCoreRequest(wire);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->sampling.extra_args, p.request.sampling.extra_args);
  EXPECT_FALSE(back->sampling.detokenize);  // a tokens-only server
}

// A JSON object `depth` levels deep, the object counted: {"a":[[...[]...]]}.
std::string Nested(size_t depth) {
  return "{\"a\":" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
}

// nlohmann's parser keeps its own stack and its destructor flattens nested values onto the heap,
// and the encoder writes with an explicit stack: 100,000 levels (200 kB) neither recurse nor
// overflow the stack.
TEST(MsgpackFromJson, HundredThousandLevelsNeedNoStack) {
  constexpr size_t kDepth = 100000;
  const std::string text = std::string(kDepth, '[') + std::string(kDepth, ']');
  const Json v = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(v.is_array());
  EXPECT_TRUE(JsonNestedDeeperThan(v, kMaxJsonNestingDepth));
  EXPECT_FALSE(JsonNestedDeeperThan(v, kDepth));
  EXPECT_TRUE(JsonNestedDeeperThan(v, kDepth - 1));
  const std::string packed = MsgpackFromJson(v);
  ASSERT_EQ(packed.size(), kDepth);  // fixarray of one, ..., the innermost empty
  EXPECT_EQ(packed.find_first_not_of('\x91'), kDepth - 1);
  EXPECT_EQ(packed.back(), '\x90');
}

TEST(JsonNestedDeeperThan, CountsArraysAndObjectsOnTheDeepestPath) {
  EXPECT_FALSE(JsonNestedDeeperThan(Json(1), 0));
  EXPECT_FALSE(JsonNestedDeeperThan(Json::parse("{}"), 1));
  EXPECT_TRUE(JsonNestedDeeperThan(Json::parse("{}"), 0));
  const Json v = Json::parse(R"({"a":1,"b":[2,{"c":[]}],"d":{}})");
  EXPECT_FALSE(JsonNestedDeeperThan(v, 4));
  EXPECT_TRUE(JsonNestedDeeperThan(v, 3));
  EXPECT_FALSE(
      JsonNestedDeeperThan(Json::parse(Nested(kMaxJsonNestingDepth)), kMaxJsonNestingDepth));
  EXPECT_TRUE(
      JsonNestedDeeperThan(Json::parse(Nested(kMaxJsonNestingDepth + 1)), kMaxJsonNestingDepth));
}

// Every JSON field that reaches an engine as msgpack is accepted at kMaxJsonNestingDepth levels
// and refused one deeper, and 58,000 levels (the depth that overflowed the stack of a recursive
// encoder) are refused the same way: a 400 naming the field.
TEST(ParseTokenRequest, NestedFieldsAreAcceptedAtTheDepthLimitAndRefusedPastIt) {
  ServingConfig config;
  config.served_model_name = "m";
  config.max_model_len = 100;
  for (const char* field : {"kv_transfer_params", "ec_transfer_params"}) {
    for (const bool generate : {false, true}) {
      auto parse = [&](size_t depth) {
        const std::string value = std::string("\"") + field + "\":" + Nested(depth);
        return generate ? ParseGenerateRequest(
                              R"({"token_ids":[1],"sampling_params":{},)" + value + "}", config)
                        : ParseCompletionRequest(R"({"prompt":[1],)" + value + "}", config);
      };
      const std::string what = std::string(field) + (generate ? " (generate)" : " (completions)");
      ParsedRequest at = parse(kMaxJsonNestingDepth);
      ASSERT_TRUE(at.ok()) << what << ": " << at.error->message;
      EXPECT_NE(at.request.sampling.extra_args.find(field), std::string::npos) << what;
      for (const size_t depth : {kMaxJsonNestingDepth + 1, size_t{58000}}) {
        ParsedRequest past = parse(depth);
        ASSERT_FALSE(past.ok()) << what << " at " << depth;
        EXPECT_EQ(past.error->status, 400) << what;
        EXPECT_EQ(past.error->param, field) << what;
        EXPECT_EQ(past.error->message, std::string(field) + " is nested more than 64 levels deep")
            << what;
      }
    }
  }
  // generate's sampling_params.extra_args goes to the engine as it is.
  auto generate = [&](size_t depth) {
    return ParseGenerateRequest(
        R"({"token_ids":[1],"sampling_params":{"extra_args":)" + Nested(depth) + "}}", config);
  };
  ASSERT_TRUE(generate(kMaxJsonNestingDepth).ok());
  for (const size_t depth : {kMaxJsonNestingDepth + 1, size_t{58000}}) {
    ParsedRequest past = generate(depth);
    ASSERT_FALSE(past.ok()) << depth;
    EXPECT_EQ(past.error->status, 400);
    EXPECT_EQ(past.error->param, "sampling_params.extra_args");
  }
  // vllm_xargs takes scalars and lists only; a deep value is refused by its depth first.
  ParsedRequest xargs =
      ParseCompletionRequest(R"({"prompt":[1],"vllm_xargs":)" + Nested(58000) + "}", config);
  ASSERT_FALSE(xargs.ok());
  EXPECT_EQ(xargs.error->param, "vllm_xargs");
}

// Ids a client gives go to the engine as msgpack str: valid UTF-8, at most 512 bytes, no
// control characters; a 400 naming the field otherwise.
TEST(PythonIntOfText, ReadsWhatPythonsIntReads) {
  bool overflow = false;
  for (const auto& [text, value] :
       std::vector<std::pair<std::string, int64_t>>{{"5", 5},
                                                    {" -7\t", -7},
                                                    {"+3", 3},
                                                    {"1_000", 1000},
                                                    {"007", 7},
                                                    {"9223372036854775807", INT64_MAX},
                                                    {"-9223372036854775808", INT64_MIN}}) {
    EXPECT_EQ(internal::PythonIntOfText(text, &overflow), value) << text;
    EXPECT_FALSE(overflow) << text;
  }
  for (const char* text : {"", " ", "x", "1.5", "_1", "1_", "1__0", "0x10", "--1", "1e3"}) {
    EXPECT_EQ(internal::PythonIntOfText(text, &overflow), std::nullopt) << text;
    EXPECT_FALSE(overflow) << text;
  }
  for (const char* text : {"9223372036854775808", "-9223372036854775809", "99999999999999999999"}) {
    EXPECT_EQ(internal::PythonIntOfText(text, &overflow), std::nullopt) << text;
    EXPECT_TRUE(overflow) << text;
  }
}

// X-Session-ID and X-Vllm-Priority as GenerateBaseServing reads them (6adad087): the body's
// session_id first, then the header, then vllm_xargs; the priority header over the body's on
// completions only, ignored when int() cannot read it.
TEST(ApplyRequestHeaders, SessionAndPriorityAsVllmsServingReadsThem) {
  ServingConfig config;
  const std::string header_sid = "sess-h";
  auto completion = [&](const std::string& body, const std::string* sid, const std::string* prio) {
    return ApplyRequestHeaders(ParseCompletionRequest(body, config), sid, prio);
  };
  EXPECT_EQ(
      completion(R"({"prompt":[1],"session_id":"b"})", &header_sid, nullptr).request.session_id,
      "b");
  EXPECT_EQ(completion(R"({"prompt":[1],"vllm_xargs":{"session_id":"x"}})", &header_sid, nullptr)
                .request.session_id,
            "sess-h");
  EXPECT_EQ(completion(R"({"prompt":[1],"vllm_xargs":{"session_id":"x"}})", nullptr, nullptr)
                .request.session_id,
            "x");
  EXPECT_EQ(completion(R"({"prompt":[1],"vllm_xargs":{"session_id":""}})", nullptr, nullptr)
                .request.session_id,
            std::nullopt);
  const std::string bad_sid = "a\x01b";
  const ParsedRequest refused = completion(R"({"prompt":[1]})", &bad_sid, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error->param, "X-Session-ID");

  const std::string p7 = " 7 ", junk = "high", huge = "9223372036854775808";
  EXPECT_EQ(completion(R"({"prompt":[1],"priority":2})", &p7, nullptr).request.priority, 2)
      << "the session header is not the priority";
  EXPECT_EQ(completion(R"({"prompt":[1],"priority":2})", nullptr, &p7).request.priority, 7);
  EXPECT_EQ(completion(R"({"prompt":[1],"priority":2})", nullptr, &junk).request.priority, 2);
  const ParsedRequest too_big = completion(R"({"prompt":[1]})", nullptr, &huge);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error->param, "X-Vllm-Priority");

  // Generate: the session from the header only; no priority header.
  const ParsedRequest g = ApplyRequestHeaders(
      ParseGenerateRequest(R"({"token_ids":[1],"sampling_params":{},"priority":3})", config),
      &header_sid, &p7);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g.request.session_id, "sess-h");
  EXPECT_EQ(g.request.priority, 3);
}

TEST(CheckClientId, RefusesWhatAnEngineCouldNotDecodeOrShouldNotHold) {
  EXPECT_FALSE(CheckClientId("req-1", "request_id"));
  EXPECT_FALSE(CheckClientId("r\xc3\xa9q", "request_id"));  // é
  EXPECT_FALSE(CheckClientId(std::string(kMaxClientIdBytes, 'a'), "request_id"));
  struct Case {
    std::string value, message;
  };
  for (const Case& c : std::vector<Case>{
           {std::string(kMaxClientIdBytes + 1, 'a'), "x must be at most 512 bytes, got 513."},
           {"a\xff", "x must be valid UTF-8."},
           {"\xc0\xaf", "x must be valid UTF-8."},      // overlong '/'
           {"\xed\xa0\x80", "x must be valid UTF-8."},  // a surrogate
           {"a\nb", "x must not contain control characters."},
           {std::string("a\0b", 3), "x must not contain control characters."},
           {"a\x7f", "x must not contain control characters."}}) {
    MaybeError e = CheckClientId(c.value, "x");
    ASSERT_TRUE(e) << c.message;
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(e->param, "x");
    EXPECT_EQ(e->message, c.message);
  }
}

// The body's request_id and session_id pass the same check; JSON strings are UTF-8 already
// (nlohmann's parser refuses invalid bytes and unpaired surrogate escapes), so length and
// control characters are what remains.
TEST(ParseTokenRequest, ClientIdsInTheBodyAreBounded) {
  ServingConfig config;
  config.served_model_name = "m";
  config.max_model_len = 100;
  const std::string long_id(kMaxClientIdBytes + 1, 'a');
  const std::string ok_id(kMaxClientIdBytes, 'a');
  struct Case {
    std::string body, param;
    bool generate;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"prompt":[1],"request_id":")" + long_id + "\"}", "request_id", false},
           {R"({"prompt":[1],"request_id":"a\u0001"})", "request_id", false},
           {R"({"prompt":[1],"session_id":")" + long_id + "\"}", "session_id", false},
           {R"({"token_ids":[1],"sampling_params":{},"request_id":")" + long_id + "\"}",
            "request_id", true},
       }) {
    ParsedRequest p =
        c.generate ? ParseGenerateRequest(c.body, config) : ParseCompletionRequest(c.body, config);
    ASSERT_FALSE(p.ok()) << c.body.substr(0, 60);
    EXPECT_EQ(p.error->status, 400);
    EXPECT_EQ(p.error->param, c.param);
  }
  ParsedRequest at = ParseCompletionRequest(
      R"({"prompt":[1],"request_id":")" + ok_id + R"(","session_id":")" + ok_id + "\"}", config);
  ASSERT_TRUE(at.ok()) << at.error->message;
  EXPECT_EQ(at.request.request_id, ok_id);
  // Invalid UTF-8 in a JSON string and an unpaired surrogate escape: not JSON at all.
  for (const std::string& body : {std::string(R"({"prompt":[1],"request_id":"a)") + "\xff\"}",
                                  std::string(R"({"prompt":[1],"request_id":"\ud800"})")}) {
    ParsedRequest p = ParseCompletionRequest(body, config);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error->message, "request body is not valid JSON");
  }
  ParsedRequest header = CheckRequestIdHeader(at, nullptr);
  EXPECT_TRUE(header.ok());
  const std::string bad = "id\xff";
  header = CheckRequestIdHeader(at, &bad);
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.error->param, "X-Request-Id");
}

// vLLM's test_protocol.py: an omitted max_tokens is not "provided" (the server computes it),
// an explicit one is kept.
TEST(ParseGenerateRequest, OmittedMaxTokensIsComputedExplicitIsKept) {
  ServingConfig config;
  config.max_model_len = 100;
  ParsedRequest omitted =
      ParseGenerateRequest(R"({"token_ids":[1,2,3],"sampling_params":{}})", config);
  ASSERT_TRUE(omitted.ok());
  EXPECT_EQ(omitted.request.sampling.max_tokens, 97);
  for (int v : {16, 50}) {
    ParsedRequest given = ParseGenerateRequest(
        R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":)" + std::to_string(v) + "}}",
        config);
    ASSERT_TRUE(given.ok());
    EXPECT_EQ(given.request.sampling.max_tokens, v);
  }
  config.generation.max_tokens = 10;  // generation_config.json's max_new_tokens caps it
  EXPECT_EQ(ParseGenerateRequest(R"({"token_ids":[1],"sampling_params":{}})", config)
                .request.sampling.max_tokens,
            10);
}

// /v1/completions: null max_tokens is 16 (normalize_null_max_tokens), an absent one too.
TEST(ParseCompletionRequest, NullMaxTokensIs16) {
  ServingConfig config;
  EXPECT_EQ(ParseCompletionRequest(R"({"prompt":[1],"max_tokens":null})", config)
                .request.sampling.max_tokens,
            16);
  EXPECT_EQ(ParseCompletionRequest(R"({"prompt":[1]})", config).request.sampling.max_tokens, 16);
}

// prompts x n engine requests: up to max_engine_requests accepted, one more refused naming n.
TEST(ParseCompletionRequest, EngineRequestsOfOneRequestAreBounded) {
  ServingConfig config;
  auto body = [](int prompts, int n) {
    std::string b = R"({"prompt":[)";
    for (int i = 0; i < prompts; ++i) b += i == 0 ? "[1]" : ",[1]";
    return b + R"(],"n":)" + std::to_string(n) + "}";
  };
  ASSERT_EQ(config.max_engine_requests, 1024);
  EXPECT_TRUE(ParseCompletionRequest(body(8, 128), config).ok());
  EXPECT_TRUE(ParseCompletionRequest(body(1024, 1), config).ok());
  const ParsedRequest refused = ParseCompletionRequest(body(9, 128), config);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error->status, 400);
  EXPECT_EQ(refused.error->param, "n");
  EXPECT_NE(refused.error->message.find("this request makes 1152 engine requests"),
            std::string::npos)
      << refused.error->message;
  config.max_engine_requests = 4;
  EXPECT_FALSE(ParseCompletionRequest(body(5, 1), config).ok());
}

// The context as vLLM's TokenizeParams checks a completion (vllm/renderers/params.py at
// 6adad087): each refusal names what vLLM names, with its words.
TEST(ParseCompletionRequest, ContextRefusalsAreVllmsWithTheirParam) {
  ServingConfig config;
  config.max_model_len = 10;
  struct Case {
    std::string body;
    std::string param;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"({"prompt":[1],"max_tokens":11})", "max_tokens",
       "max_tokens=11 cannot be greater than max_model_len=max_total_tokens=10. Please request "
       "fewer output tokens."},
      {R"({"prompt":[1,2,3,4,5,6,7,8],"max_tokens":4})", "input_tokens",
       "This model's maximum context length is 10 tokens. However, you requested 4 output tokens "
       "and your prompt contains 8 input tokens, for a total of 12 tokens. Please reduce the "
       "length of the input prompt or the number of requested output tokens."},
      {R"({"prompt":[1,2,3,4,5,6,7],"max_tokens":4})", "input_tokens",
       "This model's maximum context length is 10 tokens. However, you requested 4 output tokens "
       "and your prompt contains at least 7 input tokens, for a total of at least 11 tokens. "
       "Please reduce the length of the input prompt or the number of requested output tokens."},
      {R"({"prompt":[1],"max_tokens":4,"truncate_prompt_tokens":7})", "truncate_prompt_tokens",
       "truncate_prompt_tokens=7 cannot be greater than max_model_len - max_tokens = 6. Please "
       "request a smaller truncation size."},
      {R"({"prompt":[1,2,3,4,5,6,7,8,9,10],"max_tokens":0,"echo":true})", "",
       "The decoder prompt (length 10) plus the number of requested output tokens (at least 1) "
       "is longer than the maximum model length of 10. Make sure that `max_model_len` is no "
       "smaller than the number of text tokens (prompt + requested output tokens)."},
      {R"({"prompt":[1],"logprobs":-1})", "logprobs", "`logprobs` must be a positive value."},
  };
  for (const Case& c : cases) {
    const ParsedRequest p = ParseCompletionRequest(c.body, config);
    ASSERT_FALSE(p.ok()) << c.body;
    EXPECT_EQ(p.error->param, c.param) << c.body;
    EXPECT_EQ(p.error->message, c.message) << c.body;
  }
  // At the edge: 6 + 4 fits; -1 truncates to the room left (6 of 8 tokens).
  EXPECT_TRUE(ParseCompletionRequest(R"({"prompt":[1,2,3,4,5,6],"max_tokens":4})", config).ok());
  const ParsedRequest cut = ParseCompletionRequest(
      R"({"prompt":[1,2,3,4,5,6,7,8],"max_tokens":4,"truncate_prompt_tokens":-1})", config);
  ASSERT_TRUE(cut.ok()) << cut.error->message;
  EXPECT_EQ(cut.request.prompts[0], (std::vector<int64_t>{3, 4, 5, 6, 7, 8}));
}

// Fields vLLM's models do not declare are ignored and listed; a declared field vmetrics does
// not read is refused by name; each list is vLLM's at 6adad087 (vllm_request_fields.h).
TEST(ParseTokenRequest, UndeclaredFieldsAreIgnoredAsVllmIgnoresThem) {
  ServingConfig config;
  const ParsedRequest c = ParseCompletionRequest(
      R"({"prompt":[1],"best_of":2,"max_completion_tokens":3,"detokenize":false,)"
      R"("stream":true,"stream_options":{"include_usage":true,"extra":1}})",
      config);
  ASSERT_TRUE(c.ok()) << c.error->message;
  EXPECT_EQ(c.ignored_fields, (std::vector<std::string>{"stream_options.extra", "best_of",
                                                        "max_completion_tokens", "detokenize"}));
  EXPECT_EQ(c.request.sampling.max_tokens, 16) << "max_completion_tokens is not a completion field";
  const ParsedRequest g = ParseGenerateRequest(
      R"({"token_ids":[1],"sampling_params":{"max_tokens":2,"_eos_token_id":9,"best_of":1},)"
      R"("frobnicate":1})",
      config);
  ASSERT_TRUE(g.ok()) << g.error->message;
  EXPECT_EQ(g.ignored_fields, (std::vector<std::string>{"sampling_params._eos_token_id",
                                                        "sampling_params.best_of", "frobnicate"}));
  // Every field vLLM declares is read (a wrong type is refused naming it) or refused by name:
  // none is ignored (what is inside it may be, as vLLM's nested models ignore extra keys).
  auto ignored = [](const ParsedRequest& p, std::string_view name) {
    return std::find(p.ignored_fields.begin(), p.ignored_fields.end(), name) !=
           p.ignored_fields.end();
  };
  for (std::string_view name : kCompletionRequestFields) {
    if (name == "prompt") continue;
    const ParsedRequest p =
        ParseCompletionRequest(R"({"prompt":[1],")" + std::string(name) + R"(":{"x":[]}})", config);
    EXPECT_FALSE(ignored(p, name)) << name;
  }
  for (std::string_view name : kSamplingParamsFields) {
    const ParsedRequest p = ParseGenerateRequest(
        R"({"token_ids":[1],"sampling_params":{")" + std::string(name) + R"(":{"x":[]}}})", config);
    EXPECT_FALSE(ignored(p, "sampling_params." + std::string(name))) << name;
  }
  for (std::string_view name : kGenerateRequestFields) {
    if (name == "token_ids" || name == "sampling_params") continue;
    const ParsedRequest p = ParseGenerateRequest(
        R"({"token_ids":[1],"sampling_params":{},")" + std::string(name) + R"(":{"x":[]}})",
        config);
    EXPECT_FALSE(ignored(p, name)) << name;
  }
  // What vmetrics cannot honour is refused by name (use_beam_search), not ignored.
  const ParsedRequest beam =
      ParseCompletionRequest(R"({"prompt":[1],"use_beam_search":true})", config);
  ASSERT_FALSE(beam.ok());
  EXPECT_EQ(beam.error->param, "use_beam_search");
}

// EOS: --eos-token-id reaches the engine as _eos_token_id and in _all_stop_token_ids (which
// min_tokens masks), unless ignore_eos; stop_token_ids join the latter, first, in the order a
// Python set of them is built (the encoder writes it in CPython's iteration order).
TEST(ParseCompletionRequest, EosAndStopTokensAsVllmsFrontendSetsThem) {
  ServingConfig config;
  config.generation.eos_token_id = 2;
  ParsedRequest p =
      ParseCompletionRequest(R"({"prompt":[1],"stop_token_ids":[9,9,7],"min_tokens":1})", config);
  ASSERT_TRUE(p.ok()) << p.error->message;
  EXPECT_EQ(p.request.sampling.eos_token_id, 2);
  EXPECT_EQ(p.request.sampling.stop_token_ids, (std::vector<int64_t>{9, 7}));
  EXPECT_EQ(p.request.sampling.all_stop_token_ids, (std::vector<int64_t>{9, 7, 2}));
  // /usr/bin/python3: s = set([9, 7]); s.add(2); list(s) == [9, 2, 7]
  EXPECT_EQ(PythonSetOrder(p.request.sampling.all_stop_token_ids), (std::vector<int64_t>{9, 2, 7}));
  ParsedRequest ignore = ParseCompletionRequest(R"({"prompt":[1],"ignore_eos":true})", config);
  ASSERT_TRUE(ignore.ok());
  EXPECT_FALSE(ignore.request.sampling.eos_token_id.has_value());
}

// A row of the engine's logprob arrays, as numpy LogprobsLists: ids <i8, logprobs <f4,
// ranks <i8.
struct Row {
  std::string ids, lps, ranks;
  Logprobs wire;
  Row(const std::vector<int64_t>& id_row, const std::vector<float>& lp_row, int64_t rank) {
    ids.assign(reinterpret_cast<const char*>(id_row.data()), id_row.size() * 8);
    lps.assign(reinterpret_cast<const char*>(lp_row.data()), lp_row.size() * 4);
    ranks.assign(reinterpret_cast<const char*>(&rank), 8);
    const auto cols = static_cast<int64_t>(id_row.size());
    wire.fields = {Tensor{"<i8", {1, cols}, -1, ids}, Tensor{"<f4", {1, cols}, -1, lps},
                   Tensor{"<i8", {1}, -1, ranks}};
  }
};

// vLLM's dict semantics (the PR-stage test_logprobs_render.py case): the sampled token is slot
// 0; appearing again at slot j it keeps its place and takes slot j's logprob and rank.
TEST(DecodeLogprobRows, KeepsVllmsDictSemantics) {
  Row dup({7, 7, 8, 9}, {-0.5f, -1.0f, -2.0f, -3.0f}, 4);
  std::vector<PositionLogprobs> rows;
  ASSERT_TRUE(DecodeLogprobRows(dup.wire, 3, &rows));
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(rows[0].size(), 3u);
  EXPECT_EQ(rows[0][0].token_id, 7);
  EXPECT_DOUBLE_EQ(rows[0][0].logprob, -1.0);
  EXPECT_EQ(rows[0][0].rank, 1);
  EXPECT_EQ(rows[0][1].token_id, 8);
  EXPECT_EQ(rows[0][2].token_id, 9);

  Row plain({7, 8, 9, 10}, {-0.5f, -1.0f, -2.0f, -3.0f}, 4);
  rows.clear();
  ASSERT_TRUE(DecodeLogprobRows(plain.wire, 2, &rows));
  ASSERT_EQ(rows[0].size(), 3u);  // the sampled token and the top 2
  EXPECT_EQ(rows[0][0].rank, 4);
  EXPECT_EQ(rows[0][1].rank, 1);
  EXPECT_EQ(rows[0][2].token_id, 9);
  EXPECT_EQ(FindLogprob(rows[0], 8)->rank, 1);
  EXPECT_EQ(FindLogprob(rows[0], 10), nullptr);

  Logprobs not_tensors;
  not_tensors.fields = {std::nullopt, std::nullopt, std::nullopt};
  rows.clear();
  EXPECT_FALSE(DecodeLogprobRows(not_tensors, 1, &rows));
  EXPECT_TRUE(rows.empty());
}

TEST(ErrorType, AsVllmsServerGivesThem) {
  EXPECT_EQ(ErrorType(400), "BadRequestError");
  EXPECT_EQ(ErrorType(404), "NotFoundError");
  EXPECT_EQ(ErrorType(413), "Request Entity Too Large");
  EXPECT_EQ(ErrorType(422), "UnprocessableEntityError");
  EXPECT_EQ(ErrorType(500), "InternalServerError");
  EXPECT_EQ(ErrorType(501), "NotImplementedError");
  EXPECT_EQ(ErrorType(503), "Service Unavailable");
}

// A failure that comes as a Status: the request's own fault is a 400, the way to the engines
// a 503; the words are the context's and the status's message.
TEST(ErrorFromStatus, TheCodeChoosesTheHttpStatus) {
  const ApiError refused =
      ErrorFromStatus(Status::InvalidArgument("no place for the EOS token"), "engine 0: ");
  EXPECT_EQ(refused.status, 400u);
  EXPECT_EQ(refused.type, "BadRequestError");
  EXPECT_EQ(refused.message, "engine 0: no place for the EOS token");
  EXPECT_EQ(refused.param, "");
  EXPECT_EQ(ErrorFromStatus(Status::LimitExceeded("too deep"), "", "prompt").param, "prompt");
  for (const Status& s :
       {Status::Malformed("m"), Status::Unsupported("u"), Status::LimitExceeded("l")}) {
    EXPECT_EQ(ErrorFromStatus(s, "").status, 400u) << s.ToString();
  }
  for (const Status& s :
       {Status::Unavailable("engine 1 is dead", StatusStage::kSend),
        Status::Socket(StatusStage::kSend, "x"), Status::Timeout(StatusStage::kReady, "x"),
        Status::Protocol(StatusStage::kHello, "x"), Status::Stopped(StatusStage::kOutput)}) {
    const ApiError e = ErrorFromStatus(s, "");
    EXPECT_EQ(e.status, 503u) << s.ToString();
    EXPECT_EQ(e.type, "Service Unavailable");
    EXPECT_EQ(e.message, s.message());
  }
}

// The chunk events are written as text, not dumped from a tree: their bytes must be the tree's
// (members in vLLM's order, nlohmann's escaping and replacement of invalid UTF-8), for every
// kind of member they carry.
TEST(ChunkEvents, AreTheTextOfTheirTreeByteForByte) {
  using Json = nlohmann::ordered_json;
  const std::vector<ResponseIdentity> identities = {
      {.id = "cmpl-0123abcd", .created = 1733000000, .model = "bench-model"},
      {.id = Bytes({'a', '"', 'b', '\\', 'c', '/', 0x01, 0x7f}),
       .created = -1,
       .model = "模型\n" + Bytes({0xff, 0xc3})}};
  const std::vector<Json> stop_reasons = {nullptr, "</s> \"\t", 7};
  const std::vector<std::vector<int64_t>> token_lists = {{}, {5}, {1, -2, INT64_MAX, INT64_MIN}};
  PromptState prompt;
  prompt.token_ids = {11, 12, 13};
  const std::vector<PromptState> prompts = {prompt};
  int cases = 0;
  for (const ResponseIdentity& identity : identities) {
    for (const Json& stop_reason : stop_reasons) {
      for (const std::vector<int64_t>& tokens : token_lists) {
        for (int flags = 0; flags < 32; ++flags) {
          TokenRequest r;
          r.echo = (flags & 1) != 0;
          r.return_token_ids = (flags & 2) != 0;
          ChoiceDelta d;
          d.index = static_cast<size_t>(flags & 3);
          d.first = (flags & 4) != 0;
          d.token_ids = tokens;
          d.finish_reason = (flags & 8) != 0 ? "length" : "";
          d.stop_reason = stop_reason;
          if ((flags & 16) != 0) d.completion_tokens = 9;
          d.routed_experts = (flags & 8) != 0 ? "k05VTVBZAQB2AHsn+/=" : "";
          const Json usage = d.completion_tokens ? Json{{"prompt_tokens", 3},
                                                        {"total_tokens", 12},
                                                        {"completion_tokens", 9},
                                                        {"prompt_tokens_details", nullptr}}
                                                 : Json(nullptr);
          const Json finish = d.finish_reason.empty() ? Json(nullptr) : Json(d.finish_reason);
          const Json completion{
              {"id", identity.id},
              {"object", "text_completion"},
              {"created", identity.created},
              {"model", identity.model},
              {"choices",
               Json::array({Json{{"index", d.index},
                                 {"text", ""},
                                 {"logprobs", nullptr},
                                 {"finish_reason", finish},
                                 {"stop_reason", stop_reason},
                                 {"prompt_token_ids", d.first && (r.echo || r.return_token_ids)
                                                          ? Json(prompt.token_ids)
                                                          : Json(nullptr)},
                                 {"token_ids", tokens}}})},
              {"usage", usage},
              {"system_fingerprint", nullptr}};
          EXPECT_EQ(CompletionChunkEvent(r, identity, prompts, d),
                    "data: " + DumpJson(completion) + "\n\n")
              << flags;
          Json generate{
              {"request_id", identity.id},
              {"choices", Json::array({Json{
                              {"index", d.index},
                              {"logprobs", nullptr},
                              {"finish_reason", finish},
                              {"token_ids", tokens},
                              {"routed_experts",
                               d.routed_experts.empty() ? Json(nullptr) : Json(d.routed_experts)},
                              {"stop_reason", stop_reason}}})},
              {"usage", usage}};
          if (d.first && r.return_token_ids) generate["prompt_token_ids"] = prompt.token_ids;
          EXPECT_EQ(GenerateChunkEvent(r, identity, prompt, d),
                    "data: " + DumpJson(generate) + "\n\n")
              << flags;
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 2 * 3 * 3 * 32);
  // With logprobs (their objects are built as trees, then written into the text): the event
  // is the canonical text of what it parses to.
  TokenRequest r;
  r.response_logprobs = 1;
  ChoiceDelta d;
  d.first = true;
  d.token_ids = {5, 6};
  d.logprobs = {PositionLogprobs{{.token_id = 5, .logprob = -0.25, .rank = 1},
                                 {.token_id = 9, .logprob = -1.5e-7, .rank = 2}},
                std::nullopt};
  for (bool echo : {false, true}) {
    r.echo = echo;
    for (const std::string& event : {CompletionChunkEvent(r, identities[1], prompts, d),
                                     GenerateChunkEvent(r, identities[1], prompt, d)}) {
      ASSERT_TRUE(event.starts_with("data: ") && event.ends_with("\n\n")) << event;
      const std::string text = event.substr(6, event.size() - 8);
      const Json parsed = Json::parse(text);
      EXPECT_TRUE(parsed["choices"][0]["logprobs"].is_object()) << text;
      EXPECT_EQ(DumpJson(parsed), text);
    }
  }
}

}  // namespace
}  // namespace vmetrics::frontend
