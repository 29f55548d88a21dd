// SPDX-License-Identifier: Apache-2.0
// vLLM's error bodies; see api_error.h.
#include "api_error.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace vmetrics::frontend {

ApiError ErrorFromStatus(const Status& status, std::string_view context, std::string param) {
  unsigned http_status = 503;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kMalformed:
    case StatusCode::kUnsupported:
    case StatusCode::kLimitExceeded:
      http_status = 400;
      break;
    case StatusCode::kOk:
    case StatusCode::kUnavailable:
    case StatusCode::kSocket:
    case StatusCode::kTimeout:
    case StatusCode::kProtocol:
    case StatusCode::kStopped:
      break;
  }
  return MakeError(http_status, std::string(context) + status.message(), std::move(param));
}

std::string ErrorType(unsigned status) {
  switch (status) {
    case 400:
      return "BadRequestError";
    case 404:
      return "NotFoundError";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Request Entity Too Large";
    case 422:
      return "UnprocessableEntityError";
    case 501:
      return "NotImplementedError";
    case 503:
      return "Service Unavailable";
    default:
      return status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

ApiError MakeError(unsigned status, std::string message, std::string param) {
  return ApiError{status, ErrorType(status), std::move(message), std::move(param)};
}

std::string ErrorJson(const ApiError& error) {
  nlohmann::json doc = {{"error",
                         {{"message", error.message},
                          {"type", error.type},
                          {"param", nullptr},
                          {"code", error.status}}}};
  if (!error.param.empty()) doc["error"]["param"] = error.param;
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ErrorEvent(const ApiError& error) { return "data: " + ErrorJson(error) + "\n\n"; }

}  // namespace vmetrics::frontend
