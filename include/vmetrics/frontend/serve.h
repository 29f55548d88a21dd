// SPDX-License-Identifier: Apache-2.0
// File: serve.h
//
// Serve: what `vmetrics serve` does, for a process that is nothing but a frontend. It runs a
// Frontend (frontend.h) until SIGINT or SIGTERM: checks the options, serves HTTP and binds the
// engine sockets (Bind), prints "listening on http://HOST:PORT" on stdout (/metrics and
// /health answer from here on, while the engines load), says where it waits for the engines,
// starts (a signal during the wait for engines ends it too), and stops on the signal.
// Progress goes to the log (log.h).
//
// Thread safety: call from the main thread before any other thread starts (the stop signals
// are blocked for the whole process, stop_signals.h).
//
// Example:
//   FrontendOptions options;
//   options.data_parallel_size = 2;
//   Status s = Serve(options);  // returns after SIGINT or SIGTERM
#ifndef VMETRICS_FRONTEND_SERVE_H_
#define VMETRICS_FRONTEND_SERVE_H_

#include "vmetrics/frontend.h"
#include "vmetrics/status.h"

namespace vmetrics::frontend {

// Ok once stopped by a signal after a successful start. Otherwise the failure of Bind (bad
// options, kInvalidArgument, naming the flag; "cannot bind the engine sockets: ...") or Start
// ("startup failed: ..."), with its code.
Status Serve(const FrontendOptions& options);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_SERVE_H_
