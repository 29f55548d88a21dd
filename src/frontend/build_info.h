// SPDX-License-Identifier: Apache-2.0
// File: build_info.h
//
// What this binary was built from, for vmetrics_build_info{version,revision} and --version:
// the project version (CMakeLists.txt) and the git commit of the source tree when CMake was
// configured ("unknown" outside a git checkout). Its own file so that only it is compiled
// again when the revision changes (RegisterBuildInfo lives in engine_states.cc with the other
// families serve registers before the engines are in).
#ifndef VMETRICS_FRONTEND_BUILD_INFO_H_
#define VMETRICS_FRONTEND_BUILD_INFO_H_

#include "vmetrics/registry.h"

namespace vmetrics::frontend {

const char* BuildVersion();
const char* BuildRevision();

// Registers vmetrics_build_info{version,revision} 1 (a vmetrics_* family: render group 1).
void RegisterBuildInfo(Registry* registry);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_BUILD_INFO_H_
