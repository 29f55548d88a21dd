// The built-in connector rows. Each row mirrors one Python `*PromMetrics` class; its HELP
// strings, bucket lists and family order are copied from the reference notes
// (../shared/spec/reference/python-kv-connector-metrics.md §6), which quote vLLM main of
// September 2026.
#include "vmetrics/connector_catalog.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace vmetrics {
namespace {

// Bucket lists shared by several rows (python-kv-connector-metrics.md §6.1, §6.3, §6.5, §6.7).
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
const std::vector<double> kDescriptorBuckets = {10,   20,   30,    50,    75,    100,  200,
                                                400,  1000, 2000,  4000,  10000, 20000, 50000};
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
      Histogram(prefix + "num_descriptors", descriptors_help, kDescriptorBuckets,
                "num_descriptors", SampleKind::kObserveEachU64AsF64),
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

// The built-in rows, in inference order. When no connector is configured a bare payload is
// matched against the rows' shape rules top to bottom, first match wins:
//   1. Mooncake P2P (has num_failed_recvs): its keys are a near-subset of NIXL's, so it is
//      told apart by the one key NIXL never sends; checking it first can never steal a NIXL
//      payload, while NIXL-first would have to rely on post_duration being present.
//   2. NIXL (has post_duration).
//   3. Mooncake store (every key an operation with a list of records).
//   4. Offloading (typed payload: `types` and `data`).
// Rows with ShapeRule::kNever are recognised only by name. What matches no row is an unknown
// connector, accounted for and logged, never taken for something else.
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
                  BytesTransferredBuckets(), "bytes_transferred",
                  SampleKind::kObserveEachU64AsF64),
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
    // Counters and histograms read `data.<family name>`, whose value maps label tuples to a
    // number or a list; the unlabelled entry is the empty tuple. Deprecated transfer_type
    // families and the spec-defined CPU/tiering families are not rows yet.
    ConnectorRow r;
    r.id = "OffloadingConnector";
    r.class_names = {"OffloadingConnector"};
    r.shape_rule = ShapeRule::kTypedPayload;
    r.children = ChildCreation::kOnFirstRecord;
    auto data = [](const std::string& name) { return "data." + name; };
    r.metrics = {
        Counter("vllm:kv_offload_load_bytes", "Total bytes loaded from offload storage to GPU.",
                data("vllm:kv_offload_load_bytes"), SampleKind::kIncByU64),
        Counter("vllm:kv_offload_load_time",
                "Total load time from offload storage to GPU, in seconds.",
                data("vllm:kv_offload_load_time"), SampleKind::kIncByF64),
        Histogram("vllm:kv_offload_load_size",
                  "Histogram of KV offload load operation size, in bytes.", kOffloadSizeBuckets,
                  data("vllm:kv_offload_load_size")),
        Counter("vllm:kv_offload_store_bytes", "Total bytes stored from GPU to offload storage.",
                data("vllm:kv_offload_store_bytes"), SampleKind::kIncByU64),
        Counter("vllm:kv_offload_store_time",
                "Total store time from GPU to offload storage, in seconds.",
                data("vllm:kv_offload_store_time"), SampleKind::kIncByF64),
        Histogram("vllm:kv_offload_store_size",
                  "Histogram of KV offload store operation size, in bytes.", kOffloadSizeBuckets,
                  data("vllm:kv_offload_store_size")),
        Histogram("vllm:kv_offload_lookup_sync_delay_seconds",
                  "Histogram of the time spent in a single offload lookup call, in seconds.",
                  kOffloadLookupSyncBuckets, data("vllm:kv_offload_lookup_sync_delay_seconds")),
        Histogram("vllm:kv_offload_lookup_async_delay_seconds",
                  "Histogram of time between a request's offload lookup first deferring and the "
                  "following lookup resolving, or request finish, in seconds.",
                  kOffloadLookupAsyncBuckets, data("vllm:kv_offload_lookup_async_delay_seconds")),
        Counter("vllm:kv_offload_allocation_failure",
                "Number of KV offload store allocation attempts that failed.",
                data("vllm:kv_offload_allocation_failure"), SampleKind::kIncByU64),
    };
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
        Counter("vllm:hf3fs_num_failed_save", "Number of failed HF3FS KV save.",
                "num_failed_save", SampleKind::kIncByU64),
        Counter("vllm:hf3fs_num_failed_load", "Number of failed HF3FS KV load.",
                "num_failed_load", SampleKind::kIncByU64),
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
    r.metrics = NixlLikeMetrics("vllm:moriio_", "MoRI IO",
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
      return type == MetricType::kGauge;
    case SampleKind::kObserveEachF64:
    case SampleKind::kObserveEachU64AsF64:
      return type == MetricType::kHistogram;
  }
  return false;
}

}  // namespace

const char* MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
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

Status ValidateRow(const ConnectorRow& row) {
  if (row.id.empty()) return Status::InvalidArgument("connector id is empty");
  for (const MetricDef& m : row.metrics) {
    const std::string where = "connector " + row.id + ", metric '" + m.name + "': ";
    if (m.name.empty()) return Status::InvalidArgument(where + "name is empty");
    if (!KindFitsType(m.sample_kind, m.type)) {
      return Status::InvalidArgument(where + "sample_kind " + SampleKindName(m.sample_kind) +
                                     " does not fit type " + MetricTypeName(m.type));
    }
    if (m.sample_kind == SampleKind::kIncByOne && !row.record_shaped()) {
      return Status::InvalidArgument(where + "inc_by_one needs a record-shaped payload");
    }
    if (m.sample_kind != SampleKind::kIncByOne && m.samples_path.empty()) {
      return Status::InvalidArgument(where + "samples_path is empty");
    }
    if (m.type == MetricType::kHistogram) {
      if (m.buckets.empty()) return Status::InvalidArgument(where + "histogram without buckets");
      for (size_t i = 0; i < m.buckets.size(); ++i) {
        if (std::isnan(m.buckets[i]) || (i > 0 && !(m.buckets[i - 1] < m.buckets[i]))) {
          return Status::InvalidArgument(where + "buckets must be strictly ascending");
        }
      }
    } else if (!m.buckets.empty()) {
      return Status::InvalidArgument(where + "buckets on a non-histogram");
    }
    if (!(m.scale == m.scale)) return Status::InvalidArgument(where + "scale is NaN");
  }
  return Status::Ok();
}

const ConnectorCatalog& ConnectorCatalog::BuiltIn() {
  static const ConnectorCatalog* catalog = new ConnectorCatalog(BuiltInRows());
  return *catalog;
}

ConnectorCatalog::ConnectorCatalog(std::vector<ConnectorRow> rows) {
  for (ConnectorRow& r : rows) rows_.push_back(std::make_shared<const ConnectorRow>(std::move(r)));
}

const ConnectorRow* ConnectorCatalog::FindByClassName(std::string_view class_name) const {
  for (const auto& row : rows_) {
    for (const std::string& n : row->class_names) {
      if (n == class_name) return row.get();
    }
  }
  return nullptr;
}

Status ConnectorCatalog::AddRow(ConnectorRow row) {
  if (Status s = ValidateRow(row); !s.ok()) return s;
  std::set<std::string_view> names;
  for (const auto& existing : rows_) {
    for (const std::string& n : existing->class_names) {
      for (const std::string& mine : row.class_names) {
        if (n == mine) return Status::InvalidArgument("connector " + mine + " already exists");
      }
    }
    for (const MetricDef& m : existing->metrics) names.insert(m.name);
  }
  for (const MetricDef& m : row.metrics) {
    if (names.count(m.name)) {
      return Status::InvalidArgument("family " + m.name + " of connector " + row.id +
                                     " already belongs to another connector");
    }
  }
  if (row.class_names.empty()) row.class_names.push_back(row.id);
  rows_.push_back(std::make_shared<const ConnectorRow>(std::move(row)));
  return Status::Ok();
}

bool IsKnownStoreOperation(std::string_view key) {
  static constexpr std::string_view kOps[] = {"save_exists", "save_put",         "load_get",
                                              "lookup_exists", "write_back_exists", "write_back_put"};
  return std::find(std::begin(kOps), std::end(kOps), key) != std::end(kOps);
}

}  // namespace vmetrics
