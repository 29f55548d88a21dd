// SPDX-License-Identifier: Apache-2.0
// File: environment.h
//
// The environment variables the frontend honours as its Python counterpart does.
#ifndef VMETRICS_FRONTEND_ENVIRONMENT_H_
#define VMETRICS_FRONTEND_ENVIRONMENT_H_

#include "vmetrics/status.h"

namespace vmetrics::frontend {

// prometheus_client's own switch: PROMETHEUS_DISABLE_CREATED_SERIES=True (or 1, t; any case)
// turns the _created samples off.
bool CreatedDisabledByEnvironment();

// A switch of vLLM's envs.py read as `bool(int(os.getenv(name, "0")))`: unset = false; an
// integer as Python's int() reads it (internal::PythonIntOfText) is true when not 0. Any other
// value is an error naming the variable (Python raises on it too).
Result<bool> PythonIntSwitchFromEnvironment(const char* name);

// The environment switch of vLLM's development routes (EngineControl), VLLM_SERVER_DEV_MODE
// (PythonIntSwitchFromEnvironment, as vllm/envs.py reads it).
Result<bool> ServerDevModeFromEnvironment();

// VLLM_COMPUTE_NANS_IN_LOGITS (PythonIntSwitchFromEnvironment). It registers
// vllm:corrupted_requests and makes the request tracker mark requests whose outputs had NaNs in
// their logits.
Result<bool> ComputeNansInLogitsFromEnvironment();

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_ENVIRONMENT_H_
