// SPDX-License-Identifier: Apache-2.0
// Admission, deadlines and vanished clients of the HTTP server's connections; see
// connection_guard.h.
#include "connection_guard.h"

#include <sys/socket.h>

#include <limits>
#include <utility>

#include "peer_address.h"
#include "socket_state.h"

namespace vmetrics::internal {

namespace {

enum class Phase : uint8_t {
  kWaiting,    // for a request: none yet, or its request line and headers arriving
  kInRequest,  // head in: body arriving, credentials checked, handler called
  kAwaiting,   // a route's handler answers it (not timed)
  kReplying,   // a whole reply is being written
  kStreaming,  // a stream is being written (timed only while bytes wait for the client)
};

constexpr ConnectionGuard::Clock::time_point kNever = ConnectionGuard::Clock::time_point::max();
constexpr uint64_t kNoGeneration = std::numeric_limits<uint64_t>::max();

long long Seconds(ConnectionGuard::Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::seconds>(d).count();
}

}  // namespace

struct ConnectionGuard::Connection {
  uint64_t id = 0;
  int fd = -1;
  std::string address;  // PeerAddressKey
  bool scrape_only = false;

  // The rest is guarded by the guard's mu_.
  bool closing = false;  // shut down by the guard (or refused): off the books
  Phase phase = Phase::kWaiting;
  uint64_t generation = 0;  // bumped on every change of phase: a sweep's view is still current
                            // only while it is unchanged
  Clock::time_point since;  // when the phase began
  Clock::time_point deadline = kNever;
  bool started = false;                // kWaiting: the next request's first bytes have arrived
  bool mark_known = true;              // bytes_mark is set
  uint64_t bytes_mark = 0;             // bytes received when the last request ended
  uint64_t suspect = kNoGeneration;    // generation at which a sweep saw it half-closed, drained
  std::weak_ptr<HttpExchange> stream;  // kStreaming: what is being sent
  uint64_t acked_mark = 0;             // kStreaming: bytes the client had acknowledged ...
  Clock::time_point acked_at;          // ... when a sweep last saw that count grow
  Connection* prev_waiting = nullptr;
  Connection* next_waiting = nullptr;
  bool in_waiting = false;
};

ConnectionGuard::ConnectionGuard(ConnectionLimits limits, ErrorLog* log)
    : limits_(limits), log_(log), thread_([this] { Run(); }) {}

ConnectionGuard::~ConnectionGuard() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool ConnectionGuard::ScrapeOnly(const Connection* connection) { return connection->scrape_only; }

void ConnectionGuard::LinkWaitingLocked(Connection* c) {
  if (c->in_waiting) return;
  c->in_waiting = true;
  c->prev_waiting = waiting_tail_;
  c->next_waiting = nullptr;
  if (waiting_tail_ != nullptr) {
    waiting_tail_->next_waiting = c;
  } else {
    waiting_head_ = c;
  }
  waiting_tail_ = c;
}

void ConnectionGuard::UnlinkWaitingLocked(Connection* c) {
  if (!c->in_waiting) return;
  c->in_waiting = false;
  if (c->prev_waiting != nullptr) {
    c->prev_waiting->next_waiting = c->next_waiting;
  } else {
    waiting_head_ = c->next_waiting;
  }
  if (c->next_waiting != nullptr) {
    c->next_waiting->prev_waiting = c->prev_waiting;
  } else {
    waiting_tail_ = c->prev_waiting;
  }
  c->prev_waiting = c->next_waiting = nullptr;
}

template <typename Eligible>
ConnectionGuard::Connection* ConnectionGuard::OldestWaitingLocked(Eligible eligible) const {
  for (Connection* c = waiting_head_; c != nullptr; c = c->next_waiting) {
    if (eligible(*c)) return c;
  }
  return nullptr;
}

void ConnectionGuard::CloseLocked(Connection* c, Reason reason,
                                  std::vector<std::pair<const char*, std::string>>* notes) {
  if (c->closing) return;
  c->closing = true;
  UnlinkWaitingLocked(c);
  if (reason != Reason::kRefused) {
    if (c->scrape_only) {
      --reserve_open_;
    } else {
      --ordinary_open_;
    }
    auto it = per_address_.find(c->address);
    if (it != per_address_.end() && --it->second == 0) per_address_.erase(it);
  }
  // libmicrohttpd sees the socket end and frees the connection; Closed comes after.
  shutdown(c->fd, SHUT_RDWR);
  NoteLocked(reason, c->address, notes);
}

void ConnectionGuard::NoteLocked(Reason reason, const std::string& address,
                                 std::vector<std::pair<const char*, std::string>>* notes) {
  const std::string from = DescribePeerAddressKey(address);
  const std::string open = std::to_string(ordinary_open_ + reserve_open_) + " open";
  switch (reason) {
    case Reason::kEvictedForAddress:
      ++counts_.evicted;
      notes->emplace_back("evicted for address",
                          "closed a connection from " + from +
                              " that was waiting for a request, to admit a new one from the "
                              "same address (limit " +
                              std::to_string(limits_.max_per_address) + " per address)");
      break;
    case Reason::kEvicted:
      ++counts_.evicted;
      notes->emplace_back(
          "evicted", "closed a connection from " + from +
                         " that was waiting for a request, to admit a new one (limit " +
                         std::to_string(limits_.max_connections) + " connections, " + open + ")");
      break;
    case Reason::kRefused:
      ++counts_.refused;
      notes->emplace_back("refused", "refused a connection from " + from +
                                         ": every connection is busy and the scrape reserve is "
                                         "full (" +
                                         open + ")");
      break;
    case Reason::kRequestTimeout:
      ++counts_.timed_out;
      notes->emplace_back("request timeout", "closed a connection from " + from +
                                                 ": its request was not complete within " +
                                                 std::to_string(Seconds(limits_.request_timeout)) +
                                                 " s of its first byte");
      break;
    case Reason::kReplyTimeout:
      ++counts_.timed_out;
      notes->emplace_back("reply timeout",
                          "closed a connection from " + from + ": its reply was not read within " +
                              std::to_string(Seconds(limits_.request_timeout)) + " s");
      break;
    case Reason::kStreamStalled:
      ++counts_.timed_out;
      notes->emplace_back("stream write timeout",
                          "closed a stream to " + from + ": its client took no bytes for " +
                              std::to_string(Seconds(limits_.stream_write_timeout)) +
                              " s while some waited");
      break;
    case Reason::kVanished:
      ++counts_.vanished;  // a client that went away: nothing to tell an operator
      break;
  }
}

void ConnectionGuard::WriteNotes(const std::vector<std::pair<const char*, std::string>>& notes) {
  if (log_ == nullptr) return;
  for (const auto& [kind, message] : notes) log_->Log(kind, message);
}

ConnectionGuard::Connection* ConnectionGuard::Opened(int fd, const sockaddr* peer) {
  auto owned = std::make_unique<Connection>();
  Connection* c = owned.get();
  c->fd = fd;
  c->address = PeerAddressKey(peer);
  c->since = Clock::now();
  std::vector<std::pair<const char*, std::string>> notes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c->id = next_id_++;
    connections_.emplace(c->id, std::move(owned));
    bool reserve = false;
    if (limits_.max_per_address != 0) {
      auto it = per_address_.find(c->address);
      if (it != per_address_.end() && it->second >= limits_.max_per_address) {
        if (Connection* victim =
                OldestWaitingLocked([&](const Connection& w) { return w.address == c->address; })) {
          CloseLocked(victim, Reason::kEvictedForAddress, &notes);
        } else {
          reserve = true;
        }
      }
    }
    // An address already holding light_client_connections stops short of the light reserve.
    const auto held = per_address_.find(c->address);
    const bool heavy = limits_.light_reserve != 0 && held != per_address_.end() &&
                       held->second >= limits_.light_client_connections;
    if (!reserve && heavy && ordinary_open_ >= limits_.max_connections - limits_.light_reserve) {
      if (Connection* victim = OldestWaitingLocked(
              [&](const Connection& w) { return !w.scrape_only && w.address == c->address; })) {
        CloseLocked(victim, Reason::kEvictedForAddress, &notes);
      } else {
        reserve = true;
      }
    }
    if (!reserve && ordinary_open_ >= limits_.max_connections) {
      if (Connection* victim =
              OldestWaitingLocked([](const Connection& w) { return !w.scrape_only; })) {
        CloseLocked(victim, Reason::kEvicted, &notes);
      } else {
        reserve = true;
      }
    }
    bool refused = false;
    if (reserve && reserve_open_ >= limits_.scrape_reserve) {
      if (Connection* victim =
              OldestWaitingLocked([](const Connection& w) { return w.scrape_only; })) {
        CloseLocked(victim, Reason::kEvicted, &notes);
      } else {
        refused = true;
      }
    }
    if (refused) {
      CloseLocked(c, Reason::kRefused, &notes);
    } else {
      c->scrape_only = reserve;
      if (reserve) {
        ++reserve_open_;
      } else {
        ++ordinary_open_;
      }
      ++per_address_[c->address];
      LinkWaitingLocked(c);
    }
  }
  WriteNotes(notes);
  return c;
}

void ConnectionGuard::Closed(Connection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!c->closing) {
    c->closing = true;
    UnlinkWaitingLocked(c);
    if (c->scrape_only) {
      --reserve_open_;
    } else {
      --ordinary_open_;
    }
    auto it = per_address_.find(c->address);
    if (it != per_address_.end() && --it->second == 0) per_address_.erase(it);
  }
  connections_.erase(c->id);
}

void ConnectionGuard::HeadReceived(Connection* c) {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (c->closing) return;
  UnlinkWaitingLocked(c);
  c->phase = Phase::kInRequest;
  ++c->generation;
  // The request began before a sweep saw its first bytes: it is timed from now.
  if (c->deadline == kNever && limits_.request_timeout != Clock::duration::zero()) {
    c->deadline = now + limits_.request_timeout;
  }
}

void ConnectionGuard::AwaitingAnswer(Connection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (c->closing) return;
  c->phase = Phase::kAwaiting;
  ++c->generation;
  c->deadline = kNever;
}

void ConnectionGuard::Replying(Connection* c) {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (c->closing) return;
  UnlinkWaitingLocked(c);
  c->phase = Phase::kReplying;
  ++c->generation;
  c->deadline =
      limits_.request_timeout != Clock::duration::zero() ? now + limits_.request_timeout : kNever;
}

void ConnectionGuard::Streaming(Connection* c, std::weak_ptr<HttpExchange> stream) {
  const SocketState socket = ReadSocketState(c->fd);  // outside the lock: a system call
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (c->closing) return;
  c->phase = Phase::kStreaming;
  ++c->generation;
  c->deadline = kNever;
  c->stream = std::move(stream);
  c->acked_mark = socket.bytes_acked;
  c->acked_at = now;
}

void ConnectionGuard::RequestDone(Connection* c) {
  // Outside the lock: a system call. What the peer sent so far belongs to requests that are
  // over (or to the next, already being parsed, whose head then comes at once).
  const SocketState socket = ReadSocketState(c->fd);
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (c->closing) return;
  c->phase = Phase::kWaiting;
  ++c->generation;
  c->stream.reset();
  c->since = now;
  c->deadline = kNever;
  c->started = false;
  c->mark_known = socket.bytes_known;
  c->bytes_mark = socket.bytes_received;
  c->suspect = kNoGeneration;
  LinkWaitingLocked(c);
}

ConnectionGuard::Counts ConnectionGuard::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  Counts counts = counts_;
  counts.open = ordinary_open_ + reserve_open_;
  counts.scrape_only = reserve_open_;
  return counts;
}

void ConnectionGuard::SweepNow() { Sweep(Clock::now()); }

void ConnectionGuard::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, limits_.sweep_interval);
    if (stopping_) break;
    lock.unlock();
    Sweep(Clock::now());
    if (log_ != nullptr) log_->Flush(/*all=*/false);
    lock.lock();
  }
}

void ConnectionGuard::Sweep(Clock::time_point now) {
  // What a sweep looks at, copied under the lock; the system calls run without it.
  struct Look {
    uint64_t id;
    int fd;
    Phase phase;
    uint64_t generation;
    Clock::time_point since;
    Clock::time_point deadline;
    bool started;
    bool mark_known;
    uint64_t bytes_mark;
    uint64_t suspect;
  };
  std::vector<Look> looks;
  // Streams, for their write deadline; the system calls and the exchange (which has its own
  // lock) are asked outside the lock.
  struct StreamLook {
    uint64_t id;
    int fd;
    uint64_t generation;
    std::string address;
    std::weak_ptr<HttpExchange> stream;
    uint64_t acked_mark;
    Clock::time_point acked_at;
  };
  std::vector<StreamLook> streams;
  const bool streams_timed = limits_.stream_write_timeout != Clock::duration::zero();
  {
    std::lock_guard<std::mutex> lock(mu_);
    looks.reserve(connections_.size());
    for (const auto& [id, c] : connections_) {
      if (c->closing || c->phase == Phase::kAwaiting) continue;
      if (c->phase == Phase::kStreaming) {
        if (streams_timed) {
          streams.push_back(
              {id, c->fd, c->generation, c->address, c->stream, c->acked_mark, c->acked_at});
        }
        continue;
      }
      looks.push_back({id, c->fd, c->phase, c->generation, c->since, c->deadline, c->started,
                       c->mark_known, c->bytes_mark, c->suspect});
    }
  }
  // A stream's client is taking bytes when the kernel's count of bytes it acknowledged grows
  // (it acknowledges past a full window only as it reads) or when libmicrohttpd's content
  // reader takes bytes (the exchange's own clock). The exchange's clock alone is too coarse:
  // libmicrohttpd asks for more only once its whole buffer went into the socket, and the kernel
  // wakes a writer only once a third of a send buffer autotuned to megabytes is free, so a
  // client reading 400 KB/s went seconds between two asks.
  struct StreamAct {
    uint64_t id;
    uint64_t generation;
    uint64_t acked;
    bool stalled;
    std::string address;
  };
  std::vector<StreamAct> stream_acts;
  const Clock::time_point stalled_before = now - limits_.stream_write_timeout;
  for (const StreamLook& look : streams) {
    const SocketState socket = ReadSocketState(look.fd);
    const bool taking = socket.bytes_known && socket.bytes_acked != look.acked_mark;
    if (taking) {
      stream_acts.push_back({look.id, look.generation, socket.bytes_acked, false, {}});
      continue;
    }
    if (look.acked_at > stalled_before) continue;
    const std::shared_ptr<HttpExchange> stream = look.stream.lock();
    // The exchange cuts itself (ends the stream, shuts the socket down) under its own lock, so
    // bytes its reader takes meanwhile are never lost to a stale look.
    if (stream != nullptr && stream->CutIfStalled(stalled_before)) {
      stream_acts.push_back({look.id, look.generation, look.acked_mark, true, look.address});
    }
  }
  const bool timed = limits_.request_timeout != Clock::duration::zero();
  struct Act {
    uint64_t id;
    uint64_t generation;
    bool vanished = false;
    bool suspect = false;
    bool start = false;  // the next request began: it is due by `deadline`
    bool timeout = false;
    Clock::time_point deadline = kNever;
  };
  std::vector<Act> acts;
  for (const Look& look : looks) {
    const SocketState socket = ReadSocketState(look.fd);
    Act act{look.id, look.generation};
    if (socket.known && socket.reset) {
      act.vanished = true;
    } else if (look.phase == Phase::kWaiting) {
      // Half-closed with nothing left unread, and still waiting for a request: no request can
      // complete any more. Seen twice at the same generation, so a request the worker is just
      // parsing (which changes the generation) is never cut.
      if (socket.known && socket.peer_closed && UnreadBytes(look.fd) == 0) {
        if (look.suspect == look.generation) {
          act.vanished = true;
        } else {
          act.suspect = true;
        }
      }
      if (!act.vanished && timed) {
        Clock::time_point deadline = look.deadline;
        if (!look.started) {
          if (!socket.bytes_known || !look.mark_known) {
            // No byte count: time the wait itself.
            act.start = true;
            deadline = look.since + limits_.request_timeout;
          } else if (socket.bytes_received > look.bytes_mark) {
            act.start = true;
            deadline = now + limits_.request_timeout;
          }
          act.deadline = deadline;
        }
        act.timeout = deadline != kNever && now >= deadline;
      }
    } else if (timed && look.deadline != kNever && now >= look.deadline) {
      act.timeout = true;
    }
    if (act.vanished || act.suspect || act.start || act.timeout) acts.push_back(act);
  }
  if (acts.empty() && stream_acts.empty()) return;
  std::vector<std::pair<const char*, std::string>> notes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const StreamAct& act : stream_acts) {
      auto it = connections_.find(act.id);
      Connection* c = it != connections_.end() ? it->second.get() : nullptr;
      if (act.stalled) {
        // Its socket is shut down already; this takes it off the books and tells the operator.
        // libmicrohttpd may have closed it meanwhile: it was still this guard's doing.
        if (c != nullptr && !c->closing) {
          CloseLocked(c, Reason::kStreamStalled, &notes);
        } else {
          NoteLocked(Reason::kStreamStalled, act.address, &notes);
        }
      } else if (c != nullptr && !c->closing && c->generation == act.generation) {
        c->acked_mark = act.acked;
        c->acked_at = now;
      }
    }
    for (const Act& act : acts) {
      auto it = connections_.find(act.id);
      if (it == connections_.end()) continue;
      Connection* c = it->second.get();
      if (c->closing || c->generation != act.generation) continue;  // moved on meanwhile
      if (act.vanished) {
        CloseLocked(c, Reason::kVanished, &notes);
        continue;
      }
      if (act.timeout) {
        CloseLocked(c,
                    c->phase == Phase::kReplying ? Reason::kReplyTimeout : Reason::kRequestTimeout,
                    &notes);
        continue;
      }
      if (act.suspect) c->suspect = c->generation;
      if (act.start) {
        c->started = true;
        c->deadline = act.deadline;
      }
    }
  }
  WriteNotes(notes);
}

}  // namespace vmetrics::internal
