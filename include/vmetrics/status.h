// File: status.h
//
// Status and Result<T>: how every vmetrics decoder reports failure. Errors are values,
// never exceptions. A success costs one enum compare; a failure carries a code, a message
// and the byte offset in the input where the problem was found (-1 when not applicable).
//
// Thread safety: plain values; copy freely.
//
// Example:
//   Result<int> r = Status::Malformed("expected array", 12);
//   EXPECT_FALSE(r.ok());
//   EXPECT_EQ(r.status().ToString(), "malformed at byte 12: expected array");
#ifndef VMETRICS_STATUS_H_
#define VMETRICS_STATUS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace vmetrics {

enum class StatusCode : uint8_t {
  kOk = 0,
  kMalformed,      // not msgpack, truncated, or the wrong msgpack type where a value is required
  kUnsupported,    // well-formed but refused on purpose (pickle ext types, unknown ext codes)
  kLimitExceeded,  // a length, depth or count above the configured limit
  kInvalidArgument,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Malformed(std::string msg, int64_t offset = -1) {
    return Status(StatusCode::kMalformed, std::move(msg), offset);
  }
  static Status Unsupported(std::string msg, int64_t offset = -1) {
    return Status(StatusCode::kUnsupported, std::move(msg), offset);
  }
  static Status LimitExceeded(std::string msg, int64_t offset = -1) {
    return Status(StatusCode::kLimitExceeded, std::move(msg), offset);
  }
  static Status InvalidArgument(std::string msg) {
    return Status(StatusCode::kInvalidArgument, std::move(msg), -1);
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  int64_t offset() const { return offset_; }

  // "malformed at byte 12: expected array", "ok".
  std::string ToString() const;

 private:
  Status(StatusCode code, std::string msg, int64_t offset)
      : code_(code), message_(std::move(msg)), offset_(offset) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  int64_t offset_ = -1;
};

const char* StatusCodeName(StatusCode code);

// Result<T>: a T or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: status must not be ok
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

inline const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kMalformed: return "malformed";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kLimitExceeded: return "limit exceeded";
    case StatusCode::kInvalidArgument: return "invalid argument";
  }
  return "unknown";
}

inline std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s = StatusCodeName(code_);
  if (offset_ >= 0) s += " at byte " + std::to_string(offset_);
  s += ": ";
  s += message_;
  return s;
}

}  // namespace vmetrics

#endif  // VMETRICS_STATUS_H_
