// SPDX-License-Identifier: Apache-2.0
// File: engine_states.h
//
// EngineStates: what `serve` knows of each expected engine from the first second, before the
// engines' ready responses let the recorder (and the vllm:* families) be built. It owns the
// families that describe the engines themselves, registered in the frontend's registry at
// construction, so /metrics has them while the engines load:
//   vmetrics_engine_up{engine}            1 while ready and alive, 0 before and after;
//   vmetrics_engine_state{engine,state}   state starting, ready, dead: 1 for the current one;
//   vmetrics_input_messages_dropped_total{socket}  messages on the handshake or input socket
//                                         that were not part of an engine joining, dropped.
// Every child is created at construction (0, or `starting` 1), one per expected engine. An
// engine goes starting -> ready -> dead, and back to ready when it joins again.
//
// It also answers /health: healthy when every engine is ready; else a body with one line per
// dead engine and "starting: N of M engines ready" while any is still starting.
//
// Thread safety: every method may be called from any thread.
//
// Example:
//   Registry registry;
//   EngineStates states(&registry, {0, 1});
//   states.SetReady(0);
//   EXPECT_EQ(states.Health().body, "starting: 1 of 2 engines ready\n");
#ifndef VMETRICS_FRONTEND_ENGINE_STATES_H_
#define VMETRICS_FRONTEND_ENGINE_STATES_H_

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/http_server.h"
#include "vmetrics/registry.h"

namespace vmetrics::frontend {

class EngineStates {
 public:
  enum class State : uint8_t { kStarting, kReady, kDead };

  // `engine_indexes`: the expected engines, in order.
  EngineStates(Registry* registry, const std::vector<int>& engine_indexes);

  // Engines outside the expected ones are ignored.
  void SetReady(int engine_index);
  void SetDead(int engine_index, std::string reason);
  State state(int engine_index) const;
  int ready_count() const;

  // +1 on vmetrics_input_messages_dropped_total{socket} ("handshake" or "input").
  void CountDropped(std::string_view socket);

  HealthReport Health() const;

 private:
  struct Engine {
    int index = 0;
    State state = State::kStarting;
    std::string death_reason;
    Gauge* up = nullptr;
    Gauge* by_state[3] = {nullptr, nullptr, nullptr};
  };
  Engine* Find(int engine_index);
  const Engine* Find(int engine_index) const;
  static void Set(Engine* e, State state);  // REQUIRES: mu_ held (e is one of ours)

  mutable std::mutex mu_;
  std::vector<Engine> engines_;
  Counter* dropped_handshake_ = nullptr;
  Counter* dropped_input_ = nullptr;
};

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_ENGINE_STATES_H_
