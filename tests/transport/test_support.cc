// SPDX-License-Identifier: Apache-2.0
#include "test_support.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

extern char** environ;

namespace vmetrics::test {

TempDir::TempDir() {
  std::string tmpl = "/tmp/vmetrics-transport-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

EngineCoreClientCallbacks Recorder::Callbacks() {
  EngineCoreClientCallbacks cb;
  cb.on_message = [this](std::span<const std::string_view> frames, uint64_t) {
    std::vector<std::string> copy(frames.begin(), frames.end());
    {
      std::lock_guard<std::mutex> lock(mu_);
      messages_.push_back(copy);
    }
    cv_.notify_all();
    if (on_message_hook) on_message_hook(copy);
  };
  cb.on_engine_event = [this](const EngineEvent& e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(e);
    }
    cv_.notify_all();
  };
  cb.on_input_dropped = [this](const DroppedMessage& d) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      dropped_.push_back(std::string(d.socket) + ": " + std::string(d.kind));
    }
    cv_.notify_all();
  };
  cb.on_loop_exit = [this](const Status& s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      loop_exited_ = true;
      exit_status_ = s;
    }
    cv_.notify_all();
  };
  return cb;
}

bool Recorder::WaitUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, pred);
}

bool Recorder::WaitForDeath(int engine_index) {
  return WaitUntil([&] {
    for (const EngineEvent& e : events_) {
      if (e.engine_index == engine_index && e.kind == EngineEventKind::kDead) return true;
    }
    return false;
  });
}

std::vector<std::vector<std::string>> Recorder::messages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return messages_;
}

std::vector<EngineEvent> Recorder::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

std::vector<std::string> Recorder::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

std::vector<std::string> Recorder::Frame0s() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& m : messages_) out.push_back(m.at(0));
  return out;
}

Status Recorder::exit_status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exit_status_;
}

RawEngine::RawEngine(zmq::context_t& ctx, uint16_t engine_index) : ctx_(ctx) {
  identity_.push_back(static_cast<char>(engine_index & 0xff));
  identity_.push_back(static_cast<char>(engine_index >> 8));
}

void RawEngine::ConnectHandshake(const std::string& address) {
  handshake = zmq::socket_t(ctx_, zmq::socket_type::dealer);
  handshake.set(zmq::sockopt::routing_id, identity_);
  handshake.set(zmq::sockopt::linger, 0);
  handshake.connect(address);
}

void RawEngine::SendHandshake(const std::string& msgpack) {
  handshake.send(zmq::buffer(msgpack), zmq::send_flags::none);
}

std::string RawEngine::ReceiveInit(std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{handshake.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, timeout) == 0) return "";
  zmq::message_t msg;
  if (!handshake.recv(msg, zmq::recv_flags::none)) return "";
  return msg.to_string();
}

void RawEngine::Register(const std::string& input_address, const std::string& payload) {
  input = zmq::socket_t(ctx_, zmq::socket_type::dealer);
  input.set(zmq::sockopt::routing_id, identity_);
  input.set(zmq::sockopt::linger, 0);
  input.connect(input_address);
  input.send(zmq::buffer(payload), zmq::send_flags::none);
}

void RawEngine::ConnectOutput(const std::string& output_address) {
  output = zmq::socket_t(ctx_, zmq::socket_type::push);
  output.set(zmq::sockopt::linger, 2000);
  output.connect(output_address);
}

void RawEngine::SendOutput(const std::vector<std::string>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    output.send(zmq::buffer(frames[i]),
                i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

std::vector<std::string> RawEngine::ReceiveInput(std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{input.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, timeout) == 0) return {};
  std::vector<std::string> frames;
  for (;;) {
    zmq::message_t msg;
    if (!input.recv(msg, zmq::recv_flags::none)) break;
    frames.push_back(msg.to_string());
    if (!msg.more()) break;
  }
  return frames;
}

void RawEngine::Vanish() {
  if (handshake) handshake.close();
  if (input) input.close();
  if (output) {
    output.set(zmq::sockopt::linger, 0);
    output.close();
  }
}

bool PythonAvailable() { return access("/usr/bin/python3", X_OK) == 0; }

Child SpawnStandInEngine(const std::vector<std::string>& args) {
  std::vector<std::string> all = {std::string(VMETRICS_SOURCE_DIR) + "/tools/stand_in_engine.py"};
  all.insert(all.end(), args.begin(), args.end());
  return SpawnPython(all);
}

Child SpawnPython(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<std::string> argv_s = {"/usr/bin/python3"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  Child child;
  const int rc = posix_spawn(&child.pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw std::runtime_error("posix_spawn failed");
  }
  child.stdout_fd = fds[0];
  return child;
}

std::string FinishChild(Child child, int* exit_code) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(child.stdout_fd, buf, sizeof(buf));
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(child.stdout_fd);
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

std::string Hex(const std::string& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

}  // namespace vmetrics::test
