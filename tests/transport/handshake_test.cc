// SPDX-License-Identifier: Apache-2.0
// Tests of src/protocol/handshake.cc (HELLO/READY/INIT/ready response). They live in the
// transport binary because the handshake is the transport's first use of them.
#include "vmetrics/handshake.h"

#include <gtest/gtest.h>

#include <string>

#include "test_support.h"
#include "wire_encode.h"

namespace vmetrics {
namespace {

using namespace std::string_literals;

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// docs/design.md §5.2: HELLO of a headless remote engine.
constexpr std::string_view kHelloHex =
    "83a6737461747573a548454c4c4fa56c6f63616cc2a8686561646c657373c3";

TEST(HandshakeMessage, DecodesTheReferenceHello) {
  Result<HandshakeMessage> m = DecodeHandshakeMessage(Unhex(kHelloHex));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->status, "HELLO");
  EXPECT_EQ(m->local, false);
  EXPECT_EQ(m->headless, true);
  EXPECT_FALSE(m->parallel_config_hash.has_value());
  EXPECT_FALSE(m->num_gpu_blocks.has_value());
}

TEST(HandshakeMessage, SimulatorEncodesHelloByteForByte) {
  EXPECT_EQ(internal::EncodeHandshakeStatus("HELLO", false, true, std::nullopt), Unhex(kHelloHex));
}

TEST(HandshakeMessage, ReadyWithParallelConfigHash) {
  const std::string bytes = Unhex(
      "84a6737461747573a55245414459a56c6f63616cc2a8686561646c657373c3b4706172616c6c656c5f636f6e"
      "6669675f68617368a3616263");
  EXPECT_EQ(internal::EncodeHandshakeStatus("READY", false, true, std::string("abc")), bytes);
  Result<HandshakeMessage> m = DecodeHandshakeMessage(bytes);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, "READY");
  EXPECT_EQ(m->parallel_config_hash, "abc");
}

TEST(HandshakeMessage, OlderReadyCarriesGpuBlocksAndStatsAddress) {
  // {"status": "READY", "local": false, "headless": true, "num_gpu_blocks": 1234,
  //  "dp_stats_address": nil, "future": [1]}
  std::string bytes = "\x86"s;
  bytes += "\xa6status\xa5READY\xa5local\xc2\xa8headless\xc3"s;
  bytes += "\xaenum_gpu_blocks\xcd\x04\xd2"s;
  bytes +=
      "\xb0"
      "dp_stats_address\xc0"s;
  bytes +=
      "\xa6"
      "future\x91\x01"s;
  Result<HandshakeMessage> m = DecodeHandshakeMessage(bytes);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->num_gpu_blocks, 1234);
  EXPECT_FALSE(m->dp_stats_address.has_value());
}

TEST(HandshakeMessage, MissingStatusIsEmptyAndNotAMapFails) {
  Result<HandshakeMessage> m = DecodeHandshakeMessage(std::string("\x80", 1));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, "");
  EXPECT_FALSE(DecodeHandshakeMessage(std::string("\x91\x01", 2)).ok());
  EXPECT_FALSE(DecodeHandshakeMessage("").ok());
  // A known key of the wrong type is an error in a handshake.
  EXPECT_FALSE(DecodeHandshakeMessage(std::string("\x81\xa6status\x05", 9)).ok());
  // Trailing bytes after the map.
  EXPECT_FALSE(DecodeHandshakeMessage(Unhex(kHelloHex) + std::string(1, '\0')).ok());
}

TEST(HandshakeInit, EncodesAsMsgspecDoes) {
  HandshakeInit init;
  init.addresses.inputs = {"tcp://127.0.0.1:5001"};
  init.addresses.outputs = {"tcp://127.0.0.1:5002"};
  // python3: msgpack.packb({"addresses": {"inputs": [...], "outputs": [...],
  //   "coordinator_input": None, "coordinator_output": None,
  //   "frontend_stats_publish_address": None}, "parallel_config": {}})
  EXPECT_EQ(test::Hex(EncodeHandshakeInit(init)),
            "82a961646472657373657385a6696e7075747391b47463703a2f2f3132372e302e302e313a35303031"
            "a76f75747075747391b47463703a2f2f3132372e302e302e313a35303032b1636f6f7264696e61746f"
            "725f696e707574c0b2636f6f7264696e61746f725f6f7574707574c0be66726f6e74656e645f737461"
            "74735f7075626c6973685f61646472657373c0af706172616c6c656c5f636f6e66696780");
}

TEST(HandshakeInit, RoundTripsAndRequiresAddresses) {
  HandshakeInit init;
  init.addresses.inputs = {"ipc:///tmp/a", "ipc:///tmp/b"};
  init.addresses.outputs = {"ipc:///tmp/c", "ipc:///tmp/d"};
  init.addresses.coordinator_input = "tcp://10.0.0.1:7000";
  Result<HandshakeInit> back = DecodeHandshakeInit(EncodeHandshakeInit(init));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->addresses.inputs, init.addresses.inputs);
  EXPECT_EQ(back->addresses.outputs, init.addresses.outputs);
  EXPECT_EQ(back->addresses.coordinator_input, "tcp://10.0.0.1:7000");
  EXPECT_FALSE(back->addresses.coordinator_output.has_value());
  EXPECT_EQ(back->parallel_config, std::string("\x80", 1));

  EXPECT_FALSE(DecodeHandshakeInit(std::string("\x80", 1)).ok());
  HandshakeInit empty;
  EXPECT_FALSE(DecodeHandshakeInit(EncodeHandshakeInit(empty)).ok());
}

TEST(EngineCoreReadyResponse, EmptyFrameIsTheOlderRegistration) {
  Result<EngineCoreReadyResponse> r = DecodeEngineCoreReadyResponse("");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty_registration);
  EXPECT_FALSE(r->max_model_len.has_value());
  EXPECT_FALSE(r->num_gpu_blocks.has_value());
}

TEST(EngineCoreReadyResponse, FullKeySetRoundTrips) {
  EngineCoreReadyResponse in;
  in.max_model_len = 32768;
  in.num_gpu_blocks = 4096;
  in.block_size = 16;
  in.dp_stats_address = "tcp://10.1.1.1:6000";
  in.dtype = "bfloat16";
  in.vllm_version = "0.30.0";
  in.world_size = 8;
  in.data_parallel_size = 2;
  in.tensor_parallel_size = 4;
  in.pipeline_parallel_size = 2;
  in.decode_context_parallel_size = 1;
  in.data_parallel_rank = 1;
  in.max_num_seqs = 512;
  in.max_num_batched_tokens = 16384;
  in.instance_id = "abc";
  in.kv_cache_size_tokens = 65536;
  in.kv_cache_max_concurrency = 2.5;
  in.kv_events_config = std::string("\x81\xa1k\x01", 4);
  in.kv_connector = "MultiConnector";
  in.kv_role = "kv_both";
  in.kv_engine_id = "e1";
  in.supports_lora = true;
  in.max_loras = 4;
  in.weight_transfer_backend = "nccl";
  in.enable_sleep_mode = true;
  in.supports_draft_weight_updates = true;
  in.effective_attention_block_size = 64;
  Result<EngineCoreReadyResponse> r =
      DecodeEngineCoreReadyResponse(internal::EncodeReadyResponse(in));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->empty_registration);
  EXPECT_EQ(r->max_model_len, 32768);
  EXPECT_EQ(r->num_gpu_blocks, 4096);
  EXPECT_EQ(r->block_size, 16);
  EXPECT_EQ(r->dp_stats_address, "tcp://10.1.1.1:6000");
  EXPECT_EQ(r->dtype, "bfloat16");
  EXPECT_EQ(r->vllm_version, "0.30.0");
  EXPECT_EQ(r->world_size, 8);
  EXPECT_EQ(r->data_parallel_size, 2);
  EXPECT_EQ(r->tensor_parallel_size, 4);
  EXPECT_EQ(r->pipeline_parallel_size, 2);
  EXPECT_EQ(r->data_parallel_rank, 1);
  EXPECT_EQ(r->max_num_seqs, 512);
  EXPECT_EQ(r->max_num_batched_tokens, 16384);
  EXPECT_EQ(r->instance_id, "abc");
  EXPECT_EQ(r->kv_cache_size_tokens, 65536);
  EXPECT_EQ(r->kv_cache_max_concurrency, 2.5);
  EXPECT_EQ(r->kv_events_config, in.kv_events_config);
  EXPECT_EQ(r->kv_connector, "MultiConnector");
  EXPECT_EQ(r->kv_role, "kv_both");
  EXPECT_EQ(r->kv_engine_id, "e1");
  EXPECT_TRUE(r->supports_lora);
  EXPECT_EQ(r->max_loras, 4);
  EXPECT_EQ(r->weight_transfer_backend, "nccl");
  EXPECT_TRUE(r->enable_sleep_mode);
  EXPECT_TRUE(r->supports_draft_weight_updates);
  EXPECT_EQ(r->effective_attention_block_size, 64);
  EXPECT_TRUE(r->skipped_keys.empty());
}

TEST(EngineCoreReadyResponse, UnknownKeysIgnoredMissingDefaultedWrongTypesSkipped) {
  // {"max_model_len": 2048, "brand_new": {"x": [1, 2]}, "block_size": "16",
  //  "kv_cache_max_concurrency": 3, "kv_connector": nil, 7: 8}
  std::string bytes = "\x86"s;
  bytes += "\xadmax_model_len\xcd\x08\x00"s;
  bytes +=
      "\xa9"
      "brand_new\x81\xa1x\x92\x01\x02"s;
  bytes +=
      "\xaa"
      "block_size\xa2"
      "16"s;
  bytes += "\xb8kv_cache_max_concurrency\x03"s;
  bytes += "\xackv_connector\xc0"s;
  bytes += "\x07\x08"s;
  Result<EngineCoreReadyResponse> r = DecodeEngineCoreReadyResponse(bytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_model_len, 2048);
  EXPECT_FALSE(r->block_size.has_value());
  EXPECT_EQ(r->kv_cache_max_concurrency, 3.0);  // ints accepted for floats
  EXPECT_FALSE(r->kv_connector.has_value());
  EXPECT_EQ(r->world_size, 1);
  EXPECT_EQ(r->dtype, "");
  ASSERT_EQ(r->skipped_keys.size(), 1u);
  EXPECT_EQ(r->skipped_keys[0], "block_size");
}

TEST(EngineCoreReadyResponse, NotAMapOrTruncatedFails) {
  EXPECT_FALSE(DecodeEngineCoreReadyResponse(std::string("\x92\x01\x02", 3)).ok());
  EXPECT_FALSE(DecodeEngineCoreReadyResponse(std::string("\x81\xadmax_model_len", 15)).ok());
  EXPECT_FALSE(DecodeEngineCoreReadyResponse(std::string("\x80\x80", 2)).ok());
  // A length field claiming more than the frame holds is refused before any allocation.
  EXPECT_FALSE(DecodeEngineCoreReadyResponse(std::string("\xdf\xff\xff\xff\xff", 5)).ok());
}

TEST(EngineIdentity, TwoByteLittleEndian) {
  EXPECT_EQ(EngineIdentity(0), std::string("\x00\x00", 2));
  EXPECT_EQ(EngineIdentity(1), std::string("\x01\x00", 2));
  EXPECT_EQ(EngineIdentity(258), std::string("\x02\x01", 2));
  EXPECT_EQ(EngineIndexFromIdentity(EngineIdentity(258)), 258);
  EXPECT_EQ(EngineIndexFromIdentity(EngineIdentity(65535)), 65535);
  EXPECT_FALSE(EngineIndexFromIdentity("a").has_value());
  EXPECT_FALSE(EngineIndexFromIdentity("abc").has_value());
}

}  // namespace
}  // namespace vmetrics
