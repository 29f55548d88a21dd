// SPDX-License-Identifier: Apache-2.0
// File: msgpack_from_json.h
//
// MsgpackFromJson: a JSON value from a request body as the msgpack bytes vLLM's Python frontend
// sends for the same value. The request's JSON is parsed by Python's json module into dicts,
// lists, str, int, float, bool and None, and msgspec encodes those: maps in the JSON's key
// order, integers in their smallest encoding, every float as float64 (1.0 stays a float, 1
// stays an int), strings as str. This is how kv_transfer_params, ec_transfer_params and
// vllm_xargs reach an engine inside SamplingParams.extra_args (request JSON -> msgpack), the
// reverse of protocol::MsgpackToJson, which renders what the engine sends back.
//
// Written with an explicit stack, not recursion: any depth is encoded without exhausting the
// thread's stack (the request parsers refuse fields nested past kMaxJsonNestingDepth,
// json_fields.h, before they get here).
//
// Pure functions: safe from any thread.
//
// Example:
//   nlohmann::ordered_json v = nlohmann::ordered_json::parse(R"({"a":[1,2.0,null]})");
//   EXPECT_EQ(MsgpackFromJson(v), std::string("\x81\xa1" "a\x93\x01\xcb@\0\0\0\0\0\0\0\xc0", 16));
#ifndef VMETRICS_FRONTEND_MSGPACK_FROM_JSON_H_
#define VMETRICS_FRONTEND_MSGPACK_FROM_JSON_H_

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace vmetrics::frontend {

// The msgpack encoding of `value`.
std::string MsgpackFromJson(const nlohmann::ordered_json& value);

// A msgpack map of the given entries (each value a JSON value), in order: how extra_args is
// put together from vllm_xargs and the transfer parameters.
std::string MsgpackMapFromJson(
    const std::vector<std::pair<std::string, const nlohmann::ordered_json*>>& entries);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_MSGPACK_FROM_JSON_H_
