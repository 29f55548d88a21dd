// SPDX-License-Identifier: Apache-2.0
// SimulatorTotals::ToJson: the --report-totals document. Layout (one object per engine, by
// index; sums are doubles accumulated in send order):
//
//   {"seed": 7, "connector": "multi", "engines": [{
//      "engine_index": 0, "steps": 100, "messages": 100, "utility_replies": 0,
//      "outputs": 812, "requests_arrived": 95, "requests_scheduled": 90, "prompt_tokens": 41234,
//      "generation_tokens": 812, "preemptions": 0, "finished": {"length": 30, "stop": 52},
//      "prefix_cache": {"requests", "queries", "hits", "preempted_requests",
//                       "preempted_queries", "preempted_hits"},
//      "connector_prefix_cache": {same keys},
//      "spec_decoding": {"num_drafts", "num_draft_tokens", "num_accepted_tokens",
//                        "num_accepted_tokens_per_pos": [...]},
//      "last": {"num_running_reqs", "num_waiting_reqs", "num_skipped_waiting_reqs",
//               "kv_cache_usage"},
//      "kv_connector": {
//        "messages": 60,                              // messages with a payload
//        "payloads": {"NixlConnector": 41, ...},      // per class, payloads sent
//        "fields": {"NixlConnector": {"transfer_duration": {"count": 44, "sum": 0.91}, ...}},
//        "store": [{"operation": "load_get", "status": "ok", "records": 3,
//                   "duration_seconds_sum": 0.07, "num_keys": 9, "num_bytes": 123,
//                   "num_failed_keys": 0}, ...]},
//      "sent_engine_core_dead": false, "vanished": false,
//      "requests_served": 4, "requests_rejected": 0, "requests_aborted": 1,
//      "kv_params_returned": 0, "kv_remote_prefills": 0, "kv_params_invalid": 0,  // kv_role
//      "malformed_frames": 0, "truncated_multipart": 0}]}
#include <nlohmann/json.hpp>

#include "vmetrics/simulator.h"

namespace vmetrics {
namespace {

nlohmann::json PrefixJson(const PrefixCacheTotals& p) {
  return {{"requests", p.requests},
          {"queries", p.queries},
          {"hits", p.hits},
          {"preempted_requests", p.preempted_requests},
          {"preempted_queries", p.preempted_queries},
          {"preempted_hits", p.preempted_hits}};
}

}  // namespace

std::string SimulatorTotals::ToJson() const {
  nlohmann::json doc;
  doc["seed"] = seed;
  doc["connector"] = SimConnectorName(connector);
  nlohmann::json list = nlohmann::json::array();
  for (const EngineTotals& e : engines) {
    nlohmann::json j;
    j["engine_index"] = e.engine_index;
    j["steps"] = e.steps;
    j["messages"] = e.messages;
    j["utility_replies"] = e.utility_replies;
    j["outputs"] = e.outputs;
    j["requests_arrived"] = e.requests_arrived;
    j["requests_scheduled"] = e.requests_scheduled;
    j["prompt_tokens"] = e.prompt_tokens;
    j["generation_tokens"] = e.generation_tokens;
    j["preemptions"] = e.preemptions;
    j["finished"] = nlohmann::json::object();
    for (const auto& [reason, n] : e.finished) j["finished"][reason] = n;
    j["prefix_cache"] = PrefixJson(e.prefix_cache);
    j["connector_prefix_cache"] = PrefixJson(e.connector_prefix_cache);
    j["spec_decoding"] = {{"num_drafts", e.spec_num_drafts},
                          {"num_draft_tokens", e.spec_num_draft_tokens},
                          {"num_accepted_tokens", e.spec_num_accepted_tokens},
                          {"num_accepted_tokens_per_pos", e.spec_accepted_per_pos}};
    j["last"] = {{"num_running_reqs", e.last_num_running_reqs},
                 {"num_waiting_reqs", e.last_num_waiting_reqs},
                 {"num_skipped_waiting_reqs", e.last_num_skipped_waiting_reqs},
                 {"kv_cache_usage", e.last_kv_cache_usage}};
    nlohmann::json kv;
    kv["messages"] = e.kv_connector_messages;
    kv["payloads"] = nlohmann::json::object();
    for (const auto& [cls, n] : e.connector_payloads) kv["payloads"][cls] = n;
    kv["fields"] = nlohmann::json::object();
    for (const auto& [cls, fields] : e.connector_fields) {
      for (const auto& [field, t] : fields) {
        kv["fields"][cls][field] = {{"count", t.count}, {"sum", t.sum}};
      }
    }
    kv["store"] = nlohmann::json::array();
    for (const auto& [key, t] : e.store) {
      kv["store"].push_back({{"operation", key.first},
                             {"status", key.second},
                             {"records", t.records},
                             {"duration_seconds_sum", t.duration_seconds_sum},
                             {"num_keys", t.num_keys},
                             {"num_bytes", t.num_bytes},
                             {"num_failed_keys", t.num_failed_keys}});
    }
    j["kv_connector"] = std::move(kv);
    j["sent_engine_core_dead"] = e.sent_engine_core_dead;
    j["vanished"] = e.vanished;
    j["requests_served"] = e.requests_served;
    j["requests_rejected"] = e.requests_rejected;
    j["requests_aborted"] = e.requests_aborted;
    j["kv_params_returned"] = e.kv_params_returned;
    j["kv_remote_prefills"] = e.kv_remote_prefills;
    j["kv_params_invalid"] = e.kv_params_invalid;
    j["malformed_frames"] = e.malformed_frames;
    j["truncated_multipart"] = e.truncated_multipart;
    list.push_back(std::move(j));
  }
  doc["engines"] = std::move(list);
  return doc.dump(2) + "\n";
}

}  // namespace vmetrics
