// SPDX-License-Identifier: Apache-2.0
// Internal helpers shared by the protocol decoders.
#ifndef VMETRICS_PROTOCOL_DECODE_INTERNAL_H_
#define VMETRICS_PROTOCOL_DECODE_INTERNAL_H_

#include <string>
#include <string_view>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics::internal {

inline void ReportProblem(const DecodeContext& ctx, int64_t offset, std::string_view connector,
                          std::string_view key, std::string what,
                          ProblemKind kind = ProblemKind::kOther) {
  ctx.Report(offset, connector, key, std::move(what), kind);
}

// Runs `decode` on the value at `r`. If it fails because the value has the wrong shape, the
// problem is reported under `key`, the value is skipped and Ok is returned (the field keeps
// whatever `reset` leaves). Only a value that cannot even be skipped (truncated input, pickle)
// fails the caller.
template <typename Decode, typename Reset>
Status TolerantField(protocol::MsgpackReader& r, const DecodeContext& ctx, std::string_view key,
                     Decode&& decode, Reset&& reset) {
  protocol::MsgpackReader saved = r;
  Status s = decode(r);
  if (s.ok()) return s;
  reset();
  r = saved;
  if (Status skip = r.Skip(); !skip.ok()) return skip;
  // A uint64 above INT64_MAX fails as LimitExceeded; every other failure is a value of the
  // wrong shape.
  ReportProblem(ctx, s.offset(), "", key, s.message(),
                s.code() == StatusCode::kLimitExceeded ? ProblemKind::kIntegerOverflow
                                                       : ProblemKind::kWrongType);
  return Status::Ok();
}

// Reads an optional value: nil leaves `present` false.
inline bool ConsumeNil(protocol::MsgpackReader& r) {
  if (!r.NextIsNil()) return false;
  (void)r.ReadNil();
  return true;
}

// Decodes a SchedulerStats map at the reader.
Status DecodeSchedulerStatsAt(protocol::MsgpackReader& r, const DecodeContext& ctx,
                              SchedulerStats* out);

// Splits one kv_connector_stats value into its connector payloads, named by the configuration
// or the MultiConnector child keys (connector_payloads.cc); no catalog is consulted.
Status DecodeKvConnectorStats(protocol::MsgpackReader& r, const DecodeContext& ctx,
                              KvConnectorStats* out);

}  // namespace vmetrics::internal

#endif  // VMETRICS_PROTOCOL_DECODE_INTERNAL_H_
