// SPDX-License-Identifier: Apache-2.0
// File: environment.h
//
// The environment variables the frontend honours as its Python counterpart does.
#ifndef VMETRICS_FRONTEND_ENVIRONMENT_H_
#define VMETRICS_FRONTEND_ENVIRONMENT_H_

namespace vmetrics::frontend {

// prometheus_client's own switch: PROMETHEUS_DISABLE_CREATED_SERIES=True (or 1, t; any case)
// turns the _created samples off.
bool CreatedDisabledByEnvironment();

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_ENVIRONMENT_H_
