// SPDX-License-Identifier: Apache-2.0
// File: status.h
//
// Status and Result<T>: the one error value of vmetrics. Errors are values, never exceptions:
// the decoders, the transport, the stand-in engines, the HTTP server and the application all
// return a Status. A success is one null pointer (LevelDB's Status), so the decoders return one
// per field for free; a failure carries a code, a detail, a message, and where it happened: the
// byte offset in the input (decoders; -1 when not applicable) or the stage of the engine
// protocol (transport, stand-in engines; StatusStage::kNone when not applicable), allocated
// once when the failure is made.
//
// The rule: callers decide by code() and, where failures of one code must be told apart, by
// detail() (and stage() for where in the engine protocol). The message is for people and is
// never inspected: not compared, searched or cut. A caller that needs to tell two failures
// apart adds a StatusDetail where the failure is made.
//
// Codes: kMalformed, kUnsupported, kLimitExceeded (decoding); kInvalidArgument (the caller's
// options or input); kUnavailable (a peer or resource did not come or is gone); kSocket (ZeroMQ
// or a file refused); kTimeout (a startup stage did not complete in time); kProtocol (a peer
// broke the engine handshake); kStopped (a stop was requested while waiting).
// Details: see StatusDetail below (the aux frame of a tensor; which listener, HTTP host or
// port, or engine socket, could not be opened; why a handshake or input message was dropped).
//
// Thread safety: plain values; copy freely.
//
// Example:
//   Result<int> r = Status::Malformed("expected array", 12);
//   EXPECT_FALSE(r.ok());
//   EXPECT_EQ(r.status().ToString(), "malformed at byte 12: expected array");
//   Status t = Status::Timeout(StatusStage::kReady, "no READY from engine 1 within 200 ms");
//   EXPECT_EQ(t.ToString(), "timeout during READY: no READY from engine 1 within 200 ms");
#ifndef VMETRICS_STATUS_H_
#define VMETRICS_STATUS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace vmetrics {

enum class StatusCode : uint8_t {
  kOk = 0,
  kMalformed,      // not msgpack, truncated, or the wrong msgpack type where a value is required
  kUnsupported,    // well-formed but refused on purpose (pickle ext types, unknown ext codes)
  kLimitExceeded,  // a length, depth or count above the configured limit
  kInvalidArgument,
  kUnavailable,  // a peer or resource did not come: engines gone, an engine not connected
  kSocket,       // ZeroMQ (or the capture file) refused: bind, receive or send failed
  kTimeout,      // a startup stage did not complete in time
  kProtocol,     // a peer broke the handshake: unknown identity, duplicate HELLO, bad map
  kStopped,      // a stop was requested while waiting
};

// What a failure is about, where a caller must tell failures of one code apart (most have no
// detail: kNone).
enum class StatusDetail : uint8_t {
  kNone = 0,
  // A tensor names an aux frame the message does not carry (or an index no frame can have):
  // the message is malformed as a whole, not just the field that held the tensor.
  kAuxFrame,
  // The HTTP server's host cannot be resolved or has no IPv4 or IPv6 address (--host).
  kHttpHost,
  // The HTTP server cannot listen on its host and port (in use, not permitted) (--port).
  kHttpPort,
  // An engine socket cannot be bound: the handshake ROUTER, the input ROUTER, the output PULL.
  kHandshakeSocket,
  kInputSocket,
  kOutputSocket,
  // Why a handshake or input message was refused: its identity names no expected engine;
  // it is not [identity, message]; its body cannot be decoded.
  kUnknownEngineIdentity,
  kNotIdentityAndMessage,
  kUndecodableMessage,
};

// Where in the engine protocol a failure happened (transport, stand-in engines); kNone
// elsewhere. ToString() writes it as " during <name>".
enum class StatusStage : uint8_t {
  kNone = 0,
  kBind,               // "bind": the frontend's sockets
  kHello,              // "HELLO": engines saying HELLO on the handshake socket
  kInit,               // "INIT": a stand-in engine waiting for its INIT
  kReady,              // "READY": engines saying READY
  kInputRegistration,  // "input registration": the ready response on the input socket
  kHandshake,          // "handshake": the handshake socket once running
  kOutput,             // "output": the output loop
  kSend,               // "send": a request to an engine
};
const char* StatusStageName(StatusStage stage);  // "", "bind", "HELLO", ...

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
  static Status InvalidArgument(std::string msg, StatusDetail detail = StatusDetail::kNone) {
    return Status(StatusCode::kInvalidArgument, std::move(msg), -1, detail);
  }
  static Status Unavailable(std::string msg, StatusStage stage = StatusStage::kNone) {
    return Status(StatusCode::kUnavailable, std::move(msg), -1, StatusDetail::kNone, stage);
  }
  static Status Socket(StatusStage stage, std::string msg,
                       StatusDetail detail = StatusDetail::kNone) {
    return Status(StatusCode::kSocket, std::move(msg), -1, detail, stage);
  }
  static Status Timeout(StatusStage stage, std::string msg) {
    return Status(StatusCode::kTimeout, std::move(msg), -1, StatusDetail::kNone, stage);
  }
  static Status Protocol(StatusStage stage, std::string msg,
                         StatusDetail detail = StatusDetail::kNone) {
    return Status(StatusCode::kProtocol, std::move(msg), -1, detail, stage);
  }
  static Status Stopped(StatusStage stage) {
    return Status(StatusCode::kStopped, "stop requested", -1, StatusDetail::kNone, stage);
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
  StatusStage stage() const { return state_ ? state_->stage : StatusStage::kNone; }
  const std::string& message() const { return state_ ? state_->message : EmptyMessage(); }
  int64_t offset() const { return state_ ? state_->offset : -1; }

  // "malformed at byte 12: expected array", "timeout during READY: ...", "ok".
  std::string ToString() const;

  // Wrapped
  //
  // This failure as seen by a layer above: a Status of `code` whose message is `prefix` then
  // ToString(), keeping detail() (so callers above still branch on it); no offset or stage, as
  // both are in the message. Must not be called on an ok Status.
  //
  // Example:
  //   Status s = Status::Timeout(StatusStage::kHello, "no HELLO").Wrapped(
  //       StatusCode::kUnavailable, "engines: ");
  //   EXPECT_EQ(s.ToString(), "unavailable: engines: timeout during HELLO: no HELLO");
  Status Wrapped(StatusCode code, std::string_view prefix) const {
    return Status(code, std::string(prefix) + ToString(), -1, detail());
  }

 private:
  struct State {
    StatusCode code;
    StatusDetail detail;
    StatusStage stage;
    std::string message;
    int64_t offset;
  };
  Status(StatusCode code, std::string msg, int64_t offset,
         StatusDetail detail = StatusDetail::kNone, StatusStage stage = StatusStage::kNone)
      : state_(new State{code, detail, stage, std::move(msg), offset}) {}
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
    case StatusCode::kSocket:
      return "socket error";
    case StatusCode::kTimeout:
      return "timeout";
    case StatusCode::kProtocol:
      return "protocol error";
    case StatusCode::kStopped:
      return "stopped";
  }
  return "unknown";
}

inline const char* StatusStageName(StatusStage stage) {
  switch (stage) {
    case StatusStage::kNone:
      return "";
    case StatusStage::kBind:
      return "bind";
    case StatusStage::kHello:
      return "HELLO";
    case StatusStage::kInit:
      return "INIT";
    case StatusStage::kReady:
      return "READY";
    case StatusStage::kInputRegistration:
      return "input registration";
    case StatusStage::kHandshake:
      return "handshake";
    case StatusStage::kOutput:
      return "output";
    case StatusStage::kSend:
      return "send";
  }
  return "unknown";
}

inline std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s = StatusCodeName(state_->code);
  if (state_->offset >= 0) s += " at byte " + std::to_string(state_->offset);
  if (state_->stage != StatusStage::kNone) {
    s += " during ";
    s += StatusStageName(state_->stage);
  }
  s += ": ";
  s += state_->message;
  return s;
}

}  // namespace vmetrics

#endif  // VMETRICS_STATUS_H_
