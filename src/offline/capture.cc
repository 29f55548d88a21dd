// SPDX-License-Identifier: Apache-2.0
// Reading captures; see capture.h.
#include "capture.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics::frontend {

Result<std::string> ReadCaptureFile(const std::string& path) {
  FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Status::InvalidArgument("cannot open " + path + ": " + std::strerror(errno));
  }
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) data.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  if (f != stdin) std::fclose(f);
  if (failed) return Status::Unavailable("error reading " + path);
  return data;
}

Status ForEachMessage(std::string_view data,
                      const std::function<void(uint64_t, size_t, std::string_view)>& fn,
                      uint64_t* messages_seen) {
  size_t offset = 0;
  uint64_t number = 0;
  while (offset < data.size()) {
    size_t length = 0;
    Status s = protocol::ValidateOne(data.substr(offset), &length);
    if (!s.ok()) {
      *messages_seen = number;
      const int64_t at = static_cast<int64_t>(offset) + std::max<int64_t>(s.offset(), 0);
      return Status(s.code() == StatusCode::kUnsupported ? Status::Unsupported(s.message(), at)
                                                         : Status::Malformed(s.message(), at));
    }
    ++number;
    fn(number, offset, data.substr(offset, length));
    offset += length;
  }
  *messages_seen = number;
  return Status::Ok();
}

uint64_t DecodeStream(std::string_view data, WireDecoder& wire,
                      const std::function<DecodeContext(uint64_t)>& context_for,
                      const std::function<void(EngineCoreOutputs&, uint64_t, size_t,
                                               const DecodeContext&)>& on_message,
                      const std::function<void(const std::string&)>& on_error) {
  uint64_t failed = 0;
  uint64_t seen = 0;
  // Where each message starts, until it is delivered (a held message is delivered later).
  std::unordered_map<uint64_t, size_t> offsets;
  const auto offset_of = [&offsets](uint64_t number) {
    auto it = offsets.find(number);
    if (it == offsets.end()) return size_t{0};
    const size_t offset = it->second;
    offsets.erase(it);
    return offset;
  };
  const WireDecoder::OnMessage deliver = [&](EngineCoreOutputs& m, const DecodeContext& ctx) {
    on_message(m, ctx.message_number, offset_of(ctx.message_number), ctx);
  };
  const WireDecoder::OnFailure fail = [&](const Status& s, const DecodeContext& ctx) {
    ++failed;
    const size_t offset = offset_of(ctx.message_number);
    if (on_error) {
      on_error("message " + std::to_string(ctx.message_number) + " at byte " +
               std::to_string(offset + static_cast<size_t>(std::max<int64_t>(s.offset(), 0))) +
               ": " + s.ToString() + "; skipped");
    }
  };
  Status stream = ForEachMessage(
      data,
      [&](uint64_t number, size_t offset, std::string_view bytes) {
        offsets.emplace(number, offset);
        const std::string_view frames[] = {bytes};
        wire.Feed(frames, context_for(number), deliver, fail);
      },
      &seen);
  wire.Finish(deliver, fail);
  if (!stream.ok()) {
    ++failed;
    if (on_error) {
      on_error("message " + std::to_string(seen + 1) + ": " + stream.ToString() +
               "; the next message cannot be found, stopping");
    }
  }
  return failed;
}

}  // namespace vmetrics::frontend
