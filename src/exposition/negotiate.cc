// SPDX-License-Identifier: Apache-2.0
// Content negotiation and gzip, mirroring prometheus_client's choose_encoder and
// gzip_accepted (exposition.py, 0.16 through 0.22):
//
//   choose_encoder: split Accept on ','; an element whose media type (text before the first
//     ';', stripped) equals "application/openmetrics-text" selects OpenMetrics. The
//     comparison is case-sensitive, as in Python; Prometheus sends lower case.
//   gzip_accepted: split Accept-Encoding on ','; an element whose coding (before ';',
//     stripped, lower-cased) is "gzip" enables gzip. "*" does not, as in Python.
//
// Deliberate deviation: Python ignores parameters, so "gzip;q=0" (RFC 9110: "not
// acceptable") still gets gzip there. We skip an element whose q parameter is zero, for
// both headers: sending a coding or format the client refused can only break it, and no
// client that sends q=0 relies on being ignored. Any other q (or a malformed one) counts as
// accepted, like Python.
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

#include "vmetrics/exposition.h"

namespace vmetrics {
namespace {

constexpr std::string_view kOpenMetricsMediaType = "application/openmetrics-text";

// Python's str.strip(): removes leading and trailing whitespace.
std::string_view Strip(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  const size_t end = s.find_last_not_of(kSpace);
  return s.substr(begin, end - begin + 1);
}

bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// True if the parameters after an element's first ';' contain a q parameter whose value is
// zero ("q=0", "q=0.", "q=0.000"). RFC 9110 qvalues are "0" or "1" with up to three decimals.
bool HasZeroQuality(std::string_view params) {
  while (!params.empty()) {
    const size_t semi = params.find(';');
    const std::string_view param = Strip(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    const size_t eq = param.find('=');
    if (eq == std::string_view::npos) continue;
    if (!EqualsIgnoreAsciiCase(Strip(param.substr(0, eq)), "q")) continue;
    const std::string_view value = Strip(param.substr(eq + 1));
    if (value.empty() || value[0] != '0') return false;
    for (const char c : value.substr(1)) {
      if (c != '0' && c != '.') return false;
    }
    return true;
  }
  return false;
}

// Calls `match(token)` for each comma-separated element whose quality is not zero, with the
// token being the stripped text before the element's first ';'. Returns true on the first
// element for which match returns true.
template <typename Match>
bool AnyAccepted(std::string_view header, Match match) {
  while (true) {
    const size_t comma = header.find(',');
    const std::string_view element = header.substr(0, comma);
    const size_t semi = element.find(';');
    const std::string_view token = Strip(element.substr(0, semi));
    const bool refused = semi != std::string_view::npos && HasZeroQuality(element.substr(semi + 1));
    if (!refused && match(token)) return true;
    if (comma == std::string_view::npos) return false;
    header.remove_prefix(comma + 1);
  }
}

}  // namespace

Negotiated Negotiate(std::string_view accept, std::string_view accept_encoding) {
  Negotiated result;
  if (AnyAccepted(accept, [](std::string_view t) { return t == kOpenMetricsMediaType; })) {
    result.format = ExpositionFormat::kOpenMetrics;
    result.content_type = kContentTypeOpenMetrics100;
  }
  result.gzip = AnyAccepted(accept_encoding,
                            [](std::string_view t) { return EqualsIgnoreAsciiCase(t, "gzip"); });
  return result;
}

bool GzipCompress(std::string_view in, std::string* out) {
  z_stream stream{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's. Level 1, not Python's
  // gzip.compress level 9: the bytes differ from Python's anyway (the header carries mtime),
  // and on a 3.8 MB scrape (64 engines x 70 families) level 1 takes 9 ms for 222 kB where
  // level 6 takes 25 ms for 192 kB and level 9 77 ms for 173 kB; rendering itself takes 3 ms.
  if (deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return false;
  }
  const size_t old_size = out->size();
  bool ok = true;
  // zlib counts in uInt; feed and drain in chunks so inputs above 4 GiB still work.
  constexpr size_t kChunk = std::numeric_limits<uInt>::max() / 2;
  size_t consumed = 0;
  int flush = Z_NO_FLUSH;
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    if (stream.avail_in == 0 && flush != Z_FINISH) {
      const size_t n = std::min(kChunk, in.size() - consumed);
      // zlib's next_in is not const-qualified but is never written through.
      stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + consumed));
      stream.avail_in = static_cast<uInt>(n);
      consumed += n;
      if (consumed == in.size()) flush = Z_FINISH;
    }
    const size_t before = out->size();
    const size_t room =
        std::min<size_t>(kChunk, std::max<size_t>(deflateBound(&stream, stream.avail_in), 64));
    out->resize(before + room);
    stream.next_out = reinterpret_cast<Bytef*>(out->data() + before);
    stream.avail_out = static_cast<uInt>(room);
    status = deflate(&stream, flush);
    out->resize(before + (room - stream.avail_out));
    if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR) {
      ok = false;
      break;
    }
  }
  deflateEnd(&stream);
  if (!ok) out->resize(old_size);
  return ok;
}

}  // namespace vmetrics
