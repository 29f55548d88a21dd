// SPDX-License-Identifier: Apache-2.0
#include "buckets.h"

namespace vmetrics::internal {

std::string_view BucketFamilyKey(BucketSet set) {
  switch (set) {
    case BucketSet::kNone:
      return "";
    case BucketSet::kTokens125:
      return "request_tokens";
    case BucketSet::kIterationTokens:
      return "iteration_tokens";
    case BucketSet::kRequestParamsN:
      return "request_params_n";
    case BucketSet::kTimeToFirstToken:
      return "time_to_first_token";
    case BucketSet::kInterTokenLatency:
      return "inter_token_latency";
    case BucketSet::kRequestLatency:
      return "request_latency";
    case BucketSet::kKvResidency:
      return "kv_cache_residency";
    case BucketSet::kRequestNumPreemptions:
      return "request_num_preemptions";
    case BucketSet::kHttpDurationHighr:
    case BucketSet::kHttpDurationLowr:
    case BucketSet::kEcCpuTransferSize:
      return "";  // not in BUCKET_FAMILY_KEYS: --custom-histogram-buckets does not reach them
  }
  return "";
}

std::vector<double> Build125Buckets(int64_t max_value) {
  std::vector<double> buckets;
  static constexpr int64_t kMantissas[] = {1, 2, 5};
  for (int64_t exponent = 1;; exponent *= 10) {
    for (int64_t m : kMantissas) {
      const int64_t v = m * exponent;
      if (v > max_value) return buckets;
      buckets.push_back(static_cast<double>(v));
    }
    if (exponent > (INT64_MAX / 100)) return buckets;
  }
}

const std::vector<double>& IterationTokensBuckets() {
  static const std::vector<double> b = {1,   8,    16,   32,   64,   128,  256,
                                        512, 1024, 2048, 4096, 8192, 16384};
  return b;
}
const std::vector<double>& RequestParamsNBuckets() {
  static const std::vector<double> b = {1, 2, 5, 10, 20};
  return b;
}
const std::vector<double>& TimeToFirstTokenBuckets() {
  static const std::vector<double> b = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                        0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                        20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
  return b;
}
const std::vector<double>& InterTokenLatencyBuckets() {
  static const std::vector<double> b = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                        0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
  return b;
}
const std::vector<double>& RequestLatencyBuckets() {
  static const std::vector<double> b = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                        5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                        60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  return b;
}
const std::vector<double>& KvResidencyBuckets() {
  static const std::vector<double> b = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1,
                                        0.2,   0.5,   1,     2,    5,    10,   20,
                                        30,    60,    120,   300,  600,  1200, 1800};
  return b;
}

const std::vector<double>& RequestNumPreemptionsBuckets() {
  static const std::vector<double> b = {1, 2, 3, 4, 5, 10, 20};
  return b;
}

// prometheus-fastapi-instrumentator's defaults (metrics.default() and
// PrometheusFastApiInstrumentator.instrument(), trallnag/prometheus-fastapi-instrumentator
// at v8.0.2, docs/design.md §2.6).
const std::vector<double>& HttpDurationHighrBuckets() {
  static const std::vector<double> b = {0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1,  1.5, 2,
                                        2.5,  3,     3.5,  4,     4.5, 5,    7.5, 10,   30, 60};
  return b;
}
const std::vector<double>& HttpDurationLowrBuckets() {
  static const std::vector<double> b = {0.1, 0.5, 1};
  return b;
}

// ECCPUConnector's `_TRANSFER_SIZE_BUCKETS`, sized for encoder-cache batches (one embedding is
// ~1-20 MB): vllm/distributed/ec_transfer/ec_connector/cpu/metrics.py at vllm-project/vllm
// d32cfd41.
const std::vector<double>& EcCpuTransferSizeBuckets() {
  static const std::vector<double> b = {0.5e6, 1e6, 2e6, 5e6, 10e6, 20e6, 50e6, 100e6, 250e6};
  return b;
}

}  // namespace vmetrics::internal
