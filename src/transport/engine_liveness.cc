// SPDX-License-Identifier: Apache-2.0
#include "engine_liveness.h"

#include <utility>

#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics::internal {
namespace {
constexpr std::string_view kSentDead = "sent ENGINE_CORE_DEAD";
constexpr std::string_view kInputClosed = "input connection closed";
}  // namespace

EngineLiveness::EngineLiveness(int engine_start_index, int engine_count)
    : start_(engine_start_index),
      count_(engine_count),
      alive_(static_cast<size_t>(engine_count), true),
      input_fd_(static_cast<size_t>(engine_count), -1),
      closing_(static_cast<size_t>(engine_count)) {}

bool EngineLiveness::Alive(int engine_index) const {
  return InRange(engine_index) && alive_[Slot(engine_index)];
}

int EngineLiveness::AliveCount() const {
  int n = 0;
  for (bool a : alive_) n += a ? 1 : 0;
  return n;
}

bool EngineLiveness::OwnsOutput(int engine_index, bool open_only) const {
  for (const auto& [key, conn] : outputs_) {
    if (conn.owner == engine_index && (conn.open || !open_only)) return true;
  }
  return false;
}

std::optional<EngineLiveness::Death> EngineLiveness::Kill(int engine_index, std::string reason) {
  if (!Alive(engine_index)) return std::nullopt;
  alive_[Slot(engine_index)] = false;
  closing_[Slot(engine_index)].reset();
  return Death{engine_index, std::move(reason)};
}

void EngineLiveness::Revive(int engine_index) {
  if (!InRange(engine_index)) return;
  const size_t slot = Slot(engine_index);
  alive_[slot] = true;
  closing_[slot].reset();
  input_fd_[slot] = -1;
  std::erase_if(outputs_, [&](const auto& entry) {
    return entry.second.owner == engine_index && !entry.second.open;
  });
}

void EngineLiveness::Expire(Clock::time_point now) {
  while (!pending_dead_frames_.empty() && now - pending_dead_frames_.front() > kMatchWindow) {
    pending_dead_frames_.pop_front();
  }
}

std::optional<EngineLiveness::Death> EngineLiveness::InputClosed(int engine,
                                                                 Clock::time_point now) {
  if (!Alive(engine) || closing_[Slot(engine)]) return std::nullopt;
  const bool owns_any = OwnsOutput(engine, /*open_only=*/false);
  if (owns_any && !OwnsOutput(engine, /*open_only=*/true)) {  // rule a
    return Kill(engine, std::string(kInputClosed));
  }
  if (!owns_any && !pending_dead_frames_.empty()) {  // rule b
    pending_dead_frames_.pop_front();
    return Kill(engine, std::string(kSentDead) + " (attributed when its input connection closed)");
  }
  closing_[Slot(engine)] = now;  // rule c
  return std::nullopt;
}

std::optional<EngineLiveness::Death> EngineLiveness::OnRegistered(int engine_index, int fd,
                                                                  Clock::time_point now) {
  if (!InRange(engine_index)) return std::nullopt;
  Expire(now);
  input_fd_[Slot(engine_index)] = fd;
  if (fd < 0) return std::nullopt;
  std::optional<Death> death;
  for (size_t i = 0; i < input_fd_.size(); ++i) {
    const int other = start_ + static_cast<int>(i);
    if (other == engine_index || input_fd_[i] != fd) continue;
    // `other` registered on this fd earlier, so its connection closed before this one opened
    // (the monitor event was lost to the reuse): it is gone too.
    input_fd_[i] = -1;
    if (auto d = InputClosed(other, now)) death = std::move(d);
  }
  if (closed_input_fds_.erase(fd) > 0) {
    // The monitor saw this connection close before we read its registration (queued messages
    // outlive their connection).
    input_fd_[Slot(engine_index)] = -1;
    if (auto d = InputClosed(engine_index, now)) return d;
  }
  return death;
}

void EngineLiveness::OnInputAccepted(int fd) { closed_input_fds_.erase(fd); }

std::optional<EngineLiveness::Death> EngineLiveness::OnInputDisconnected(int fd,
                                                                         Clock::time_point now) {
  Expire(now);
  for (size_t i = 0; i < input_fd_.size(); ++i) {
    if (input_fd_[i] != fd) continue;
    input_fd_[i] = -1;  // the fd may be reused by an unrelated connection from now on
    return InputClosed(start_ + static_cast<int>(i), now);
  }
  // A connection that never registered (yet): remember it, in case its registration is still
  // queued behind this event.
  closed_input_fds_.insert(fd);
  return std::nullopt;
}

void EngineLiveness::OnOutputMessage(ConnectionKey key, int fd, int64_t engine_index) {
  if (key == 0 || !InRange(engine_index)) return;
  auto [it, inserted] = outputs_.try_emplace(key);
  if (inserted) {
    it->second.fd = fd;
    it->second.seen = next_seen_++;
  }
  it->second.owner = static_cast<int>(engine_index);
}

void EngineLiveness::OnOutputAccepted(int fd) {
  std::erase_if(outputs_,
                [&](const auto& entry) { return entry.second.fd == fd && !entry.second.open; });
}

std::optional<EngineLiveness::Death> EngineLiveness::OnOutputDisconnected(int fd) {
  // Connections on one fd never overlap in time, so the oldest one still open is the one
  // that closed.
  OutputConnection* closed = nullptr;
  for (auto& [key, conn] : outputs_) {
    if (conn.fd == fd && conn.open && (!closed || conn.seen < closed->seen)) closed = &conn;
  }
  if (!closed) return std::nullopt;
  closed->open = false;
  const int owner = closed->owner;
  if (Alive(owner) && closing_[Slot(owner)] && !OwnsOutput(owner, /*open_only=*/true)) {
    // Rule c, concluded early: its connections are all closed, everything it sent was read,
    // and no ENGINE_CORE_DEAD among it.
    return Kill(owner, std::string(kInputClosed));
  }
  return std::nullopt;
}

std::optional<EngineLiveness::Death> EngineLiveness::OnEngineCoreDead(ConnectionKey key,
                                                                      Clock::time_point now) {
  Expire(now);
  // Rule 1: the connection's owner.
  if (auto it = outputs_.find(key); key != 0 && it != outputs_.end()) {
    return Kill(it->second.owner, std::string(kSentDead));
  }
  // Rule 2: the earliest engine whose input just closed and that never sent an output.
  std::optional<int> earliest;
  for (size_t i = 0; i < closing_.size(); ++i) {
    const int engine = start_ + static_cast<int>(i);
    if (!closing_[i] || !alive_[i] || OwnsOutput(engine, /*open_only=*/false)) continue;
    if (!earliest || *closing_[i] < *closing_[Slot(*earliest)]) earliest = engine;
  }
  if (earliest) return Kill(*earliest, std::string(kSentDead));
  // Rule 3: the only engine left.
  if (AliveCount() == 1) {
    for (size_t i = 0; i < alive_.size(); ++i) {
      const int engine = start_ + static_cast<int>(i);
      if (alive_[i] && !OwnsOutput(engine, /*open_only=*/false)) {
        return Kill(engine, std::string(kSentDead));
      }
    }
  }
  // Rule 4: wait for an input connection to close.
  pending_dead_frames_.push_back(now);
  return std::nullopt;
}

std::optional<EngineLiveness::Clock::time_point> EngineLiveness::NextDeadline() const {
  std::optional<Clock::time_point> next;
  for (const auto& since : closing_) {
    if (since && (!next || *since + kCloseGrace < *next)) next = *since + kCloseGrace;
  }
  return next;
}

std::vector<EngineLiveness::Death> EngineLiveness::OnTick(Clock::time_point now,
                                                          bool outputs_drained) {
  std::vector<Death> deaths;
  for (size_t i = 0; i < closing_.size(); ++i) {
    if (closing_[i] &&
        now >= *closing_[i] + (outputs_drained ? Clock::duration(kCloseGrace)
                                               : Clock::duration(kCloseGraceBehind))) {
      if (auto d = Kill(start_ + static_cast<int>(i), std::string(kInputClosed))) {
        deaths.push_back(std::move(*d));
      }
    }
  }
  return deaths;
}

std::optional<int64_t> PeekEngineIndex(std::string_view frame0) {
  protocol::MsgpackReader r(frame0);
  uint32_t n = 0;
  if (!r.ReadArrayHeader(&n).ok() || n == 0) return std::nullopt;
  int64_t index = 0;
  if (!r.ReadInt(&index).ok()) return std::nullopt;
  return index;
}

}  // namespace vmetrics::internal
