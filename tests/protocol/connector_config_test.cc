// SPDX-License-Identifier: Apache-2.0
// Tests of src/protocol/connector_config.cc: vLLM's --kv-transfer-config JSON read into a
// ConnectorConfig (the bare connector, or MultiConnector and its children in config order).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

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

// --ec-transfer-config: vLLM's ECTransferConfig JSON; the connector and role are read, the
// other fields are left to vLLM, and every refusal names the flag.
TEST(EcConnectorConfig, ConnectorAndRoleFromVllmJson) {
  auto c = EcConnectorConfig::FromEcTransferConfigJson(
      R"({"ec_connector":"ECCPUConnector","ec_role":"ec_both",)"
      R"("ec_connector_extra_config":{"ec_cpu_bytes":1073741824},"engine_id":"e0"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->configured());
  EXPECT_EQ(c->connector, "ECCPUConnector");
  EXPECT_EQ(c->ec_role, "ec_both");
  for (const char* none : {R"({})", R"({"ec_connector":null,"ec_role":"ec_producer"})"}) {
    auto n = EcConnectorConfig::FromEcTransferConfigJson(none);
    ASSERT_TRUE(n.ok()) << none;
    EXPECT_FALSE(n->configured()) << none;
  }
  EXPECT_FALSE(EcConnectorConfig{}.configured());
}

TEST(EcConnectorConfig, BadDocumentsAreRefusedNamingTheFlag) {
  for (const char* bad : {"{", "[]", R"({"ec_connector":3})", R"({"ec_connector":""})",
                          R"({"ec_connector":"ECCPUConnector","ec_role":"ec_both_ways"})",
                          R"({"ec_connector":"ECCPUConnector","ec_role":1})",
                          R"({"ec_connector":"ECCPUConnector","ec_connector_extra_config":[]})"}) {
    auto c = EcConnectorConfig::FromEcTransferConfigJson(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(c.status().message().find("--ec-transfer-config"), std::string::npos)
        << bad << ": " << c.status().ToString();
  }
}

}  // namespace
}  // namespace vmetrics
