// SPDX-License-Identifier: Apache-2.0
// exposition_check: the exposition checker (exposition_grammar.h) as a command, for the tests
// written in shell and Python (tests/e2e/hostile_serve_e2e.py, tests/cli/hostile_captures.sh).
//
// Usage: exposition_check text|openmetrics FILE...
// Exit status: 0 every FILE is valid; 1 one is not (stderr: "FILE:LINE: message: line");
// 2 usage or unreadable file.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "tests/support/exposition_grammar.h"

int main(int argc, char** argv) {
  using vmetrics::test_support::ExpositionFormat;
  if (argc < 3 ||
      (std::string_view(argv[1]) != "text" && std::string_view(argv[1]) != "openmetrics")) {
    std::fprintf(stderr, "usage: %s text|openmetrics FILE...\n", argv[0]);
    return 2;
  }
  const ExpositionFormat format = std::string_view(argv[1]) == "text"
                                      ? ExpositionFormat::kText004
                                      : ExpositionFormat::kOpenMetrics;
  int status = 0;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read\n", argv[i]);
      return 2;
    }
    std::stringstream body;
    body << in.rdbuf();
    if (auto v = vmetrics::test_support::CheckExposition(body.str(), format)) {
      std::fprintf(stderr, "%s:%zu: %s: %s\n", argv[i], v->line, v->message.c_str(),
                   v->excerpt.c_str());
      status = 1;
    }
  }
  return status;
}
