// SPDX-License-Identifier: Apache-2.0
// Synchronous stop signals; see stop_signals.h.
#include "vmetrics/frontend/stop_signals.h"

#include <pthread.h>

#include <csignal>
#include <ctime>

namespace vmetrics::frontend {
namespace {

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void BlockStopSignals() {
  const sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForStopSignal(double timeout_s) {
  const sigset_t set = StopSignals();
  if (timeout_s <= 0) {
    int sig = 0;
    sigwait(&set, &sig);
    return sig;
  }
  timespec ts;
  ts.tv_sec = static_cast<time_t>(timeout_s);
  ts.tv_nsec = static_cast<long>((timeout_s - static_cast<double>(ts.tv_sec)) * 1e9);
  const int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

}  // namespace vmetrics::frontend
