#include "cli/stream.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics::cli {

bool ReadInput(const std::string& path, std::string* data, std::string* error) {
  FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) data->append(buf, n);
  const bool failed = std::ferror(f) != 0;
  if (f != stdin) std::fclose(f);
  if (failed) {
    *error = "error reading " + path;
    return false;
  }
  return true;
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
      return Status(s.code() == StatusCode::kUnsupported
                        ? Status::Unsupported(s.message(), at)
                        : Status::Malformed(s.message(), at));
    }
    ++number;
    fn(number, offset, data.substr(offset, length));
    offset += length;
  }
  *messages_seen = number;
  return Status::Ok();
}

uint64_t DecodeStream(std::string_view data, const char* who,
                      const std::function<DecodeContext(uint64_t)>& context_for,
                      const std::function<void(EngineCoreOutputs&, uint64_t, size_t,
                                               const DecodeContext&)>& on_message,
                      const std::function<void()>& on_error) {
  uint64_t failed = 0;
  uint64_t seen = 0;
  EngineCoreOutputs message;  // reused: its vectors keep their capacity
  Status stream = ForEachMessage(
      data,
      [&](uint64_t number, size_t offset, std::string_view bytes) {
        const DecodeContext ctx = context_for(number);
        std::string_view frames[] = {bytes};
        Status s = DecodeEngineCoreOutputs(frames, ctx, &message);
        if (!s.ok()) {
          ++failed;
          if (on_error) on_error();
          std::fprintf(stderr, "%s: message %llu at byte %zu: %s; skipped\n", who,
                       static_cast<unsigned long long>(number),
                       offset + static_cast<size_t>(std::max<int64_t>(s.offset(), 0)),
                       s.ToString().c_str());
          return;
        }
        on_message(message, number, offset, ctx);
      },
      &seen);
  if (!stream.ok()) {
    ++failed;
    if (on_error) on_error();
    std::fprintf(stderr, "%s: message %llu: %s; the next message cannot be found, stopping\n",
                 who, static_cast<unsigned long long>(seen + 1), stream.ToString().c_str());
  }
  return failed;
}

bool CreatedDisabledByEnvironment() {
  const char* v = std::getenv("PROMETHEUS_DISABLE_CREATED_SERIES");
  if (v == nullptr) return false;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "true" || s == "1" || s == "t";
}

}  // namespace vmetrics::cli
