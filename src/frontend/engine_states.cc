// SPDX-License-Identifier: Apache-2.0
// EngineStates; see engine_states.h.
#include "engine_states.h"

#include <utility>

#include "build_info.h"
#include "vmetrics/internal/declared_families.h"

namespace vmetrics::frontend {
namespace {

constexpr const char* kStateNames[] = {"starting", "ready", "dead"};

}  // namespace

EngineStates::EngineStates(Registry* registry, const std::vector<int>& engine_indexes) {
  using internal::FamilyId;
  using internal::RegisterFamily;
  // vmetrics_engine_up is also a row the recorder registers for other users (metrics-reference);
  // serve registers it here, before any recorder exists.
  const GaugeFamily up = RegisterFamily<FamilyId::kEngineUp>(registry);
  const GaugeFamily state = RegisterFamily<FamilyId::kEngineState>(registry);
  const CounterFamily dropped = RegisterFamily<FamilyId::kInputMessagesDropped>(registry);
  engines_.reserve(engine_indexes.size());
  for (int index : engine_indexes) {
    Engine e;
    e.index = index;
    const std::string name = std::to_string(index);
    e.up = up.GetOrCreate({name});
    e.up->Set(0);
    for (size_t s = 0; s < 3; ++s) {
      e.by_state[s] = state.GetOrCreate({name, kStateNames[s]});
      e.by_state[s]->Set(s == 0 ? 1 : 0);
    }
    engines_.push_back(std::move(e));
  }
  dropped_handshake_ = dropped.GetOrCreate({"handshake"});
  dropped_input_ = dropped.GetOrCreate({"input"});
}

EngineStates::Engine* EngineStates::Find(int engine_index) {
  for (Engine& e : engines_) {
    if (e.index == engine_index) return &e;
  }
  return nullptr;
}

const EngineStates::Engine* EngineStates::Find(int engine_index) const {
  return const_cast<EngineStates*>(this)->Find(engine_index);
}

void EngineStates::Set(Engine* e, State state) {
  // The new state's child first, so a render never sees an engine in no state.
  e->by_state[static_cast<size_t>(state)]->Set(1);
  for (size_t s = 0; s < 3; ++s) {
    if (s != static_cast<size_t>(state)) e->by_state[s]->Set(0);
  }
  e->up->Set(state == State::kReady ? 1 : 0);
  e->state = state;
}

void EngineStates::SetReady(int engine_index) {
  std::lock_guard<std::mutex> lock(mu_);
  Engine* e = Find(engine_index);
  if (e == nullptr) return;
  e->death_reason.clear();
  Set(e, State::kReady);
}

void EngineStates::SetDead(int engine_index, std::string reason) {
  std::lock_guard<std::mutex> lock(mu_);
  Engine* e = Find(engine_index);
  if (e == nullptr) return;
  e->death_reason = std::move(reason);
  Set(e, State::kDead);
}

EngineStates::State EngineStates::state(int engine_index) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Engine* e = Find(engine_index);
  return e == nullptr ? State::kDead : e->state;
}

int EngineStates::ready_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const Engine& e : engines_) n += e.state == State::kReady ? 1 : 0;
  return n;
}

void EngineStates::CountDropped(std::string_view socket) {
  (socket == "handshake" ? dropped_handshake_ : dropped_input_)->Add(1);
}

HealthReport EngineStates::Health() const {
  std::lock_guard<std::mutex> lock(mu_);
  HealthReport r;
  int ready = 0;
  bool starting = false;
  for (const Engine& e : engines_) {
    if (e.state == State::kReady) ++ready;
    if (e.state == State::kStarting) starting = true;
    if (e.state == State::kDead) {
      r.healthy = false;
      r.body += "engine " + std::to_string(e.index) + " is dead: " + e.death_reason + "\n";
    }
  }
  if (starting) {
    r.healthy = false;
    r.body += "starting: " + std::to_string(ready) + " of " + std::to_string(engines_.size()) +
              " engines ready\n";
  }
  return r;
}

void RegisterBuildInfo(Registry* registry) {
  const GaugeFamily build_info = internal::RegisterFamily<internal::FamilyId::kBuildInfo>(registry);
  build_info.GetOrCreate({BuildVersion(), BuildRevision()})->Set(1);
}

}  // namespace vmetrics::frontend
