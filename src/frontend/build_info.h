// File: build_info.h
//
// What this binary was built from, for vmetrics_build_info{version,revision} and --version:
// the project version (CMakeLists.txt) and the git commit of the source tree when CMake was
// configured ("unknown" outside a git checkout). Its own file so that only it is compiled
// again when the revision changes.
#ifndef VMETRICS_FRONTEND_BUILD_INFO_H_
#define VMETRICS_FRONTEND_BUILD_INFO_H_

namespace vmetrics::frontend {

const char* BuildVersion();
const char* BuildRevision();

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_BUILD_INFO_H_
