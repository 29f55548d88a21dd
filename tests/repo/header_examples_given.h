// SPDX-License-Identifier: Apache-2.0
// File: header_examples_given.h
//
// The names the `Example:` blocks of include/vmetrics/ take as given: what the surrounding
// code of a real caller would hold (a recorder, the frames of a message, a connected client),
// declared with their types so that tools/header_examples.py compiles each block as written.
// One section per header, chosen by the macro the script defines before including this file
// (VMETRICS_EXAMPLES_<path under include/vmetrics/, upper case>); a header whose examples
// create everything they use has no section.
//
// Only declarations: the examples are compiled (-fsyntax-only), never linked or run, so a
// given is an `extern` variable or a function without a body. A member function's example
// may use the object its class's example built (`rec`, `client`, `server`): that object is
// a given of the same name here.
#ifndef VMETRICS_TESTS_REPO_HEADER_EXAMPLES_GIVEN_H_
#define VMETRICS_TESTS_REPO_HEADER_EXAMPLES_GIVEN_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/exposition.h"
#include "vmetrics/recorder.h"
#include "vmetrics/registry.h"

// What a section needs beyond the header it is for, included only for it: each translation
// unit parses what its examples use and no more.
#if defined(VMETRICS_EXAMPLES_ENGINE_REQUEST_H)
#include "vmetrics/engine_core_client.h"
#endif
#if defined(VMETRICS_EXAMPLES_FRONTEND_STOP_SIGNALS_H)
#include "vmetrics/frontend.h"
#endif
#if defined(VMETRICS_EXAMPLES_WEB_CONFIG_H) || defined(VMETRICS_EXAMPLES_HTTP_ROUTE_H)
#include "vmetrics/http_server.h"
#endif
#if defined(VMETRICS_EXAMPLES_SIMULATOR_H)
#include <nlohmann/json.hpp>
#endif

namespace vmetrics::examples {

// What many examples share: a message's frames and its decoded form, the context it is
// decoded with, a registry and a recorder writing into it.
extern std::string frame0;  // an EngineCoreOutputs message's frame 0, as an engine sent it
extern std::span<const std::string_view> frames;
extern EngineCoreOutputs message;
extern DecodeContext ctx;
extern FixedClock clock;
extern Registry registry;
extern StatsRecorder recorder;

#ifdef VMETRICS_EXAMPLES_CONNECTOR_CATALOG_H
extern ConnectorRow acme_row;  // a third-party connector's row (from its descriptor)
#endif

#ifdef VMETRICS_EXAMPLES_CONNECTOR_IDENTIFICATION_H
extern SchedulerStats stats;  // with a NIXL payload in kv_connector_stats
#endif

#ifdef VMETRICS_EXAMPLES_CONNECTOR_WALK_H
extern ConnectorPayload payload;
extern ConnectorRow row;  // the row that identified `payload`
#endif

#ifdef VMETRICS_EXAMPLES_ENGINE_CORE_CLIENT_H
extern EngineCoreClientOptions options;
extern EngineCoreClient client;
extern EngineCoreClient* g_client;  // what a signal handler reaches
extern EngineCoreOutputs out;
extern uint64_t decode_errors;
extern std::string abort_body;                               // an encoded abort: the request ids
extern int64_t flag_max_model_len;                           // --max-model-len
void StartSimulator(const std::string& handshake_endpoint);  // e.g. vmetrics simulate
#endif

#ifdef VMETRICS_EXAMPLES_ENGINE_REQUEST_H
extern EngineCoreClient client;
extern EngineCoreRequestSpec spec;
extern int engine_index;  // the engine the router chose
#endif

#ifdef VMETRICS_EXAMPLES_FRONTEND_H
void StartEngines(const std::string& handshake_endpoint);  // e.g. vmetrics simulate
#endif

#ifdef VMETRICS_EXAMPLES_FRONTEND_STOP_SIGNALS_H
extern FrontendOptions options;
#endif

#ifdef VMETRICS_EXAMPLES_HANDSHAKE_H
extern std::string hello_bytes;  // a headless engine's HELLO
#endif

#ifdef VMETRICS_EXAMPLES_HTTP_ROUTE_H
// The API behind a route: it answers on the exchange, now or later.
struct CompletionService {
  void Handle(std::string body, std::shared_ptr<HttpExchange> exchange);
};
extern CompletionService service;
std::string MyErrorJson(unsigned status, std::string_view message);
extern HttpHandlers handlers;  // the server's, which the route joins
extern HttpRoute route;
#endif

#ifdef VMETRICS_EXAMPLES_HTTP_SERVER_H
extern HttpServerOptions options;
extern Result<std::unique_ptr<HttpServer>> server;
#endif

#ifdef VMETRICS_EXAMPLES_METRICS_DESCRIPTOR_H
extern ConnectorPayload payload;  // a HiSparse payload carrying its _metrics_descriptor
#endif

#ifdef VMETRICS_EXAMPLES_RECORDER_H
extern StatsRecorder rec;
#endif

#ifdef VMETRICS_EXAMPLES_REGISTRY_H
extern Registry reg;
extern Family& family;
extern Family& f;
extern std::mutex mu_;
extern Histogram* xfer_time;
extern std::vector<double> transfer_durations;
#endif

#ifdef VMETRICS_EXAMPLES_REPORTER_H
extern double v;
extern Histogram* histogram;
#endif

#ifdef VMETRICS_EXAMPLES_REQUESTS_H
extern RequestTracker tracker;
extern EngineCoreOutputs msg;
#endif

#ifdef VMETRICS_EXAMPLES_SIMULATOR_H
extern EngineCoreClient client;
extern Simulator sim;
#endif

#ifdef VMETRICS_EXAMPLES_WEB_CONFIG_H
extern HttpServerOptions options;
extern std::string hash;  // a bcrypt hash
#endif

#ifdef VMETRICS_EXAMPLES_WIRE_DECODER_H
extern EngineCoreReadyResponse ready_response;
extern HandshakeMessage ready;
#endif

}  // namespace vmetrics::examples

#endif  // VMETRICS_TESTS_REPO_HEADER_EXAMPLES_GIVEN_H_
