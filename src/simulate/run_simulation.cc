// SPDX-License-Identifier: Apache-2.0
// RunSimulation: a Simulator until it ends or a stop signal; see run_simulation.h.
#include "vmetrics/run_simulation.h"

#include <atomic>
#include <csignal>
#include <fstream>

namespace vmetrics {
namespace {

// The simulator a signal should stop. RequestStop() only writes to a pipe, which a signal
// handler may do.
std::atomic<Simulator*> g_running{nullptr};

extern "C" void StopOnSignal(int /*signo*/) {
  if (Simulator* sim = g_running.load()) sim->RequestStop();
}

}  // namespace

Result<SimulatorTotals> RunSimulation(const SimulationRunOptions& options) {
  Simulator sim(options.simulator);
  if (Status s = sim.Start(); !s.ok()) return s.Wrapped(StatusCode::kUnavailable, "");
  g_running.store(&sim);
  struct sigaction action {};
  action.sa_handler = StopOnSignal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);

  const Status result = sim.Wait();

  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  g_running.store(nullptr);

  SimulatorTotals totals = sim.Totals();
  if (!options.report_totals_path.empty()) {
    std::ofstream out(options.report_totals_path, std::ios::binary | std::ios::trunc);
    out << totals.ToJson();
    if (!out) return Status::Unavailable("cannot write '" + options.report_totals_path + "'");
  }
  if (!result.ok()) return result.Wrapped(StatusCode::kUnavailable, "");
  return totals;
}

}  // namespace vmetrics
