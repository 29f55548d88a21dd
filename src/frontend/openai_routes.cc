// The OpenAI-compatible routes; see openai_routes.h.
#include "openai_routes.h"

#include <memory>
#include <string>
#include <utility>

#include "completion_api.h"

namespace vmetrics::frontend {

HttpReply OpenAiErrorReply(unsigned status, std::string_view message) {
  return HttpReply{status, "application/json",
                   ErrorJson(ApiError{status, ErrorType(status), std::string(message)})};
}

HttpRoute CompletionsRoute(RequestService* service) {
  HttpRoute route;
  route.method = "POST";
  route.path = "/v1/completions";
  route.handler = [service](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    service->HandleCompletion(std::move(request.body), std::move(exchange));
  };
  route.error_reply = OpenAiErrorReply;
  return route;
}

std::vector<HttpRoute> OpenAiRoutes(RequestService* service) {
  std::vector<HttpRoute> routes;
  routes.push_back(CompletionsRoute(service));
  return routes;
}

}  // namespace vmetrics::frontend
