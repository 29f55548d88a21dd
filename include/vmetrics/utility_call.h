// SPDX-License-Identifier: Apache-2.0
// File: utility_call.h
//
// The UTILITY calls a frontend makes on its engines (EngineCoreRequestType 0x03;
// docs/wire_format.md, "Utility calls"): the body vLLM's AsyncMPClient._call_utility_async sends,
// the array [client_index, call_id, method_name, args] (vllm/v1/engine/core_client.py), and the
// value an engine's UtilityOutput carries back, a UtilityResult written as [type_info, value]
// (vllm/v1/serial_utils.py). Which methods an engine of a generation has, and with which
// arguments, is its generation's table (WireGeneration::control); ControlCallsFor says which
// signatures every generation an engine may be agrees on.
//
// Why it matters: an engine's input thread unpacks the body as exactly four values and dies on
// anything else (a decode error there ends the engine's input silently), while a method that
// does not exist or takes other arguments only fails the call (the failure comes back in the
// UtilityOutput). So the body's shape is fixed here, and the arguments are the generation's.
//
// Thread safety: pure functions.
//
// Example:
//   const UtilityArg args[] = {int64_t{1}, std::string("abort")};
//   std::string body = EncodeUtilityCall(0, 42, "sleep", args);
//   Result<UtilityCall> call = DecodeUtilityCall(body);
//   EXPECT_EQ(call->method, "sleep");
#ifndef VMETRICS_UTILITY_CALL_H_
#define VMETRICS_UTILITY_CALL_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "vmetrics/status.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics {

// Any other plain value as its msgpack bytes: a request body's JSON object passed on as a
// keyword argument (MsgpackFromJson), or a result such as collective_rpc's list of the workers'
// results. Never a bin or ext value at its top.
struct UtilityRaw {
  std::string msgpack;
  bool operator==(const UtilityRaw&) const = default;
};

// One argument of a call, or a call's result: None, a bool, an int, a str, a list of str (the
// plain data the control routes pass and the engines answer them with), or another value raw.
using UtilityArg =
    std::variant<std::nullptr_t, bool, int64_t, std::string, std::vector<std::string>, UtilityRaw>;

// The UTILITY body: [client_index, call_id, method, [args...]], as msgspec writes the tuple
// (ints in their shortest form, the arguments an array).
std::string EncodeUtilityCall(int64_t client_index, uint64_t call_id, std::string_view method,
                              std::span<const UtilityArg> args);

struct UtilityCall {
  int64_t client_index = 0;
  uint64_t call_id = 0;
  std::string method;
  std::vector<UtilityArg> args;
};

// The engine's side of a UTILITY body (stand-in engines, tests): kMalformed unless it is an
// array of exactly four values with an int, a non-negative int, a str and an array of
// UtilityArgs, and nothing after it. A float, a map or a list holding anything but str is kept
// as UtilityRaw.
Result<UtilityCall> DecodeUtilityCall(std::string_view body);

// The value of a UtilityOutput's result (UtilityOutput::result: the UtilityResult's msgpack,
// empty when nil): None for an empty result, else the second value of [type_info, value].
// kMalformed when it is not that or the value is not a UtilityArg.
Result<UtilityArg> DecodeUtilityResult(std::string_view result);

// ControlCallsFor
//
// The signatures to call an engine with when its generation is one of `candidates`
// (WireCandidates, wire_decoder.h): the candidates' EngineControlCalls when they all agree,
// else kUnavailable naming the candidates.
Result<EngineControlCalls> ControlCallsFor(uint32_t candidates);

}  // namespace vmetrics

#endif  // VMETRICS_UTILITY_CALL_H_
