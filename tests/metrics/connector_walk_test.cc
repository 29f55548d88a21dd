// SPDX-License-Identifier: Apache-2.0
// Tests of src/metrics/connector_walk.cc: ForEachConnectorSample's walk of each built-in row's
// payload (and a run-time row's), with the tolerance connector_walk.h promises.
#include "vmetrics/connector_walk.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tests/metrics/connector_fixture.h"
#include "vmetrics/connector_catalog.h"
#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {
namespace {

using ::testing::ElementsAre;
using ::vmetrics::testing::AcmeRow;
using ::vmetrics::testing::Decoded;
using ::vmetrics::testing::DecodeFixture;
using ::vmetrics::testing::Identified;

// --- ForEachConnectorSample: each row's payload walked into samples ---------------------------

struct Collected {
  size_t returned = 0;
  size_t calls = 0;                                   // callbacks: one per field
  size_t values_seen = 0;                             // values over all callbacks
  std::map<std::string, std::vector<double>> values;  // metric name -> values in order
  std::map<std::string, double> sums;                 // "name{labels}" -> sum of values
};

Collected Walk(const Decoded& d, size_t payload) {
  Collected c;
  const IdentifiedPayload& p = Identified(d, payload);
  if (p.row == nullptr) {
    ADD_FAILURE() << "payload " << payload << " has no row";
    return c;
  }
  c.returned = ForEachConnectorSample(p.payload, *p.row, d.ctx, [&](const ConnectorSample& s) {
    ++c.calls;
    EXPECT_LT(s.metric_index, p.row->metrics.size());
    if (s.metric_index >= p.row->metrics.size()) return;
    const std::string& name = p.row->metrics[s.metric_index].name;
    EXPECT_EQ(s.extra_label_values.size(), p.row->ExtraLabelNames().size());
    std::string key = name + "{";
    for (std::string_view v : s.extra_label_values) key += std::string(v) + ",";
    key += "}";
    EXPECT_FALSE(s.values.empty()) << "a sample carries at least one value";
    for (const double v : s.values) {
      ++c.values_seen;
      c.values[name].push_back(v);
      c.sums[key] += v;
    }
  });
  EXPECT_EQ(c.returned, c.values_seen) << "the return value counts the values";
  return c;
}

TEST(ForEachConnectorSample, NixlObservesEveryElementAndCountsFailures) {
  auto d = DecodeFixture("kv_nixl");
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:nixl_xfer_time_seconds"], ElementsAre(0.01, 0.02));
  EXPECT_THAT(c.values["vllm:nixl_post_time_seconds"], ElementsAre(0.001, 0.002));
  EXPECT_THAT(c.values["vllm:nixl_bytes_transferred"], ElementsAre(4096.0, 8192.0));
  EXPECT_THAT(c.values["vllm:nixl_num_descriptors"], ElementsAre(2.0, 4.0));
  if (c.sums.count("vllm:nixl_num_failed_transfers{}")) {
    EXPECT_EQ(c.sums.at("vllm:nixl_num_failed_transfers{}"), 0.0) << "an empty list adds nothing";
  }
  EXPECT_EQ(c.sums.at("vllm:nixl_num_kv_expired_reqs{}"), 1.0);
  EXPECT_EQ(c.calls, c.values.size()) << "one callback per field, carrying all its values";
  EXPECT_TRUE(d->reporter.problems.empty()) << d->reporter.Dump();
}

TEST(ForEachConnectorSample, NixlExtraKeysAreIgnoredWithoutComplaint) {
  auto d = DecodeFixture("kv_nixl_extra_keys");
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:nixl_xfer_time_seconds"], ElementsAre(0.01, 0.02));
  EXPECT_EQ(c.sums.at("vllm:nixl_num_kv_expired_reqs{}"), 1.0);
  for (const auto& [name, values] : c.values) {
    EXPECT_EQ(name.find("handshake"), std::string::npos) << "no family for the newer keys";
  }
  EXPECT_TRUE(d->reporter.problems.empty()) << d->reporter.Dump();
}

TEST(ForEachConnectorSample, NixlMissingKeyIsAnEmptyList) {
  auto d = DecodeFixture("kv_nixl_missing_key");
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:nixl_post_time_seconds"], ElementsAre(0.001, 0.002));
  EXPECT_EQ(c.values.count("vllm:nixl_num_failed_notifications"), 0u);
  EXPECT_TRUE(d->reporter.problems.empty()) << d->reporter.Dump();
}

TEST(ForEachConnectorSample, WrongTypedNixlFieldIsSkippedAndReportedTheRestRecords) {
  auto d = DecodeFixture("kv_nixl_wrong_types");
  Collected c = Walk(*d, 0);
  EXPECT_EQ(c.values.count("vllm:nixl_xfer_time_seconds"), 0u) << "the str is skipped";
  EXPECT_THAT(c.values["vllm:nixl_post_time_seconds"], ElementsAre(0.001, 0.002));
  EXPECT_THAT(c.values["vllm:nixl_num_descriptors"], ElementsAre(2.0, 4.0));
  EXPECT_EQ(c.sums.at("vllm:nixl_num_kv_expired_reqs{}"), 1.0);
  const auto transfer = d->reporter.ForKey("transfer_duration");
  ASSERT_FALSE(transfer.empty()) << d->reporter.Dump();
  EXPECT_EQ(transfer[0].connector, "NixlConnector");
  EXPECT_FALSE(d->reporter.ForKey("bytes_transferred").empty()) << d->reporter.Dump();
}

TEST(ForEachConnectorSample, MooncakeStoreRecordFeedsAllFiveFamiliesWithItsLabels) {
  auto d = DecodeFixture("kv_mooncake_store");
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:mooncake_store_operation_time_seconds"], ElementsAre(0.05));
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{load_get,ok,}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{load_get,ok,}"), 3.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{load_get,ok,}"), 1024.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_failed_keys{load_get,ok,}"), 0.0)
      << "Python creates all five children at once, failed_keys at 0";
}

TEST(ForEachConnectorSample, MooncakeStoreRecordDefaultsStatusOkAndAnyOperationName) {
  auto d = DecodeFixture("kv_mooncake_store_defaults");
  Collected c = Walk(*d, 0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{save_exists,ok,}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{save_exists,ok,}"), 2.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{write_back_put,error,}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{write_back_put,error,}"), 4096.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_failed_keys{write_back_put,error,}"), 1.0);
  EXPECT_THAT(c.values["vllm:mooncake_store_operation_time_seconds"], ElementsAre(0.001, 0.5));
}

// The walk remembers what the key at each position of a record meant; records that give their
// keys in another order, with extra keys, or with more keys than it remembers are still read
// by name.
TEST(ForEachConnectorSample, StoreRecordsAreReadByKeyWhateverTheirKeyOrder) {
  auto d = DecodeFixture("kv_mooncake_store_key_orders");
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:mooncake_store_operation_time_seconds"],
              ElementsAre(0.1, 0.2, 0.3, 0.4, 0.5, 0.6));
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{load_get,ok,}"), 2.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{load_get,error,}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{load_get,partial_failure,}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{save_put,ok,}"), 2.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{load_get,ok,}"), 5.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{load_get,error,}"), 3.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{load_get,partial_failure,}"), 5.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{save_put,ok,}"), 13.0)
      << "num_keys at the 40th position, past the remembered ones";
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{load_get,ok,}"), 10.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{load_get,error,}"), 20.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{load_get,partial_failure,}"), 50.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_failed_keys{load_get,error,}"), 2.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_failed_keys{load_get,partial_failure,}"), 1.0);
  EXPECT_EQ(c.returned, 3 * 6u + 2 * 4u)
      << "time, count and keys of all six records, bytes and failed keys of four";
  EXPECT_TRUE(d->reporter.problems.empty()) << d->reporter.Dump();
}

TEST(ForEachConnectorSample, UnwrappedStoreChildWalksEveryOperationInOrder) {
  auto d = DecodeFixture("kv_multi_data_wrapped");
  Collected c = Walk(*d, 1);
  EXPECT_THAT(c.values["vllm:mooncake_store_operation_time_seconds"],
              ElementsAre(0.02, 0.31, 0.0004));
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_failed_keys{save_put,partial_failure,}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{load_get,ok,}"), 16777216.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{lookup_exists,ok,}"), 8.0);
  Collected nixl = Walk(*d, 0);
  EXPECT_THAT(nixl.values["vllm:nixl_xfer_time_seconds"], ElementsAre(0.01, 0.02));
}

// label_set lets a recorder resolve a record's children once: every sample of one record has
// the same nonzero set and the same labels, the next record another set; flat payloads promise
// nothing (0).
TEST(ForEachConnectorSample, EachStoreRecordsSamplesShareOneLabelSet) {
  auto d = DecodeFixture("kv_multi_data_wrapped");
  const IdentifiedPayload& store = Identified(*d, 1);
  ASSERT_NE(store.row, nullptr);
  std::map<uint32_t, std::vector<std::string>> labels_of_set;
  std::vector<uint32_t> order;
  ForEachConnectorSample(store.payload, *store.row, d->ctx, [&](const ConnectorSample& s) {
    EXPECT_NE(s.label_set, 0u);
    const std::vector<std::string> labels(s.extra_label_values.begin(), s.extra_label_values.end());
    auto [it, first] = labels_of_set.emplace(s.label_set, labels);
    if (first) order.push_back(s.label_set);
    EXPECT_EQ(it->second, labels) << "set " << s.label_set;
  });
  EXPECT_THAT(order, ElementsAre(1u, 2u, 3u)) << "one set per record, in record order";
  EXPECT_EQ(labels_of_set[1], (std::vector<std::string>{"load_get", "ok"}));
  EXPECT_EQ(labels_of_set[2], (std::vector<std::string>{"save_put", "partial_failure"}));
  EXPECT_EQ(labels_of_set[3], (std::vector<std::string>{"lookup_exists", "ok"}));
  const IdentifiedPayload& nixl = Identified(*d, 0);
  ForEachConnectorSample(nixl.payload, *nixl.row, d->ctx,
                         [&](const ConnectorSample& s) { EXPECT_EQ(s.label_set, 0u); });
}

// The walk keeps a record's labels in buffers reused from call to call; a walk started from
// inside a callback (here: of another store payload, then of the same one) must not disturb
// the labels of the record the outer walk is in the middle of.
TEST(ForEachConnectorSample, AWalkInsideACallbackLeavesTheOuterRecordsLabelsAlone) {
  auto d = DecodeFixture("kv_multi_data_wrapped");
  const IdentifiedPayload& store = Identified(*d, 1);
  auto d2 = DecodeFixture("kv_mooncake_store_defaults");
  const IdentifiedPayload& other = Identified(*d2, 0);
  ASSERT_NE(store.row, nullptr);
  ASSERT_NE(other.row, nullptr);
  std::vector<std::string> outer;
  size_t inner_samples = 0;
  ForEachConnectorSample(store.payload, *store.row, d->ctx, [&](const ConnectorSample& s) {
    const std::string before =
        std::string(s.extra_label_values[0]) + "," + std::string(s.extra_label_values[1]);
    inner_samples +=
        ForEachConnectorSample(other.payload, *other.row, d2->ctx, [](const ConnectorSample&) {});
    outer.push_back(before);
    EXPECT_EQ(before,
              std::string(s.extra_label_values[0]) + "," + std::string(s.extra_label_values[1]))
        << "the outer sample's labels after an inner walk";
  });
  EXPECT_GT(inner_samples, 0u);
  ASSERT_FALSE(outer.empty());
  EXPECT_EQ(outer.front(), "load_get,ok");
  EXPECT_EQ(outer.back(), "lookup_exists,ok");
  // And a plain walk afterwards still finds its own labels.
  Collected c = Walk(*d, 1);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{load_get,ok,}"), 16777216.0);
}

TEST(ForEachConnectorSample, MooncakeP2pFeedsItsSixFamilies) {
  auto d = DecodeFixture("kv_mooncake_p2p");
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:mooncake_xfer_time_seconds"], ElementsAre(0.004));
  EXPECT_THAT(c.values["vllm:mooncake_bytes_transferred"], ElementsAre(2097152.0));
  EXPECT_THAT(c.values["vllm:mooncake_num_descriptors"], ElementsAre(16.0));
  EXPECT_EQ(c.sums.at("vllm:mooncake_num_failed_recvs{}"), 1.0);
}

TEST(ForEachConnectorSample, OffloadingReadsTheEmptyTupleEntry) {
  auto d = DecodeFixture("kv_offloading");
  Collected c = Walk(*d, 0);
  EXPECT_EQ(c.sums.at("vllm:kv_offload_store_bytes{}"), 4194304.0);
  EXPECT_THAT(c.values["vllm:kv_offload_store_size"], ElementsAre(4194304.0));
}

TEST(ForEachConnectorSample, Hf3fsAddsScalarCountsAndObservesDurations) {
  const ConnectorConfig config{"HF3FSKVConnector", {}};
  auto d = DecodeFixture("kv_hf3fs", &config);
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:hf3fs_save_duration_seconds"], ElementsAre(0.02, 0.03));
  EXPECT_THAT(c.values["vllm:hf3fs_load_duration_seconds"], ElementsAre(0.01));
  EXPECT_EQ(c.sums.at("vllm:hf3fs_num_failed_save{}"), 1.0);
}

TEST(ForEachConnectorSample, HiSparseSumsItsCounterLists) {
  auto d = DecodeFixture("kv_multi_offloading_hf3fs_hisparse");
  Collected c = Walk(*d, 2);
  EXPECT_EQ(c.sums.at("vllm:hisparse_cache_hits{}"), 8.0);
  EXPECT_EQ(c.sums.at("vllm:hisparse_cache_misses{}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:hisparse_host_to_device_bytes{}"), 65536.0);
}

TEST(ForEachConnectorSample, RunTimeRowWalksItsPayloadPath) {
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  ASSERT_TRUE(catalog.AddRow(AcmeRow()).ok());
  auto d = DecodeFixture("kv_multi_descriptor", nullptr, &catalog);
  Collected c = Walk(*d, 1);
  EXPECT_EQ(c.sums.at("vllm:acme_hits{}"), 5.0);
}

}  // namespace
}  // namespace vmetrics
