// SPDX-License-Identifier: Apache-2.0
// File: api_error.h
//
// The errors of vmetrics' OpenAI-compatible API, worded as vLLM's server words them
// (vllm/entrypoints/openai/engine/protocol.py ErrorResponse at vllm-project/vllm d7e52523; the
// status-to-type mapping of vllm/entrypoints/serve/exception_handling/error_response.py at
// ba638200 and handlers/http.py at 0f17ee06): a JSON body {"error": {"message", "type",
// "param", "code"}} whose `code` is the HTTP status and whose `param` names the request field
// a refusal is about (null otherwise). ApiError is the shape of that reply, not an error
// vocabulary of its own: a failure that comes as a Status becomes one through ErrorFromStatus.
//
// Pure functions: safe from any thread.
//
// Example:
//   ApiError e = BadRequest("`logprobs` must be a positive value or -1.", "logprobs");
//   EXPECT_EQ(ErrorJson(e), R"({"error":{"code":400,"message":"`logprobs` must be a positive )"
//                           R"(value or -1.","param":"logprobs","type":"BadRequestError"}})");
#ifndef VMETRICS_FRONTEND_API_ERROR_H_
#define VMETRICS_FRONTEND_API_ERROR_H_

#include <string>
#include <string_view>

#include "vmetrics/status.h"

namespace vmetrics::frontend {

// An error answer: HTTP status, error type, message, and the field it is about ("" = null).
struct ApiError {
  unsigned status = 400;
  std::string type = "BadRequestError";
  std::string message;
  std::string param;
};

// The error type vLLM's server gives a status: 400 "BadRequestError" (a VLLMValidationError),
// 404 "NotFoundError", 422 "UnprocessableEntityError", 500 "InternalServerError" (also an
// engine that died: EngineDeadError maps to it), 501 "NotImplementedError"; any other status
// comes from a Starlette HTTPException, whose type is the status phrase of CPython's
// http.HTTPStatus (vLLM's Python is 3.12): 413 "Request Entity Too Large", 405 "Method Not
// Allowed", 503 "Service Unavailable".
std::string ErrorType(unsigned status);

// An ApiError of `status` with ErrorType(status).
ApiError MakeError(unsigned status, std::string message, std::string param = "");

// A 400 about `param`.
inline ApiError BadRequest(std::string message, std::string param = "") {
  return MakeError(400, std::move(message), std::move(param));
}

// ErrorFromStatus
//
// The reply for a request refused by a failed `status`: 400 where the request itself is at
// fault (kInvalidArgument, kMalformed, kUnsupported, kLimitExceeded), 503 otherwise (an engine
// or the transport: kUnavailable, kSocket, kTimeout, kProtocol, kStopped). The message is
// `context` then the status's message; `param` names the field ("" = null).
//
// Example:
//   ApiError e = ErrorFromStatus(Status::InvalidArgument("no EOS"), "engine 0: ");
//   EXPECT_EQ(e.status, 400u);
//   EXPECT_EQ(e.message, "engine 0: no EOS");
ApiError ErrorFromStatus(const Status& status, std::string_view context, std::string param = "");

// {"error":{"code","message","param","type"}}.
std::string ErrorJson(const ApiError& error);

// An error inside a stream: "data: {"error":{...}}\n\n", as vLLM sends it.
std::string ErrorEvent(const ApiError& error);

// The last event of every stream.
inline constexpr std::string_view kDoneEvent = "data: [DONE]\n\n";

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_API_ERROR_H_
