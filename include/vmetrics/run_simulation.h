// SPDX-License-Identifier: Apache-2.0
// File: run_simulation.h (internal to the stand-in engine)
//
// RunSimulation: what `vmetrics simulate` does with its options. A Simulator
// (vmetrics/simulator.h) runs to its end (its steps, a death or vanishing it was told to act
// out) or until SIGINT or SIGTERM, and what it sent is written as JSON when asked, so a test
// that drove a frontend with it can compare the frontend's counters with the truth.
//
// Thread safety: call from one thread at a time; it installs SIGINT and SIGTERM handlers
// (which only ask the simulator to stop) for the duration of the run.
//
// Example:
//   SimulationRunOptions o;
//   o.simulator.capture_path = "nixl.msgpack";
//   o.simulator.connector = SimConnector::kNixl;
//   Result<SimulatorTotals> totals = RunSimulation(o);
#ifndef VMETRICS_SIMULATE_RUN_SIMULATION_H_
#define VMETRICS_SIMULATE_RUN_SIMULATION_H_

#include <string>

#include "vmetrics/simulator.h"
#include "vmetrics/status.h"

namespace vmetrics {

struct SimulationRunOptions {
  SimulatorOptions simulator;
  // Where SimulatorTotals::ToJson goes at the end ("" = nowhere), written also when the run
  // failed, so a test sees what was sent before the failure.
  std::string report_totals_path;
};

// What was sent, once the simulator ended. kUnavailable with the simulator's failure (it could
// not start, connect or send), or when the totals cannot be written.
Result<SimulatorTotals> RunSimulation(const SimulationRunOptions& options);

}  // namespace vmetrics

#endif  // VMETRICS_SIMULATE_RUN_SIMULATION_H_
