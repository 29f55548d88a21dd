// SPDX-License-Identifier: Apache-2.0
// File: test_support.h
//
// Helpers for the transport tests: a per-test temporary directory for ipc:// endpoints, a
// recorder of client callbacks that tests wait on (condition variable, generous timeouts,
// never a sleep), a raw hand-driven engine, and spawning the Python stand-in engine.
#ifndef VMETRICS_TESTS_TRANSPORT_TEST_SUPPORT_H_
#define VMETRICS_TESTS_TRANSPORT_TEST_SUPPORT_H_

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "vmetrics/engine_core_client.h"

namespace vmetrics::test {

// Long enough for a loaded CI machine; tests finish far sooner when things work.
inline constexpr std::chrono::seconds kGenerous{20};

// A fresh directory under /tmp, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  // "ipc://<dir>/<name>"
  std::string Ipc(const std::string& name) const { return "ipc://" + path_ + "/" + name; }

 private:
  std::string path_;
};

// Collects what the client's callbacks deliver.
class Recorder {
 public:
  EngineCoreClientCallbacks Callbacks();

  // Blocks until `pred` holds or `timeout` passes. `pred` runs under the recorder's lock: it
  // may read the members, not call the public accessors.
  bool WaitUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout = kGenerous);
  bool WaitForMessages(size_t n) {
    return WaitUntil([&] { return messages_.size() >= n; });
  }
  bool WaitForEvents(size_t n) {
    return WaitUntil([&] { return events_.size() >= n; });
  }
  bool WaitForDeath(int engine_index);
  bool WaitForLoopExit() {
    return WaitUntil([&] { return loop_exited_; });
  }
  bool WaitForDropped(size_t n) {
    return WaitUntil([&] { return dropped_.size() >= n; });
  }

  // Read only after a Wait* returned true, or under no concurrent delivery.
  std::vector<std::vector<std::string>> messages() const;
  std::vector<EngineEvent> events() const;
  std::vector<std::string> Frame0s() const;
  // "<socket>: <kind>" of each message dropped from the handshake or input ROUTER.
  std::vector<std::string> dropped() const;
  Status exit_status() const;

  // Called by the loop, first, for every message; may throw to test exception handling.
  std::function<void(const std::vector<std::string>&)> on_message_hook;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<std::string>> messages_;
  std::vector<EngineEvent> events_;
  std::vector<std::string> dropped_;
  bool loop_exited_ = false;
  Status exit_status_;
};

// An engine driven by hand with raw ZeroMQ sockets, to send exactly what a test needs.
class RawEngine {
 public:
  RawEngine(zmq::context_t& ctx, uint16_t engine_index);
  // Handshake socket: connect and say something.
  void ConnectHandshake(const std::string& address);
  void SendHandshake(const std::string& msgpack);
  // Waits for INIT; returns its bytes ("" on timeout).
  std::string ReceiveInit(std::chrono::milliseconds timeout = kGenerous);
  // Input DEALER: connect and register with `payload` ("" = the older empty registration).
  void Register(const std::string& input_address, const std::string& payload);
  // Output PUSH.
  void ConnectOutput(const std::string& output_address);
  void SendOutput(const std::vector<std::string>& frames);
  // Receives one message on the input DEALER ([type, body, ...]); empty on timeout.
  std::vector<std::string> ReceiveInput(std::chrono::milliseconds timeout = kGenerous);
  // Closes every socket without lingering, like a killed process.
  void Vanish();

  zmq::socket_t handshake;
  zmq::socket_t input;
  zmq::socket_t output;

 private:
  zmq::context_t& ctx_;
  std::string identity_;
};

// A child process with its stdout captured.
struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;
};
// posix_spawn of /usr/bin/python3 <args> with stdout captured.
Child SpawnPython(const std::vector<std::string>& args);
// posix_spawn of /usr/bin/python3 tools/stand_in_engine.py <args>.
Child SpawnStandInEngine(const std::vector<std::string>& args);
// Reads stdout to EOF, waits for the child and returns its output; *exit_code its status.
std::string FinishChild(Child child, int* exit_code);
bool PythonAvailable();

std::string Hex(const std::string& bytes);

}  // namespace vmetrics::test

#endif  // VMETRICS_TESTS_TRANSPORT_TEST_SUPPORT_H_
