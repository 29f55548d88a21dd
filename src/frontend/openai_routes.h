// File: openai_routes.h
//
// The OpenAI-compatible routes of a vmetrics frontend, as HttpRoutes for the HTTP server
// (http_server.h): the server routes and limits, these say what each path means and how its
// errors are worded (vLLM's ErrorResponse JSON, also for the 413, 500 and 503 the server
// answers on a route's behalf).
//
//   POST /v1/completions   RequestService::HandleCompletion (token ids in and out)
//
// A new route (GET /v1/models, POST /abort_requests, ...) is one more HttpRoute here, with
// OpenAiErrorReply as its error_reply, and one more entry in OpenAiRoutes.
//
// Thread safety: the routes' handlers are called from the server's worker threads at once;
// RequestService is safe for that.
//
// Example:
//   HttpHandlers handlers;
//   handlers.routes = OpenAiRoutes(&request_service);
#ifndef VMETRICS_FRONTEND_OPENAI_ROUTES_H_
#define VMETRICS_FRONTEND_OPENAI_ROUTES_H_

#include <string_view>
#include <vector>

#include "request_service.h"
#include "vmetrics/http_server.h"

namespace vmetrics::frontend {

// OpenAiErrorReply
//
// An error in the OpenAI error format (ErrorJson) with the type vLLM gives `status`
// (ErrorType): the HttpRoute::error_reply of every route here.
//
// Example:
//   HttpReply r = OpenAiErrorReply(413, "request body larger than 16 bytes");
//   EXPECT_EQ(r.content_type, "application/json");
HttpReply OpenAiErrorReply(unsigned status, std::string_view message);

// CompletionsRoute: POST /v1/completions, answered by `service` (which must outlive the
// server the route is given to).
HttpRoute CompletionsRoute(RequestService* service);

// Every route above, in the order they are listed.
std::vector<HttpRoute> OpenAiRoutes(RequestService* service);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_OPENAI_ROUTES_H_
