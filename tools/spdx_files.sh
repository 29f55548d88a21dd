#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Which tracked files carry an SPDX licence line, and in which comment syntax: sourced by
# tools/add_spdx.sh and tools/check_spdx.sh so the two can never disagree.
#
# A file carries `<comment> SPDX-License-Identifier: Apache-2.0` as its first line, or as its
# second when the first is a `#!` line (the kernel reads the interpreter from line 1):
#   //  C and C++: *.h *.hh *.hpp *.c *.cc *.cpp
#   #   Python, shell, CMake, Make, YAML, suppressions, pkg-config templates: *.py *.sh *.cmake
#       *.cmake.in *.pc.in *.yml *.yaml *.supp CMakeLists.txt Makefile, and any other file
#       whose first line is `#!`
# Not marked: documentation (*.md), JSON (it has no comments), the licence texts, and test data
# (tests/golden/, tests/fixtures/, fuzz/corpus/), which must stay byte for byte what their
# generators wrote. LICENSE at the top of the tree and the package's copyright file
# (cmake/copyright) say what covers those.

SPDX_LICENSE="Apache-2.0"

# spdx_comment FILE: prints the comment leader FILE takes ("//" or "#"); prints nothing and
# returns 1 when FILE carries no SPDX line.
spdx_comment() {
  local file=$1
  case "$file" in
    tests/golden/* | tests/fixtures/* | fuzz/corpus/*) return 1 ;;
    *.md | *.json | LICENSE | cmake/copyright) return 1 ;;
    *.h | *.hh | *.hpp | *.c | *.cc | *.cpp) echo "//"; return 0 ;;
    *.py | *.sh | *.cmake | *.cmake.in | *.pc.in | *.yml | *.yaml | *.supp) echo "#"; return 0 ;;
    CMakeLists.txt | */CMakeLists.txt | Makefile | */Makefile) echo "#"; return 0 ;;
  esac
  if [[ -f $file ]] && [[ $(head -c 2 "$file") == "#!" ]]; then
    echo "#"
    return 0
  fi
  return 1
}

# spdx_has_line FILE: true when the SPDX line is where it belongs (line 1, or line 2 after #!).
spdx_has_line() {
  local file=$1 first second
  first=$(sed -n 1p "$file")
  if [[ $first == *"SPDX-License-Identifier: "* ]]; then return 0; fi
  if [[ $first == "#!"* ]]; then
    second=$(sed -n 2p "$file")
    [[ $second == *"SPDX-License-Identifier: "* ]] && return 0
  fi
  return 1
}
