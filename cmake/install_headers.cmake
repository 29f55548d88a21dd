# SPDX-License-Identifier: Apache-2.0
# The headers `cmake --install` (and cpack) put under <prefix>/<includedir>/vmetrics, run at
# install time from CMakeLists.txt's install(CODE), so the set follows the headers as they are
# when installed and no list of them can go stale:
#
#   - every public header of include/vmetrics/ and include/vmetrics/frontend/, except those
#     of the libraries that are not installed (VMETRICS_HEADERS_NOT_INSTALLED);
#   - of include/vmetrics/internal/, exactly the headers those include, directly or through
#     another header (`#include "vmetrics/..."` lines); the rest are shared by this tree's
#     libraries only and are no part of the package.
#
# An installed header that includes a header of a library that is not installed is an error:
# the package would not compile for its users. tests/install/install_test.sh checks the
# result from the outside (each installed header compiles alone; internal/ holds exactly what
# the installed headers include).
#
# Input: VMETRICS_HEADER_ROOT (the source include/ directory), VMETRICS_HEADER_DESTINATION
# (the include directory, relative to CMAKE_INSTALL_PREFIX or absolute),
# VMETRICS_HEADERS_NOT_INSTALLED (paths relative to VMETRICS_HEADER_ROOT).

# An install script runs without the project's policies; include() scopes this setting.
cmake_policy(VERSION 3.25)

file(GLOB public RELATIVE "${VMETRICS_HEADER_ROOT}" "${VMETRICS_HEADER_ROOT}/vmetrics/*.h"
     "${VMETRICS_HEADER_ROOT}/vmetrics/frontend/*.h")
list(REMOVE_ITEM public ${VMETRICS_HEADERS_NOT_INSTALLED})
list(SORT public)

set(pending ${public})
set(installed "")
while(pending)
  list(POP_FRONT pending header)
  if(header IN_LIST installed)
    continue()
  endif()
  list(APPEND installed "${header}")
  file(STRINGS "${VMETRICS_HEADER_ROOT}/${header}" includes REGEX "^#include \"vmetrics/[^\"]+\"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"(vmetrics/[^\"]+)\".*" "\\1" included "${line}")
    if(included IN_LIST VMETRICS_HEADERS_NOT_INSTALLED)
      message(FATAL_ERROR "${header} is installed and includes ${included}, which is not "
                          "(its library is not installed)")
    endif()
    if(NOT EXISTS "${VMETRICS_HEADER_ROOT}/${included}")
      message(FATAL_ERROR "${header} includes ${included}, which does not exist")
    endif()
    list(APPEND pending "${included}")
  endforeach()
endwhile()

if(IS_ABSOLUTE "${VMETRICS_HEADER_DESTINATION}")
  set(destination "${VMETRICS_HEADER_DESTINATION}")
else()
  set(destination "${CMAKE_INSTALL_PREFIX}/${VMETRICS_HEADER_DESTINATION}")
endif()
list(SORT installed)
foreach(header IN LISTS installed)
  get_filename_component(directory "${header}" DIRECTORY)
  # file(INSTALL) adds DESTDIR (cpack's staging directory) and records the install manifest.
  file(INSTALL DESTINATION "${destination}/${directory}" TYPE FILE
       FILES "${VMETRICS_HEADER_ROOT}/${header}")
endforeach()
