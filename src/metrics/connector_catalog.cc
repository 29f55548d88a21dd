// SPDX-License-Identifier: Apache-2.0
// The built-in connector rows. Each row mirrors one Python `*PromMetrics` class; its HELP
// strings, bucket lists and family order are upstream's, byte for byte (the Python files of
// docs/design.md §3.7, vLLM main of September 2026).
#include "vmetrics/connector_catalog.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "row_checks.h"
#include "vmetrics/engine_core_outputs.h"  // the reserved payload keys

namespace vmetrics {
namespace {

// Bucket lists of the rows below, as the Python classes of docs/design.md §3.7 declare them
// (the transfer lists are shared by NIXL, Mooncake P2P and MoRIIO).
const std::vector<double> kXferTimeBuckets = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
                                              0.2,   0.3,  0.5,   0.75, 1.0,   5.0};
const std::vector<double> kPostTimeBuckets = {0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
                                              0.2,   0.3,   0.5,  0.75,  1.0,  5.0};
// 2^(10+i) for i = 1, 3, ..., 23: 2 KiB to 8 GiB (the Python comment says "2kb to 16gb").
std::vector<double> BytesTransferredBuckets() {
  std::vector<double> b;
  for (int i = 1; i <= 23; i += 2) b.push_back(std::ldexp(1.0, 10 + i));
  return b;
}
const std::vector<double> kDescriptorBuckets = {10,  20,   30,   50,   75,    100,   200,
                                                400, 1000, 2000, 4000, 10000, 20000, 50000};
const std::vector<double> kStoreOperationBuckets = {0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4,
                                                    0.5,   0.75,  1.0,  1.5,  2.0, 3.0, 4.0};
const std::vector<double> kHf3fsDurationBuckets = {0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
                                                   0.2,   0.3,   0.5,  0.75,  1.0,  5.0};
const std::vector<double> kOffloadSizeBuckets = {1e6,  5e6,  10e6,  20e6,  40e6,
                                                 60e6, 80e6, 100e6, 150e6, 200e6};
const std::vector<double> kOffloadLookupSyncBuckets = {1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3,
                                                       0.01, 0.05, 0.1,  0.5,  1};
const std::vector<double> kOffloadLookupAsyncBuckets = {1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05,
                                                        0.1,  0.5,  1,    5,    10};
const std::vector<double> kOffloadCpuAllocationBuckets = {1,    4,    16,    64,    256,
                                                          1024, 4096, 16384, 65536, 262144};

MetricDef Histogram(std::string name, std::string help, std::vector<double> buckets,
                    std::string path, SampleKind kind = SampleKind::kObserveEachF64) {
  MetricDef m;
  m.name = std::move(name);
  m.type = MetricType::kHistogram;
  m.documentation = std::move(help);
  m.buckets = std::move(buckets);
  m.samples_path = std::move(path);
  m.sample_kind = kind;
  return m;
}

MetricDef Counter(std::string name, std::string help, std::string path,
                  SampleKind kind = SampleKind::kIncBySumU64) {
  MetricDef m;
  m.name = std::move(name);
  m.type = MetricType::kCounter;
  m.documentation = std::move(help);
  m.samples_path = std::move(path);
  m.sample_kind = kind;
  return m;
}

MetricDef Gauge(std::string name, std::string help, std::string path) {
  MetricDef m;
  m.name = std::move(name);
  m.type = MetricType::kGauge;
  m.documentation = std::move(help);
  m.samples_path = std::move(path);
  m.sample_kind = SampleKind::kSetF64;
  return m;
}

// The families an offloading spec declares (`build_metric_definitions` of
// vllm/v1/kv_offload/cpu/spec.py and vllm/v1/kv_offload/tiering/spec.py at vllm-project/vllm
// 6adad087; names in cpu/common.py and tiering/base.py), in the spec's dict order: the four CPU
// families, vllm:kv_offload_stores_skipped when `store_threshold` >= 2 (CPUOffloadingSpec and
// its subclass TieringOffloadingSpec, which starts from it), then TieringOffloadingSpec's
// fifteen. Secondary tiers add none at that commit (SecondaryTierManager's default returns {}
// and no tier overrides it). Each reads `data.<family name>`, whose label tuples carry the
// `tier` label where the family declares it: "0:primary" for the CPU tier and
// "<index + 1>:<type>" for each secondary tier (TieringMetricsTracker, tiering/metrics.py).
std::vector<MetricDef> OffloadingSpecMetrics() {
  auto data = [](const std::string& name) { return "data." + name; };
  ExtraConfigGate cpu_or_subclass;
  cpu_or_subclass.key = "spec_name";
  cpu_or_subclass.default_value = "CPUOffloadingSpec";
  cpu_or_subclass.values = {"CPUOffloadingSpec", "TieringOffloadingSpec"};
  ExtraConfigGate tiering = cpu_or_subclass;
  tiering.values = {"TieringOffloadingSpec"};
  ExtraConfigGate store_threshold;
  store_threshold.key = "store_threshold";
  store_threshold.default_value = "0";
  store_threshold.int_at_least = 2;
  auto under = [](MetricDef m, std::vector<ExtraConfigGate> gates) {
    m.registered_when = std::move(gates);
    return m;
  };
  auto cpu = [&](MetricDef m) { return under(std::move(m), {cpu_or_subclass}); };
  auto tier = [&](MetricDef m, bool labelled = true) {
    if (labelled) m.labelnames = {"tier"};
    return under(std::move(m), {tiering});
  };
  const std::string t = "vllm:kv_offload_tiering_";
  return {
      cpu(Gauge("vllm:kv_offload_cpu_cache_usage_perc",
                "Fraction of CPU KV-cache space currently pinned by active transfers (0.0 = "
                "idle, 1.0 = saturated). Sustained high values indicate transfers (stores or "
                "promotions) may be dropped due to insufficient capacity.",
                data("vllm:kv_offload_cpu_cache_usage_perc"))),
      cpu(Gauge("vllm:kv_offload_cpu_cache_write_usage_perc",
                "Fraction of CPU KV-cache space currently pinned by in-flight stores that have "
                "not yet completed (0.0 = idle, 1.0 = saturated).",
                data("vllm:kv_offload_cpu_cache_write_usage_perc"))),
      cpu(Gauge("vllm:kv_offload_cpu_cache_read_usage_perc",
                "Fraction of CPU KV-cache space currently pinned by in-flight loads that have "
                "not yet completed (0.0 = idle, 1.0 = saturated).",
                data("vllm:kv_offload_cpu_cache_read_usage_perc"))),
      cpu(Histogram("vllm:kv_offload_cpu_allocation_size",
                    "Histogram of the number of CPU blocks requested by each KV offload "
                    "prepare_store call.",
                    kOffloadCpuAllocationBuckets, data("vllm:kv_offload_cpu_allocation_size"))),
      under(Counter("vllm:kv_offload_stores_skipped",
                    "Number of KV offload stores skipped because the reuse threshold was not "
                    "reached.",
                    data("vllm:kv_offload_stores_skipped"), SampleKind::kIncByU64),
            {cpu_or_subclass, store_threshold}),
      tier(Histogram(t + "lookup_sync_delay_seconds",
                     "Histogram of blocking time spent in a per-block tier lookup that resolved "
                     "as a hit or miss, labeled by tier, in seconds.",
                     kOffloadLookupSyncBuckets, data(t + "lookup_sync_delay_seconds"))),
      tier(Histogram(t + "lookup_async_delay_seconds",
                     "Histogram of wall-clock time from a per-block tier lookup first returning "
                     "retry until that same tier lookup resolves as a hit or miss, labeled by "
                     "tier, in seconds.",
                     kOffloadLookupAsyncBuckets, data(t + "lookup_async_delay_seconds"))),
      tier(Counter(t + "read_bytes",
                   "Total bytes read from secondary tiers into the primary tier, labeled by "
                   "tier.",
                   data(t + "read_bytes"), SampleKind::kIncByU64)),
      tier(Counter(t + "read_time",
                   "Total time spent reading from secondary tiers into the primary tier, in "
                   "seconds, labeled by tier.",
                   data(t + "read_time"), SampleKind::kIncByF64)),
      tier(Counter(t + "write_bytes",
                   "Total bytes written from the primary tier to secondary tiers, labeled by "
                   "tier.",
                   data(t + "write_bytes"), SampleKind::kIncByU64)),
      tier(Counter(t + "write_time",
                   "Total time spent writing from the primary tier to secondary tiers, in "
                   "seconds, labeled by tier.",
                   data(t + "write_time"), SampleKind::kIncByF64)),
      tier(Counter(t + "promotion_job_failures",
                   "Number of failed secondary-tier promotion jobs, labeled by tier.",
                   data(t + "promotion_job_failures"), SampleKind::kIncByU64)),
      tier(Counter(t + "cascade_job_failures",
                   "Number of failed secondary-tier cascade jobs, labeled by tier.",
                   data(t + "cascade_job_failures"), SampleKind::kIncByU64)),
      tier(Counter(t + "block_queries",
                   "Number of block lookup queries sent to a tier, labeled by tier.",
                   data(t + "block_queries"), SampleKind::kIncByU64)),
      tier(Counter(t + "block_hits", "Number of block lookup hits in a tier, labeled by tier.",
                   data(t + "block_hits"), SampleKind::kIncByU64)),
      tier(Counter(t + "promotion_allocation_failures",
                   "Number of promotion attempts that failed because the primary tier could "
                   "not allocate space.",
                   data(t + "promotion_allocation_failures"), SampleKind::kIncByU64),
           /*labelled=*/false),
      tier(Gauge(t + "primary_write_usage_perc",
                 "Current fraction of primary-tier space used by writes from secondary tiers, "
                 "labeled by tier.",
                 data(t + "primary_write_usage_perc"))),
      tier(Gauge(t + "primary_read_usage_perc",
                 "Current fraction of primary-tier space used by reads to secondary tiers, "
                 "labeled by tier.",
                 data(t + "primary_read_usage_perc"))),
      tier(Gauge(t + "active_promotion_jobs",
                 "Number of active secondary-tier promotion jobs, labeled by tier.",
                 data(t + "active_promotion_jobs"))),
      tier(Gauge(t + "active_cascade_jobs",
                 "Number of active secondary-tier cascade jobs, labeled by tier.",
                 data(t + "active_cascade_jobs"))),
  };
}

// NIXL and the connectors that copy its payload (MoRIIO) share the seven families.
std::vector<MetricDef> NixlLikeMetrics(const std::string& prefix, const std::string& who,
                                       const std::string& descriptors_help) {
  return {
      Histogram(prefix + "xfer_time_seconds",
                "Histogram of transfer duration for " + who + " KV Cache transfers.",
                kXferTimeBuckets, "transfer_duration"),
      Histogram(prefix + "post_time_seconds",
                "Histogram of transfer post time for " + who + " KV Cache transfers.",
                kPostTimeBuckets, "post_duration"),
      Histogram(prefix + "bytes_transferred",
                "Histogram of bytes transferred per " + who + " KV Cache transfers.",
                BytesTransferredBuckets(), "bytes_transferred", SampleKind::kObserveEachU64AsF64),
      Histogram(prefix + "num_descriptors", descriptors_help, kDescriptorBuckets, "num_descriptors",
                SampleKind::kObserveEachU64AsF64),
      Counter(prefix + "num_failed_transfers", "Number of failed " + who + " KV Cache transfers.",
              "num_failed_transfers"),
      Counter(prefix + "num_failed_notifications",
              "Number of failed " + who + " KV Cache notifications.", "num_failed_notifications"),
      Counter(prefix + "num_kv_expired_reqs",
              "Number of requests that had their KV expire. NOTE: This metric is tracked on the "
              "P instance.",
              "num_kv_expired_reqs"),
  };
}

// The built-in rows, in inference order. When no connector is configured, a bare payload is
// identified by the first rule that holds (IdentifyConnectorPayloads applies them in this order):
//   0. It carries `_metrics_descriptor`: it names itself (the descriptor's connector_id). Identity
//      beats shape, and the built-in connectors that send descriptors (HiSparse, HF3FS,
//      Offloading) name their own rows.
//   1. Mooncake P2P (has num_failed_recvs): its keys are a near-subset of NIXL's, so it is
//      told apart by the one key NIXL never sends; checking it first can never steal a NIXL
//      payload, while NIXL-first would have to rely on post_duration being present.
//   2. NIXL (has post_duration).
//   3. Mooncake store (every key an operation with a list of records).
//   4. Offloading (typed payload: `types` and `data`).
//   5. A MultiConnector payload (keys are class names, values maps).
//   6. Exactly one row was added at run time from a descriptor: that row. A third-party
//      connector sends its descriptor once; its later bare payloads carry only data (the Rust
//      frontend's "sole registered descriptor" rule).
// Reserved keys (`_metrics_descriptor`, `_n_steps`) never count for a shape. Rows with
// ShapeRule::kNever are recognised only by name. What matches no rule is an unknown connector,
// accounted for and logged, never taken for something else.
std::vector<ConnectorRow> BuiltInRows() {
  std::vector<ConnectorRow> rows;

  {  // MooncakeConnector (P2P): MooncakePromMetrics of vLLM PR #56939.
    ConnectorRow r;
    r.id = "MooncakeConnector";
    r.class_names = {"MooncakeConnector"};
    r.shape_rule = ShapeRule::kHasKey;
    r.shape_key = "num_failed_recvs";
    r.metrics = {
        Histogram("vllm:mooncake_xfer_time_seconds",
                  "Histogram of transfer duration for Mooncake KV Cache transfers.",
                  kXferTimeBuckets, "transfer_duration"),
        Histogram("vllm:mooncake_bytes_transferred",
                  "Histogram of bytes transferred per Mooncake KV Cache transfer.",
                  BytesTransferredBuckets(), "bytes_transferred", SampleKind::kObserveEachU64AsF64),
        Histogram("vllm:mooncake_num_descriptors",
                  "Histogram of number of descriptors per Mooncake KV Cache transfer.",
                  kDescriptorBuckets, "num_descriptors", SampleKind::kObserveEachU64AsF64),
        Counter("vllm:mooncake_num_failed_transfers",
                "Number of failed Mooncake KV Cache transfers.", "num_failed_transfers"),
        Counter("vllm:mooncake_num_failed_recvs", "Number of failed Mooncake KV Cache receives.",
                "num_failed_recvs"),
        Counter("vllm:mooncake_num_kv_expired_reqs",
                "Number of requests that had their KV expire. NOTE: This metric is tracked on "
                "the P instance.",
                "num_kv_expired_reqs"),
    };
    rows.push_back(std::move(r));
  }
  {  // NixlConnector and its pull/push subclasses: NixlPromMetrics (nixl/stats.py).
    ConnectorRow r;
    r.id = "NixlConnector";
    r.class_names = {"NixlConnector", "NixlPullConnector", "NixlPushConnector"};
    r.shape_rule = ShapeRule::kHasKey;
    r.shape_key = "post_duration";
    // The two spaces before "KV" are upstream's ("per NIXL " + " KV Cache ..."): kept on
    // purpose so dashboards keyed on HELP text and byte-for-byte parity both hold.
    r.metrics = NixlLikeMetrics("vllm:nixl_", "NIXL",
                                "Histogram of number of descriptors per NIXL  KV Cache transfers.");
    rows.push_back(std::move(r));
  }
  {  // MooncakeStoreConnector: MooncakeStorePromMetrics (mooncake/store/metrics.py).
    ConnectorRow r;
    r.id = "MooncakeStoreConnector";
    r.class_names = {"MooncakeStoreConnector"};
    r.shape_rule = ShapeRule::kOperationRecords;
    r.children = ChildCreation::kOnFirstRecord;
    r.record_key_label = "operation";
    r.record_label_fields = {{"status", "ok"}};
    r.metrics = {
        Histogram("vllm:mooncake_store_operation_time_seconds",
                  "Histogram of Mooncake store communication time.", kStoreOperationBuckets,
                  "duration_seconds"),
        Counter("vllm:mooncake_store_operation",
                "Number of Mooncake store communication operations.", "", SampleKind::kIncByOne),
        Counter("vllm:mooncake_store_operation_keys",
                "Number of Mooncake store keys touched by operations.", "num_keys",
                SampleKind::kIncByU64),
        Counter("vllm:mooncake_store_operation_bytes",
                "Number of bytes transferred by Mooncake store operations.", "num_bytes",
                SampleKind::kIncByU64),
        Counter("vllm:mooncake_store_operation_failed_keys",
                "Number of Mooncake store keys that failed in operations.", "num_failed_keys",
                SampleKind::kIncByU64),
    };
    rows.push_back(std::move(r));
  }
  {  // OffloadingConnector: OffloadPromMetrics (offloading/metrics.py), typed payload.
    // Counters, gauges and histograms read `data.<family name>`, whose value maps label tuples
    // to a number or a list; the unlabelled entry is the empty tuple. Registration follows
    // OffloadPromMetrics.__init__ (offloading/metrics.py at vllm-project/vllm 6adad087): the
    // deprecated transfer_type families, then the spec's families (OffloadingSpecMetrics), then
    // the connector's own (`get_connector_metric_definitions`).
    ConnectorRow r;
    r.id = "OffloadingConnector";
    r.class_names = {"OffloadingConnector"};
    r.shape_rule = ShapeRule::kTypedPayload;
    r.children = ChildCreation::kOnFirstRecord;
    r.upstream =
        "vllm-project/vllm `vllm/distributed/kv_transfer/kv_connector/v1/offloading/metrics.py` "
        "(undated copy: deprecated transfer_type families, `vllm:kv_offload_config_info`, the "
        "CPUOffloadingSpec gate) and `vllm/v1/kv_offload/factory.py` (undated copy: `spec_name` "
        "defaults to CPUOffloadingSpec; CPUOffloadingSpec and TieringOffloadingSpec, a "
        "subclass, are the built-in specs); the transfer_type families first appeared at "
        "d1db1e8c; the spec-defined families and their gates follow "
        "`vllm/v1/kv_offload/cpu/spec.py` and `vllm/v1/kv_offload/tiering/spec.py` at 6adad087";
    auto data = [](const std::string& name) { return "data." + name; };
    // The deprecated transfer_type families: registered always (they are not behind
    // --show-hidden-metrics-for-version upstream), children for both directions of every
    // engine at registration, and fed only when the offloading spec is CPUOffloadingSpec or a
    // subclass (`spec_name`; vLLM's default when absent), from the unlabelled load (CPU_to_GPU)
    // and store (GPU_to_CPU) values that feed the flat families below. One metric per
    // direction: the two share the family.
    ExtraConfigGate cpu_spec;
    cpu_spec.key = "spec_name";
    cpu_spec.default_value = "CPUOffloadingSpec";
    cpu_spec.values = {"CPUOffloadingSpec", "TieringOffloadingSpec"};
    auto deprecated = [&](MetricDef m, const char* transfer_type) {
      m.const_labels = {{"transfer_type", transfer_type}};
      m.eager = true;
      m.fed_when = cpu_spec;
      return m;
    };
    const char* const kTotalBytesHelp = "Number of bytes offloaded by KV connector";
    const char* const kTotalTimeHelp = "Total time measured by all KV offloading operations";
    const char* const kSizeHelp = "Histogram of KV offload transfer size, in bytes.";
    MetricDef info;
    info.name = "vllm:kv_offload_config_info";
    info.type = MetricType::kGauge;
    info.documentation =
        "Static configuration of the KV offload managers of this engine instance. The "
        "configured offloading spec declares the label names, and each manager fills the "
        "values, so a series appears from the first scheduler step of its engine. Each engine "
        "reports its own configuration, not the instance total.";
    info.samples_path = "info";
    info.sample_kind = SampleKind::kSetInfo;
    r.metrics = {
        deprecated(Counter("vllm:kv_offload_total_bytes", kTotalBytesHelp,
                           data("vllm:kv_offload_load_bytes"), SampleKind::kIncByU64),
                   "CPU_to_GPU"),
        deprecated(Counter("vllm:kv_offload_total_bytes", kTotalBytesHelp,
                           data("vllm:kv_offload_store_bytes"), SampleKind::kIncByU64),
                   "GPU_to_CPU"),
        deprecated(Counter("vllm:kv_offload_total_time", kTotalTimeHelp,
                           data("vllm:kv_offload_load_time"), SampleKind::kIncByF64),
                   "CPU_to_GPU"),
        deprecated(Counter("vllm:kv_offload_total_time", kTotalTimeHelp,
                           data("vllm:kv_offload_store_time"), SampleKind::kIncByF64),
                   "GPU_to_CPU"),
        deprecated(Histogram("vllm:kv_offload_size", kSizeHelp, kOffloadSizeBuckets,
                             data("vllm:kv_offload_load_size")),
                   "CPU_to_GPU"),
        deprecated(Histogram("vllm:kv_offload_size", kSizeHelp, kOffloadSizeBuckets,
                             data("vllm:kv_offload_store_size")),
                   "GPU_to_CPU"),
    };
    for (MetricDef& m : OffloadingSpecMetrics()) r.metrics.push_back(std::move(m));
    for (MetricDef& m : std::vector<MetricDef>{
             Counter("vllm:kv_offload_load_bytes",
                     "Total bytes loaded from offload storage to GPU.",
                     data("vllm:kv_offload_load_bytes"), SampleKind::kIncByU64),
             Counter("vllm:kv_offload_load_time",
                     "Total load time from offload storage to GPU, in seconds.",
                     data("vllm:kv_offload_load_time"), SampleKind::kIncByF64),
             Histogram("vllm:kv_offload_load_size",
                       "Histogram of KV offload load operation size, in bytes.",
                       kOffloadSizeBuckets, data("vllm:kv_offload_load_size")),
             Counter("vllm:kv_offload_store_bytes",
                     "Total bytes stored from GPU to offload storage.",
                     data("vllm:kv_offload_store_bytes"), SampleKind::kIncByU64),
             Counter("vllm:kv_offload_store_time",
                     "Total store time from GPU to offload storage, in seconds.",
                     data("vllm:kv_offload_store_time"), SampleKind::kIncByF64),
             Histogram("vllm:kv_offload_store_size",
                       "Histogram of KV offload store operation size, in bytes.",
                       kOffloadSizeBuckets, data("vllm:kv_offload_store_size")),
             Histogram("vllm:kv_offload_lookup_sync_delay_seconds",
                       "Histogram of the time spent in a single offload lookup call, in seconds.",
                       kOffloadLookupSyncBuckets,
                       data("vllm:kv_offload_lookup_sync_delay_seconds")),
             Histogram(
                 "vllm:kv_offload_lookup_async_delay_seconds",
                 "Histogram of time between a request's offload lookup first deferring and the "
                 "following lookup resolving, or request finish, in seconds.",
                 kOffloadLookupAsyncBuckets, data("vllm:kv_offload_lookup_async_delay_seconds")),
             Counter("vllm:kv_offload_allocation_failure",
                     "Number of KV offload store allocation attempts that failed.",
                     data("vllm:kv_offload_allocation_failure"), SampleKind::kIncByU64),
             info,
         }) {
      r.metrics.push_back(std::move(m));
    }
    rows.push_back(std::move(r));
  }
  {  // HF3FSKVConnector: HF3FSPromMetrics (hf3fs/hf3fs_connector.py). Counts are scalars.
    ConnectorRow r;
    r.id = "HF3FSKVConnector";
    r.class_names = {"HF3FSKVConnector"};
    r.metrics = {
        Histogram("vllm:hf3fs_save_duration_seconds",
                  "Histogram of save duration for HF3FSKVConnector.", kHf3fsDurationBuckets,
                  "save_duration"),
        Histogram("vllm:hf3fs_load_duration_seconds",
                  "Histogram of load duration for HF3FSKVConnector.", kHf3fsDurationBuckets,
                  "load_duration"),
        Counter("vllm:hf3fs_num_failed_save", "Number of failed HF3FS KV save.", "num_failed_save",
                SampleKind::kIncByU64),
        Counter("vllm:hf3fs_num_failed_load", "Number of failed HF3FS KV load.", "num_failed_load",
                SampleKind::kIncByU64),
    };
    rows.push_back(std::move(r));
  }
  {  // HiSparseConnector: HiSparsePromMetrics (hisparse/stats.py).
    ConnectorRow r;
    r.id = "HiSparseConnector";
    r.class_names = {"HiSparseConnector"};
    r.metrics = {
        Counter("vllm:hisparse_cache_hits", "Number of HiSparse device hot-buffer hits.",
                "cache_hits"),
        Counter("vllm:hisparse_cache_misses", "Number of HiSparse device hot-buffer misses.",
                "cache_misses"),
        Counter("vllm:hisparse_host_to_device_bytes",
                "Bytes transferred from host KV storage to HiSparse hot buffers.",
                "host_to_device_bytes"),
    };
    rows.push_back(std::move(r));
  }
  {  // MoRIIOConnector: MoRIIOPromMetrics mirrors NIXL with "MoRI IO" in every HELP.
    ConnectorRow r;
    r.id = "MoRIIOConnector";
    r.class_names = {"MoRIIOConnector"};
    r.metrics =
        NixlLikeMetrics("vllm:moriio_", "MoRI IO",
                        "Histogram of number of descriptors per MoRI IO KV Cache transfers.");
    rows.push_back(std::move(r));
  }
  {  // LMCacheConnectorV1: LMCachePromMetrics registers no families (observe is a no-op).
    ConnectorRow r;
    r.id = "LMCacheConnectorV1";
    r.class_names = {"LMCacheConnectorV1"};
    rows.push_back(std::move(r));
  }
  return rows;
}

bool KindFitsType(SampleKind kind, MetricType type) {
  switch (kind) {
    case SampleKind::kIncByU64:
    case SampleKind::kIncBySumU64:
    case SampleKind::kIncByF64:
    case SampleKind::kIncByOne:
      return type == MetricType::kCounter;
    case SampleKind::kSetU64:
    case SampleKind::kSetF64:
    case SampleKind::kSetInfo:
      return type == MetricType::kGauge;
    case SampleKind::kObserveEachF64:
    case SampleKind::kObserveEachU64AsF64:
      return type == MetricType::kHistogram;
  }
  return false;
}

// Label names of a metric after model_name and engine: the row's record labels, the metric's
// payload labels, then its const labels (the order FamilySpec::label_names gets them in).
std::vector<std::string> LabelNamesOf(const ConnectorRow& row, const MetricDef& m) {
  std::vector<std::string> names = row.ExtraLabelNames();
  names.insert(names.end(), m.labelnames.begin(), m.labelnames.end());
  for (const auto& [name, unused] : m.const_labels) names.push_back(name);
  return names;
}

Status CheckLabelNames(const std::vector<std::string>& names, const std::string& where) {
  std::set<std::string_view> seen = {"model_name", "engine", "le"};
  for (const std::string& n : names) {
    if (!IsValidLabelName(n) || n.rfind("__", 0) == 0) {
      return Status::InvalidArgument(std::string(where)
                                         .append("label name '")
                                         .append(n)
                                         .append("' is not a valid label name"));
    }
    if (!seen.insert(n).second) {
      return Status::InvalidArgument(
          std::string(where)
              .append("label name '")
              .append(n)
              .append("' is used twice or is reserved (model_name, engine, le)"));
    }
  }
  return Status::Ok();
}

Status CheckPath(std::string_view path, const std::string& where) {
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string_view seg =
        path.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (seg.empty()) {
      return Status::InvalidArgument(where + "samples_path '" + std::string(path) +
                                     "' has an empty segment");
    }
    if (start == 0 && IsReservedPayloadKey(seg)) {
      return Status::InvalidArgument(where + "samples_path '" + std::string(path) +
                                     "' reads a reserved key");
    }
    if (dot == std::string_view::npos) return Status::Ok();
    start = dot + 1;
  }
}

Status CheckMetric(const ConnectorRow& row, const MetricDef& m, std::string_view opening) {
  const std::string where = std::string(opening) + "metric '" + m.name + "': ";
  if (m.name.empty()) return Status::InvalidArgument(where + "name is empty");
  if (!IsValidMetricName(m.name)) {
    return Status::InvalidArgument(where + "name is not a valid Prometheus metric name");
  }
  if (!KindFitsType(m.sample_kind, m.type)) {
    return Status::InvalidArgument(where + "sample_kind " + SampleKindName(m.sample_kind) +
                                   " does not fit type " + MetricTypeName(m.type));
  }
  if (m.sample_kind == SampleKind::kIncByOne) {
    if (!row.record_shaped()) {
      return Status::InvalidArgument(where + "inc_by_one needs a record-shaped payload");
    }
  } else if (m.samples_path.empty()) {
    return Status::InvalidArgument(where + "samples_path is empty");
  } else if (Status s = CheckPath(m.samples_path, where); !s.ok()) {
    return s;
  }
  if (m.type == MetricType::kHistogram) {
    if (m.buckets.empty()) return Status::InvalidArgument(where + "histogram without buckets");
    for (size_t i = 0; i < m.buckets.size(); ++i) {
      if (!std::isfinite(m.buckets[i]) || (i > 0 && !(m.buckets[i - 1] < m.buckets[i]))) {
        return Status::InvalidArgument(where + "buckets must be finite and strictly ascending");
      }
    }
  } else if (!m.buckets.empty()) {
    return Status::InvalidArgument(where + "buckets on a non-histogram");
  }
  if (!std::isfinite(m.scale)) return Status::InvalidArgument(where + "scale is not finite");
  if (!m.labelnames.empty() && row.record_shaped()) {
    return Status::InvalidArgument(where + "labelnames on a record-shaped row");
  }
  if (m.eager && (!m.labelnames.empty() || row.record_shaped())) {
    return Status::InvalidArgument(where + "eager children need fixed labels");
  }
  if (m.fed_when && (m.fed_when->key.empty() || m.fed_when->values.empty())) {
    return Status::InvalidArgument(where + "fed_when needs a key and its values");
  }
  for (const ExtraConfigGate& g : m.registered_when) {
    if (g.key.empty() || (g.values.empty() == !g.int_at_least.has_value())) {
      return Status::InvalidArgument(where +
                                     "registered_when needs a key and either its values or an "
                                     "integer bound");
    }
  }
  if (m.sample_kind == SampleKind::kSetInfo &&
      (row.record_shaped() || !m.labelnames.empty() || !m.const_labels.empty() || m.eager)) {
    // Its label names are declared by the payload; nothing else may add labels.
    return Status::InvalidArgument(where + "set_info takes its labels from the payload only");
  }
  return CheckLabelNames(LabelNamesOf(row, m), where);
}

// Two metrics of one row that name the same family must describe the same family.
Status CheckSameFamily(const ConnectorRow& row, const MetricDef& a, const MetricDef& b,
                       std::string_view opening) {
  const std::string where = std::string(opening) + "metric '" + b.name + "': ";
  if (a.type != b.type || a.documentation != b.documentation || a.buckets != b.buckets) {
    return Status::InvalidArgument(where +
                                   "shares its family name with an earlier metric but differs in "
                                   "type, documentation or buckets");
  }
  if (a.registered_when != b.registered_when) {
    return Status::InvalidArgument(where +
                                   "shares its family name with an earlier metric but is "
                                   "registered under other gates");
  }
  std::vector<std::string> la = LabelNamesOf(row, a), lb = LabelNamesOf(row, b);
  if (la != lb) {
    return Status::InvalidArgument(where +
                                   "shares its family name with an earlier metric but has other "
                                   "label names");
  }
  return Status::Ok();
}

}  // namespace

bool ExtraConfigGate::OpenFor(const ConnectorConfig* config, std::string_view connector) const {
  if (!int_at_least) {
    return Open(config != nullptr ? config->ExtraConfigString(connector, key) : std::nullopt);
  }
  std::optional<int64_t> v =
      config != nullptr ? config->ExtraConfigInt(connector, key) : std::nullopt;
  if (!v) {
    int64_t d = 0;
    v = std::from_chars(default_value.data(), default_value.data() + default_value.size(), d).ec ==
                std::errc()
            ? d
            : 0;
  }
  return *v >= *int_at_least;
}

namespace {
constexpr std::pair<SampleKind, const char*> kSampleKindNames[] = {
    {SampleKind::kIncByU64, "inc_by_u64"},
    {SampleKind::kIncBySumU64, "inc_by_sum_u64"},
    {SampleKind::kIncByF64, "inc_by_f64"},
    {SampleKind::kSetU64, "set_u64"},
    {SampleKind::kSetF64, "set_f64"},
    {SampleKind::kObserveEachF64, "observe_each_f64"},
    {SampleKind::kObserveEachU64AsF64, "observe_each_u64_as_f64"},
    {SampleKind::kIncByOne, "inc_by_one"},
    {SampleKind::kSetInfo, "set_info"},
};
}  // namespace

const char* SampleKindName(SampleKind kind) {
  for (const auto& [k, name] : kSampleKindNames) {
    if (k == kind) return name;
  }
  return "?";
}

bool ParseSampleKind(std::string_view name, SampleKind* kind) {
  for (const auto& [k, n] : kSampleKindNames) {
    if (name == n) {
      *kind = k;
      return true;
    }
  }
  return false;
}

std::vector<std::string> ConnectorRow::ExtraLabelNames() const {
  std::vector<std::string> names;
  if (record_shaped()) {
    names.push_back(record_key_label);
    for (const auto& [field, unused] : record_label_fields) names.push_back(field);
  }
  return names;
}

namespace internal {

Status ValidateRowMetrics(const ConnectorRow& row, std::string_view opening) {
  for (size_t i = 0; i < row.metrics.size(); ++i) {
    const MetricDef& m = row.metrics[i];
    if (Status s = CheckMetric(row, m, opening); !s.ok()) return s;
    for (size_t j = 0; j < i; ++j) {
      const MetricDef& earlier = row.metrics[j];
      if (earlier.name == m.name) {
        if (Status s = CheckSameFamily(row, earlier, m, opening); !s.ok()) return s;
        break;
      }
      // Different families whose sample names collide (counter `x` and gauge `x_total`).
      for (const std::string& a : ExpositionNames(earlier.name, earlier.type)) {
        for (const std::string& b : ExpositionNames(m.name, m.type)) {
          if (a == b) {
            return Status::InvalidArgument(std::string(opening) + "metric '" + m.name +
                                           "': its sample name " + b + " collides with metric '" +
                                           earlier.name + "'");
          }
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace internal

Status ValidateRow(const ConnectorRow& row) {
  if (row.id.empty()) return Status::InvalidArgument("connector id is empty");
  if (row.record_shaped()) {
    std::vector<std::string> record_labels = row.ExtraLabelNames();
    if (Status s = CheckLabelNames(record_labels, "connector " + row.id + ": "); !s.ok()) return s;
  }
  return internal::ValidateRowMetrics(row, "connector " + row.id + ", ");
}

const ConnectorCatalog& ConnectorCatalog::BuiltIn() {
  static const ConnectorCatalog* catalog = new ConnectorCatalog(BuiltInRows());
  return *catalog;
}

ConnectorCatalog::ConnectorCatalog() : state_(std::make_shared<const State>()) {}

ConnectorCatalog::ConnectorCatalog(std::vector<ConnectorRow> rows) {
  auto state = std::make_shared<State>();
  for (ConnectorRow& r : rows) {
    state->rows.push_back(std::make_shared<const ConnectorRow>(std::move(r)));
  }
  state_ = std::move(state);
}

ConnectorCatalog::ConnectorCatalog(const ConnectorCatalog& other) : state_(other.Snapshot()) {}

ConnectorCatalog& ConnectorCatalog::operator=(const ConnectorCatalog& other) {
  if (this == &other) return *this;
  std::shared_ptr<const State> snapshot = other.Snapshot();
  std::lock_guard<std::mutex> lock(mu_);
  state_ = std::move(snapshot);
  return *this;
}

std::shared_ptr<const ConnectorCatalog::State> ConnectorCatalog::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

ConnectorCatalog::RowList ConnectorCatalog::rows() const { return Snapshot()->rows; }

ConnectorCatalog::RowList ConnectorCatalog::RuntimeRows() const {
  RowList out;
  for (const auto& row : Snapshot()->rows) {
    if (!row->builtin) out.push_back(row);
  }
  return out;
}

const ConnectorRow* ConnectorCatalog::Find(const State& state, std::string_view class_name) {
  for (const auto& row : state.rows) {
    for (const std::string& n : row->class_names) {
      if (n == class_name) return row.get();
    }
  }
  for (const auto& [alias, row] : state.aliases) {
    if (alias == class_name) return row;
  }
  return nullptr;
}

const ConnectorRow* ConnectorCatalog::FindByClassName(std::string_view class_name) const {
  std::shared_ptr<const State> state = Snapshot();
  return Find(*state, class_name);
}

Status ConnectorCatalog::AddRow(ConnectorRow row) {
  if (Status s = ValidateRow(row); !s.ok()) return s;
  if (row.class_names.empty()) row.class_names.push_back(row.id);
  // Writers serialise on the mutex for the whole check-and-publish, so two descriptors for the
  // same class cannot both pass the checks; readers keep using the previous snapshot meanwhile.
  std::lock_guard<std::mutex> lock(mu_);
  const State& current = *state_;
  if (!row.builtin) {
    size_t runtime = 0;
    for (const auto& existing : current.rows) runtime += existing->builtin ? 0 : 1;
    if (runtime >= kMaxRuntimeRows) {
      return Status::InvalidArgument("connector " + row.id + ": already " +
                                     std::to_string(kMaxRuntimeRows) +
                                     " connectors registered at run time; no more are accepted");
    }
  }
  for (const std::string& mine : row.class_names) {
    if (Find(current, mine) != nullptr) {
      return Status::InvalidArgument("connector " + mine + " already exists");
    }
  }
  // Family names: no sample name of this row may be a sample name of another row's family.
  std::map<std::string, std::string> taken;  // sample name -> "<family> of connector <id>"
  for (const auto& existing : current.rows) {
    for (const MetricDef& m : existing->metrics) {
      for (std::string& n : ExpositionNames(m.name, m.type)) {
        taken.emplace(std::move(n), m.name + " of connector " + existing->id);
      }
    }
  }
  for (const MetricDef& m : row.metrics) {
    for (const std::string& n : ExpositionNames(m.name, m.type)) {
      if (auto it = taken.find(n); it != taken.end()) {
        return Status::InvalidArgument("family " + m.name + " of connector " + row.id +
                                       " conflicts with family " + it->second);
      }
    }
  }
  auto next = std::make_shared<State>(current);
  next->rows.push_back(std::make_shared<const ConnectorRow>(std::move(row)));
  state_ = std::move(next);
  return Status::Ok();
}

Status ConnectorCatalog::AddAlias(std::string_view class_name, std::string_view target) {
  if (class_name.empty()) return Status::InvalidArgument("alias class name is empty");
  std::lock_guard<std::mutex> lock(mu_);
  const State& current = *state_;
  if (Find(current, class_name) != nullptr) {
    return Status::InvalidArgument("connector " + std::string(class_name) + " already exists");
  }
  const ConnectorRow* row = Find(current, target);
  if (row == nullptr) {
    return Status::InvalidArgument("alias target " + std::string(target) + " has no row");
  }
  if (current.aliases.size() >= kMaxRuntimeRows) {
    return Status::InvalidArgument("connector " + std::string(class_name) + ": already " +
                                   std::to_string(kMaxRuntimeRows) +
                                   " aliases registered at run time; no more are accepted");
  }
  auto next = std::make_shared<State>(current);
  next->aliases.emplace_back(std::string(class_name), row);
  state_ = std::move(next);
  return Status::Ok();
}

bool IsKnownStoreOperation(std::string_view key) {
  static constexpr std::string_view kOps[] = {"save_exists",       "save_put",
                                              "load_get",          "lookup_exists",
                                              "write_back_exists", "write_back_put"};
  return std::find(std::begin(kOps), std::end(kOps), key) != std::end(kOps);
}

}  // namespace vmetrics
