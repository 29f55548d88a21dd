#include "cli/stream.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "protocol/msgpack_reader.h"

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

}  // namespace vmetrics::cli
