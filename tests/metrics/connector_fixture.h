// SPDX-License-Identifier: Apache-2.0
// File: connector_fixture.h
//
// A kv_connector_stats fixture decoded and its payloads identified (connector_identification.h),
// for the identification and walk tests.
#ifndef VMETRICS_TESTS_METRICS_CONNECTOR_FIXTURE_H_
#define VMETRICS_TESTS_METRICS_CONNECTOR_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "tests/protocol/fixture_util.h"
#include "vmetrics/connector_catalog.h"
#include "vmetrics/connector_identification.h"
#include "vmetrics/engine_core_outputs.h"

namespace vmetrics::testing {

struct Decoded {
  std::string data;
  RecordingReporter reporter;
  DecodeContext ctx;
  EngineCoreOutputs out;
  Status status;
  IdentifiedPayloads ids;

  // What decoding handed out.
  const KvConnectorStats& kv() const { return *out.scheduler_stats->kv_connector_stats; }
};

// tests/fixtures/<name>.msgpack decoded with `config` and identified with `catalog` (default:
// the built-in rows).
inline std::unique_ptr<Decoded> DecodeFixture(std::string_view name,
                                              const ConnectorConfig* config = nullptr,
                                              const ConnectorCatalog* catalog = nullptr) {
  auto d = std::make_unique<Decoded>();
  d->data = ReadFixture(name);
  d->ctx.connectors = config;
  d->ctx.reporter = &d->reporter;
  d->ctx.message_number = 1;
  d->status = DecodeOne(d->data, d->ctx, &d->out);
  EXPECT_TRUE(d->status.ok()) << name << ": " << d->status.ToString();
  EXPECT_TRUE(d->out.scheduler_stats.has_value()) << name;
  if (d->out.scheduler_stats) {
    EXPECT_TRUE(d->out.scheduler_stats->kv_connector_stats.has_value()) << name;
    if (d->out.scheduler_stats->kv_connector_stats) {
      IdentifyConnectorPayloads(
          d->kv(), catalog != nullptr ? *catalog : ConnectorCatalog::BuiltIn(), d->ctx, &d->ids);
    }
  }
  return d;
}

inline const IdentifiedPayload& Identified(const Decoded& d, size_t i) {
  return d.ids.payloads.at(i);
}
inline const ConnectorPayload& Payload(const Decoded& d, size_t i) {
  return Identified(d, i).payload;
}

// A run-time row for the third-party AcmeConnector of kv_multi_descriptor and
// kv_bare_descriptor.
inline ConnectorRow AcmeRow() {
  ConnectorRow row;
  row.id = "AcmeConnector";
  row.class_names = {"AcmeConnector"};
  row.builtin = false;
  MetricDef hits;
  hits.name = "vllm:acme_hits";
  hits.type = MetricType::kCounter;
  hits.documentation = "Acme cache hits.";
  hits.samples_path = "hits";
  hits.sample_kind = SampleKind::kIncBySumU64;
  row.metrics.push_back(hits);
  return row;
}

}  // namespace vmetrics::testing

#endif  // VMETRICS_TESTS_METRICS_CONNECTOR_FIXTURE_H_
