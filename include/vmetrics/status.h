// SPDX-License-Identifier: Apache-2.0
// File: status.h
//
// Status and Result<T>: how every vmetrics decoder reports failure. Errors are values,
// never exceptions. A success is one null pointer (LevelDB's Status), so the decoders return one
// per field for free; a failure carries a code, a message and the byte offset in the input where
// the problem was found (-1 when not applicable), allocated once when the failure is made.
//
// Callers decide by code() and, where failures of one code must be told apart, by detail();
// the message is for people and never inspected.
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
#include <memory>
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
  kUnavailable,  // a peer or resource did not come: a socket would not bind, engines timed out
};

// What a failure is about, where a caller must tell failures of one code apart (most have no
// detail: kNone).
enum class StatusDetail : uint8_t {
  kNone = 0,
  // A tensor names an aux frame the message does not carry (or an index no frame can have):
  // the message is malformed as a whole, not just the field that held the tensor.
  kAuxFrame,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Malformed(std::string msg, int64_t offset = -1,
                          StatusDetail detail = StatusDetail::kNone) {
    return Status(StatusCode::kMalformed, std::move(msg), offset, detail);
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
  static Status Unavailable(std::string msg) {
    return Status(StatusCode::kUnavailable, std::move(msg), -1);
  }

  Status(const Status& other) : state_(other.state_ ? new State(*other.state_) : nullptr) {}
  Status& operator=(const Status& other) {
    if (this != &other) state_.reset(other.state_ ? new State(*other.state_) : nullptr);
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  StatusDetail detail() const { return state_ ? state_->detail : StatusDetail::kNone; }
  const std::string& message() const { return state_ ? state_->message : EmptyMessage(); }
  int64_t offset() const { return state_ ? state_->offset : -1; }

  // "malformed at byte 12: expected array", "ok".
  std::string ToString() const;

 private:
  struct State {
    StatusCode code;
    StatusDetail detail;
    std::string message;
    int64_t offset;
  };
  Status(StatusCode code, std::string msg, int64_t offset,
         StatusDetail detail = StatusDetail::kNone)
      : state_(new State{code, detail, std::move(msg), offset}) {}
  static const std::string& EmptyMessage() {
    static const std::string* const empty = new std::string();
    return *empty;
  }
  std::unique_ptr<State> state_;  // null: ok
};

const char* StatusCodeName(StatusCode code);

// Result<T>: a T or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit on purpose
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
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kMalformed:
      return "malformed";
    case StatusCode::kUnsupported:
      return "unsupported";
    case StatusCode::kLimitExceeded:
      return "limit exceeded";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kUnavailable:
      return "unavailable";
  }
  return "unknown";
}

inline std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s = StatusCodeName(state_->code);
  if (state_->offset >= 0) s += " at byte " + std::to_string(state_->offset);
  s += ": ";
  s += state_->message;
  return s;
}

}  // namespace vmetrics

#endif  // VMETRICS_STATUS_H_
