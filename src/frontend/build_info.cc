// SPDX-License-Identifier: Apache-2.0
// BuildVersion and BuildRevision; see build_info.h. The values come from
// src/frontend/CMakeLists.txt.
#include "build_info.h"

#ifndef VMETRICS_BUILD_VERSION
#define VMETRICS_BUILD_VERSION "unknown"
#endif
#ifndef VMETRICS_BUILD_REVISION
#define VMETRICS_BUILD_REVISION "unknown"
#endif

namespace vmetrics::frontend {

const char* BuildVersion() { return VMETRICS_BUILD_VERSION; }
const char* BuildRevision() { return VMETRICS_BUILD_REVISION; }

}  // namespace vmetrics::frontend
