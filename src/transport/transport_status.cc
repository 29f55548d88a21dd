// SPDX-License-Identifier: Apache-2.0
#include <string>

#include "vmetrics/engine_core_client.h"

namespace vmetrics {

const char* TransportCodeName(TransportCode code) {
  switch (code) {
    case TransportCode::kOk:
      return "ok";
    case TransportCode::kInvalidArgument:
      return "invalid argument";
    case TransportCode::kSocket:
      return "socket error";
    case TransportCode::kTimeout:
      return "timeout";
    case TransportCode::kProtocol:
      return "protocol error";
    case TransportCode::kUnavailable:
      return "unavailable";
    case TransportCode::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::string TransportStatus::ToString() const {
  if (ok()) return "ok";
  std::string s = TransportCodeName(code_);
  if (!stage_.empty()) s += " during " + stage_;
  s += ": ";
  s += message_;
  return s;
}

const char* EngineEventKindName(EngineEventKind kind) {
  switch (kind) {
    case EngineEventKind::kConnected:
      return "connected";
    case EngineEventKind::kDead:
      return "dead";
  }
  return "unknown";
}

}  // namespace vmetrics
