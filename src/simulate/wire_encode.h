// SPDX-License-Identifier: Apache-2.0
// File: wire_encode.h
//
// Encoders for the engine's side of the wire, used by the simulator and by tests: the
// EngineCoreOutputs a simulated step produces, HELLO/READY, the EngineCoreReadyResponse and a
// UTILITY reply. Each writes what msgspec writes for the same Python values: array_like
// structs as arrays of every field, dataclasses as maps of every field in definition order,
// floats as float64, ints in their smallest encoding (msgpack-cxx's packer does the same).
//
// Thread safety: pure functions.
#ifndef VMETRICS_SIMULATE_WIRE_ENCODE_H_
#define VMETRICS_SIMULATE_WIRE_ENCODE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine_model.h"
#include "vmetrics/handshake.h"
#include "vmetrics/simulator.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics::internal {

// EngineCoreOutputs for one simulated step: [engine_index, outputs, scheduler_stats,
// timestamp, nil, nil, nil, nil]. `connector` decides the shape of kv_connector_stats (a bare
// payload, or MultiConnector's class-name map, flat or — `legacy_multi_shape` — wrapped in
// {"data": ...}).
std::string EncodeEngineCoreOutputs(const SimMessage& message, SimConnector connector,
                                    bool legacy_multi_shape);
// The same in the layouts of wire generation `wire`: EngineCoreOutput position by position as
// its table says, SchedulerStats with its keys, PrefixCacheStats, SpecDecodingStats and
// PrefillStats with its key counts. Logprobs travel only where the generation sends tensors
// (an older generation's list forms are nil here: RequestService refuses logprobs for them).
std::string EncodeEngineCoreOutputs(const SimMessage& message, SimConnector connector,
                                    bool legacy_multi_shape, const WireGeneration& wire);

// The first frame an engine of `wire` sends on an input socket: "" (the empty registration of
// engines before 2026-04-09), or its ready response with that generation's keys.
std::string EncodeRegistration(const EngineCoreReadyResponse& response, const WireGeneration& wire);

// READY as an engine before 2026-04-09 sends it: also num_gpu_blocks and dp_stats_address.
std::string EncodeReadyWithBlocks(bool local, bool headless,
                                  const std::optional<std::string>& parallel_config_hash,
                                  int64_t num_gpu_blocks);

// {"status": status, "local": local, "headless": headless} plus "parallel_config_hash" when
// given (READY with data_parallel_size > 1).
std::string EncodeHandshakeStatus(std::string_view status, bool local, bool headless,
                                  const std::optional<std::string>& parallel_config_hash);

// The ready response with the full key set of the newest Python engine (optional values that
// are unset are sent as nil, as the dataclass does).
std::string EncodeReadyResponse(const EngineCoreReadyResponse& response);

// The reply to a UTILITY call: EngineCoreOutputs [engine_index, [], nil, timestamp,
// [call_id, nil, [nil, result]], nil, nil, nil], `result_msgpack` being the encoded result.
std::string EncodeUtilityReply(int64_t engine_index, uint64_t call_id, double timestamp,
                               std::string_view result_msgpack);
// The reply to a UTILITY call that failed: [call_id, failure_message, nil].
std::string EncodeUtilityFailure(int64_t engine_index, uint64_t call_id, double timestamp,
                                 std::string_view failure_message);

// Frame 0 of a three-part message: EngineCoreOutputs [engine_index, [output], nil, timestamp,
// nil, nil, nil, nil] whose one output's new_logprobs holds a float32 tensor of
// kAuxFrameFloats values in aux frame 2. The simulator sends it with aux frame 1 only (a
// truncated multipart message), which a frontend must refuse.
inline constexpr int64_t kAuxFrameFloats = 4;
std::string EncodeAuxFrameMessage(int64_t engine_index, double timestamp);

}  // namespace vmetrics::internal

#endif  // VMETRICS_SIMULATE_WIRE_ENCODE_H_
