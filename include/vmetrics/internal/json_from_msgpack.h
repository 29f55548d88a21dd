// SPDX-License-Identifier: Apache-2.0
// File: json_from_msgpack.h
//
// MsgpackToJson: renders one msgpack value as JSON for `vmetrics decode` (generic payloads of
// unknown connectors, kv_transfer_params, utility results). Non-string map keys become their
// JSON text ("[]" for the empty tuple); bin and ext values become {"$bin"|"$ext": ..., "len": n}.
// Nesting deeper than `max_depth` renders as the string "<too deep>".
//
// Internal (include/vmetrics/internal/: shared by the libraries of this tree, not a stable API):
// written by the protocol library, used by the frontend's `vmetrics decode`.
#ifndef VMETRICS_INTERNAL_JSON_FROM_MSGPACK_H_
#define VMETRICS_INTERNAL_JSON_FROM_MSGPACK_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "vmetrics/status.h"

namespace vmetrics::protocol {

Result<nlohmann::ordered_json> MsgpackToJson(std::string_view raw, int max_depth = 64);

}  // namespace vmetrics::protocol

#endif  // VMETRICS_INTERNAL_JSON_FROM_MSGPACK_H_
