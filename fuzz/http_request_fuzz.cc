// SPDX-License-Identifier: Apache-2.0
// http_request_fuzz: libFuzzer target for the socket-free request handling of src/server.
//
// Feeds the input as an HTTP request head through AddHeader, RouteFor, Negotiate,
// ParseBasicAuthorization, BuildReply (with and without basic-auth users) and RejectRouteBody
// and checks the invariants listed in http_request_fuzz_check.h: no crash, no 200 without
// credentials when users are configured or without exactly one Host on HTTP/1.1, replies
// consistent with Negotiate, 411 and 417 for exactly the bodies that earn them.
//
// Build and run (clang only): tools/run_fuzzers.sh [SECONDS]
// Corpus: fuzz/corpus/http_request/ (hand-written seeds: Prometheus and curl scrapes, gzip,
// credentials, garbage; keep every minimized crash input there too: server_test replays the
// directory without libFuzzer).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/http_request_fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string why = vmetrics::fuzz::CheckHttpRequestInvariants(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!why.empty()) {
    std::fprintf(stderr, "http_request_fuzz: invariant broken: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
