// SPDX-License-Identifier: Apache-2.0
// File: stop_signals.h
//
// Waiting for SIGINT or SIGTERM the way a service that runs threads must: the signals are
// blocked in every thread (BlockStopSignals, called before any thread starts, so the threads
// inherit the mask) and taken synchronously by the one thread that waits (WaitForStopSignal),
// so no handler runs in a random thread in the middle of a lock.
//
// Example:
//   BlockStopSignals();
//   Frontend frontend(options);  // its threads start with the signals blocked
//   ...
//   const int sig = WaitForStopSignal(/*timeout_s=*/0);  // SIGINT or SIGTERM
#ifndef VMETRICS_FRONTEND_STOP_SIGNALS_H_
#define VMETRICS_FRONTEND_STOP_SIGNALS_H_

namespace vmetrics::frontend {

// Blocks SIGINT and SIGTERM in the calling thread (and the threads it starts afterwards).
void BlockStopSignals();

// Waits for SIGINT or SIGTERM, or for `timeout_s` seconds when > 0. Returns the signal number,
// or 0 on timeout. REQUIRES: BlockStopSignals was called first.
int WaitForStopSignal(double timeout_s);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_STOP_SIGNALS_H_
