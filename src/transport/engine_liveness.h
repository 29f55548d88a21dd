// SPDX-License-Identifier: Apache-2.0
// File: engine_liveness.h
//
// EngineLiveness: decides which engine died, and why, from what the output loop observes. It
// is pure bookkeeping (no sockets; time is passed in) so every rule has a unit test.
//
// The problem. Every engine pushes to one PULL socket, which carries no identities, and a
// dying engine sends the bare frame ENGINE_CORE_DEAD on it, then exits. What the loop sees:
//   * which output connection each message arrived on (see ConnectionKey), and from the
//     output socket's monitor when a connection on some file descriptor opens or closes;
//   * the `engine_index` at the start of each EngineCoreOutputs — an engine's output thread
//     stamps its own index on every message — hence which engine owns each output connection;
//   * the input connection (file descriptor) each engine registered on, and from the input
//     socket's monitor when it closes: the only sign of an engine that vanishes without a word,
//     and one that follows ENGINE_CORE_DEAD at once because the process exits.
// The streams are not ordered with respect to each other (a dead engine's input disconnect may
// be seen before or after its ENGINE_CORE_DEAD), and file descriptors are reused: a closed
// connection's messages can still be queued when a new connection gets its fd. That is why
// output connections are told apart by ConnectionKey, not by fd.
//
// The rules. An engine's input connection closes:
//   a. it owns output connections and all of them have closed (and were read to the end): it
//      died, "input connection closed";
//   b. it owns none and an unattributed ENGINE_CORE_DEAD is pending (rule 4): it died, having
//      sent it;
//   c. otherwise the verdict waits `kCloseGrace` — its ENGINE_CORE_DEAD or its last outputs
//      may still be on their way on the other connection — and ends early when its frame
//      arrives (rules 1, 2) or its open output connection closes; at the deadline, once the
//      output socket was read to the end (at most `kCloseGraceBehind`), it died, "input
//      connection closed".
// ENGINE_CORE_DEAD arrives on an output connection:
//   1. the connection is owned by an engine (it sent outputs on it): that engine died.
//   2. Else an engine waiting under rule c that owns no output connection (the earliest to
//      close): it died.
//   3. Else, exactly one engine is alive and it owns no output connection: it died.
//   4. Else the frame is kept as pending for `kMatchWindow`.
// A dead engine stays dead until it joins again (Revive): a restarted engine registers anew.
//
// Thread safety: none; the output loop owns it.
#ifndef VMETRICS_TRANSPORT_ENGINE_LIVENESS_H_
#define VMETRICS_TRANSPORT_ENGINE_LIVENESS_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace vmetrics::internal {

// Identifies one output connection among those whose messages can still be read (0 =
// unknown). The loop uses the address of the connection's ZeroMQ metadata (ConnectionKeyOf in
// zmq_util.h), which every message of a connection shares and which lives as long as any of
// them, so two connections whose messages coexist never share a key — unlike their fds.
using ConnectionKey = uintptr_t;

class EngineLiveness {
 public:
  using Clock = std::chrono::steady_clock;
  // How long a pending ENGINE_CORE_DEAD (rule 4) waits for an input connection to close.
  // Both happen within milliseconds when an engine exits.
  static constexpr std::chrono::seconds kMatchWindow{5};
  // How long an input disconnect waits for the engine's last word (rule c).
  static constexpr std::chrono::milliseconds kCloseGrace{1000};
  // How long it waits while the output socket still holds messages: the last word may be
  // queued behind them when the loop is behind. Bounded, so that a frontend that stays behind
  // still declares the death within seconds.
  static constexpr std::chrono::seconds kCloseGraceBehind{10};

  struct Death {
    int engine_index = 0;
    std::string reason;
  };

  // Engines engine_start_index .. + engine_count - 1, all alive.
  EngineLiveness(int engine_start_index, int engine_count);

  // ---- Input side ----
  // The engine's registration arrived on input connection `fd` (-1 when unknown: then only
  // ENGINE_CORE_DEAD can tell this engine died). An earlier engine registered on the same fd
  // must have lost that connection (fds are unique among open connections), so it is closing.
  std::optional<Death> OnRegistered(int engine_index, int fd, Clock::time_point now);
  void OnInputAccepted(int fd);
  std::optional<Death> OnInputDisconnected(int fd, Clock::time_point now);

  // ---- Output side ----
  // A message whose engine_index is `engine_index` arrived on connection `key` (fd `fd`).
  void OnOutputMessage(ConnectionKey key, int fd, int64_t engine_index);
  // A new output connection took `fd`: closed connections on that fd are forgotten.
  void OnOutputAccepted(int fd);
  // The output connection on `fd` closed (the oldest still open with that fd). REQUIRES: the
  // messages it delivered were handled first (its ENGINE_CORE_DEAD may be among them).
  std::optional<Death> OnOutputDisconnected(int fd);
  std::optional<Death> OnEngineCoreDead(ConnectionKey key, Clock::time_point now);

  // ---- Lives ----
  // Declares the engine dead for `reason` (an engine that restarted: it said HELLO or
  // registered again); nullopt when it already was.
  std::optional<Death> Kill(int engine_index, std::string reason);
  // The engine joined again: alive, nothing pending for it, and the closed output connections
  // of its previous life forgotten (its new life's outputs teach ownership anew). Its new
  // input connection is given with OnRegistered.
  void Revive(int engine_index);

  // ---- Time ----
  // When OnTick has something to decide next; nullopt when nothing waits.
  std::optional<Clock::time_point> NextDeadline() const;
  // Deaths of engines whose input closed `kCloseGrace` ago with nothing more heard, and the
  // output socket read to the end since (`outputs_drained`); `kCloseGraceBehind` ago if not.
  std::vector<Death> OnTick(Clock::time_point now, bool outputs_drained = true);

  bool Alive(int engine_index) const;
  int AliveCount() const;

 private:
  struct OutputConnection {
    int fd = -1;
    int owner = -1;
    bool open = true;
    uint64_t seen = 0;  // order of first sight
  };

  bool InRange(int64_t engine_index) const {
    return engine_index >= start_ && engine_index < start_ + count_;
  }
  size_t Slot(int engine_index) const { return static_cast<size_t>(engine_index - start_); }
  bool OwnsOutput(int engine_index, bool open_only) const;
  // Rules a-c for an engine whose input connection is gone.
  std::optional<Death> InputClosed(int engine_index, Clock::time_point now);
  void Expire(Clock::time_point now);

  int start_;
  int count_;
  std::vector<bool> alive_;
  std::vector<int> input_fd_;                              // by slot, -1 = unknown
  std::vector<std::optional<Clock::time_point>> closing_;  // by slot: rule c, since when
  std::unordered_set<int> closed_input_fds_;  // closed before any registration claimed them
  std::unordered_map<ConnectionKey, OutputConnection> outputs_;
  uint64_t next_seen_ = 0;
  std::deque<Clock::time_point> pending_dead_frames_;  // rule 4
};

// Reads the engine_index (position 0 of the EngineCoreOutputs array) without decoding the
// rest. nullopt when frame 0 does not start that way.
std::optional<int64_t> PeekEngineIndex(std::string_view frame0);

}  // namespace vmetrics::internal

#endif  // VMETRICS_TRANSPORT_ENGINE_LIVENESS_H_
