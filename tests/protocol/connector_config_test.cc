// SPDX-License-Identifier: Apache-2.0
// Tests of src/protocol/connector_config.cc: vLLM's --kv-transfer-config JSON read into a
// ConnectorConfig (the bare connector, or MultiConnector and its children in config order).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(ConnectorConfig, DefaultIsNotConfigured) {
  const ConnectorConfig none;
  EXPECT_FALSE(none.configured());
  EXPECT_FALSE(none.is_multi());
}

TEST(ConnectorConfig, BareConnectorFromVllmJson) {
  auto c = ConnectorConfig::FromKvTransferConfigJson(
      R"({"kv_connector":"NixlConnector","kv_role":"kv_both","kv_buffer_device":"cuda"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->connector, "NixlConnector");
  EXPECT_TRUE(c->configured());
  EXPECT_FALSE(c->is_multi());
  EXPECT_THAT(c->children, IsEmpty());
}

TEST(ConnectorConfig, MultiConnectorChildrenInConfigOrder) {
  auto c = ConnectorConfig::FromKvTransferConfigJson(R"({
    "kv_connector": "MultiConnector",
    "kv_role": "kv_both",
    "kv_connector_extra_config": {
      "connectors": [
        {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
        {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
         "kv_connector_extra_config": {"block_size": 64, "num_cpu_blocks": 1000}},
        {"kv_connector": "MooncakeStoreConnector", "kv_role": "kv_both"}
      ]
    },
    "engine_id": "e-0"
  })");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->connector, "MultiConnector");
  EXPECT_TRUE(c->is_multi());
  EXPECT_THAT(c->children,
              ElementsAre("NixlConnector", "OffloadingConnector", "MooncakeStoreConnector"));
}

TEST(ConnectorConfig, UnknownConnectorNamesAreKeptAsGiven) {
  auto c = ConnectorConfig::FromKvTransferConfigJson(
      R"({"kv_connector":"AscendOffloadingConnector","kv_role":"kv_producer"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->connector, "AscendOffloadingConnector");
}

TEST(ConnectorConfig, NoConnectorMeansNothingConfigured) {
  for (const char* json : {R"({})", R"({"kv_connector": null, "kv_role": "kv_both"})"}) {
    auto c = ConnectorConfig::FromKvTransferConfigJson(json);
    ASSERT_TRUE(c.ok()) << json << ": " << c.status().ToString();
    EXPECT_FALSE(c->configured()) << json;
  }
}

TEST(ConnectorConfig, MultiConnectorChildWithoutAConnectorNameIsAnError) {
  EXPECT_FALSE(ConnectorConfig::FromKvTransferConfigJson(
                   R"({"kv_connector":"MultiConnector","kv_connector_extra_config":)"
                   R"({"connectors":[{"kv_role":"kv_both"}]}})")
                   .ok());
  EXPECT_FALSE(ConnectorConfig::FromKvTransferConfigJson(
                   R"({"kv_connector":"MultiConnector","kv_connector_extra_config":)"
                   R"({"connectors":"NixlConnector"}})")
                   .ok());
}

TEST(ConnectorConfig, NotJsonIsAnError) {
  EXPECT_FALSE(ConnectorConfig::FromKvTransferConfigJson("{kv_connector: Nixl").ok());
  EXPECT_FALSE(ConnectorConfig::FromKvTransferConfigJson("").ok());
}

TEST(ConnectorConfig, NotAnObjectIsAnError) {
  EXPECT_FALSE(ConnectorConfig::FromKvTransferConfigJson(R"(["NixlConnector"])").ok());
  EXPECT_FALSE(ConnectorConfig::FromKvTransferConfigJson(R"("NixlConnector")").ok());
}

TEST(ConnectorConfig, ConnectorThatIsNotAStringIsAnError) {
  EXPECT_FALSE(ConnectorConfig::FromKvTransferConfigJson(R"({"kv_connector": 5})").ok());
}

}  // namespace
}  // namespace vmetrics
