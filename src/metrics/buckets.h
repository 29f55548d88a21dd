// SPDX-License-Identifier: Apache-2.0
// File: buckets.h
//
// Histogram bucket lists of vLLM's Python frontend (vllm/v1/metrics/loggers.py at vllm-project/vllm
// 6adad087; docs/metrics.md lists them per family). +Inf is implied.
#ifndef VMETRICS_METRICS_BUCKETS_H_
#define VMETRICS_METRICS_BUCKETS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "vmetrics/internal/declared_families.h"

namespace vmetrics::internal {

// build_1_2_5_buckets(max): 1, 2, 5, 10, 20, 50, ... while <= max (max itself is not appended).
// Example: Build125Buckets(1024) == {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}.
std::vector<double> Build125Buckets(int64_t max_value);

const std::vector<double>& IterationTokensBuckets();
const std::vector<double>& RequestParamsNBuckets();
const std::vector<double>& TimeToFirstTokenBuckets();
const std::vector<double>& InterTokenLatencyBuckets();
const std::vector<double>& RequestLatencyBuckets();
const std::vector<double>& KvResidencyBuckets();
// The key of vLLM's BUCKET_FAMILY_KEYS (vllm/v1/metrics/buckets.py at vllm-project/vllm
// 139b1c3f) that --custom-histogram-buckets uses for a bucket set; "" for kNone.
std::string_view BucketFamilyKey(BucketSet set);

// vllm/v1/metrics/buckets.py at vllm-project/vllm 139b1c3f, key `request_num_preemptions`.
const std::vector<double>& RequestNumPreemptionsBuckets();

// The HTTP families' (http_request_duration_highr_seconds, http_request_duration_seconds):
// prometheus-fastapi-instrumentator's defaults, as vLLM's API server uses them.
const std::vector<double>& HttpDurationHighrBuckets();
const std::vector<double>& HttpDurationLowrBuckets();

// ECCPUConnector's histograms' (vllm:ec_cpu_save_size_bytes, vllm:ec_cpu_load_size_bytes).
const std::vector<double>& EcCpuTransferSizeBuckets();

}  // namespace vmetrics::internal

#endif  // VMETRICS_METRICS_BUCKETS_H_
