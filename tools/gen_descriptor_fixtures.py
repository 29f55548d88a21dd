#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Fixtures and goldens for the `_metrics_descriptor` protocol, from a Python peer.

This script

  1. writes the descriptors Python connectors send (HiSparse, HF3FS, Offloading: vLLM's
     kv_connector/v1/metrics_descriptor.py; docs/design.md §3.6) and third-party ones, one
     msgpack document each, to tests/fixtures/descriptor_v1/descriptor_<name>.msgpack;
  2. writes one descriptor per way of being invalid to tests/fixtures/descriptor_v1/
     invalid_<case>.msgpack, and the table of what the parser must say about each to
     tests/fixtures/descriptor_v1/invalid_cases.tsv (case, field the message starts with, a phrase
     it contains);
  3. builds EngineCoreOutputs streams whose kv_connector_stats carry descriptors (python-msgpack,
     encoded the way vLLM's msgspec encoder does) into tests/fixtures/descriptor_v1/
     scenario_<name>.msgpack; they are unit-test fixtures and `vmetrics replay` inputs at once;
  4. reads each stream back, decodes it on its own and records it with the rules of
     docs/recording.md ("Descriptors") into real prometheus_client objects (time.time pinned to
     123.456), renders tests/golden/descriptor_<name>.txt, and puts one `descriptor_<name>` line
     per scenario into tests/golden/scenarios.tsv. Only lines whose name starts with
     `descriptor_` are rewritten (in place, or appended); every other line is left as it is, so
     the script is idempotent and runs after tools/gen_goldens.py (which rewrites the file).

The recorder below is written from vLLM's Python code and docs/recording.md, never from src/.
Built-in connectors appear here in descriptor form only: the three that send descriptors in
Python (HiSparse, HF3FS, Offloading) are registered from the very descriptors they send, with
Offloading's families that no descriptor can say (its deprecated transfer_type families and its
config-info gauge) taken from tools/gen_goldens.py's OffloadingFamilies. The
families of the Python frontend (scheduler, MFU, cache config, vmetrics accounting) are the
tables of tools/gen_goldens.py, imported, so the two generators cannot disagree about them.

Run with Debian's interpreter (python3-msgpack, python3-prometheus-client):
    /usr/bin/python3 tools/gen_descriptor_fixtures.py
"""

import argparse
import json
import math
import os
import platform
import sys
from unittest import mock

import msgpack
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_goldens as frontend  # noqa: E402  (the frontend family tables only)
import wire_layouts  # noqa: E402  (every generation's layout, from vmetrics' tables)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_DIR = "tests/fixtures/descriptor_v1"    # relative to REPO
GOLDEN_DIR = "tests/golden"
SCENARIOS_TSV = GOLDEN_DIR + "/scenarios.tsv"
PREFIX = "descriptor_"                          # every scenario and golden this script owns
CREATED_TIMESTAMP = 123.456
DEFAULT_MODEL_NAME = "model"

# ================================================================================================
# Descriptors as the Python connectors send them (HiSparse, HF3FS, Offloading; docs/design.md §3.7)
# ================================================================================================


def metric(name, kind, documentation, samples_path, sample_kind, **extra):
    m = {"name": name, "type": kind, "documentation": documentation,
         "samples_path": samples_path, "sample_kind": sample_kind}
    m.update(extra)
    return m


def descriptor(connector_id, metrics):
    return {"descriptor_version": 1, "connector_id": connector_id, "metrics": metrics}


HF3FS_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0]
OFFLOAD_SIZE_BUCKETS = [1e6, 5e6, 10e6, 20e6, 40e6, 60e6, 80e6, 100e6, 150e6, 200e6]
OFFLOAD_SYNC_BUCKETS = [1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1]
OFFLOAD_ASYNC_BUCKETS = [1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1, 5, 10]

HISPARSE = descriptor("HiSparseConnector", [
    metric("vllm:hisparse_cache_hits", "counter", "Number of HiSparse device hot-buffer hits.",
           "cache_hits", "inc_by_sum_u64"),
    metric("vllm:hisparse_cache_misses", "counter",
           "Number of HiSparse device hot-buffer misses.", "cache_misses", "inc_by_sum_u64"),
    metric("vllm:hisparse_host_to_device_bytes", "counter",
           "Bytes transferred from host KV storage to HiSparse hot buffers.",
           "host_to_device_bytes", "inc_by_sum_u64"),
])

HF3FS = descriptor("HF3FSKVConnector", [
    metric("vllm:hf3fs_save_duration_seconds", "histogram",
           "Histogram of save duration for HF3FSKVConnector.", "save_duration",
           "observe_each_f64", buckets=HF3FS_BUCKETS),
    metric("vllm:hf3fs_load_duration_seconds", "histogram",
           "Histogram of load duration for HF3FSKVConnector.", "load_duration",
           "observe_each_f64", buckets=HF3FS_BUCKETS),
    metric("vllm:hf3fs_num_failed_save", "counter", "Number of failed HF3FS KV save.",
           "num_failed_save", "inc_by_u64"),
    metric("vllm:hf3fs_num_failed_load", "counter", "Number of failed HF3FS KV load.",
           "num_failed_load", "inc_by_u64"),
])


def offload_metric(name, kind, documentation, sample_kind, **extra):
    return metric(name, kind, documentation, "data." + name, sample_kind, **extra)


OFFLOADING = descriptor("OffloadingConnector", [
    offload_metric("vllm:kv_offload_load_bytes", "counter",
                   "Total bytes loaded from offload storage to GPU.", "inc_by_u64"),
    offload_metric("vllm:kv_offload_load_time", "counter",
                   "Total load time from offload storage to GPU, in seconds.", "inc_by_f64"),
    offload_metric("vllm:kv_offload_load_size", "histogram",
                   "Histogram of KV offload load operation size, in bytes.", "observe_each_f64",
                   buckets=OFFLOAD_SIZE_BUCKETS),
    offload_metric("vllm:kv_offload_store_bytes", "counter",
                   "Total bytes stored from GPU to offload storage.", "inc_by_u64"),
    offload_metric("vllm:kv_offload_store_time", "counter",
                   "Total store time from GPU to offload storage, in seconds.", "inc_by_f64"),
    offload_metric("vllm:kv_offload_store_size", "histogram",
                   "Histogram of KV offload store operation size, in bytes.", "observe_each_f64",
                   buckets=OFFLOAD_SIZE_BUCKETS),
    offload_metric("vllm:kv_offload_lookup_sync_delay_seconds", "histogram",
                   "Histogram of the time spent in a single offload lookup call, in seconds.",
                   "observe_each_f64", buckets=OFFLOAD_SYNC_BUCKETS),
    offload_metric("vllm:kv_offload_lookup_async_delay_seconds", "histogram",
                   "Histogram of time between a request's offload lookup first deferring and the "
                   "following lookup resolving, or request finish, in seconds.",
                   "observe_each_f64", buckets=OFFLOAD_ASYNC_BUCKETS),
    offload_metric("vllm:kv_offload_allocation_failure", "counter",
                   "Number of KV offload store allocation attempts that failed.", "inc_by_u64"),
])

# The built-in rows this peer models, by class name: (descriptor, children). Python creates
# HiSparse and HF3FS children for every engine at startup and Offloading children on first record.
EAGER, LAZY = "eager", "lazy"
BUILTIN = {
    "HiSparseConnector": (HISPARSE, EAGER),
    "HF3FSKVConnector": (HF3FS, EAGER),
    "OffloadingConnector": (OFFLOADING, LAZY),
}

# ---- third-party connectors (no vmetrics code knows them) -----------------------------------

# HiSparse's shape under other family names.
ACME_HISPARSE = descriptor("AcmeHiSparseConnector", [
    metric("vllm:acme_hisparse_cache_hits", "counter", "Number of Acme hot-buffer hits.",
           "cache_hits", "inc_by_sum_u64"),
    metric("vllm:acme_hisparse_cache_misses", "counter", "Number of Acme hot-buffer misses.",
           "cache_misses", "inc_by_sum_u64"),
    metric("vllm:acme_hisparse_host_to_device_bytes", "counter",
           "Bytes transferred from host KV storage to Acme hot buffers.",
           "host_to_device_bytes", "inc_by_sum_u64"),
])

# Every sample kind, scale, const labels (two metrics feeding one family), a `_total` name, an
# empty documentation, one without its period, a nested path and a trailing +Inf bucket.
ACME_KINDS = descriptor("AcmeKindsConnector", [
    metric("vllm:acme_ops_total", "counter", "Operations.", "ops", "inc_by_u64"),
    metric("vllm:acme_items", "counter", "Items processed.", "items", "inc_by_sum_u64"),
    metric("vllm:acme_busy_seconds", "counter", "", "busy_seconds", "inc_by_f64"),
    metric("vllm:acme_queue_depth", "gauge", "Queue depth.", "queue.depth", "set_u64"),
    metric("vllm:acme_load_ratio", "gauge", "Load ratio", "load_ratio", "set_f64"),
    metric("vllm:acme_latency_seconds", "histogram", "Latency.", "latency_ms", "observe_each_f64",
           buckets=[0.001, 0.01, 0.1, 1.0], scale=0.001),
    metric("vllm:acme_batch_size", "histogram", "Batch size.", "batch_sizes",
           "observe_each_u64_as_f64", buckets=[1, 4, 16, 64, math.inf]),
    metric("vllm:acme_transfers", "counter", "Transfers by direction.", "reads", "inc_by_sum_u64",
           const_labels={"direction": "read"}),
    metric("vllm:acme_transfers", "counter", "Transfers by direction.", "writes",
           "inc_by_sum_u64", const_labels={"direction": "write"}),
])

# A typed (Offloading-style) connector: `data.<name>` maps label tuples to values; one metric
# declares labelnames, one labelled value has none (read, labels dropped).
ACME_OFFLOAD = descriptor("AcmeOffloadConnector", [
    metric("vllm:acme_offload_bytes_total", "counter", "Bytes offloaded by Acme.",
           "data.vllm:acme_offload_bytes", "inc_by_u64"),
    offload_metric("vllm:acme_offload_time", "counter", "Seconds spent offloading.",
                   "inc_by_f64"),
    offload_metric("vllm:acme_offload_size", "histogram", "Offload size, in bytes.",
                   "observe_each_f64", buckets=[1e6, 1e7, 1e8]),
    offload_metric("vllm:acme_offload_tier_usage", "gauge", "Usage of each offload tier.",
                   "set_f64", labelnames=["tier"]),
    offload_metric("vllm:acme_offload_evictions", "counter", "Evictions.", "inc_by_u64"),
])
# The typed payload names its metrics without `_total` (their registered names).
ACME_OFFLOAD_TYPES = {"vllm:acme_offload_bytes": "counter", "vllm:acme_offload_time": "counter",
                      "vllm:acme_offload_size": "histogram",
                      "vllm:acme_offload_tier_usage": "gauge",
                      "vllm:acme_offload_evictions": "counter"}


ACME_FLAT = descriptor("AcmeFlatConnector", [
    metric("vllm:acme_flat_hits", "counter", "Acme flat hits.", "hits", "inc_by_sum_u64"),
    metric("vllm:acme_flat_misses", "counter", "Acme flat misses.", "misses", "inc_by_sum_u64"),
])

ACME_GOOD = descriptor("AcmeGoodConnector", [
    metric("vllm:acme_good_hits", "counter", "Acme good hits.", "hits", "inc_by_sum_u64"),
])


DROP = object()  # one_metric_descriptor(name=DROP): the metric has no `name`


def one_metric_descriptor(connector_id, **fields):
    m = metric("vllm:acme_x", "counter", "X.", "hits", "inc_by_sum_u64")
    for key, value in fields.items():
        if value is DROP:
            m.pop(key, None)
        else:
            m[key] = value
    return descriptor(connector_id, [m])

# ================================================================================================
# Invalid descriptors: (case, document, field the message starts with, phrase it contains)
# ================================================================================================


def invalid_cases():
    cid = "InvalidConnector"
    d = lambda **f: one_metric_descriptor(cid, **f)  # noqa: E731
    top = descriptor(cid, [metric("vllm:acme_x", "counter", "X.", "hits", "inc_by_sum_u64")])

    def without(key):
        out = dict(top)
        out.pop(key)
        return out

    def with_top(key, value):
        out = dict(top)
        out[key] = value
        return out

    counter_with_buckets = d(buckets=[1.0, 2.0])
    histogram = dict(type="histogram", sample_kind="observe_each_f64")
    many_metrics = descriptor(cid, [metric(f"vllm:acme_m{i}", "counter", "M.", f"k{i}",
                                           "inc_by_sum_u64") for i in range(257)])
    shared = descriptor(cid, [
        metric("vllm:acme_shared", "counter", "Shared.", "a", "inc_by_sum_u64"),
        metric("vllm:acme_shared", "gauge", "Shared.", "b", "set_f64")])
    collision = descriptor(cid, [
        metric("vllm:acme_y", "counter", "Y.", "a", "inc_by_sum_u64"),
        metric("vllm:acme_y_created", "gauge", "Y created.", "b", "set_f64")])
    return [
        ("not_a_map", [1, 2], "_metrics_descriptor", "expected a map"),
        ("version_missing", without("descriptor_version"), "descriptor_version", "missing"),
        ("version_2", with_top("descriptor_version", 2), "descriptor_version", "expected 1, got 2"),
        ("version_not_int", with_top("descriptor_version", "1"), "descriptor_version",
         "expected an int"),
        ("connector_id_missing", without("connector_id"), "connector_id", "missing"),
        ("connector_id_empty", with_top("connector_id", ""), "connector_id", "empty"),
        ("connector_id_not_str", with_top("connector_id", 7), "connector_id",
         "expected a string"),
        ("metrics_missing", without("metrics"), "metrics", "missing"),
        ("metrics_not_list", with_top("metrics", {"name": "x"}), "metrics", "expected a list"),
        ("metric_not_map", with_top("metrics", ["vllm:acme_x"]), "metrics[0]", "expected a map"),
        ("name_missing", d(name=DROP), "metrics[0].name", "missing"),
        ("name_empty_after_total", d(name="_total"), "metrics[0].name", "empty"),
        ("name_invalid", d(name="vllm:acme x"), "metrics[0]",
         "not a valid Prometheus metric name"),
        ("name_reserved", d(name="vmetrics_acme"), "metrics[0].name", "reserved for vmetrics"),
        ("name_too_long", d(name="vllm:" + "a" * 5000), "metrics[0].name", "longer than"),
        ("type_missing", d(type=DROP), "metrics[0].type", "missing"),
        ("type_unknown", d(type="summary"), "metrics[0].type",
         "is not counter, gauge or histogram"),
        ("type_not_str", d(type=1), "metrics[0].type", "expected a string"),
        ("samples_path_missing", d(samples_path=DROP), "metrics[0].samples_path", "missing"),
        ("samples_path_reserved", d(samples_path="_n_steps"), "metrics[0]",
         "reads a reserved key"),
        ("samples_path_empty_segment", d(samples_path="data..x"), "metrics[0]",
         "has an empty segment"),
        ("sample_kind_missing", d(sample_kind=DROP), "metrics[0].sample_kind", "missing"),
        ("sample_kind_unknown", d(sample_kind="observe_each"), "metrics[0].sample_kind",
         "is not a sample kind"),
        ("sample_kind_inc_by_one", d(sample_kind="inc_by_one"), "metrics[0].sample_kind",
         "is not a sample kind"),
        ("kind_does_not_fit_counter", d(sample_kind="set_f64"), "metrics[0]",
         "does not fit type counter"),
        ("kind_does_not_fit_gauge", d(type="gauge", sample_kind="observe_each_f64"), "metrics[0]",
         "does not fit type gauge"),
        ("kind_does_not_fit_histogram", d(type="histogram", sample_kind="inc_by_u64",
                                          buckets=[1.0]), "metrics[0]",
         "does not fit type histogram"),
        ("histogram_without_buckets", d(**histogram), "metrics[0].buckets",
         "required for histograms"),
        ("histogram_buckets_nil", d(buckets=None, **histogram), "metrics[0].buckets",
         "required for histograms"),
        ("buckets_not_ascending", d(buckets=[1.0, 0.5], **histogram), "metrics[0]",
         "strictly ascending"),
        ("buckets_not_numbers", d(buckets=["a"], **histogram), "metrics[0].buckets[0]",
         "expected a number"),
        ("buckets_nan", d(buckets=[0.5, math.nan], **histogram), "metrics[0]",
         "strictly ascending"),
        ("buckets_too_many", d(buckets=[float(i) for i in range(300)], **histogram),
         "metrics[0].buckets", "more than the limit"),
        ("buckets_on_counter", counter_with_buckets, "metrics[0].buckets",
         "only histograms take buckets"),
        ("scale_not_finite", d(scale=math.nan), "metrics[0]", "scale is not finite"),
        ("scale_not_number", d(scale="2"), "metrics[0].scale", "expected a number"),
        ("const_labels_not_map", d(const_labels=["a"]), "metrics[0].const_labels",
         "expected a map"),
        ("const_label_reserved", d(const_labels={"engine": "9"}), "metrics[0]",
         "reserved (model_name, engine, le)"),
        ("const_label_invalid_name", d(const_labels={"bad-name": "x"}), "metrics[0]",
         "is not a valid label name"),
        ("const_label_value_not_str", d(const_labels={"a": 1}), "metrics[0].const_labels.a",
         "expected a string"),
        ("labelnames_not_list", d(labelnames="tier"), "metrics[0].labelnames", "expected a list"),
        ("labelnames_duplicate", d(labelnames=["tier", "tier"]), "metrics[0]", "used twice"),
        ("shared_family_differs", shared, "metrics", "shares its family name"),
        ("sample_names_collide", collision, "metrics", "collides"),
        ("too_many_metrics", many_metrics, "metrics", "more than the limit"),
    ]


# ================================================================================================
# The peer's own reading of a descriptor (docs/recording.md "Descriptors"; the Rust frontend's
# connector_metrics/descriptor.rs)
# ================================================================================================

KINDS_OF = {"counter": ("inc_by_u64", "inc_by_sum_u64", "inc_by_f64"),
            "gauge": ("set_u64", "set_f64"),
            "histogram": ("observe_each_f64", "observe_each_u64_as_f64")}
LIST_KINDS = ("inc_by_sum_u64", "observe_each_f64", "observe_each_u64_as_f64")
RESERVED_KEYS = ("_metrics_descriptor", "_n_steps")
LIMIT_METRICS, LIMIT_BUCKETS, LIMIT_LABELS, LIMIT_STRING = 256, 256, 16, 4096


class Invalid(Exception):
    pass


class Metric:
    def __init__(self, name, kind, help_text, buckets, path, sample_kind, scale, const_labels,
                 labelnames):
        self.name, self.kind, self.help = name, kind, help_text
        self.buckets, self.path, self.sample_kind = buckets, path, sample_kind
        self.scale, self.const_labels, self.labelnames = scale, const_labels, labelnames

    def key(self):
        return (self.name, self.kind, self.help, tuple(self.buckets), self.path,
                self.sample_kind, self.scale, tuple(self.const_labels.items()),
                tuple(self.labelnames))


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v):
    return is_int(v) or isinstance(v, float)


def valid_name(name, colon):
    if not name:
        return False
    for i, c in enumerate(name):
        if c.isascii() and (c.isalpha() or c == "_" or (colon and c == ":")):
            continue
        if i > 0 and c.isascii() and c.isdigit():
            continue
        return False
    return True


def sample_names(name, kind):
    """The names prometheus_client reserves for a family (its _get_names)."""
    if kind == "counter":
        return {name, name + "_total", name + "_created"}
    if kind == "histogram":
        return {name, name + "_bucket", name + "_count", name + "_sum", name + "_created"}
    return {name}


def string(value, field):
    if not isinstance(value, str):
        raise Invalid(f"{field}: not a string")
    if len(value.encode()) > LIMIT_STRING:
        raise Invalid(f"{field}: too long")
    return value


def parse_metric(m):
    if not isinstance(m, dict):
        raise Invalid("metric is not a map")
    for required in ("name", "type", "samples_path", "sample_kind"):
        if required not in m:
            raise Invalid(f"{required} missing")
    name = string(m["name"], "name")
    kind = string(m["type"], "type")
    path = string(m["samples_path"], "samples_path")
    sample_kind = string(m["sample_kind"], "sample_kind")
    if kind not in KINDS_OF:
        raise Invalid("unknown type")
    if sample_kind not in KINDS_OF[kind]:
        raise Invalid("sample_kind does not fit type (or is unknown)")
    if kind == "counter" and name.endswith("_total"):
        name = name[:-len("_total")]
    if not valid_name(name, colon=True) or name.startswith("vmetrics_"):
        raise Invalid("bad name")
    segments = path.split(".")
    if any(not s for s in segments) or segments[0] in RESERVED_KEYS:
        raise Invalid("bad samples_path")
    buckets = m.get("buckets")
    buckets = [] if buckets is None else buckets
    if not isinstance(buckets, (list, tuple)) or len(buckets) > LIMIT_BUCKETS:
        raise Invalid("bad buckets")
    if not all(is_number(b) for b in buckets):
        raise Invalid("bucket not a number")
    buckets = [float(b) for b in buckets]
    if buckets and buckets[-1] == math.inf:
        buckets = buckets[:-1]
    if kind == "histogram":
        if not buckets:
            raise Invalid("histogram without buckets")
        if not all(math.isfinite(b) for b in buckets) or any(
                not a < b for a, b in zip(buckets, buckets[1:])):
            raise Invalid("buckets not ascending")
    elif buckets:
        raise Invalid("buckets on a non-histogram")
    scale = m.get("scale")
    scale = 1.0 if scale is None else scale
    if not is_number(scale) or not math.isfinite(scale):
        raise Invalid("bad scale")
    const_labels = m.get("const_labels") or {}
    labelnames = m.get("labelnames") or []
    if not isinstance(const_labels, dict) or not isinstance(labelnames, (list, tuple)):
        raise Invalid("bad labels")
    if len(const_labels) + len(labelnames) > LIMIT_LABELS:
        raise Invalid("too many labels")
    for k, v in const_labels.items():
        string(k, "label name")
        string(v, "label value")
    names = ["model_name", "engine", "le"]
    for label in list(labelnames) + list(const_labels):
        string(label, "label name")
        if not valid_name(label, colon=False) or label.startswith("__") or label in names:
            raise Invalid("bad label name")
        names.append(label)
    help_text = m.get("documentation") or ""
    string(help_text, "documentation")
    if help_text.endswith("."):
        help_text = help_text[:-1]
    if not help_text:
        help_text = f"KV connector metric {name}"
    return Metric(name, kind, help_text + ".", buckets, path, sample_kind, float(scale),
                  dict(const_labels), list(labelnames))


def parse_descriptor(doc):
    """A list of Metric, or Invalid."""
    if not isinstance(doc, dict):
        raise Invalid("not a map")
    version = doc.get("descriptor_version")
    if not is_int(version) or version != 1:
        raise Invalid("descriptor_version is not 1")
    connector_id = doc.get("connector_id")
    if not isinstance(connector_id, str) or not connector_id:
        raise Invalid("connector_id")
    metrics = doc.get("metrics")
    if not isinstance(metrics, (list, tuple)) or len(metrics) > LIMIT_METRICS:
        raise Invalid("metrics")
    parsed = [parse_metric(m) for m in metrics]
    seen = {}
    for m in parsed:
        if m.name in seen:
            first = seen[m.name]
            if (first.kind, first.help, first.buckets, first.labelnames,
                    list(first.const_labels)) != (m.kind, m.help, m.buckets, m.labelnames,
                                                  list(m.const_labels)):
                raise Invalid("metrics sharing a family differ")
            continue
        for other in seen.values():
            if sample_names(other.name, other.kind) & sample_names(m.name, m.kind):
                raise Invalid("sample names collide")
        seen[m.name] = m
    return connector_id, parsed


class Row:
    def __init__(self, class_name, metrics, builtin, children):
        self.class_name, self.metrics = class_name, metrics
        self.builtin, self.children = builtin, children

    def family_names(self):
        names = set()
        for m in self.metrics:
            names |= sample_names(m.name, m.kind)
        return names


# ================================================================================================
# The wire (msgspec emulation with python-msgpack)
# ================================================================================================


def pack(obj):
    return msgpack.packb(obj, use_bin_type=True, use_single_float=False)


def scheduler_stats(kv_connector_stats):
    """SchedulerStats as a map: the dataclass keys in definition order (vmetrics' wire table,
    tools/wire_layouts.py), all at their defaults (so no frontend family moves), with the
    connector payload."""
    stats = wire_layouts.scheduler_stats_defaults(
        frontend.REFERENCE_GENERATION, {"PrefixCacheStats": frontend.prefix_cache_stats})
    stats["kv_connector_stats"] = kv_connector_stats
    return stats


def message(engine_index, timestamp, kv_connector_stats):
    """EngineCoreOutputs, array_like, all 8 positions."""
    return [engine_index, [], scheduler_stats(kv_connector_stats), timestamp, None, None, None,
            None]


def described(desc, payload):
    """A stats payload as to_dict() returns it the first time: a shallow copy with the
    descriptor under the reserved key."""
    out = dict(payload)
    out["_metrics_descriptor"] = desc
    return out


def rebound(desc, connector_id):
    out = json.loads(json.dumps(desc))
    out["connector_id"] = connector_id
    return out


def typed(types, data):
    return {"types": types, "data": data, "info": None}


# ================================================================================================
# Scenarios
# ================================================================================================

MULTI = "MultiConnector"


def config(name):
    return json.dumps({"kv_connector": name}, separators=(",", ":"))


def multi_config(*children):
    return json.dumps({"kv_connector": MULTI, "kv_connector_extra_config": {
        "connectors": [{"kv_connector": c} for c in children]}}, separators=(",", ":"))


def scenario_hisparse_bare():
    """A third-party connector shaped like HiSparse, configured as the connector, two engines:
    each engine sends the descriptor once, later payloads carry only data (and _n_steps)."""
    return [
        message(0, 10.0, described(ACME_HISPARSE, {"cache_hits": [5, 3], "cache_misses": [1],
                                                   "host_to_device_bytes": [65536]})),
        message(1, 10.5, described(ACME_HISPARSE, {"cache_hits": [2], "cache_misses": [],
                                                   "host_to_device_bytes": [4096, 8192]})),
        message(0, 11.0, {"cache_hits": [1], "cache_misses": [2, 2], "host_to_device_bytes": [],
                          "_n_steps": 2}),
        message(0, 12.0, {}),
    ]


def scenario_hisparse_multi():
    """MultiConnector: the built-in HiSparse (with the descriptor Python sends), the Acme
    connector whose descriptor calls itself "AcmeHiSparse" (bound to its class-name key), and a
    HiSparse subclass reporting under its own class name with HiSparse's descriptor (it answers
    to HiSparse's row). The second message has the pre-September-2026 {"data": ...} shape."""
    return [
        message(0, 20.0, {
            "HiSparseConnector": described(HISPARSE, {"cache_hits": [4], "cache_misses": [1],
                                                      "host_to_device_bytes": [1024]}),
            "AcmeHiSparseConnector": described(rebound(ACME_HISPARSE, "AcmeHiSparse"),
                                               {"cache_hits": [9], "cache_misses": [],
                                                "host_to_device_bytes": [2048]}),
            "MyHiSparseConnector": described(HISPARSE, {"cache_hits": [7], "cache_misses": [],
                                                        "host_to_device_bytes": []}),
        }),
        message(0, 21.0, {
            "AcmeHiSparseConnector": {"data": {"cache_hits": [1], "cache_misses": [3],
                                               "host_to_device_bytes": []}},
            "MyHiSparseConnector": {"cache_hits": [1], "cache_misses": [],
                                    "host_to_device_bytes": []},
            "HiSparseConnector": {"cache_hits": [], "cache_misses": [2],
                                  "host_to_device_bytes": []},
        }),
    ]


def scenario_hisparse_builtin():
    """The built-in HiSparse row, configured, receiving the descriptor Python sends: recorded by
    the row exactly as without a descriptor. Engine 1 sends a newer descriptor with one more
    metric: reported, the row is kept."""
    newer = json.loads(json.dumps(HISPARSE))
    newer["metrics"].append(metric("vllm:hisparse_resident_blocks", "gauge",
                                   "HiSparse host blocks resident.", "resident_blocks",
                                   "set_u64"))
    return [
        message(0, 30.0, described(HISPARSE, {"cache_hits": [5, 3], "cache_misses": [1],
                                              "host_to_device_bytes": [65536]})),
        message(1, 30.5, described(newer, {"cache_hits": [1], "cache_misses": [],
                                           "host_to_device_bytes": [], "resident_blocks": 12})),
        message(0, 31.0, {"cache_hits": [2], "cache_misses": [], "host_to_device_bytes": [512]}),
    ]


def scenario_offloading():
    """MultiConnector: the built-in Offloading row (typed payload, with its descriptor) and a
    third-party typed connector whose samples_path is data.<name>, with a labelled metric."""
    acme_types = ACME_OFFLOAD_TYPES
    return [
        message(0, 40.0, {
            "OffloadingConnector": described(OFFLOADING, typed(
                {"vllm:kv_offload_store_bytes": "counter", "vllm:kv_offload_store_time": "counter",
                 "vllm:kv_offload_store_size": "histogram"},
                {"vllm:kv_offload_store_bytes": {(): 4194304},
                 "vllm:kv_offload_store_time": {(): 0.004},
                 "vllm:kv_offload_store_size": {(): [4194304]}})),
            "AcmeOffloadConnector": described(ACME_OFFLOAD, typed(acme_types, {
                "vllm:acme_offload_bytes": {(): 1000},
                "vllm:acme_offload_time": {(): 0.5},
                "vllm:acme_offload_size": {(): [2000000, 50000000]},
                "vllm:acme_offload_tier_usage": {("cpu",): 0.5, ("disk",): 0.25},
                "vllm:acme_offload_evictions": {("cpu",): 3},
            })),
        }),
        message(0, 41.0, {
            "OffloadingConnector": typed(
                {"vllm:kv_offload_load_bytes": "counter",
                 "vllm:kv_offload_lookup_sync_delay_seconds": "histogram"},
                {"vllm:kv_offload_load_bytes": {(): 1048576},
                 "vllm:kv_offload_lookup_sync_delay_seconds": {(): [0.0002, 0.002]}}),
            "AcmeOffloadConnector": typed(acme_types, {
                "vllm:acme_offload_bytes": {(): 500},
                "vllm:acme_offload_tier_usage": {("cpu",): 0.75},
            }),
        }),
    ]


def kinds_payload(ops, items, busy, depth, ratio, latency_ms, batch_sizes, reads, writes):
    return {"ops": ops, "items": items, "busy_seconds": busy, "queue": {"depth": depth},
            "load_ratio": ratio, "latency_ms": latency_ms, "batch_sizes": batch_sizes,
            "reads": reads, "writes": writes, "not_described": [1, 2]}


def scenario_sample_kinds():
    """Every sample kind, scale, const labels, `_total` names and documentation defaults, two
    engines; the third message has no descriptor and an _n_steps key."""
    third = kinds_payload(2, [], 0.5, 3, 0.125, [], [64, 65], [], [7])
    third["_n_steps"] = 3
    return [
        message(0, 50.0, described(ACME_KINDS, kinds_payload(
            5, [1, 2, 3], 0.25, 7, 0.75, [0.5, 20.0, 3000.0], [1, 8, 100], [10, 20], [5]))),
        message(1, 50.5, described(ACME_KINDS, kinds_payload(
            1, [4], 1.5, 2, 1.0, [1.0], [4], [], []))),
        message(0, 51.0, third),
    ]


def camel(case):
    return "".join(part.capitalize() for part in case.split("_"))


def scenario_invalid():
    """MultiConnector (HF3FS configured): every invalid descriptor of invalid_cases(), families
    that collide with a frontend family, a `_created` sample, a configured connector's family
    and an earlier descriptor's family, and a child without any descriptor. The second message
    sends data only."""
    children = {
        "HF3FSKVConnector": described(HF3FS, {"save_duration": [0.02], "load_duration": [],
                                               "num_failed_save": 1, "num_failed_load": 0,
                                               "num_transfer_task": 2}),
        "AcmeGoodConnector": described(ACME_GOOD, {"hits": [1, 2]}),
    }
    for case, doc, _, _ in invalid_cases():
        children[f"Invalid{camel(case)}Connector"] = described(doc, {"hits": [1]})
    conflicts = {
        "ConflictFrontendConnector": metric("vllm:num_requests_running", "gauge", "Clash.",
                                            "hits", "set_f64"),
        "ConflictCreatedConnector": metric("vllm:prompt_tokens_created", "gauge", "Clash.",
                                           "hits", "set_f64"),
        "ConflictHf3fsConnector": metric("vllm:hf3fs_num_failed_save", "counter", "Clash.",
                                         "hits", "inc_by_sum_u64"),
        "ConflictDescriptorConnector": metric("vllm:acme_good_hits", "counter", "Clash.",
                                              "hits", "inc_by_sum_u64"),
    }
    for name, m in conflicts.items():
        children[name] = described(descriptor(name, [m]), {"hits": [1]})
    children["AcmeMysteryConnector"] = {"hits": [1]}
    return [
        message(0, 60.0, children),
        message(0, 61.0, {"AcmeGoodConnector": {"hits": [3]},
                          "InvalidVersion2Connector": {"hits": [1]},
                          "ConflictFrontendConnector": {"hits": [1]},
                          "AcmeMysteryConnector": {"hits": [1]}}),
    ]


def scenario_unconfigured():
    """No connector configured: a bare payload that carries a descriptor names itself; later
    bare payloads are the sole described connector's."""
    return [
        message(0, 70.0, described(ACME_FLAT, {"hits": [3], "_n_steps": 1})),
        message(0, 71.0, {"hits": [2]}),
        message(0, 72.0, {"hits": [1], "misses": [4]}),
    ]


# name, replay args (no spaces inside an argument), messages
SCENARIOS = [
    ("hisparse_bare", ["--kv-transfer-config", config("AcmeHiSparseConnector"),
                       "--data-parallel-size", "2"], scenario_hisparse_bare()),
    ("hisparse_multi", ["--kv-transfer-config",
                        multi_config("HiSparseConnector", "AcmeHiSparseConnector")],
     scenario_hisparse_multi()),
    ("hisparse_builtin", ["--served-model-name", "meta-llama/Llama-3.1-8B",
                          "--kv-transfer-config", config("HiSparseConnector"),
                          "--data-parallel-size", "2"], scenario_hisparse_builtin()),
    ("offloading", ["--kv-transfer-config",
                    multi_config("OffloadingConnector", "AcmeOffloadConnector")],
     scenario_offloading()),
    ("sample_kinds", ["--kv-transfer-config", config("AcmeKindsConnector"),
                      "--data-parallel-size", "2"], scenario_sample_kinds()),
    ("invalid", ["--kv-transfer-config", multi_config("HF3FSKVConnector")], scenario_invalid()),
    ("unconfigured", [], scenario_unconfigured()),
]

# ================================================================================================
# The peer recorder (docs/recording.md, "kv_connector_stats" and "Descriptors")
# ================================================================================================


class Exposition:
    """The vLLM registry (registration order), then vmetrics' accounting families."""

    def __init__(self):
        self.vllm = CollectorRegistry()
        self.vmetrics = CollectorRegistry()

    def collect(self):
        yield from self.vllm.collect()
        yield from self.vmetrics.collect()


def parse_args(args):
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--served-model-name", default=DEFAULT_MODEL_NAME)
    parser.add_argument("--data-parallel-size", type=int, default=1)
    parser.add_argument("--kv-transfer-config", type=json.loads, default=None)
    parser.add_argument("--created-timestamp", type=float, default=None)
    return parser.parse_args(args)


class Peer:
    def __init__(self, args):
        cfg = parse_args(args)
        self.model = cfg.served_model_name
        self.engines = [str(e) for e in range(cfg.data_parallel_size)]
        kv = cfg.kv_transfer_config or {}
        self.top = kv.get("kv_connector")
        if self.top == MULTI:
            extra = kv.get("kv_connector_extra_config") or {}
            configured = [c["kv_connector"] for c in extra.get("connectors", [])]
        else:
            configured = [self.top] if self.top else []
        self.out = Exposition()
        self.names = set()          # every sample name registered so far (both registries)
        self.families = {}          # family name -> prometheus_client metric
        self.rows = {}              # class name -> Row (built-in, described, aliases)
        self.registered = set()     # id() of rows whose families exist
        self.eager = {}             # (id(row), metric index, engine) -> child
        self.refused = {}           # class name -> raw descriptor doc that was refused
        self.accounting = None
        # The built-in Offloading row's families beyond its descriptor (deprecated transfer_type
        # families before, the config-info gauge after), modelled by tools/gen_goldens.py.
        self.offloading_spec = frontend.offloading_spec_name(kv)
        self.offloading_extra = frontend.offloading_extra_config(kv)
        self.offloading = None
        for class_name, (doc, children) in BUILTIN.items():
            _, metrics = parse_descriptor(doc)
            self.rows[class_name] = Row(class_name, metrics, True, children)
        # 2. configured connectors' families; 3-4 MFU and scheduler; 6 cache config; 8 accounting.
        for class_name in configured:
            if class_name in self.rows:
                self.register_row(self.rows[class_name])
        for family in frontend.MFU_FAMILIES + frontend.SCHEDULER_FAMILIES:
            self.register_frontend(family)
        self.make(self.out.vllm, frontend.CACHE_CONFIG_INFO.name, "gauge",
                  frontend.CACHE_CONFIG_INFO.help, ["engine"], [])
        decode_errors = self.make(self.out.vmetrics, frontend.DECODE_ERRORS.name, "counter",
                                  frontend.DECODE_ERRORS.help, ["part"], [])
        for part in frontend.DECODE_ERROR_PARTS:
            decode_errors.labels(part)
        self.make(self.out.vmetrics, frontend.UNKNOWN_ENGINE.name, frontend.UNKNOWN_ENGINE.kind,
                  frontend.UNKNOWN_ENGINE.help, [], [])
        self.accounting = self.make(self.out.vmetrics, frontend.KV_PAYLOADS.name, "counter",
                                    frontend.KV_PAYLOADS.help, ["connector", "outcome"], [])

    # ---- registration -----------------------------------------------------------------------

    def make(self, registry, name, kind, help_text, labelnames, buckets):
        self.names |= sample_names(name[:-6] if kind == "counter" and name.endswith("_total")
                                   else name, kind)
        if kind == "counter":
            return Counter(name, help_text, labelnames, registry=registry)
        if kind == "gauge":
            return Gauge(name, help_text, labelnames, registry=registry)
        return Histogram(name, help_text, labelnames, buckets=buckets, registry=registry)

    def register_frontend(self, family):
        if family.gate is not None:
            return  # no scenario here opens a gate (no kv_role, no NaN checking)
        buckets = family.buckets
        if buckets == frontend.TOKENS_1_2_5:
            buckets = frontend.build_1_2_5_buckets(frontend.DEFAULT_MAX_MODEL_LEN)
        if family.extra is None:
            metric_ = self.make(self.out.vllm, family.name, family.kind, family.help,
                                ["model_name", "engine"], buckets)
            for engine in self.engines:
                metric_.labels(self.model, engine)
            return
        label, values = family.extra
        metric_ = self.make(self.out.vllm, family.name, family.kind, family.help,
                            ["model_name", "engine", label], buckets)
        for value in values:
            for engine in self.engines:
                child = metric_.labels(self.model, engine, value)
                if family.initial is not None:
                    child.set(family.initial[value])

    def register_row(self, row):
        """A row's families in metric order (a family shared by several metrics once), then
        its eager children metric by metric, engine by engine."""
        if id(row) in self.registered:
            return
        self.registered.add(id(row))
        offloading = row.builtin and row.class_name == frontend.OFFLOADING
        if offloading:
            self.offloading = frontend.OffloadingFamilies(
                lambda family, labelnames: self.make(self.out.vllm, family.name, family.kind,
                                                     family.help, labelnames, family.buckets),
                self.model, self.engines, self.offloading_spec, self.skip, register_flat=False,
                extra_config=self.offloading_extra)
        for m in row.metrics:
            if m.name not in self.families:
                labels = ["model_name", "engine"] + m.labelnames + list(m.const_labels)
                self.families[m.name] = self.make(self.out.vllm, m.name, m.kind, m.help, labels,
                                                  m.buckets)
        if offloading:
            self.names |= sample_names(frontend.OFFLOAD_CONFIG_INFO.name, "gauge")
            self.offloading.register_info(self.out.vllm)
        if row.children != EAGER:
            return
        for index, m in enumerate(row.metrics):
            if m.labelnames:
                continue
            for engine in self.engines:
                self.eager[(id(row), index, engine)] = self.families[m.name].labels(
                    self.model, engine, *m.const_labels.values())

    def count(self, connector, outcome):
        self.accounting.labels(connector, outcome).inc()

    # ---- one message ---------------------------------------------------------------------------

    def record_message(self, obj):
        engine = str(obj[0])
        stats = obj[2] if len(obj) > 2 else None
        if engine not in self.engines or stats is None:
            raise NotImplementedError("every scenario message comes from a configured engine")
        payload = stats.get("kv_connector_stats")
        if payload is None or payload == {}:
            return
        if not isinstance(payload, dict):
            raise NotImplementedError("a kv_connector_stats that is not a map")
        if self.top == MULTI:
            self.record_children(engine, payload)
        elif self.top is not None:
            self.record_payload(engine, self.top, payload)
        else:
            self.record_unconfigured(engine, payload)

    def record_children(self, engine, payload):
        for class_name, child in payload.items():
            if class_name in RESERVED_KEYS:
                continue
            if isinstance(child, dict) and list(child) == ["data"] and isinstance(child["data"],
                                                                                  dict):
                child = child["data"]
            self.record_payload(engine, class_name, child)

    def record_unconfigured(self, engine, payload):
        """docs/recording.md: a descriptor names a bare payload; then the shapes of the built-in
        rows (not modelled here: no scenario payload has one); then a MultiConnector payload;
        then the sole described connector; else unknown."""
        desc = payload.get("_metrics_descriptor")
        if isinstance(desc, dict) and isinstance(desc.get("connector_id"), str) and \
                desc["connector_id"]:
            self.record_payload(engine, desc["connector_id"], payload)
            return
        data = {k: v for k, v in payload.items() if k not in RESERVED_KEYS}
        if any(k in data for k in ("num_failed_recvs", "post_duration", "types")) or \
                any(isinstance(v, (list, tuple)) and v and isinstance(v[0], dict)
                    for v in data.values()):
            raise NotImplementedError("built-in shapes are gen_goldens.py's business")
        if any(isinstance(v, dict) and ("Connector" in k or k in self.rows) for k, v in
               data.items()):
            self.record_children(engine, payload)
            return
        described_rows = {id(r): r for r in self.rows.values() if not r.builtin}
        if len(described_rows) == 1 and "_metrics_descriptor" not in payload:
            row = next(iter(described_rows.values()))
            self.record_payload(engine, row.class_name, payload)
            return
        self.count("unknown", "unknown_connector")

    def adopt(self, class_name, doc):
        """A row for `class_name` from its descriptor, or Invalid."""
        connector_id, metrics = parse_descriptor(doc)
        if connector_id != class_name:
            parent = self.rows.get(connector_id)
            if parent is not None and [m.key() for m in parent.metrics] == \
                    [m.key() for m in metrics]:
                self.rows[class_name] = parent      # a subclass: an alias of its parent's row
                self.register_row(parent)
                return parent
        row = Row(class_name, metrics, False, EAGER)
        taken = set(self.names)
        for other in {id(r): r for r in self.rows.values()}.values():
            taken |= other.family_names()
        if row.family_names() & taken:
            raise Invalid("a family collides with a registered or catalogued one")
        self.rows[class_name] = row
        self.register_row(row)
        return row

    def record_payload(self, engine, class_name, payload):
        if not isinstance(payload, dict):
            self.count(class_name, "malformed")
            return
        row = self.rows.get(class_name)
        desc = payload.get("_metrics_descriptor", None)
        has_desc = "_metrics_descriptor" in payload
        if row is None and has_desc:
            if class_name in self.refused and self.refused[class_name] == desc:
                self.count(class_name, "invalid_descriptor")
                return
            try:
                row = self.adopt(class_name, desc)
                self.refused.pop(class_name, None)
            except Invalid:
                self.refused[class_name] = desc
                self.count(class_name, "invalid_descriptor")
                return
        if row is None:
            self.count(class_name, "invalid_descriptor" if class_name in self.refused
                       else "unknown_connector")
            return
        self.register_row(row)       # first sight of a built-in row that was not configured
        self.walk(engine, row, payload)
        self.count(class_name, "recorded")

    # ---- walking a payload with its row ------------------------------------------------------

    def skip(self, reason):
        raise NotImplementedError(f"a skipped value ({reason}) is gen_goldens.py's business")

    def walk(self, engine, row, payload):
        """Single-segment paths in payload key order, then nested paths in metric order."""
        if row.builtin and row.class_name == frontend.OFFLOADING and \
                payload.get("info") is not None:
            self.offloading.record_info(engine, payload["info"])
        if row.builtin and row.class_name == frontend.OFFLOADING and \
                isinstance(payload.get("data"), dict):
            self.offloading.record_spec(engine, payload["data"])
        for key in payload:
            if key in RESERVED_KEYS:
                continue
            for index, m in enumerate(row.metrics):
                if m.path == key:
                    self.apply(engine, row, index, payload[key])
        for index, m in enumerate(row.metrics):
            if "." not in m.path:
                continue
            value = payload
            for segment in m.path.split("."):
                if not isinstance(value, dict) or segment not in value:
                    break
                value = value[segment]
            else:
                self.apply(engine, row, index, value)

    def apply(self, engine, row, index, value):
        m = row.metrics[index]
        if value is None:
            return
        if isinstance(value, dict):
            entries = list(value.items())
            if entries and not all(isinstance(k, tuple) for k, _ in entries):
                raise NotImplementedError("a map value that is not keyed by label tuples")
            for labels, v in entries:
                if not all(isinstance(x, str) or is_int(x) for x in labels):
                    raise NotImplementedError("label values other than str and int")
                labels = tuple(str(x) for x in labels)
                if m.labelnames:
                    if len(labels) == len(m.labelnames):
                        self.feed(engine, row, index, v, labels)
                elif not labels or len(entries) == 1:
                    self.feed(engine, row, index, v, ())
            return
        if m.labelnames:
            return
        self.feed(engine, row, index, value, ())

    def feed(self, engine, row, index, value, labels):
        m = row.metrics[index]
        if isinstance(value, (list, tuple)):
            if m.sample_kind not in LIST_KINDS or not all(is_number(v) for v in value):
                return
            values = list(value)
        elif is_number(value):
            values = [value]
        else:
            return
        child = self.eager.get((id(row), index, engine)) if not labels else None
        if child is None:
            child = self.families[m.name].labels(self.model, engine, *labels,
                                                 *m.const_labels.values())
        if row.builtin and row.class_name == frontend.OFFLOADING and not labels:
            self.offloading.mirror(engine, m.name, values)
        for v in values:
            if m.kind == "histogram":
                child.observe(float(v) * m.scale)
            elif m.kind == "gauge":
                child.set(v)
            elif v >= 0:
                child.inc(v)


# ================================================================================================
# Main
# ================================================================================================


def write(relative_path, data):
    path = os.path.join(REPO, relative_path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read_messages(relative_path):
    with open(os.path.join(REPO, relative_path), "rb") as f:
        return list(msgpack.Unpacker(f, raw=False, strict_map_key=False, use_list=False))


def replay_args(args):
    return args + ["--created-timestamp", repr(CREATED_TIMESTAMP)]


def render(args, input_path):
    with mock.patch("time.time", return_value=CREATED_TIMESTAMP):
        peer = Peer(replay_args(args))
        for obj in read_messages(input_path):
            peer.record_message(obj)
    return generate_latest(peer.out)


def update_scenarios_tsv(lines):
    """Replaces this script's lines (names starting with PREFIX) and keeps every other line."""
    path = os.path.join(REPO, SCENARIOS_TSV)
    kept = []
    if os.path.exists(path):
        with open(path) as f:
            kept = [line for line in f if not line.startswith(PREFIX)]
    if not kept:
        kept = ["# name\tinput\texpected\treplay args (space-separated)\n"]
    write(SCENARIOS_TSV, ("".join(kept) + "".join(lines)).encode())


def main():
    if os.environ.get("PROMETHEUS_DISABLE_CREATED_SERIES"):
        sys.exit("gen_descriptor_fixtures.py: unset PROMETHEUS_DISABLE_CREATED_SERIES")
    # 1. Descriptors as sent.
    for name, doc in (("hisparse", HISPARSE), ("hf3fs", HF3FS), ("offloading", OFFLOADING),
                      ("acme_hisparse", ACME_HISPARSE), ("acme_kinds", ACME_KINDS),
                      ("acme_offload", ACME_OFFLOAD), ("acme_flat", ACME_FLAT)):
        parse_descriptor(doc)  # the peer accepts every valid one
        write(f"{FIXTURE_DIR}/descriptor_{name}.msgpack", pack(doc))
    # 2. Invalid descriptors and what the parser must say.
    table = ["# case\tfield (the message starts with '<field>: ')\tphrase the message contains\n"]
    for case, doc, field, phrase in invalid_cases():
        try:
            parse_descriptor(doc)
        except Invalid:
            pass
        else:
            raise AssertionError(f"the peer accepts invalid case {case}")
        write(f"{FIXTURE_DIR}/invalid_{case}.msgpack", pack(doc))
        table.append(f"{case}\t{field}\t{phrase}\n")
    write(f"{FIXTURE_DIR}/invalid_cases.tsv", "".join(table).encode())
    # 3-4. Streams, goldens, scenarios.tsv lines.
    lines = []
    for name, args, messages in SCENARIOS:
        input_path = f"{FIXTURE_DIR}/scenario_{name}.msgpack"
        expected = f"{GOLDEN_DIR}/{PREFIX}{name}.txt"
        write(input_path, b"".join(pack(m) for m in messages))
        write(expected, render(args, input_path))
        full = replay_args(args)
        assert all(" " not in a and "\t" not in a for a in full), name
        lines.append("\t".join([PREFIX + name, input_path, expected, " ".join(full)]) + "\n")
    update_scenarios_tsv(lines)
    write(f"{FIXTURE_DIR}/MANIFEST", (
        "# Generated by tools/gen_descriptor_fixtures.py; do not edit. Also writes\n"
        "# tests/golden/descriptor_*.txt and the descriptor_* lines of tests/golden/scenarios.tsv.\n"
        f"python\t{platform.python_version()} ({sys.executable})\n"
        f"msgpack\t{'.'.join(map(str, msgpack.version))}\n"
        f"prometheus_client\t{frontend.prometheus_version()}\n"
        f"created_timestamp\t{CREATED_TIMESTAMP!r}\n"
        "regenerate\t/usr/bin/python3 tools/gen_descriptor_fixtures.py "
        "(after tools/gen_goldens.py)\n").encode())


if __name__ == "__main__":
    main()
