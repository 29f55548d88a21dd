// SPDX-License-Identifier: Apache-2.0
#include "vmetrics/engine_core_client.h"

namespace vmetrics {

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
