#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Golden expositions for `vmetrics replay`, produced by an independent Python peer.

For every scenario in SCENARIOS this script

  1. builds the EngineCoreOutputs messages an engine would send, encoded with python-msgpack the
     way vLLM's msgspec encoder does (docs/design.md §4.1, docs/wire_format.md), and writes
     them back to back to tests/golden/inputs/<scenario>.msgpack;
  2. reads that file back, decodes it on its own and applies the recording rules of
     docs/recording.md to real prometheus_client objects (time.time pinned to 123.456, so every
     `_created` sample reads 123.456, like client_python's own tests);
  3. renders tests/golden/<scenario>.txt (text format 0.0.4) and, for some scenarios, an
     OpenMetrics rendering (.om) and a `--disable-created-series` rendering;
  4. writes tests/golden/scenarios.tsv (read by tests/cli/replay_golden_test.cc and
     tests/cli/promtool_check.sh) and tests/golden/MANIFEST.

The recorder below is written from vLLM's Python code and docs/recording.md, never from src/:
it is the cross-check of the C++ recorder. Its replay configuration comes from the very argument
list that scenarios.tsv hands to `vmetrics replay`, so both sides read the same flags.

Run with Debian's interpreter (it sees python3-msgpack and python3-prometheus-client):
    /usr/bin/python3 tools/gen_goldens.py        (or tools/regen.sh for every generator)
"""

import argparse
import json
import os
import platform
import subprocess
import sys
from collections import namedtuple
from unittest import mock

import msgpack
import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import generate_latest as generate_text
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

import gen_wire_newest  # tools/: the newest generation's SchedulerStats layout
import wire_layouts  # tools/: every generation's layout, from vmetrics' tables

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN_DIR = "tests/golden"          # relative to REPO; scenarios.tsv uses repo-relative paths
INPUT_DIR = GOLDEN_DIR + "/inputs"
VLLM_REFERENCE_COMMIT = "6adad08767583f52eb4d2122111af0bf638ed5e6"
REFERENCE_GENERATION = "g20260814-6adad087"  # the wire generation of that commit
CREATED_TIMESTAMP = 123.456          # `_created` of every child; replay gets --created-timestamp
DEFAULT_MODEL_NAME = "model"
DEFAULT_MAX_MODEL_LEN = 8192

# ================================================================================================
# Buckets (vllm/v1/metrics/loggers.py and the connectors' *PromMetrics, vllm-project/vllm 6adad087)
# ================================================================================================


def build_1_2_5_buckets(max_value):
    """1, 2, 5, 10, 20, 50, ... up to and including max_value (vLLM's build_1_2_5_buckets)."""
    buckets = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > max_value:
                return buckets
            buckets.append(value)
        exponent += 1


ITERATION_TOKEN_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
REQUEST_N_BUCKETS = [1, 2, 5, 10, 20]
TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
               10.0, 20.0, 40.0, 80.0]
REQUEST_LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
                           50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
KV_RESIDENCY_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30,
                        60, 120, 300, 600, 1200, 1800]
XFER_TIME_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0]
POST_TIME_BUCKETS = [0.001] + XFER_TIME_BUCKETS
BYTES_BUCKETS = [2**(10 + i) for i in range(1, 24, 2)]          # 2 KiB .. 8 GiB
DESCRIPTOR_BUCKETS = [10, 20, 30, 50, 75, 100, 200, 400, 1000, 2000, 4000, 10000, 20000, 50000]
MOONCAKE_STORE_TIME_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5,
                               2.0, 3.0, 4.0]
# vllm/v1/metrics/buckets.py at vllm-project/vllm 139b1c3f, key request_num_preemptions.
REQUEST_NUM_PREEMPTIONS_BUCKETS = [1, 2, 3, 4, 5, 10, 20]
HF3FS_DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0,
                          5.0]
TOKENS_1_2_5 = "1-2-5 up to --max-model-len"   # placeholder resolved at registration

# ================================================================================================
# Family tables (registration order = render order; docs/recording.md "Family order")
# ================================================================================================

COUNTER, GAUGE, HISTOGRAM = "counter", "gauge", "histogram"

# name: the name Python passes to prometheus_client (a counter's `_total` is stripped by it);
# extra: None or (label name, eager label values) — the extra label is the OUTER loop and the
# engine the inner one when children are created; initial: value per extra label value (gauges).
# gate: None (always) or the option that registers the family ("kv_consumer": a
# --kv-transfer-config whose kv_role is kv_consumer or kv_both; "nans_in_logits": the environment
# variable VLLM_COMPUTE_NANS_IN_LOGITS, never set for these scenarios).
Family = namedtuple("Family", "name kind help buckets extra initial gate",
                    defaults=(None, None, None, None))

# Step 1: only with --speculative-config num_speculative_tokens = k > 0. The per-position family
# is special: engine outer, positions 0..k-1 inner (see Recorder.register_spec_decode_families).
SPEC_DECODE_FAMILIES = [
    Family("vllm:spec_decode_num_drafts", COUNTER, "Number of spec decoding drafts."),
    Family("vllm:spec_decode_num_draft_tokens", COUNTER, "Number of draft tokens."),
    Family("vllm:spec_decode_num_accepted_tokens", COUNTER, "Number of accepted tokens."),
    Family("vllm:spec_decode_num_accepted_tokens_per_pos", COUNTER,
           "Accepted tokens per draft position."),
]

# Step 1 for a diffusion model (--diffusion-model, vLLM's model_config.is_diffusion): these three
# instead of SPEC_DECODE_FAMILIES, with or without a speculative config; no per-position family.
# SpecDecodingProm in vllm/v1/spec_decode/metrics.py (vllm-project/vllm 6adad087).
DIFFUSION_FAMILIES = [
    Family("vllm:diffusion_num_denoising_steps", COUNTER, "Number of denoising steps."),
    Family("vllm:diffusion_num_canvas_positions", COUNTER,
           "Number of canvas positions evaluated."),
    Family("vllm:diffusion_num_committed_tokens", COUNTER,
           "Number of committed (finalized) tokens."),
]

# Step 3. Python declares these with `_total`; prometheus_client strips it from the family name.
MFU_FAMILIES = [
    Family("vllm:estimated_flops_per_gpu_total", COUNTER,
           "Estimated number of floating point operations per GPU (for Model Flops Utilization "
           "calculations)."),
    Family("vllm:estimated_read_bytes_per_gpu_total", COUNTER,
           "Estimated number of bytes read from memory per GPU (for Model Flops Utilization "
           "calculations)."),
    Family("vllm:estimated_write_bytes_per_gpu_total", COUNTER,
           "Estimated number of bytes written to memory per GPU (for Model Flops Utilization "
           "calculations)."),
]

# KV_FETCH_STAGES of vllm/v1/metrics/stats.py and the CacheHitSource values of
# vllm/v1/metrics/cache_hit_source.py (vllm-project/vllm 13cbd441 and 8548f56c), in their order.
KV_FETCH_STAGES = ("waiting_to_start", "in_progress", "completed_waiting")
CACHE_HIT_SOURCES = ("device", "host", "p2p", "disk", "external_unspecified")

# Step 4.
SCHEDULER_FAMILIES = [
    Family("vllm:num_requests_running", GAUGE, "Number of requests in model execution batches."),
    Family("vllm:num_requests_waiting", GAUGE, "Number of requests waiting to be processed."),
    Family("vllm:num_requests_waiting_by_reason", GAUGE,
           "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for "
           "scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV "
           "transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
           extra=("reason", ("capacity", "deferred"))),
    # The newest families (vllm/v1/metrics/loggers.py at vllm-project/vllm 13cbd441).
    Family("vllm:num_requests_kv_fetch_by_stage", GAUGE,
           "Number of waiting requests by async KV load stage. Stage labels: 'waiting_to_start' "
           "= needs an async KV load that has not started; 'in_progress' = load started and not "
           "yet reported finished; 'completed_waiting' = load finished, request not running yet.",
           extra=("stage", KV_FETCH_STAGES), gate="kv_consumer"),
    Family("vllm:engine_sleep_state", GAUGE,
           "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is "
           "awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
           extra=("sleep_state", ("awake", "weights_offloaded", "discard_all")),
           initial={"awake": 1.0, "weights_offloaded": 0.0, "discard_all": 0.0}),
    Family("vllm:kv_cache_usage_perc", GAUGE, "KV-cache usage. 1 means 100 percent usage."),
    Family("vllm:corrupted_requests", COUNTER,
           "Corrupted requests, in terms of total number of requests with NaNs in logits.",
           gate="nans_in_logits"),
    Family("vllm:prefix_cache_queries", COUNTER,
           "Prefix cache queries, in terms of number of queried tokens."),
    Family("vllm:prefix_cache_hits", COUNTER,
           "Prefix cache hits, in terms of number of cached tokens."),
    Family("vllm:external_prefix_cache_queries", COUNTER,
           "External prefix cache queries from KV connector cross-instance cache sharing, in "
           "terms of number of queried tokens."),
    Family("vllm:external_prefix_cache_hits", COUNTER,
           "External prefix cache hits from KV connector cross-instance cache sharing, in terms "
           "of number of cached tokens."),
    Family("vllm:mm_cache_queries", COUNTER,
           "Multi-modal cache queries, in terms of number of queried items."),
    Family("vllm:mm_cache_hits", COUNTER,
           "Multi-modal cache hits, in terms of number of cached items."),
    Family("vllm:num_preemptions", COUNTER, "Cumulative number of preemption from the engine."),
    Family("vllm:prompt_tokens", COUNTER, "Number of prefill tokens processed."),
    Family("vllm:prompt_tokens_by_source", COUNTER, "Number of prompt tokens by source.",
           extra=("source", ("local_compute", "local_cache_hit", "external_kv_transfer"))),
    Family("vllm:prompt_tokens_cached", COUNTER,
           "Number of cached prompt tokens (local + external)."),
    Family("vllm:prompt_tokens_cached_by_source", COUNTER,
           "Prefix-cache hit tokens by the cache tier that supplied them: device (local HBM), "
           "host (offloaded to DRAM), disk, p2p (transferred from another vLLM instance) or "
           "external_unspecified. Counted at admission; sums to vllm:prefix_cache_hits + "
           "vllm:external_prefix_cache_hits.",
           extra=("source", CACHE_HIT_SOURCES)),
    Family("vllm:generation_tokens", COUNTER, "Number of generation tokens processed."),
    Family("vllm:request_success", COUNTER, "Count of successfully processed requests.",
           extra=("finished_reason", ("stop", "length", "abort", "error", "repetition"))),
    Family("vllm:request_prompt_tokens", HISTOGRAM, "Number of prefill tokens processed.",
           TOKENS_1_2_5),
    Family("vllm:request_generation_tokens", HISTOGRAM, "Number of generation tokens processed.",
           TOKENS_1_2_5),
    Family("vllm:iteration_tokens_total", HISTOGRAM,
           "Histogram of number of tokens per engine_step.", ITERATION_TOKEN_BUCKETS),
    Family("vllm:request_max_num_generation_tokens", HISTOGRAM,
           "Histogram of maximum number of requested generation tokens.", TOKENS_1_2_5),
    Family("vllm:request_params_n", HISTOGRAM, "Histogram of the n request parameter.",
           REQUEST_N_BUCKETS),
    Family("vllm:request_params_max_tokens", HISTOGRAM,
           "Histogram of the max_tokens request parameter.", TOKENS_1_2_5),
    Family("vllm:time_to_first_token_seconds", HISTOGRAM,
           "Histogram of time to first token in seconds.", TTFT_BUCKETS),
    Family("vllm:inter_token_latency_seconds", HISTOGRAM,
           "Histogram of inter-token latency in seconds.", ITL_BUCKETS),
    Family("vllm:request_time_per_output_token_seconds", HISTOGRAM,
           "Histogram of time_per_output_token_seconds per request.", ITL_BUCKETS),
    Family("vllm:e2e_request_latency_seconds", HISTOGRAM,
           "Histogram of e2e request latency in seconds.", REQUEST_LATENCY_BUCKETS),
    Family("vllm:request_queue_time_seconds", HISTOGRAM,
           "Histogram of time spent in WAITING phase for request.", REQUEST_LATENCY_BUCKETS),
    Family("vllm:request_inference_time_seconds", HISTOGRAM,
           "Histogram of time spent in RUNNING phase for request.", REQUEST_LATENCY_BUCKETS),
    Family("vllm:request_prefill_time_seconds", HISTOGRAM,
           "Histogram of time spent in PREFILL phase for request.", REQUEST_LATENCY_BUCKETS),
    Family("vllm:request_decode_time_seconds", HISTOGRAM,
           "Histogram of time spent in DECODE phase for request.", REQUEST_LATENCY_BUCKETS),
    Family("vllm:request_num_preemptions", HISTOGRAM,
           "Histogram of the number of times a request was preempted.",
           REQUEST_NUM_PREEMPTIONS_BUCKETS),
    Family("vllm:request_prefill_kv_computed_tokens", HISTOGRAM,
           "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
           TOKENS_1_2_5),
]

# --custom-histogram-buckets: the bucket-family key (BUCKET_FAMILY_KEYS of
# vllm/v1/metrics/buckets.py at vllm-project/vllm 139b1c3f) of each frontend histogram. The
# connector histograms keep their own buckets.
BUCKET_FAMILY_OF = {
    "vllm:e2e_request_latency_seconds": "request_latency",
    "vllm:request_queue_time_seconds": "request_latency",
    "vllm:request_inference_time_seconds": "request_latency",
    "vllm:request_prefill_time_seconds": "request_latency",
    "vllm:request_decode_time_seconds": "request_latency",
    "vllm:time_to_first_token_seconds": "time_to_first_token",
    "vllm:inter_token_latency_seconds": "inter_token_latency",
    "vllm:request_time_per_output_token_seconds": "inter_token_latency",
    "vllm:iteration_tokens_total": "iteration_tokens",
    "vllm:request_params_n": "request_params_n",
    "vllm:request_num_preemptions": "request_num_preemptions",
    "vllm:request_prompt_tokens": "request_tokens",
    "vllm:request_generation_tokens": "request_tokens",
    "vllm:request_max_num_generation_tokens": "request_tokens",
    "vllm:request_params_max_tokens": "request_tokens",
    "vllm:request_prefill_kv_computed_tokens": "request_tokens",
    "vllm:kv_block_lifetime_seconds": "kv_cache_residency",
    "vllm:kv_block_idle_before_evict_seconds": "kv_cache_residency",
    "vllm:kv_block_reuse_gap_seconds": "kv_cache_residency",
}

# Step 5: only with --kv-cache-metrics.
KV_RESIDENCY_FAMILIES = [
    Family("vllm:kv_block_lifetime_seconds", HISTOGRAM,
           "Histogram of KV cache block lifetime from allocation to eviction. Sampled metrics "
           "(controlled by --kv-cache-metrics-sample).", KV_RESIDENCY_BUCKETS),
    Family("vllm:kv_block_idle_before_evict_seconds", HISTOGRAM,
           "Histogram of idle time before KV cache block eviction. Sampled metrics (controlled "
           "by --kv-cache-metrics-sample).", KV_RESIDENCY_BUCKETS),
    Family("vllm:kv_block_reuse_gap_seconds", HISTOGRAM,
           "Histogram of time gaps between consecutive KV cache block accesses. Only the most "
           "recent accesses are recorded (ring buffer). Sampled metrics (controlled by "
           "--kv-cache-metrics-sample).", KV_RESIDENCY_BUCKETS),
]

# Step 6: no model_name; labels = CacheConfig keys + engine. Replay knows no cache config, so the
# family has no children and renders HELP and TYPE only (its label names never show).
# With LoRA enabled, after the residency histograms (PrometheusStatLogger's order); labels below, no
# model_name or engine; children on first record.
LORA_REQUESTS_INFO = Family("vllm:lora_requests_info", GAUGE, "Running stats on lora requests.")
LORA_LABELS = ["max_lora", "waiting_lora_adapters", "running_lora_adapters"]

CACHE_CONFIG_INFO = Family("vllm:cache_config_info", GAUGE,
                           "Information of the LLMEngine CacheConfig")

# Step 8: vmetrics' own accounting; no model_name/engine labels.
DECODE_ERRORS = Family("vmetrics_decode_errors", COUNTER,
                       "Parts of EngineCoreOutputs messages that could not be decoded and were "
                       "skipped: the whole message (part=message, nothing recorded), or one output "
                       "entry, the SchedulerStats, the utility output or finished_requests (the "
                       "rest of the message recorded).")
# Its `part` label, eager in this order.
DECODE_ERROR_PARTS = ["message", "output", "scheduler_stats", "utility_output",
                      "finished_requests"]
UNKNOWN_ENGINE = Family("vmetrics_unknown_engine_messages", COUNTER,
                        "EngineCoreOutputs messages from an engine index outside the configured "
                        "data-parallel ranks, skipped.")
KV_PAYLOADS = Family("vmetrics_kv_connector_payloads", COUNTER,
                     "KV-connector payloads received in SchedulerStats.kv_connector_stats, by "
                     "connector class name and outcome (recorded, unknown_connector, malformed).")
# Registered on the first skipped value, every reason's child at once, in this order
# (include/vmetrics/reporter.h kWireSkipReasons).
WIRE_SKIPPED = Family("vmetrics_wire_values_skipped", COUNTER,
                      "Single values inside decoded messages that were skipped (the rest was "
                      "recorded), by reason.")
WIRE_SKIP_REASONS = ["wrong_type", "negative_increment", "nan_increment", "integer_overflow",
                     "invalid_utf8", "label_value_too_long", "label_values_limit",
                     "nan_observation", "infinite_observation"]

# ------------------------------------------------------------------------------------------------
# Connector rows (the *PromMetrics classes of docs/design.md §3.7). One row per connector; a row's
# fields are in the row's metric (= registration) order. How a field feeds its family:
#   OBSERVE_EACH  histogram observes every list element
#   ADD_EACH      counter is incremented by every list element
#   ADD_SCALAR    counter is incremented by the scalar
# The Mooncake store row is record-based and handled by its own function.
# ------------------------------------------------------------------------------------------------
OBSERVE_EACH, ADD_EACH, ADD_SCALAR = "observe_each", "add_each", "add_scalar"
Field = namedtuple("Field", "key how family")
# record_labels: the extra labels of a record-based row (after model_name, engine).
ConnectorRow = namedtuple("ConnectorRow", "class_names children fields record_labels",
                          defaults=((),))
EAGER, PER_RECORD = "eager per engine", "first record per (engine, operation, status)"

NIXL = ConnectorRow(
    class_names=("NixlConnector", "NixlPullConnector", "NixlPushConnector"),
    children=EAGER,
    fields=[
        Field("transfer_duration", OBSERVE_EACH, Family(
            "vllm:nixl_xfer_time_seconds", HISTOGRAM,
            "Histogram of transfer duration for NIXL KV Cache transfers.", XFER_TIME_BUCKETS)),
        Field("post_duration", OBSERVE_EACH, Family(
            "vllm:nixl_post_time_seconds", HISTOGRAM,
            "Histogram of transfer post time for NIXL KV Cache transfers.", POST_TIME_BUCKETS)),
        Field("bytes_transferred", OBSERVE_EACH, Family(
            "vllm:nixl_bytes_transferred", HISTOGRAM,
            "Histogram of bytes transferred per NIXL KV Cache transfers.", BYTES_BUCKETS)),
        # Two spaces before "KV": upstream builds this HELP by string concatenation.
        Field("num_descriptors", OBSERVE_EACH, Family(
            "vllm:nixl_num_descriptors", HISTOGRAM,
            "Histogram of number of descriptors per NIXL  KV Cache transfers.",
            DESCRIPTOR_BUCKETS)),
        Field("num_failed_transfers", ADD_EACH, Family(
            "vllm:nixl_num_failed_transfers", COUNTER,
            "Number of failed NIXL KV Cache transfers.")),
        Field("num_failed_notifications", ADD_EACH, Family(
            "vllm:nixl_num_failed_notifications", COUNTER,
            "Number of failed NIXL KV Cache notifications.")),
        Field("num_kv_expired_reqs", ADD_EACH, Family(
            "vllm:nixl_num_kv_expired_reqs", COUNTER,
            "Number of requests that had their KV expire. NOTE: This metric is tracked on the P "
            "instance.")),
    ])

MOONCAKE_P2P = ConnectorRow(
    class_names=("MooncakeConnector",),
    children=EAGER,
    fields=[
        Field("transfer_duration", OBSERVE_EACH, Family(
            "vllm:mooncake_xfer_time_seconds", HISTOGRAM,
            "Histogram of transfer duration for Mooncake KV Cache transfers.", XFER_TIME_BUCKETS)),
        Field("bytes_transferred", OBSERVE_EACH, Family(
            "vllm:mooncake_bytes_transferred", HISTOGRAM,
            "Histogram of bytes transferred per Mooncake KV Cache transfer.", BYTES_BUCKETS)),
        Field("num_descriptors", OBSERVE_EACH, Family(
            "vllm:mooncake_num_descriptors", HISTOGRAM,
            "Histogram of number of descriptors per Mooncake KV Cache transfer.",
            DESCRIPTOR_BUCKETS)),
        Field("num_failed_transfers", ADD_EACH, Family(
            "vllm:mooncake_num_failed_transfers", COUNTER,
            "Number of failed Mooncake KV Cache transfers.")),
        Field("num_failed_recvs", ADD_EACH, Family(
            "vllm:mooncake_num_failed_recvs", COUNTER,
            "Number of failed Mooncake KV Cache receives.")),
        Field("num_kv_expired_reqs", ADD_EACH, Family(
            "vllm:mooncake_num_kv_expired_reqs", COUNTER,
            "Number of requests that had their KV expire. NOTE: This metric is tracked on the P "
            "instance.")),
    ])

# Per record: labels operation = map key, status = record status (default "ok").
MOONCAKE_STORE = ConnectorRow(
    class_names=("MooncakeStoreConnector",),
    children=PER_RECORD,
    fields=[
        Field("duration_seconds", OBSERVE_EACH, Family(
            "vllm:mooncake_store_operation_time_seconds", HISTOGRAM,
            "Histogram of Mooncake store communication time.", MOONCAKE_STORE_TIME_BUCKETS)),
        Field(None, "inc by 1", Family(
            "vllm:mooncake_store_operation_total", COUNTER,
            "Number of Mooncake store communication operations.")),
        Field("num_keys", "add", Family(
            "vllm:mooncake_store_operation_keys_total", COUNTER,
            "Number of Mooncake store keys touched by operations.")),
        Field("num_bytes", "add", Family(
            "vllm:mooncake_store_operation_bytes_total", COUNTER,
            "Number of bytes transferred by Mooncake store operations.")),
        Field("num_failed_keys", "add", Family(
            "vllm:mooncake_store_operation_failed_keys_total", COUNTER,
            "Number of Mooncake store keys that failed in operations.")),
    ],
    record_labels=("operation", "status"))

HF3FS = ConnectorRow(
    class_names=("HF3FSKVConnector",),
    children=EAGER,
    fields=[
        Field("save_duration", OBSERVE_EACH, Family(
            "vllm:hf3fs_save_duration_seconds", HISTOGRAM,
            "Histogram of save duration for HF3FSKVConnector.", HF3FS_DURATION_BUCKETS)),
        Field("load_duration", OBSERVE_EACH, Family(
            "vllm:hf3fs_load_duration_seconds", HISTOGRAM,
            "Histogram of load duration for HF3FSKVConnector.", HF3FS_DURATION_BUCKETS)),
        Field("num_failed_save", ADD_SCALAR, Family(
            "vllm:hf3fs_num_failed_save", COUNTER, "Number of failed HF3FS KV save.")),
        Field("num_failed_load", ADD_SCALAR, Family(
            "vllm:hf3fs_num_failed_load", COUNTER, "Number of failed HF3FS KV load.")),
    ])

CONNECTOR_ROWS = [MOONCAKE_P2P, NIXL, MOONCAKE_STORE, HF3FS]

# ------------------------------------------------------------------------------------------------
# EC (encoder cache) connectors: the families the --ec-transfer-config `ec_connector` class's
# build_prom_metrics registers (framework: vllm-project/vllm #54960), eager per engine, after the
# KV connectors' families. ECCPUConnector: ECCPUConnectorProm in
# vllm/distributed/ec_transfer/ec_connector/cpu/metrics.py (vllm-project/vllm PR #57333):
# _COUNTER_METRICS then _HISTOGRAM_METRICS, in dict order.
# ------------------------------------------------------------------------------------------------
EC_CPU_TRANSFER_SIZE_BUCKETS = [0.5e6, 1e6, 2e6, 5e6, 10e6, 20e6, 50e6, 100e6, 250e6]
EC_CONNECTOR_FAMILIES = {
    "ECCPUConnector": [
        Family("vllm:ec_cpu_save_bytes", COUNTER,
               "Total bytes copied from GPU to the CPU mmap region (encoder cache save)."),
        Family("vllm:ec_cpu_save_time_seconds", COUNTER,
               "Total time spent copying GPU to CPU for encoder cache saves, in seconds."),
        Family("vllm:ec_cpu_load_bytes", COUNTER,
               "Total bytes copied from the CPU mmap region to GPU (encoder cache load)."),
        Family("vllm:ec_cpu_load_time_seconds", COUNTER,
               "Total time spent copying CPU to GPU for encoder cache loads, in seconds."),
        Family("vllm:ec_cpu_save_size_bytes", HISTOGRAM,
               "Histogram of per-batch GPU->CPU encoder cache save size, in bytes.",
               EC_CPU_TRANSFER_SIZE_BUCKETS),
        Family("vllm:ec_cpu_load_size_bytes", HISTOGRAM,
               "Histogram of per-batch CPU->GPU encoder cache load size, in bytes.",
               EC_CPU_TRANSFER_SIZE_BUCKETS),
    ],
}
MULTI_CONNECTOR = "MultiConnector"


def row_for_class(class_name):
    for row in CONNECTOR_ROWS:
        if class_name in row.class_names:
            return row
    return None


# ------------------------------------------------------------------------------------------------
# OffloadingConnector (OffloadPromMetrics, vllm/distributed/kv_transfer/kv_connector/v1/
# offloading/metrics.py; an undated upstream copy). Its payload is typed: {"types": name ->
# "counter"|"gauge"|"histogram", "data": name -> {label-value tuple -> number or list},
# "info": label name -> value, or None}. Registration, in OffloadPromMetrics.__init__'s order:
#   1. the deprecated transfer_type families (OFFLOAD_DEPRECATED), children for every engine at
#      once, engine outer and transfer_type (CPU_to_GPU, GPU_to_CPU) inner;
#   2. the flat families (OFFLOAD_FLAT), children on first value;
#   3. vllm:kv_offload_config_info, whose label names (after model_name, engine) upstream come
#      from the offloading spec; vmetrics takes them from the first `info` map (its order), so it
#      is registered now and renders HELP and TYPE only until that map arrives.
# Recording: every `data` value under the unlabelled tuple () feeds its flat family; while the
# spec (kv_connector_extra_config.spec_name, default CPUOffloadingSpec) is CPUOffloadingSpec or
# its subclass TieringOffloadingSpec, each such load value also feeds the deprecated family's
# CPU_to_GPU child and each store value its GPU_to_CPU child (OFFLOAD_MIRROR). `info`: the
# config-info child of the values aligned to the declared names (missing -> "", others
# dropped) is set to 1; a value that is not str/int/float/bool/None skips the map (wrong_type).
# ------------------------------------------------------------------------------------------------
OFFLOADING = "OffloadingConnector"
OFFLOAD_SIZE_BUCKETS = [1e6, 5e6, 10e6, 20e6, 40e6, 60e6, 80e6, 100e6, 150e6, 200e6]
OFFLOAD_FLAT = [
    Family("vllm:kv_offload_load_bytes", COUNTER, "Total bytes loaded from offload storage to GPU."),
    Family("vllm:kv_offload_load_time", COUNTER,
           "Total load time from offload storage to GPU, in seconds."),
    Family("vllm:kv_offload_load_size", HISTOGRAM,
           "Histogram of KV offload load operation size, in bytes.", OFFLOAD_SIZE_BUCKETS),
    Family("vllm:kv_offload_store_bytes", COUNTER,
           "Total bytes stored from GPU to offload storage."),
    Family("vllm:kv_offload_store_time", COUNTER,
           "Total store time from GPU to offload storage, in seconds."),
    Family("vllm:kv_offload_store_size", HISTOGRAM,
           "Histogram of KV offload store operation size, in bytes.", OFFLOAD_SIZE_BUCKETS),
    Family("vllm:kv_offload_lookup_sync_delay_seconds", HISTOGRAM,
           "Histogram of the time spent in a single offload lookup call, in seconds.",
           [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1]),
    Family("vllm:kv_offload_lookup_async_delay_seconds", HISTOGRAM,
           "Histogram of time between a request's offload lookup first deferring and the "
           "following lookup resolving, or request finish, in seconds.",
           [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10]),
    Family("vllm:kv_offload_allocation_failure", COUNTER,
           "Number of KV offload store allocation attempts that failed."),
]
OFFLOAD_DEPRECATED = [
    Family("vllm:kv_offload_total_bytes", COUNTER, "Number of bytes offloaded by KV connector"),
    Family("vllm:kv_offload_total_time", COUNTER,
           "Total time measured by all KV offloading operations"),
    Family("vllm:kv_offload_size", HISTOGRAM, "Histogram of KV offload transfer size, in bytes.",
           OFFLOAD_SIZE_BUCKETS),
]
TRANSFER_TYPES = ("CPU_to_GPU", "GPU_to_CPU")
OFFLOAD_MIRROR = {
    "vllm:kv_offload_load_bytes": ("vllm:kv_offload_total_bytes", "CPU_to_GPU"),
    "vllm:kv_offload_load_time": ("vllm:kv_offload_total_time", "CPU_to_GPU"),
    "vllm:kv_offload_load_size": ("vllm:kv_offload_size", "CPU_to_GPU"),
    "vllm:kv_offload_store_bytes": ("vllm:kv_offload_total_bytes", "GPU_to_CPU"),
    "vllm:kv_offload_store_time": ("vllm:kv_offload_total_time", "GPU_to_CPU"),
    "vllm:kv_offload_store_size": ("vllm:kv_offload_size", "GPU_to_CPU"),
}
OFFLOAD_CONFIG_INFO = Family(
    "vllm:kv_offload_config_info", GAUGE,
    "Static configuration of the KV offload managers of this engine instance. The configured "
    "offloading spec declares the label names, and each manager fills the values, so a series "
    "appears from the first scheduler step of its engine. Each engine reports its own "
    "configuration, not the instance total.")
# OffloadingSpecFactory's default spec, and the built-in specs that are CPUOffloadingSpec or a
# subclass of it (vllm/v1/kv_offload/factory.py, undated upstream copy).
DEFAULT_OFFLOADING_SPEC = "CPUOffloadingSpec"
CPU_OFFLOADING_SPECS = ("CPUOffloadingSpec", "TieringOffloadingSpec")


def offloading_extra_config(kv_transfer_config):
    """kv_connector_extra_config of the configured OffloadingConnector (top level or the first
    MultiConnector child of that class), or {} when it is not configured."""
    config = kv_transfer_config or {}
    if config.get("kv_connector") == MULTI_CONNECTOR:
        children = (config.get("kv_connector_extra_config") or {}).get("connectors", [])
        config = next((c for c in children if c.get("kv_connector") == OFFLOADING), {})
    elif config.get("kv_connector") != OFFLOADING:
        config = {}
    extra = config.get("kv_connector_extra_config")
    return extra if isinstance(extra, dict) else {}


def offloading_spec_name(kv_transfer_config):
    """spec_name of the configured OffloadingConnector, or the default; a non-string value
    counts as absent."""
    spec = offloading_extra_config(kv_transfer_config).get("spec_name")
    return spec if isinstance(spec, str) else DEFAULT_OFFLOADING_SPEC


# The families an offloading spec declares (its build_metric_definitions; vllm/v1/kv_offload/
# cpu/spec.py, tiering/spec.py, cpu/common.py and tiering/base.py at vllm-project/vllm 6adad087),
# registered by OffloadPromMetrics between the deprecated families and the connector's own, each
# with its children on first value: the CPU spec's four; vllm:kv_offload_stores_skipped when
# int(store_threshold) >= 2 (store_threshold absent: 0); and for TieringOffloadingSpec, which
# extends the CPU spec's definitions, fifteen more, all but one labelled `tier`. Secondary tiers
# add none at that commit. An out-of-tree spec's families are unknown here (and to vmetrics).
OFFLOAD_CPU_ALLOCATION_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144]
OFFLOAD_SPEC_CPU = [
    Family("vllm:kv_offload_cpu_cache_usage_perc", GAUGE,
           "Fraction of CPU KV-cache space currently pinned by active transfers (0.0 = idle, "
           "1.0 = saturated). Sustained high values indicate transfers (stores or promotions) "
           "may be dropped due to insufficient capacity."),
    Family("vllm:kv_offload_cpu_cache_write_usage_perc", GAUGE,
           "Fraction of CPU KV-cache space currently pinned by in-flight stores that have not "
           "yet completed (0.0 = idle, 1.0 = saturated)."),
    Family("vllm:kv_offload_cpu_cache_read_usage_perc", GAUGE,
           "Fraction of CPU KV-cache space currently pinned by in-flight loads that have not "
           "yet completed (0.0 = idle, 1.0 = saturated)."),
    Family("vllm:kv_offload_cpu_allocation_size", HISTOGRAM,
           "Histogram of the number of CPU blocks requested by each KV offload prepare_store "
           "call.", OFFLOAD_CPU_ALLOCATION_BUCKETS),
]
OFFLOAD_SPEC_STORES_SKIPPED = Family(
    "vllm:kv_offload_stores_skipped", COUNTER,
    "Number of KV offload stores skipped because the reuse threshold was not reached.")
TIERING = "vllm:kv_offload_tiering_"
TIER_LABEL = ["tier"]
OFFLOAD_SPEC_TIERING = [  # (family, its labels after model_name and engine)
    (Family(TIERING + "lookup_sync_delay_seconds", HISTOGRAM,
            "Histogram of blocking time spent in a per-block tier lookup that resolved as a hit "
            "or miss, labeled by tier, in seconds.",
            [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1]),
     TIER_LABEL),
    (Family(TIERING + "lookup_async_delay_seconds", HISTOGRAM,
            "Histogram of wall-clock time from a per-block tier lookup first returning retry "
            "until that same tier lookup resolves as a hit or miss, labeled by tier, in seconds.",
            [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10]), TIER_LABEL),
    (Family(TIERING + "read_bytes", COUNTER,
            "Total bytes read from secondary tiers into the primary tier, labeled by tier."),
     TIER_LABEL),
    (Family(TIERING + "read_time", COUNTER,
            "Total time spent reading from secondary tiers into the primary tier, in seconds, "
            "labeled by tier."), TIER_LABEL),
    (Family(TIERING + "write_bytes", COUNTER,
            "Total bytes written from the primary tier to secondary tiers, labeled by tier."),
     TIER_LABEL),
    (Family(TIERING + "write_time", COUNTER,
            "Total time spent writing from the primary tier to secondary tiers, in seconds, "
            "labeled by tier."), TIER_LABEL),
    (Family(TIERING + "promotion_job_failures", COUNTER,
            "Number of failed secondary-tier promotion jobs, labeled by tier."), TIER_LABEL),
    (Family(TIERING + "cascade_job_failures", COUNTER,
            "Number of failed secondary-tier cascade jobs, labeled by tier."), TIER_LABEL),
    (Family(TIERING + "block_queries", COUNTER,
            "Number of block lookup queries sent to a tier, labeled by tier."), TIER_LABEL),
    (Family(TIERING + "block_hits", COUNTER,
            "Number of block lookup hits in a tier, labeled by tier."), TIER_LABEL),
    (Family(TIERING + "promotion_allocation_failures", COUNTER,
            "Number of promotion attempts that failed because the primary tier could not "
            "allocate space."), []),
    (Family(TIERING + "primary_write_usage_perc", GAUGE,
            "Current fraction of primary-tier space used by writes from secondary tiers, labeled "
            "by tier."), TIER_LABEL),
    (Family(TIERING + "primary_read_usage_perc", GAUGE,
            "Current fraction of primary-tier space used by reads to secondary tiers, labeled by "
            "tier."), TIER_LABEL),
    (Family(TIERING + "active_promotion_jobs", GAUGE,
            "Number of active secondary-tier promotion jobs, labeled by tier."), TIER_LABEL),
    (Family(TIERING + "active_cascade_jobs", GAUGE,
            "Number of active secondary-tier cascade jobs, labeled by tier."), TIER_LABEL),
]
TIERING_OFFLOADING_SPEC = "TieringOffloadingSpec"


def python_int_or_zero(value):
    """int(value) as vLLM applies it to store_threshold; a value int() refuses (vLLM would not
    start) counts as 0, as vmetrics documents."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 0


def offloading_spec_families(spec_name, extra_config):
    """[(family, labelnames)] the spec declares, in its order."""
    if spec_name not in CPU_OFFLOADING_SPECS:
        return []
    families = [(family, []) for family in OFFLOAD_SPEC_CPU]
    if python_int_or_zero(extra_config.get("store_threshold", 0)) >= 2:
        families.append((OFFLOAD_SPEC_STORES_SKIPPED, []))
    if spec_name == TIERING_OFFLOADING_SPEC:
        families += OFFLOAD_SPEC_TIERING
    return families


class DeclaredLater:
    """A gauge that holds its place in the registry before its label names are known (vmetrics'
    Registry::ReplaceFamily): HELP and TYPE only, as prometheus_client renders a labelled gauge
    without children, until `metric` is set."""

    def __init__(self, family, registry):
        self.family = family
        self.metric = None
        registry.register(self)

    def collect(self):
        if self.metric is None:
            return [GaugeMetricFamily(self.family.name, self.family.help)]
        return self.metric.collect()


def python_str(value):
    """str() of a label value as Python prints it."""
    return str(value)


class OffloadingFamilies:
    """The Offloading row's families for one recorder (also tools/gen_descriptor_fixtures.py's,
    which registers the flat families from the connector's descriptor in between: hence
    `register_flat` and the separate `register_info`). `make(family, labelnames)` registers a
    metric in the vLLM registry, `skip(reason)` counts a skipped value."""

    def __init__(self, make, model_name, engines, spec_name, skip, register_flat=True,
                 extra_config=None):
        self.model_name = model_name
        self.skip = skip
        self.cpu_spec = spec_name in CPU_OFFLOADING_SPECS
        self.metrics = {}
        for family in OFFLOAD_DEPRECATED:
            self.metrics[family.name] = make(family, ["model_name", "engine", "transfer_type"])
        self.deprecated = {}
        for engine in engines:
            for transfer_type in TRANSFER_TYPES:
                for family in OFFLOAD_DEPRECATED:
                    self.deprecated[(family.name, str(engine), transfer_type)] = \
                        self.metrics[family.name].labels(model_name, str(engine), transfer_type)
        self.spec_families = offloading_spec_families(spec_name, extra_config or {})
        for family, labelnames in self.spec_families:
            self.metrics[family.name] = make(family, ["model_name", "engine"] + labelnames)
        if register_flat:
            for family in OFFLOAD_FLAT:
                self.metrics[family.name] = make(family, ["model_name", "engine"])
        self.info = None
        self.info_labels = None

    def register_info(self, registry):
        self.info = DeclaredLater(OFFLOAD_CONFIG_INFO, registry)

    def mirror(self, engine, flat_name, values):
        """The deprecated child that also takes an unlabelled flat value, fed with `values`."""
        if not self.cpu_spec or flat_name not in OFFLOAD_MIRROR:
            return
        name, transfer_type = OFFLOAD_MIRROR[flat_name]
        child = self.deprecated[(name, str(engine), transfer_type)]
        for v in values:
            if name == "vllm:kv_offload_size":
                child.observe(v)
            else:
                child.inc(v)

    def record(self, engine, payload):
        engine = str(engine)
        info = payload.get("info")
        if info is not None:
            self.record_info(engine, info)
        data = payload.get("data") or {}
        for family in OFFLOAD_FLAT:
            if family.name not in data:
                continue
            for labels, value in data[family.name].items():
                assert labels == (), "only unlabelled offloading values are modelled"
                values = value if isinstance(value, list) else [value]
                child = self.metrics[family.name].labels(self.model_name, engine)
                for v in values:
                    if family.kind == HISTOGRAM:
                        child.observe(v)
                    else:
                        child.inc(v)
                self.mirror(engine, family.name, values)
        self.record_spec(engine, data)

    def record_spec(self, engine, data):
        """The spec's families, as OffloadPromMetrics.observe feeds them: every label tuple of a
        family's `data` entry, in payload order, is one child (model_name, engine, then the
        tuple); a counter adds the number, a gauge is set to it, a histogram observes each
        element of the list."""
        for family, labelnames in self.spec_families:
            if family.name not in data:
                continue
            for labels, value in data[family.name].items():
                assert len(labels) == len(labelnames), "label tuples are the family's arity"
                child = self.metrics[family.name].labels(self.model_name, engine,
                                                         *[str(v) for v in labels])
                if family.kind == HISTOGRAM:
                    for v in value:
                        child.observe(v)
                elif family.kind == GAUGE:
                    child.set(value)
                else:
                    child.inc(value)

    def record_info(self, engine, info):
        if not isinstance(info, dict) or not all(
                isinstance(k, str) and (v is None or isinstance(v, (str, int, float, bool)))
                for k, v in info.items()):
            self.skip("wrong_type")
            return
        if self.info_labels is None:
            self.info_labels = list(info)
            self.info.metric = Gauge(OFFLOAD_CONFIG_INFO.name, OFFLOAD_CONFIG_INFO.help,
                                     ["model_name", "engine"] + self.info_labels, registry=None)
        values = [python_str(info[k]) if k in info else "" for k in self.info_labels]
        self.info.metric.labels(self.model_name, engine, *values).set(1)


# ================================================================================================
# The wire: msgspec emulation with python-msgpack (docs/design.md §4.1, docs/wire_format.md)
# ================================================================================================
# Dataclasses (SchedulerStats and every nested stats type) are maps with EVERY field in definition
# order; array_like Structs (EngineCoreOutputs, EngineCoreOutput, UtilityOutput) are arrays with
# every position; floats are float64. Callers pass Python floats for float fields (0.0, not 0).


def pack(obj):
    return msgpack.packb(obj, use_bin_type=True, use_single_float=False)


def prefix_cache_stats(requests=0, queries=0, hits=0, preempted_requests=0, preempted_queries=0,
                       preempted_hits=0, reset=False):
    return {"reset": reset, "requests": requests, "queries": queries, "hits": hits,
            "preempted_requests": preempted_requests, "preempted_queries": preempted_queries,
            "preempted_hits": preempted_hits}


def spec_decoding_stats(num_spec_tokens, num_drafts, num_draft_tokens, num_accepted_tokens,
                        num_accepted_tokens_per_pos, num_draft_tokens_per_pos):
    return {"num_spec_tokens": num_spec_tokens, "num_drafts": num_drafts,
            "num_draft_tokens": num_draft_tokens, "num_accepted_tokens": num_accepted_tokens,
            "num_accepted_tokens_per_pos": num_accepted_tokens_per_pos,
            "num_draft_tokens_per_pos": num_draft_tokens_per_pos}


def kv_cache_eviction_event(lifetime_seconds, idle_seconds, reuse_gaps_seconds):
    return {"lifetime_seconds": lifetime_seconds, "idle_seconds": idle_seconds,
            "reuse_gaps_seconds": reuse_gaps_seconds}


def perf_stats(flops, read_bytes, write_bytes, debug_stats=None):
    return {"num_flops_per_gpu": flops, "num_read_bytes_per_gpu": read_bytes,
            "num_write_bytes_per_gpu": write_bytes, "debug_stats": debug_stats}


def iteration_details(iteration_index, elapsed_ms):
    return {"iteration_index": iteration_index, "num_ctx_requests": 2, "num_ctx_tokens": 300,
            "num_generation_requests": 5, "num_generation_tokens": 5, "elapsed_ms": elapsed_ms,
            "num_encoder_inputs": 0, "num_encoder_output_tokens": 0, "is_dummy": False}


def cudagraph_stat():
    return {"num_unpadded_tokens": 300, "num_padded_tokens": 320, "num_paddings": 20,
            "runtime_mode": "FULL"}


def scheduler_stats(**fields):
    """SchedulerStats as a map: the keys of the reference commit in definition order (vmetrics'
    wire table, tools/wire_layouts.py), with their defaults, overridden by `fields`; keys not in
    the dataclass (newer vLLM) go last."""
    stats = wire_layouts.scheduler_stats_defaults(
        REFERENCE_GENERATION, {"PrefixCacheStats": prefix_cache_stats})
    stats.update(fields)
    return stats


def engine_core_output(request_id, new_token_ids, events=None, prefill_stats=None,
                       finish_reason=None):
    """EngineCoreOutput: array_like, always all 16 positions."""
    return [request_id, new_token_ids, None, None, None, finish_reason, None, events, None, None,
            None, prefill_stats, None, 0, None, None]


def engine_core_outputs(engine_index=0, outputs=(), stats=None, timestamp=0.0,
                        utility_output=None, finished_requests=None, wave_complete=None,
                        start_wave=None):
    """EngineCoreOutputs: array_like, always all 8 positions."""
    return [engine_index, list(outputs), stats, timestamp, utility_output, finished_requests,
            wave_complete, start_wave]


def stats_message(engine_index, timestamp, **stats_fields):
    """A stats-only message, as the engine sends when a step produced no request outputs."""
    return engine_core_outputs(engine_index, stats=scheduler_stats(**stats_fields),
                               timestamp=timestamp)


def connector_message(engine_index, timestamp, kv_connector_stats, **stats_fields):
    return stats_message(engine_index, timestamp, kv_connector_stats=kv_connector_stats,
                         **stats_fields)


# ---- KV-connector payloads (the connectors' stats classes; docs/design.md §3) ------------------

def nixl_payload(transfer_duration, post_duration, bytes_transferred, num_descriptors,
                 num_failed_transfers=(), num_failed_notifications=(), num_kv_expired_reqs=()):
    return {"transfer_duration": list(transfer_duration), "post_duration": list(post_duration),
            "bytes_transferred": list(bytes_transferred),
            "num_descriptors": list(num_descriptors),
            "num_failed_transfers": list(num_failed_transfers),
            "num_failed_notifications": list(num_failed_notifications),
            "num_kv_expired_reqs": list(num_kv_expired_reqs)}


def mooncake_p2p_payload(transfer_duration, bytes_transferred, num_descriptors,
                         num_failed_transfers=(), num_failed_recvs=(), num_kv_expired_reqs=()):
    return {"transfer_duration": list(transfer_duration),
            "bytes_transferred": list(bytes_transferred),
            "num_descriptors": list(num_descriptors),
            "num_failed_transfers": list(num_failed_transfers),
            "num_failed_recvs": list(num_failed_recvs),
            "num_kv_expired_reqs": list(num_kv_expired_reqs)}


def store_record(duration_seconds, num_keys, num_bytes, status, num_failed_keys):
    return {"duration_seconds": duration_seconds, "num_keys": num_keys, "num_bytes": num_bytes,
            "status": status, "num_failed_keys": num_failed_keys}


# ================================================================================================
# Scenarios
# ================================================================================================
# args: what scenarios.tsv passes to `vmetrics replay <input>` (plus --created-timestamp, and
# --format openmetrics / --disable-created-series for the variants). JSON without spaces.
# variants: "openmetrics" -> <name>.om, "no_created" -> <name>_no_created.txt.

Scenario = namedtuple("Scenario", "name args messages variants", defaults=((),))

NIXL_CONFIG = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
MULTI_CONFIG = ('{"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":['
                '{"kv_connector":"NixlConnector"},{"kv_connector":"MooncakeStoreConnector"},'
                '{"kv_connector":"MooncakeConnector"}]}}')
LLAMA = "meta-llama/Llama-3.1-8B"


def scenario_default_single():
    """No connector, one engine, two stats-only messages."""
    return [
        stats_message(0, 1000.5, num_running_reqs=3, num_waiting_reqs=2,
                      num_skipped_waiting_reqs=1, step_counter=17, kv_cache_usage=0.25,
                      prefix_cache_stats=prefix_cache_stats(requests=4, queries=12345678,
                                                            hits=2048),
                      # Without --kv-cache-metrics eviction events are not recorded.
                      kv_cache_eviction_events=[kv_cache_eviction_event(0.5, 0.1, [0.2])],
                      perf_stats=perf_stats(0, 0, 0)),          # all zero: nothing recorded
        stats_message(0, 1001.25, num_running_reqs=1, num_waiting_reqs=0,
                      num_skipped_waiting_reqs=4, step_counter=18, kv_cache_usage=0.0625,
                      prefix_cache_stats=prefix_cache_stats(requests=1, queries=100, hits=99,
                                                            preempted_requests=1,
                                                            preempted_queries=7,
                                                            preempted_hits=7),
                      # No spec-decode families without --speculative-config: ignored.
                      spec_decoding_stats=spec_decoding_stats(3, 1, 3, 2, [1, 1, 0], [1, 1, 1]),
                      perf_stats=perf_stats(1500000000000, 3000000000, 1000000)),
    ]


def scenario_scheduler_full():
    """Spec decoding (k=3), KV residency, two engines, and the SchedulerStats keys that are not
    exported (iteration_details, cudagraph_stats, newer sleep_state keys)."""
    request_output = engine_core_output(
        "r1", [42], events=[{"type": 1, "timestamp": 1.5}, {"type": 2, "timestamp": 1.75}],
        prefill_stats={"num_prompt_tokens": 7, "num_computed_tokens": 7, "num_cached_tokens": 0,
                       "num_local_cached_tokens": 0, "num_external_cached_tokens": 0,
                       "num_cache_creation_tokens": 0})
    first = engine_core_outputs(
        0, outputs=[request_output], timestamp=2.0,
        stats=scheduler_stats(
            num_running_reqs=5, num_waiting_reqs=1, kv_cache_usage=0.5,
            iteration_details=iteration_details(1, 12.5),
            prefix_cache_stats=prefix_cache_stats(requests=2, queries=300, hits=128),
            connector_prefix_cache_stats=prefix_cache_stats(requests=2, queries=64, hits=32),
            kv_cache_eviction_events=[
                kv_cache_eviction_event(0.5, 0.001, [0.002, 2000.0, 0.0]),  # bounds, > top
                kv_cache_eviction_event(1800.0, 1800.5, []),
            ],
            # per-pos list shorter than k: position 2 gets 0.
            spec_decoding_stats=spec_decoding_stats(3, 5, 15, 8, [5, 3], [5, 5, 5]),
            cudagraph_stats=cudagraph_stat(),
            # Newer vLLM appends these keys; unknown keys are ignored.
            sleep_state={"scheduler_paused": False, "weights": "resident",
                         "kv_cache": "resident"},
            sleep_state_only=False))
    second = stats_message(
        1, 2.5, num_running_reqs=2, num_waiting_reqs=3, num_skipped_waiting_reqs=2,
        kv_cache_usage=0.75,
        prefix_cache_stats=prefix_cache_stats(requests=1, queries=16, hits=16),
        kv_cache_eviction_events=[kv_cache_eviction_event(0.0004, 30.0, [60.0, 60.0])],
        # per-pos list longer than k: position 3 is ignored.
        spec_decoding_stats=spec_decoding_stats(3, 4, 12, 10, [4, 3, 2, 1], [4, 4, 4, 4]),
        perf_stats=perf_stats(0, 0, 0))
    third = engine_core_outputs(
        0, timestamp=3.0,
        stats=scheduler_stats(
            num_running_reqs=4, kv_cache_usage=1,             # an int in a float field
            connector_prefix_cache_stats=prefix_cache_stats(requests=1, queries=16, hits=0),
            spec_decoding_stats=spec_decoding_stats(3, 1, 3, 3, [1, 1, 1], [1, 1, 1]),
            perf_stats=perf_stats(123456789, 0, 4096))) + ["a field from a newer vLLM"]
    utility_only = engine_core_outputs(1, timestamp=3.5,
                                       utility_output=[123, None, [None, ["generate"]]])
    # A shorter array (trailing fields take defaults) with a sparse SchedulerStats map (missing
    # keys take defaults: the gauges go back to 0).
    short = [1, [], {"num_running_reqs": 7}]
    return [first, second, third, utility_only, short]


def scenario_nixl_two_engines():
    return [
        connector_message(0, 10.0, nixl_payload(
            transfer_duration=[0.005, 1.0, 5.0, 7.5],       # on bounds, above the top bound
            post_duration=[0.001, 0.0005],
            bytes_transferred=[2097152, 8589934592, 8589934593, 17179869184],
            num_descriptors=[10, 50000, 50001, 75],
            num_failed_transfers=[1], num_kv_expired_reqs=[1, 1]),
            num_running_reqs=1, kv_cache_usage=0.125),
        connector_message(1, 10.5, nixl_payload(
            transfer_duration=[0.0123],
            post_duration=[0.1, 0.2],                       # _sum 0.30000000000000004
            bytes_transferred=[2048, 2049], num_descriptors=[64],
            num_failed_notifications=[1]),
            num_running_reqs=2, kv_cache_usage=0.25),
        connector_message(0, 11.0, nixl_payload(
            transfer_duration=[0.3], post_duration=[], bytes_transferred=[524288],
            num_descriptors=[32], num_failed_transfers=[1, 1])),
        connector_message(1, 11.5, None),
    ]


def scenario_nixl_extra_keys():
    newer = nixl_payload(transfer_duration=[0.0071, 0.0123], post_duration=[0.0009, 0.0011],
                         bytes_transferred=[1048576, 524288], num_descriptors=[64, 32],
                         num_failed_transfers=[1])
    newer["num_failed_handshakes"] = [1, 1]                 # no family: ignored
    newer["num_notifications_after_expiry"] = [1]           # no family: ignored
    sparse = {"transfer_duration": [0.25, 1],               # an int duration is a float
              "num_failed_transfers": [1]}                  # missing keys are empty lists
    return [connector_message(0, 20.0, newer), connector_message(0, 21.0, sparse)]


def scenario_mooncake_p2p_bare():
    return [
        connector_message(0, 30.0, mooncake_p2p_payload(
            transfer_duration=[0.004, 0.75], bytes_transferred=[2097152, 1048576],
            num_descriptors=[16, 20], num_failed_recvs=[1])),
        connector_message(0, 31.0, mooncake_p2p_payload(
            transfer_duration=[6.0], bytes_transferred=[8589934592], num_descriptors=[100000],
            num_failed_transfers=[1], num_failed_recvs=[1, 1], num_kv_expired_reqs=[1])),
    ]


def scenario_mooncake_store():
    """Children appear per (engine, operation, status) on first record, interleaved engines."""
    no_status = {"duration_seconds": 0.001, "num_keys": 2, "num_bytes": 0, "num_failed_keys": 0}
    return [
        connector_message(1, 40.0, {
            "save_put": [store_record(0.31, 8, 33554432, "partial_failure", 1)],
            "load_get": [store_record(0.02, 4, 16777216, "ok", 0)]}),
        connector_message(0, 40.5, {
            "lookup_exists": [store_record(0.0004, 8, 0, "ok", 0), no_status],
            "save_put": [store_record(4.0, 1, 1024, "error", 1)]}),
        connector_message(1, 41.0, {
            "load_get": [store_record(5.5, 3, 100, "error", 3),
                         store_record(0.75, 4, 16777216, "ok", 0)],
            "save_put": [store_record(0.05, 8, 33554432, "ok", 0)]}),
        connector_message(0, 41.5, {}),                     # empty: no payload
        connector_message(0, 42.0, {
            "save_exists": [store_record(0.3, 16, 0, "ok", 0)],
            "lookup_exists": [store_record(0.0004, 8, 0, "ok", 0)]}),
    ]


def multi_children(wrap):
    """The MultiConnector messages, children flat or `{"data": {...}}`-wrapped (old shape)."""
    def child(payload):
        return {"data": payload} if wrap else payload
    nixl = nixl_payload(transfer_duration=[0.0123, 0.0071], post_duration=[0.0009, 0.0011],
                        bytes_transferred=[1048576, 524288], num_descriptors=[64, 32],
                        num_failed_transfers=[1])
    store = {"load_get": [store_record(0.02, 4, 16777216, "ok", 0)],
             "save_put": [store_record(0.31, 8, 33554432, "partial_failure", 1)]}
    p2p = mooncake_p2p_payload(transfer_duration=[0.004], bytes_transferred=[2097152],
                               num_descriptors=[16], num_failed_recvs=[1])
    return [
        {"NixlConnector": child(nixl), "MooncakeStoreConnector": child(store),
         "MooncakeConnector": child(p2p)},
        {"MooncakeConnector": child(p2p), "NixlConnector": child(nixl),
         "UnsupportedConnector": child({"sample_count": 1})},
        {"MooncakeStoreConnector": child({"lookup_exists": [store_record(0.0004, 8, 0, "ok", 0)]})},
    ]


def scenario_multi_flat():
    return [connector_message(0, 50.0 + i, payload)
            for i, payload in enumerate(multi_children(wrap=False))]


def scenario_multi_data_wrapped():
    return [connector_message(i % 2, 60.0 + i, payload)
            for i, payload in enumerate(multi_children(wrap=True))]


def scenario_unconfigured_inferred():
    """No --kv-transfer-config: payloads identified by shape, families registered on first sight
    after vllm:cache_config_info, eager children for every engine."""
    return [
        connector_message(1, 70.0, mooncake_p2p_payload(
            transfer_duration=[0.004], bytes_transferred=[2097152], num_descriptors=[16],
            num_failed_recvs=[1])),
        connector_message(0, 70.5, nixl_payload(
            transfer_duration=[0.05], post_duration=[0.002], bytes_transferred=[8192],
            num_descriptors=[10])),
        connector_message(1, 71.0, {
            "save_put": [store_record(0.1, 2, 8192, "ok", 0)],
            "load_get": [store_record(0.2, 2, 8192, "error", 2)]}),
        connector_message(0, 71.5, {"NixlConnector": nixl_payload(
            transfer_duration=[0.5], post_duration=[0.001], bytes_transferred=[2048],
            num_descriptors=[20], num_failed_notifications=[1])}),
        connector_message(1, 72.0, {"MooncakeConnector": {"data": mooncake_p2p_payload(
            transfer_duration=[1.0], bytes_transferred=[4096], num_descriptors=[30],
            num_kv_expired_reqs=[1])}}),
    ]


def scenario_bad_payloads():
    nixl = nixl_payload(transfer_duration=[0.01], post_duration=[0.001], bytes_transferred=[4096],
                        num_descriptors=[10])
    store = {"save_put": [store_record(0.2, 4, 4096, "ok", 0)]}
    wrong_type = nixl_payload(transfer_duration=[0.05], post_duration=[], bytes_transferred=[8192],
                              num_descriptors=[20], num_failed_transfers=[1])
    wrong_type["post_duration"] = "x"                       # that field skipped, rest recorded
    return [
        connector_message(0, 80.0, {"NixlConnector": nixl, "MooncakeStoreConnector": store},
                          num_running_reqs=1),
        connector_message(0, 80.5, {"NixlConnector": [1, 2], "MooncakeStoreConnector": store}),
        # Top-level map instead of the positional array: a decode error, then the stream goes on.
        {"engine_index": 0, "outputs": [], "scheduler_stats": None},
        # Engine 5 is not a configured engine (dp=1): skipped whole.
        connector_message(5, 81.0, {"NixlConnector": nixl}, num_running_reqs=99),
        connector_message(0, 81.5, {"NixlConnector": wrong_type}, num_running_reqs=2),
        connector_message(0, 82.0, {}, num_running_reqs=3),  # empty: no payload
    ]


def scenario_hf3fs_in_multi():
    """HF3FS counters add a scalar (no connector configured: inferred MultiConnector payload)."""
    return [
        connector_message(0, 90.0, {"HF3FSKVConnector": {
            "save_duration": [0.001, 0.3], "load_duration": [5.0, 6.0], "num_failed_save": 1,
            "num_failed_load": 0, "num_transfer_task": 4}}),
        connector_message(0, 91.0, {"HF3FSKVConnector": {
            "save_duration": [], "load_duration": [0.02], "num_failed_save": 0,
            "num_failed_load": 2, "num_transfer_task": 1}}),
    ]


def scenario_newest_keys():
    """The newest SchedulerStats keys: num_kv_fetch_reqs_by_stage (all stages, a subset, an
    unknown stage, empty) and hits_by_source in connector_prefix_cache_stats (an unknown tier is
    skipped; the local prefix_cache_stats' split is never read)."""
    def external(hits, by_source):
        stats = prefix_cache_stats(requests=1, queries=hits * 2, hits=hits)
        stats["hits_by_source"] = by_source
        return stats
    local = prefix_cache_stats(requests=2, queries=512, hits=256)
    local["hits_by_source"] = {"host": 999}
    return [
        stats_message(0, 110.0, num_waiting_reqs=1, num_skipped_waiting_reqs=3,
                      num_kv_fetch_reqs_by_stage={"waiting_to_start": 1, "in_progress": 1,
                                                  "completed_waiting": 1},
                      prefix_cache_stats=local,
                      connector_prefix_cache_stats=external(62, {"p2p": 22, "host": 40})),
        stats_message(1, 110.5, num_skipped_waiting_reqs=2,
                      num_kv_fetch_reqs_by_stage={"in_progress": 2, "a_later_stage": 7},
                      connector_prefix_cache_stats=external(37, {"disk": 5,
                                                                 "external_unspecified": 32})),
        stats_message(0, 111.0, num_skipped_waiting_reqs=1,
                      num_kv_fetch_reqs_by_stage={"completed_waiting": 1},
                      connector_prefix_cache_stats=external(8, {"tape": 8})),
        stats_message(1, 111.5, num_kv_fetch_reqs_by_stage={}),
    ]


def offloading_payload(data, info=None):
    """An OffloadingConnectorStats payload: its types, the unlabelled values, and `info`."""
    types = {name: ("histogram" if isinstance(value, list) else "counter")
             for name, value in data.items()}
    return {"types": types, "data": {name: {(): value} for name, value in data.items()},
            "info": info}


CPU_OFFLOAD_INFO = {"cpu_num_chunks": 4096, "cpu_blocks_per_chunk": 1,
                    "cpu_kv_bytes_per_chunk": 2097152, "cpu_capacity_tokens_at_max_len": "None"}


def scenario_offloading_cpu_spec():
    """Offloading with the default (CPU) spec, two engines: the deprecated transfer_type families
    mirror the unlabelled load (CPU_to_GPU) and store (GPU_to_CPU) values; engine 0's first
    `info` declares the config-info labels, engine 1's lacks one (empty) and has one more
    (dropped); a later `info` whose value is a list is skipped (wrong_type); None leaves it."""
    engine1_info = dict(CPU_OFFLOAD_INFO, cpu_extra_fact=True)
    del engine1_info["cpu_capacity_tokens_at_max_len"]
    return [
        connector_message(0, 120.0, offloading_payload({
            "vllm:kv_offload_store_bytes": 8388608, "vllm:kv_offload_store_time": 0.004,
            "vllm:kv_offload_store_size": [4194304, 4194304],
            "vllm:kv_offload_lookup_sync_delay_seconds": [0.00002, 0.0003]}, CPU_OFFLOAD_INFO)),
        connector_message(1, 120.5, offloading_payload({
            "vllm:kv_offload_load_bytes": 2097152, "vllm:kv_offload_load_time": 0.001,
            "vllm:kv_offload_load_size": [2097152], "vllm:kv_offload_allocation_failure": 1},
            engine1_info)),
        connector_message(0, 121.0, offloading_payload({
            "vllm:kv_offload_load_bytes": 16777216, "vllm:kv_offload_load_time": 0.0125,
            "vllm:kv_offload_load_size": [16777216],
            "vllm:kv_offload_store_bytes": 1048576, "vllm:kv_offload_store_time": 0.0005,
            "vllm:kv_offload_store_size": [1048576],
            "vllm:kv_offload_lookup_async_delay_seconds": [0.002]})),
        connector_message(1, 121.5, offloading_payload({
            "vllm:kv_offload_store_bytes": 1048576, "vllm:kv_offload_store_time": 0.00025,
            "vllm:kv_offload_store_size": [1048576]}, {"cpu_num_chunks": [1, 2]})),
    ]


def scenario_offloading_other_spec():
    """A MultiConnector whose OffloadingConnector names an out-of-tree spec: the deprecated
    families are registered with their zero children but not fed; the flat ones are."""
    return [
        connector_message(0, 130.0, {
            "NixlConnector": nixl_payload([0.02], [0.001], [65536], [12], [0], [0], [0]),
            "OffloadingConnector": offloading_payload({
                "vllm:kv_offload_load_bytes": 4194304, "vllm:kv_offload_load_time": 0.002,
                "vllm:kv_offload_load_size": [4194304], "vllm:kv_offload_store_bytes": 2097152,
                "vllm:kv_offload_store_size": [2097152]},
                {"acme_tier": "nvme", "acme_capacity_bytes": 1099511627776,
                 "acme_ratio": 0.5})}),
    ]


def typed_offloading_payload(entries, info=None):
    """An OffloadingConnectorStats payload with labelled values: `entries` maps each name to
    (type, {label-value tuple: number or list})."""
    return {"types": {name: kind for name, (kind, _) in entries.items()},
            "data": {name: values for name, (_, values) in entries.items()}, "info": info}


def scenario_offloading_cpu_spec_families():
    """The CPU spec's families, two engines: usage gauges set twice in a run (the last stays),
    allocation sizes on, between and past the buckets; a stores_skipped entry, which the spec
    declares only with store_threshold >= 2, is passed over; the flat and deprecated families
    still take their values beside them."""
    cpu = "vllm:kv_offload_cpu_"
    return [
        connector_message(0, 140.0, typed_offloading_payload({
            cpu + "cache_usage_perc": (GAUGE, {(): 0.25}),
            cpu + "cache_write_usage_perc": (GAUGE, {(): 0.125}),
            cpu + "cache_read_usage_perc": (GAUGE, {(): 0.0625}),
            cpu + "allocation_size": (HISTOGRAM, {(): [1, 3, 16, 300, 262144, 262145]}),
            "vllm:kv_offload_store_bytes": (COUNTER, {(): 4194304}),
            "vllm:kv_offload_store_size": (HISTOGRAM, {(): [4194304]}),
            "vllm:kv_offload_stores_skipped": (COUNTER, {(): 3})})),
        connector_message(1, 140.5, typed_offloading_payload({
            cpu + "cache_usage_perc": (GAUGE, {(): 1.0}),
            cpu + "allocation_size": (HISTOGRAM, {(): [64]})})),
        connector_message(0, 141.0, typed_offloading_payload({
            cpu + "cache_usage_perc": (GAUGE, {(): 0.5}),
            cpu + "cache_write_usage_perc": (GAUGE, {(): 0.0}),
            cpu + "allocation_size": (HISTOGRAM, {(): [4096, 5000]}),
            "vllm:kv_offload_load_bytes": (COUNTER, {(): 2097152}),
            "vllm:kv_offload_load_time": (COUNTER, {(): 0.001})})),
    ]


def scenario_offloading_cpu_store_threshold():
    """A MultiConnector whose OffloadingConnector child has store_threshold 2: the CPU spec
    declares vllm:kv_offload_stores_skipped, which adds each step's count, beside NIXL."""
    cpu = "vllm:kv_offload_cpu_"
    return [
        connector_message(0, 150.0, {
            "NixlConnector": nixl_payload([0.02], [0.001], [65536], [12], [0], [0], [0]),
            "OffloadingConnector": typed_offloading_payload({
                "vllm:kv_offload_stores_skipped": (COUNTER, {(): 5}),
                cpu + "cache_usage_perc": (GAUGE, {(): 0.75}),
                cpu + "allocation_size": (HISTOGRAM, {(): [8]})})}),
        connector_message(0, 150.5, {
            "OffloadingConnector": typed_offloading_payload({
                "vllm:kv_offload_stores_skipped": (COUNTER, {(): 2}),
                "vllm:kv_offload_store_bytes": (COUNTER, {(): 1048576})})}),
    ]


def scenario_offloading_tiering_spec():
    """TieringOffloadingSpec with two secondary tiers (fs, p2p), two engines: every tiering
    family, labelled by tier as TieringMetricsTracker forms the values ("0:primary", then
    "<index + 1>:<type>"), the CPU spec's families it inherits, and the flat families whose
    unlabelled values still feed the deprecated ones (the spec subclasses CPUOffloadingSpec)."""
    t = "vllm:kv_offload_tiering_"
    primary, fs, p2p = ("0:primary",), ("1:fs",), ("2:p2p",)
    return [
        connector_message(0, 160.0, typed_offloading_payload({
            t + "primary_write_usage_perc": (GAUGE, {fs: 0.125, p2p: 0.0}),
            t + "primary_read_usage_perc": (GAUGE, {fs: 0.25, p2p: 0.5}),
            t + "active_promotion_jobs": (GAUGE, {fs: 2, p2p: 0}),
            t + "active_cascade_jobs": (GAUGE, {fs: 1, p2p: 3}),
            t + "block_queries": (COUNTER, {primary: 12, fs: 7, p2p: 2}),
            t + "block_hits": (COUNTER, {primary: 5, fs: 4}),
            t + "lookup_sync_delay_seconds": (HISTOGRAM, {primary: [0.000004, 0.00002],
                                                          fs: [0.0003, 0.002, 0.7]}),
            t + "lookup_async_delay_seconds": (HISTOGRAM, {fs: [0.004, 12.5]}),
            t + "read_bytes": (COUNTER, {fs: 8388608}),
            t + "read_time": (COUNTER, {fs: 0.0125}),
            t + "write_bytes": (COUNTER, {fs: 4194304, p2p: 2097152}),
            t + "write_time": (COUNTER, {fs: 0.004, p2p: 0.5}),
            "vllm:kv_offload_cpu_cache_usage_perc": (GAUGE, {(): 0.375}),
            "vllm:kv_offload_load_bytes": (COUNTER, {(): 2097152}),
            "vllm:kv_offload_load_size": (HISTOGRAM, {(): [2097152]})})),
        connector_message(1, 160.5, typed_offloading_payload({
            t + "primary_write_usage_perc": (GAUGE, {fs: 0.0, p2p: 0.0}),
            t + "promotion_job_failures": (COUNTER, {p2p: 1}),
            t + "cascade_job_failures": (COUNTER, {fs: 2}),
            t + "promotion_allocation_failures": (COUNTER, {(): 3}),
            t + "block_queries": (COUNTER, {p2p: 4, primary: 9})})),
        connector_message(0, 161.0, typed_offloading_payload({
            t + "primary_write_usage_perc": (GAUGE, {fs: 0.0625, p2p: 0.25}),
            t + "active_promotion_jobs": (GAUGE, {fs: 0, p2p: 1}),
            t + "block_queries": (COUNTER, {primary: 3}),
            t + "read_bytes": (COUNTER, {fs: 1048576, p2p: 1048576}),
            t + "promotion_allocation_failures": (COUNTER, {(): 1})})),
    ]


OFFLOADING_CPU_CONFIG = ('{"kv_connector":"OffloadingConnector","kv_role":"kv_both",'
                         '"kv_connector_extra_config":{"cpu_bytes_to_use":8589934592}}')
OFFLOADING_STORE_THRESHOLD_CONFIG = (
    '{"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":['
    '{"kv_connector":"NixlConnector"},{"kv_connector":"OffloadingConnector",'
    '"kv_connector_extra_config":{"cpu_bytes_to_use":8589934592,"store_threshold":2}}]}}')
OFFLOADING_TIERING_CONFIG = (
    '{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":'
    '{"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":8589934592,'
    '"secondary_tiers":[{"type":"fs","root_dir":"/mnt/kv"},{"type":"p2p"}]}}')
OFFLOADING_OTHER_CONFIG = (
    '{"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":['
    '{"kv_connector":"NixlConnector"},{"kv_connector":"OffloadingConnector",'
    '"kv_connector_extra_config":{"spec_name":"AcmeOffloadingSpec",'
    '"spec_module_path":"acme.offload"}}]}}')

# The newest SchedulerStats keys in declaration order, as the newest generation's fixtures
# send them (one list, in tools/gen_wire_newest.py).
NEWEST_SCHEDULER_STATS_KEYS = gen_wire_newest.SCHEDULER_STATS_FIELDS


def newest_stats_message(engine_index, timestamp, **fields):
    """A stats-only message in the newest layout (tools/gen_wire_newest.py): SchedulerStats with
    its 18 keys in declaration order, PrefixCacheStats with hits_by_source."""
    stats = scheduler_stats(num_kv_fetch_reqs_by_stage={}, ec_connector_stats=None)
    stats["prefix_cache_stats"] = dict(stats["prefix_cache_stats"], hits_by_source={})
    stats.update(fields)
    stats = {key: stats[key] for key in NEWEST_SCHEDULER_STATS_KEYS}
    return engine_core_outputs(engine_index, stats=stats, timestamp=timestamp)


def ec_cpu_payload(counters=None, histograms=None):
    """ECCPUConnectorStats.data: types first, then data, each in first-recorded order."""
    counters, histograms = counters or {}, histograms or {}
    types = {name: COUNTER for name in counters}
    types.update({name: HISTOGRAM for name in histograms})
    return {"types": types, "data": dict(counters, **histograms)}


def scenario_ec_cpu():
    """ECCPUConnector payloads in ec_connector_stats, two engines beside a NIXL KV connector:
    saves, loads, samples on and past the bucket bounds; then hostile payloads whose bad parts are
    counted and skipped while the rest records."""
    save, load = "vllm:ec_cpu_save_", "vllm:ec_cpu_load_"
    return [
        newest_stats_message(0, 130.0, ec_connector_stats=ec_cpu_payload(
            {save + "bytes": 4700000, save + "time_seconds": 0.0125},
            {save + "size_bytes": [4700000]})),
        newest_stats_message(1, 130.5, ec_connector_stats=ec_cpu_payload(
            {load + "bytes": 17600000, load + "time_seconds": 0.031},
            {load + "size_bytes": [8800000, 8800000]})),
        newest_stats_message(0, 131.0, ec_connector_stats=ec_cpu_payload(
            {save + "bytes": 301400000, save + "time_seconds": 0.5,
             load + "bytes": 1000000, load + "time_seconds": 0.001},
            {save + "size_bytes": [1000000.0, 400000, 300000000],
             load + "size_bytes": [1000000]})),
        newest_stats_message(1, 131.5, num_running_reqs=1),
        newest_stats_message(0, 132.0, ec_connector_stats={
            "types": {save + "bytes": COUNTER, load + "bytes": HISTOGRAM,
                      save + "size_bytes": HISTOGRAM, load + "time_seconds": "gauge",
                      "vllm:ec_cpu_evictions": COUNTER, save + "time_seconds": COUNTER,
                      load + "size_bytes": HISTOGRAM, 7: COUNTER},
            "data": {save + "bytes": "many",             # not a number
                     load + "bytes": [5],                # a counter family typed histogram
                     save + "size_bytes": [2000000, "x", None, 2000000],
                     load + "time_seconds": 0.5,         # unknown type
                     "vllm:ec_cpu_evictions": 3,         # not a family of the connector
                     save + "time_seconds": -0.25,       # negative increment
                     load + "size_bytes": 64,            # histogram samples not a list
                     "vllm:ec_cpu_untyped": 1}}),        # no type
        newest_stats_message(1, 132.5, ec_connector_stats=[1, 2]),
        newest_stats_message(1, 133.0, ec_connector_stats={"types": "counter",
                                                           "data": {save + "bytes": 1}}),
        newest_stats_message(1, 133.5, ec_connector_stats={"types": {}, "data": None}),
    ]


def scenario_diffusion():
    """A diffusion LLM's spec-decode stats: denoising steps, canvas positions evaluated and
    committed tokens, on two engines; per-position counts are sent and not exported."""
    return [
        stats_message(0, 120.0, num_running_reqs=2,
                      spec_decoding_stats=spec_decoding_stats(32, 4, 128, 37, [4, 4, 3],
                                                              [4, 4, 4])),
        stats_message(1, 120.5, num_running_reqs=1,
                      spec_decoding_stats=spec_decoding_stats(32, 2, 64, 64, [2, 2], [2, 2])),
        stats_message(0, 121.0, num_running_reqs=1),
        stats_message(0, 121.5,
                      spec_decoding_stats=spec_decoding_stats(32, 1, 32, 5, [1], [1])),
    ]


SCENARIOS = [
    Scenario("default_single", ["--served-model-name", LLAMA], scenario_default_single()),
    Scenario("scheduler_full",
             ["--speculative-config", '{"num_speculative_tokens":3}', "--kv-cache-metrics",
              "--data-parallel-size", "2", "--max-model-len", "2048"],
             scenario_scheduler_full()),
    Scenario("nixl_two_engines",
             ["--served-model-name", LLAMA, "--kv-transfer-config", NIXL_CONFIG,
              "--data-parallel-size", "2"],
             scenario_nixl_two_engines(), ("openmetrics", "no_created")),
    Scenario("nixl_extra_keys", ["--kv-transfer-config", NIXL_CONFIG], scenario_nixl_extra_keys()),
    Scenario("mooncake_p2p_bare", ["--kv-transfer-config", '{"kv_connector":"MooncakeConnector"}'],
             scenario_mooncake_p2p_bare()),
    Scenario("mooncake_store",
             ["--served-model-name", LLAMA,
              "--kv-transfer-config", '{"kv_connector":"MooncakeStoreConnector"}',
              "--data-parallel-size", "2"],
             scenario_mooncake_store(), ("openmetrics",)),
    Scenario("multi_flat", ["--kv-transfer-config", MULTI_CONFIG], scenario_multi_flat()),
    Scenario("multi_data_wrapped", ["--kv-transfer-config", MULTI_CONFIG,
                                    "--data-parallel-size", "2"],
             scenario_multi_data_wrapped()),
    Scenario("unconfigured_inferred", ["--data-parallel-size", "2"],
             scenario_unconfigured_inferred()),
    Scenario("bad_payloads",
             ["--kv-transfer-config",
              '{"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":['
              '{"kv_connector":"NixlConnector"},{"kv_connector":"MooncakeStoreConnector"}]}}'],
             scenario_bad_payloads()),
    Scenario("hf3fs_in_multi", [], scenario_hf3fs_in_multi()),
    # vllm:num_requests_kv_fetch_by_stage: registered for a KV consumer, not for a producer.
    Scenario("newest_kv_consumer",
             ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}',
              "--data-parallel-size", "2"],
             scenario_newest_keys(), ("openmetrics",)),
    # --custom-histogram-buckets replaces the buckets of its families only (residency here;
    # the others render their new bounds empty); --show-hidden-metrics-for-version hides and
    # shows nothing at present.
    Scenario("custom_buckets",
             ["--kv-cache-metrics", "--custom-histogram-buckets",
              '{"kv_cache_residency":[0.25,1,60],"request_latency":[0.5,5],'
              '"request_tokens":[10,100],"request_num_preemptions":[1,3]}',
              "--show-hidden-metrics-for-version", "0.31"],
             scenario_default_single(), ("openmetrics",)),
    # A diffusion model: the vllm:diffusion_* counters, and no spec-decode family although a
    # speculative config is given.
    Scenario("diffusion",
             ["--diffusion-model", "--speculative-config", '{"num_speculative_tokens":3}',
              "--data-parallel-size", "2"],
             scenario_diffusion(), ("openmetrics",)),
    # An EC connector (--ec-transfer-config): its families after the KV connector's.
    Scenario("ec_cpu",
             ["--served-model-name", LLAMA, "--kv-transfer-config", NIXL_CONFIG,
              "--ec-transfer-config", '{"ec_connector":"ECCPUConnector","ec_role":"ec_both"}',
              "--data-parallel-size", "2"],
             scenario_ec_cpu(), ("openmetrics",)),
    Scenario("newest_kv_producer",
             ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}',
              "--data-parallel-size", "2"],
             scenario_newest_keys()),
    Scenario("offloading_cpu_spec",
             ["--served-model-name", LLAMA, "--kv-transfer-config", OFFLOADING_CPU_CONFIG,
              "--data-parallel-size", "2"],
             scenario_offloading_cpu_spec(), ("openmetrics",)),
    Scenario("offloading_other_spec", ["--kv-transfer-config", OFFLOADING_OTHER_CONFIG],
             scenario_offloading_other_spec()),
    Scenario("offloading_cpu_spec_families",
             ["--served-model-name", LLAMA, "--kv-transfer-config", OFFLOADING_CPU_CONFIG,
              "--data-parallel-size", "2"],
             scenario_offloading_cpu_spec_families(), ("openmetrics",)),
    Scenario("offloading_cpu_store_threshold",
             ["--kv-transfer-config", OFFLOADING_STORE_THRESHOLD_CONFIG],
             scenario_offloading_cpu_store_threshold()),
    Scenario("offloading_tiering_spec",
             ["--served-model-name", LLAMA, "--kv-transfer-config", OFFLOADING_TIERING_CONFIG,
              "--data-parallel-size", "2"],
             scenario_offloading_tiering_spec(), ("openmetrics",)),
]

# ================================================================================================
# Replay configuration, parsed from the same argument list scenarios.tsv gives `vmetrics replay`
# ================================================================================================


def parse_replay_args(args):
    parser = argparse.ArgumentParser(prog="vmetrics replay", add_help=False)
    parser.add_argument("--served-model-name", default=DEFAULT_MODEL_NAME)
    parser.add_argument("--data-parallel-size", type=int, default=1)
    parser.add_argument("--kv-transfer-config", type=json.loads, default=None)
    parser.add_argument("--ec-transfer-config", type=json.loads, default=None)
    parser.add_argument("--max-model-len", type=int, default=DEFAULT_MAX_MODEL_LEN)
    parser.add_argument("--speculative-config", type=json.loads, default=None)
    parser.add_argument("--diffusion-model", action="store_true")
    parser.add_argument("--kv-cache-metrics", action="store_true")
    parser.add_argument("--custom-histogram-buckets", type=json.loads, default=None)
    parser.add_argument("--show-hidden-metrics-for-version", default=None)
    parser.add_argument("--enable-lora", action="store_true")
    parser.add_argument("--max-loras", type=int, default=1)
    parser.add_argument("--format", choices=("text", "openmetrics"), default="text")
    parser.add_argument("--disable-created-series", action="store_true")
    parser.add_argument("--created-timestamp", type=float, default=None)
    return parser.parse_args(args)


def configured_connector_classes(kv_transfer_config):
    """(top-level class name or None, [child class names in config order])."""
    if not kv_transfer_config or not kv_transfer_config.get("kv_connector"):
        return None, []
    top = kv_transfer_config["kv_connector"]
    if top != MULTI_CONNECTOR:
        return top, [top]
    extra = kv_transfer_config.get("kv_connector_extra_config") or {}
    return top, [child["kv_connector"] for child in extra.get("connectors", [])]


# ================================================================================================
# Independent decoding of the input file (docs/design.md §4, docs/wire_format.md)
# ================================================================================================


class DecodeError(Exception):
    pass


Decoded = namedtuple("Decoded", "engine_index scheduler_stats")


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    return is_int(value) or isinstance(value, float)


def decode_engine_core_outputs(obj):
    """EngineCoreOutputs is a positional array; missing trailing positions take their defaults,
    extra trailing positions are ignored. Only the fields replay records from are checked."""
    if not isinstance(obj, list):
        raise DecodeError("EngineCoreOutputs is not an array")
    engine_index = obj[0] if len(obj) > 0 else 0
    outputs = obj[1] if len(obj) > 1 else []
    stats = obj[2] if len(obj) > 2 else None
    if not is_int(engine_index):
        raise DecodeError("engine_index is not an int")
    if not isinstance(outputs, list) or not all(isinstance(o, list) for o in outputs):
        raise DecodeError("outputs is not an array of arrays")
    if stats is not None and not isinstance(stats, dict):
        raise DecodeError("scheduler_stats is neither a map nor nil")
    return Decoded(engine_index, None if stats is None else decode_scheduler_stats(stats))


def get_typed(mapping, key, default, check, what):
    value = mapping.get(key, default)
    if not check(value):
        raise DecodeError(f"{key} is not {what}")
    return value


def decode_prefix_cache_stats(obj):
    if not isinstance(obj, dict):
        raise DecodeError("PrefixCacheStats is not a map")
    stats = {key: get_typed(obj, key, 0, is_int, "an int") for key in ("queries", "hits")}
    # Newer engines: dict[CacheHitSource, int]. Python's typed decoder fails the message on a
    # tier it does not know; vmetrics skips that entry (counted as a wrong_type value).
    stats["hits_by_source"] = get_typed(
        obj, "hits_by_source", {},
        lambda v: isinstance(v, dict) and all(isinstance(k, str) and is_int(n)
                                              for k, n in v.items()),
        "a map of str to int")
    return stats


def decode_scheduler_stats(obj):
    """SchedulerStats is a map: missing keys take their defaults, unknown keys are ignored.
    kv_connector_stats stays a raw value: nothing in it may fail the message."""
    stats = {
        "num_running_reqs": get_typed(obj, "num_running_reqs", 0, is_int, "an int"),
        "num_waiting_reqs": get_typed(obj, "num_waiting_reqs", 0, is_int, "an int"),
        "num_skipped_waiting_reqs": get_typed(obj, "num_skipped_waiting_reqs", 0, is_int,
                                              "an int"),
        "kv_cache_usage": get_typed(obj, "kv_cache_usage", 0.0, is_number, "a number"),
        "num_kv_fetch_reqs_by_stage": get_typed(
            obj, "num_kv_fetch_reqs_by_stage", {},
            lambda v: isinstance(v, dict) and all(isinstance(k, str) and is_int(n)
                                                  for k, n in v.items()),
            "a map of str to int"),
        "prefix_cache_stats": decode_prefix_cache_stats(
            obj.get("prefix_cache_stats", {"queries": 0, "hits": 0})),
        "connector_prefix_cache_stats": None,
        "spec_decoding_stats": None,
        "kv_connector_stats": obj.get("kv_connector_stats"),
        "ec_connector_stats": obj.get("ec_connector_stats"),
        "perf_stats": None,
        "kv_cache_eviction_events": [],
    }
    if obj.get("connector_prefix_cache_stats") is not None:
        stats["connector_prefix_cache_stats"] = decode_prefix_cache_stats(
            obj["connector_prefix_cache_stats"])
    spec = obj.get("spec_decoding_stats")
    if spec is not None:
        if not isinstance(spec, dict):
            raise DecodeError("spec_decoding_stats is not a map")
        stats["spec_decoding_stats"] = {
            key: get_typed(spec, key, 0, is_int, "an int")
            for key in ("num_drafts", "num_draft_tokens", "num_accepted_tokens")}
        stats["spec_decoding_stats"]["num_accepted_tokens_per_pos"] = get_typed(
            spec, "num_accepted_tokens_per_pos", [],
            lambda v: isinstance(v, list) and all(is_int(x) for x in v), "a list of ints")
    perf = obj.get("perf_stats")
    if perf is not None:
        if not isinstance(perf, dict):
            raise DecodeError("perf_stats is not a map")
        stats["perf_stats"] = {
            key: get_typed(perf, key, 0, is_int, "an int")
            for key in ("num_flops_per_gpu", "num_read_bytes_per_gpu", "num_write_bytes_per_gpu")}
    for key in ("waiting_lora_adapters", "running_lora_adapters"):
        # dict[str, int]; nil or any other shape records as empty (the field alone is skipped).
        adapters = obj.get(key)
        valid = isinstance(adapters, dict) and all(
            isinstance(k, str) and is_int(v) for k, v in adapters.items())
        stats[key] = dict(adapters) if valid else {}
    events = get_typed(obj, "kv_cache_eviction_events", [], lambda v: isinstance(v, list),
                       "a list")
    for event in events:
        if not isinstance(event, dict):
            raise DecodeError("KVCacheEvictionEvent is not a map")
        stats["kv_cache_eviction_events"].append({
            "lifetime_seconds": get_typed(event, "lifetime_seconds", None, is_number, "a number"),
            "idle_seconds": get_typed(event, "idle_seconds", None, is_number, "a number"),
            "reuse_gaps_seconds": get_typed(
                event, "reuse_gaps_seconds", None,
                lambda v: isinstance(v, list) and all(is_number(x) for x in v),
                "a list of numbers"),
        })
    return stats


def read_messages(path):
    """Every msgpack object of a file of concatenated messages (frame 0 of each ZMQ message)."""
    with open(path, "rb") as f:
        # Label-value tuples are map keys in typed connector payloads (msgspec encodes a tuple as
        # an array): they come back as tuples, as msgspec decodes them.
        unpacker = msgpack.Unpacker(f, raw=False, strict_map_key=False, use_list=True,
                                    object_pairs_hook=tuple_keyed_dict)
        return list(unpacker)


def tuple_keyed_dict(pairs):
    return {tuple(k) if isinstance(k, list) else k: v for k, v in pairs}


# ================================================================================================
# The recorder: docs/recording.md, one method per step
# ================================================================================================


class Exposition:
    """What replay renders: the vLLM registry (steps 1-7, in registration order, as Python's
    REGISTRY would hold them), then vmetrics' own accounting families (step 8). generate_latest
    only calls collect(), so chaining two registries keeps the documented order without having to
    register the accounting families after families that appear mid-stream (step 7)."""

    def __init__(self):
        self.vllm = CollectorRegistry()
        self.vmetrics = CollectorRegistry()

    def collect(self):
        yield from self.vllm.collect()
        yield from self.vmetrics.collect()


class Recorder:
    def __init__(self, args):
        config = parse_replay_args(args)
        self.model_name = config.served_model_name
        self.engines = list(range(config.data_parallel_size))
        self.max_model_len = config.max_model_len
        self.kv_cache_metrics = config.kv_cache_metrics
        self.custom_buckets = config.custom_histogram_buckets or {}
        self.max_loras = config.max_loras if config.enable_lora else None
        spec = config.speculative_config or {}
        self.num_spec_tokens = int(spec.get("num_speculative_tokens") or 0)
        self.diffusion = config.diffusion_model
        self.connector_top, self.connector_children = configured_connector_classes(
            config.kv_transfer_config)
        self.offloading_spec = offloading_spec_name(config.kv_transfer_config)
        self.offloading_extra = offloading_extra_config(config.kv_transfer_config)
        self.offloading = None      # OffloadingFamilies once registered
        ec_connector = (config.ec_transfer_config or {}).get("ec_connector")
        self.ec_families = EC_CONNECTOR_FAMILIES.get(ec_connector, [])
        # KVTransferConfig.is_kv_consumer (vllm/config/kv_transfer.py at vllm-project/vllm
        # 9dc49464): a connector and the role kv_consumer or kv_both.
        self.gates = {
            "kv_consumer": self.connector_top is not None and (
                config.kv_transfer_config.get("kv_role") in ("kv_consumer", "kv_both")),
            "nans_in_logits": False,
        }
        self.exposition = Exposition()
        self.metrics = {}           # family name (as declared) -> prometheus_client metric
        self.registered_rows = []   # connector rows whose families exist
        self.register_startup_families()

    # ---- registration ---------------------------------------------------------------------

    def make_metric(self, family, labelnames, registry):
        # strip_created_blocks relies on this: only `_created` blocks end in `_created`.
        assert not family.name.endswith("_created"), family.name
        buckets = family.buckets
        if buckets == TOKENS_1_2_5:
            buckets = build_1_2_5_buckets(self.max_model_len)
        if BUCKET_FAMILY_OF.get(family.name) in self.custom_buckets:
            buckets = self.custom_buckets[BUCKET_FAMILY_OF[family.name]]
        if family.kind == COUNTER:
            metric = Counter(family.name, family.help, labelnames, registry=registry)
        elif family.kind == GAUGE:
            metric = Gauge(family.name, family.help, labelnames, registry=registry)
        else:
            metric = Histogram(family.name, family.help, labelnames, buckets=buckets,
                               registry=registry)
        self.metrics[family.name] = metric
        return metric

    def register_engine_family(self, family):
        """A family with model_name and engine (+ its extra label), children created eagerly:
        extra label outer loop, engine inner loop."""
        if family.extra is None:
            metric = self.make_metric(family, ["model_name", "engine"], self.exposition.vllm)
            for engine in self.engines:
                metric.labels(self.model_name, str(engine))
            return
        label, values = family.extra
        metric = self.make_metric(family, ["model_name", "engine", label], self.exposition.vllm)
        for value in values:
            for engine in self.engines:
                child = metric.labels(self.model_name, str(engine), value)
                if family.initial is not None:
                    child.set(family.initial[value])

    def register_spec_decode_families(self):
        """Step 1. The per-position counter: engine outer, positions 0..k-1 inner."""
        for family in SPEC_DECODE_FAMILIES[:3]:
            self.register_engine_family(family)
        per_pos = SPEC_DECODE_FAMILIES[3]
        metric = self.make_metric(per_pos, ["model_name", "engine", "position"],
                                  self.exposition.vllm)
        for engine in self.engines:
            for position in range(self.num_spec_tokens):
                metric.labels(self.model_name, str(engine), str(position))

    def register_connector_row(self, row):
        """A connector row's families in the row's metric order. Eager rows get one child per
        engine now; the Mooncake store's children appear on first record."""
        if row in self.registered_rows:
            return
        self.registered_rows.append(row)
        for field in row.fields:
            if row.children == EAGER:
                self.register_engine_family(field.family)
            else:
                labelnames = ["model_name", "engine"] + list(row.record_labels)
                self.make_metric(field.family, labelnames, self.exposition.vllm)

    def register_offloading(self):
        if self.offloading is None:
            self.offloading = OffloadingFamilies(
                lambda family, labelnames: self.make_metric(family, labelnames,
                                                            self.exposition.vllm),
                self.model_name, self.engines, self.offloading_spec, self.skip,
                extra_config=self.offloading_extra)
            self.offloading.register_info(self.exposition.vllm)

    def register_startup_families(self):
        if self.diffusion:                                              # 1
            for family in DIFFUSION_FAMILIES:
                self.register_engine_family(family)
        elif self.num_spec_tokens > 0:
            self.register_spec_decode_families()
        for class_name in self.connector_children:                     # 2
            row = row_for_class(class_name)
            if row is not None:
                self.register_connector_row(row)
            elif class_name == OFFLOADING:
                self.register_offloading()
        for family in self.ec_families:                                # 2b
            self.register_engine_family(family)
        for family in MFU_FAMILIES + SCHEDULER_FAMILIES:               # 3, 4
            if family.gate is None or self.gates[family.gate]:
                self.register_engine_family(family)
        if self.kv_cache_metrics:                                      # 5
            for family in KV_RESIDENCY_FAMILIES:
                self.register_engine_family(family)
        if self.max_loras is not None:                                 # 5b
            self.make_metric(LORA_REQUESTS_INFO, LORA_LABELS, self.exposition.vllm)
        self.make_metric(CACHE_CONFIG_INFO, ["engine"], self.exposition.vllm)    # 6, no child
        # 7 happens during recording (register_connector_row on first sight).
        self.make_metric(DECODE_ERRORS, ["part"], self.exposition.vmetrics)      # 8
        for part in DECODE_ERROR_PARTS:
            self.metrics[DECODE_ERRORS.name].labels(part)
        self.make_metric(UNKNOWN_ENGINE, [], self.exposition.vmetrics)
        self.make_metric(KV_PAYLOADS, ["connector", "outcome"], self.exposition.vmetrics)

    def skip(self, reason):
        """One value skipped inside a decoded message (vmetrics_wire_values_skipped_total)."""
        if WIRE_SKIPPED.name not in self.metrics:
            metric = self.make_metric(WIRE_SKIPPED, ["reason"], self.exposition.vmetrics)
            for r in WIRE_SKIP_REASONS:
                metric.labels(r)
        self.metrics[WIRE_SKIPPED.name].labels(reason).inc()

    def child(self, name, engine, *extra):
        return self.metrics[name].labels(self.model_name, str(engine), *extra)

    # ---- one EngineCoreOutputs message -------------------------------------------------------

    def record_message(self, obj, update_scheduler_stats=None):
        """`update_scheduler_stats`, when given, is the frontend's: it writes the LoRA adapters
        into the decoded SchedulerStats before they are recorded (OutputProcessor's
        update_scheduler_stats)."""
        try:
            message = decode_engine_core_outputs(obj)
        except DecodeError:
            self.metrics[DECODE_ERRORS.name].labels("message").inc()
            return
        if message.engine_index not in self.engines:
            self.metrics[UNKNOWN_ENGINE.name].inc()
            return
        # `outputs` feed the request/iteration families only in `serve`; replay does not.
        stats = message.scheduler_stats
        if stats is None:
            return
        engine = message.engine_index
        if update_scheduler_stats is not None:
            update_scheduler_stats(stats)
        self.record_scheduler_gauges(engine, stats)        # 1
        self.record_prefix_cache(engine, stats)            # 2
        self.record_external_prefix_cache(engine, stats)   # 3
        self.record_spec_decoding(engine, stats)           # 4
        self.record_kv_connector_stats(engine, stats)      # 5
        self.record_ec_connector_stats(engine, stats)      # 5b
        self.record_perf_stats(engine, stats)              # 6
        self.record_kv_cache_residency(engine, stats)      # 7
        self.record_lora_info(stats)                       # 8

    def record_scheduler_gauges(self, engine, stats):
        running, waiting = stats["num_running_reqs"], stats["num_waiting_reqs"]
        deferred = stats["num_skipped_waiting_reqs"]
        self.child("vllm:num_requests_running", engine).set(running)
        self.child("vllm:num_requests_waiting", engine).set(waiting + deferred)
        self.child("vllm:num_requests_waiting_by_reason", engine, "capacity").set(waiting)
        self.child("vllm:num_requests_waiting_by_reason", engine, "deferred").set(deferred)
        if self.gates["kv_consumer"]:
            # Every stage, every message: num_kv_fetch_reqs_by_stage.get(stage, 0).
            for stage in KV_FETCH_STAGES:
                self.child("vllm:num_requests_kv_fetch_by_stage", engine, stage).set(
                    stats["num_kv_fetch_reqs_by_stage"].get(stage, 0))
        self.child("vllm:kv_cache_usage_perc", engine).set(stats["kv_cache_usage"])

    def record_prefix_cache(self, engine, stats):
        self.child("vllm:prefix_cache_queries", engine).inc(stats["prefix_cache_stats"]["queries"])
        self.child("vllm:prefix_cache_hits", engine).inc(stats["prefix_cache_stats"]["hits"])
        self.child("vllm:prompt_tokens_cached_by_source", engine, "device").inc(
            stats["prefix_cache_stats"]["hits"])

    def record_external_prefix_cache(self, engine, stats):
        external = stats["connector_prefix_cache_stats"]
        if external is None:
            return
        self.child("vllm:external_prefix_cache_queries", engine).inc(external["queries"])
        self.child("vllm:external_prefix_cache_hits", engine).inc(external["hits"])
        for tier, tokens in external["hits_by_source"].items():
            if tier not in CACHE_HIT_SOURCES:
                self.skip("wrong_type")
                continue
            self.child("vllm:prompt_tokens_cached_by_source", engine, tier).inc(tokens)

    def record_spec_decoding(self, engine, stats):
        spec = stats["spec_decoding_stats"]
        if spec is not None and self.diffusion:
            # drafts, draft tokens, accepted tokens -> denoising steps, canvas positions,
            # committed tokens
            for family, key in zip(DIFFUSION_FAMILIES,
                                   ("num_drafts", "num_draft_tokens", "num_accepted_tokens")):
                self.child(family.name, engine).inc(spec[key])
            return
        if spec is None or self.num_spec_tokens <= 0:
            return
        self.child("vllm:spec_decode_num_drafts", engine).inc(spec["num_drafts"])
        self.child("vllm:spec_decode_num_draft_tokens", engine).inc(spec["num_draft_tokens"])
        self.child("vllm:spec_decode_num_accepted_tokens", engine).inc(
            spec["num_accepted_tokens"])
        per_pos = spec["num_accepted_tokens_per_pos"]
        for position in range(self.num_spec_tokens):
            accepted = per_pos[position] if position < len(per_pos) else 0
            self.child("vllm:spec_decode_num_accepted_tokens_per_pos", engine,
                       str(position)).inc(accepted)

    def record_perf_stats(self, engine, stats):
        perf = stats["perf_stats"]
        if perf is None:
            return
        values = (perf["num_flops_per_gpu"], perf["num_read_bytes_per_gpu"],
                  perf["num_write_bytes_per_gpu"])
        if all(value == 0 for value in values):
            return
        for family, value in zip(MFU_FAMILIES, values):
            self.child(family.name, engine).inc(value)

    def record_lora_info(self, stats):
        """docs/recording.md, scheduler_stats item 8: the adapter names (dict keys, in order)
        comma-joined; set to time.time()."""
        if self.max_loras is None:
            return
        self.metrics[LORA_REQUESTS_INFO.name].labels(
            str(self.max_loras),
            ",".join(stats["waiting_lora_adapters"].keys()),
            ",".join(stats["running_lora_adapters"].keys())).set_to_current_time()

    def record_kv_cache_residency(self, engine, stats):
        if not self.kv_cache_metrics:
            return
        for event in stats["kv_cache_eviction_events"]:
            self.child("vllm:kv_block_lifetime_seconds", engine).observe(
                event["lifetime_seconds"])
            self.child("vllm:kv_block_idle_before_evict_seconds", engine).observe(
                event["idle_seconds"])
            for gap in event["reuse_gaps_seconds"]:
                self.child("vllm:kv_block_reuse_gap_seconds", engine).observe(gap)

    # ---- step 5b: ec_connector_stats (docs/recording.md "ec_connector_stats") ------------------

    def record_ec_connector_stats(self, engine, stats):
        """{types: name -> "counter" | "histogram", data: name -> number | list}. Only with a
        configured EC connector that has families. What does not fit is skipped and counted as
        wrong_type: a payload, `types` or `data` that is not a map, a `types` entry that is not
        str -> str, a `data` entry with a non-str key, no type, an unknown type, a value of the
        wrong shape (a histogram's non-number samples one by one), a name the connector does not
        register or whose family has the other type."""
        payload = stats["ec_connector_stats"]
        if payload is None or not self.ec_families:
            return
        if not isinstance(payload, dict):
            self.skip("wrong_type")
            return
        # A missing key is an empty map; nil is a value of the wrong type.
        types, data = payload.get("types", {}), payload.get("data", {})
        usable = True
        for part in (types, data):
            if not isinstance(part, dict):
                self.skip("wrong_type")
                usable = False
        if not usable:
            return
        known_types = {}
        for name, kind in types.items():
            if isinstance(name, str) and isinstance(kind, str):
                known_types[name] = kind
            else:
                self.skip("wrong_type")
        families = {family.name: family for family in self.ec_families}
        for name, value in data.items():
            if not isinstance(name, str):
                self.skip("wrong_type")
                continue
            kind = known_types.get(name)
            if kind == COUNTER:
                if not is_number(value):
                    self.skip("wrong_type")
                    continue
                samples = None
            elif kind == HISTOGRAM:
                if not isinstance(value, list):
                    self.skip("wrong_type")
                    continue
                samples = []
                for sample in value:
                    if is_number(sample):
                        samples.append(sample)
                    else:
                        self.skip("wrong_type")
            else:
                self.skip("wrong_type")
                continue
            family = families.get(name)
            if family is None or family.kind != kind:
                self.skip("wrong_type")
                continue
            child = self.child(name, engine)
            if samples is None:
                if value != value:
                    self.skip("nan_increment")
                elif value < 0:
                    self.skip("negative_increment")
                else:
                    child.inc(value)
                continue
            for sample in samples:
                if sample != sample:
                    self.skip("nan_observation")
                elif sample in (float("inf"), float("-inf")):
                    self.skip("infinite_observation")
                else:
                    child.observe(sample)

    # ---- step 5: kv_connector_stats (docs/recording.md "kv_connector_stats") ------------------

    def record_kv_connector_stats(self, engine, stats):
        payload = stats["kv_connector_stats"]
        if payload is None or payload == {}:        # an empty map carries no payload
            return
        if self.connector_top == MULTI_CONNECTOR:
            self.record_multi_payload(engine, payload)
        elif self.connector_top is not None:
            self.record_payload(engine, self.connector_top, payload)
        else:
            kind = infer_connector(payload)
            if kind == MULTI_CONNECTOR:
                self.record_multi_payload(engine, payload)
            else:
                self.record_payload(engine, kind, payload)

    def record_multi_payload(self, engine, payload):
        """Children keyed by class name; a child {"data": {...}} (old shape) is unwrapped."""
        for class_name, child in payload.items():
            if isinstance(child, dict) and list(child) == ["data"] and isinstance(child["data"],
                                                                                  dict):
                child = child["data"]
            self.record_payload(engine, class_name, child)

    def count_payload(self, class_name, outcome):
        self.metrics[KV_PAYLOADS.name].labels(class_name, outcome).inc()

    def record_payload(self, engine, class_name, payload):
        if class_name == OFFLOADING and isinstance(payload, dict):
            self.register_offloading()  # no-op if configured; step 7 (first sight) otherwise
            self.offloading.record(engine, payload)
            self.count_payload(class_name, "recorded")
            return
        row = row_for_class(class_name)
        if row is None:
            self.count_payload(class_name, "unknown_connector")
            return
        if not isinstance(payload, dict):
            self.count_payload(class_name, "malformed")
            return
        self.register_connector_row(row)   # no-op if configured; step 7 (first sight) otherwise
        if row is MOONCAKE_STORE:
            self.record_mooncake_store(engine, payload)
        else:
            self.record_list_fields(engine, row, payload)
        self.count_payload(class_name, "recorded")

    def record_list_fields(self, engine, row, payload):
        """Extra keys ignored; a missing key is an empty list; a wrong type skips the field."""
        for field in row.fields:
            value = payload.get(field.key, [] if field.how != ADD_SCALAR else 0)
            child = self.child(field.family.name, engine)
            if field.how == ADD_SCALAR:
                if is_number(value):
                    child.inc(value)
                else:
                    self.skip("wrong_type")
                continue
            if not isinstance(value, list) or not all(is_number(x) for x in value):
                self.skip("wrong_type")
                continue
            for element in value:
                if field.how == OBSERVE_EACH:
                    child.observe(element)
                else:
                    child.inc(element)

    def record_mooncake_store(self, engine, payload):
        """Per record: the five children of (engine, operation, status) — created together on
        first use — get duration observed, +1 operation, + keys/bytes/failed keys. An operation
        whose value is not a list is a field of the wrong type and skipped. Records themselves are
        taken as well-formed (a KeyError here means a scenario strayed outside the contract:
        docs/recording.md does not say what a broken record does)."""
        time_family, ops_family, keys_family, bytes_family, failed_family = (
            field.family.name for field in MOONCAKE_STORE.fields)
        for operation, records in payload.items():
            if not isinstance(records, list):
                self.skip("wrong_type")
                continue
            for record in records:
                status = str(record.get("status", "ok"))
                children = [self.child(name, engine, operation, status)
                            for name in (time_family, ops_family, keys_family, bytes_family,
                                         failed_family)]
                children[0].observe(float(record["duration_seconds"]))
                children[1].inc()
                children[2].inc(int(record["num_keys"]))
                children[3].inc(int(record.get("num_bytes", 0)))
                children[4].inc(int(record.get("num_failed_keys", 0)))


def infer_connector(payload):
    """Only when no connector is configured, in this order (docs/recording.md): Mooncake P2P
    (has num_failed_recvs), NIXL (has post_duration), Mooncake store (every key an operation with
    a list of records), Offloading (types and data), then a MultiConnector payload (keys are class
    names, values maps). Returns the class name the payload is counted under.

    Shapes this generator cannot turn into a golden raise instead of guessing: Offloading has no
    row here, and the contract names no `connector` label for a payload of no known shape."""
    if not isinstance(payload, dict):
        raise NotImplementedError("an unconfigured kv_connector_stats that is not a map")
    if "num_failed_recvs" in payload:
        return "MooncakeConnector"
    if "post_duration" in payload:
        return "NixlConnector"
    if all(isinstance(v, list) and all(isinstance(r, dict) for r in v) for v in payload.values()):
        return "MooncakeStoreConnector"
    if "types" in payload and "data" in payload:
        raise NotImplementedError("Offloading payloads are not modelled by gen_goldens.py")
    if all(isinstance(v, dict) for v in payload.values()):
        return MULTI_CONNECTOR
    raise NotImplementedError(f"a payload of no known shape: {sorted(payload)}")


# ================================================================================================
# Rendering
# ================================================================================================

VARIANT_ARGS = {"text": [], "openmetrics": ["--format", "openmetrics"],
                "no_created": ["--disable-created-series"]}
VARIANT_SUFFIX = {"text": ("", ".txt"), "openmetrics": ("", ".om"),
                  "no_created": ("_no_created", ".txt")}


def replay_args(scenario, variant):
    return (scenario.args + VARIANT_ARGS[variant]
            + ["--created-timestamp", repr(CREATED_TIMESTAMP)])


def input_path(scenario):
    return f"{INPUT_DIR}/{scenario.name}.msgpack"


def expected_path(scenario, variant):
    suffix, ext = VARIANT_SUFFIX[variant]
    return f"{GOLDEN_DIR}/{scenario.name}{suffix}{ext}"


def record_and_render(scenario, variant):
    """Decode the scenario's input file, record it, render it. Every child is created inside the
    patch, so each `_created` is CREATED_TIMESTAMP."""
    args = replay_args(scenario, variant)
    with mock.patch("time.time", return_value=CREATED_TIMESTAMP):
        recorder = Recorder(args)
        for obj in read_messages(os.path.join(REPO, input_path(scenario))):
            recorder.record_message(obj)
    if parse_replay_args(args).format == "openmetrics":
        return generate_openmetrics(recorder.exposition)
    return generate_text(recorder.exposition)


def render_without_created(scenario):
    """prometheus_client 0.16 has no disable_created_metrics(), but honours its own switch, the
    environment variable PROMETHEUS_DISABLE_CREATED_SERIES, read once at import. So render in a
    child interpreter that has it set."""
    env = dict(os.environ, PROMETHEUS_DISABLE_CREATED_SERIES="True")
    result = subprocess.run([sys.executable, os.path.abspath(__file__), "--render-no-created",
                             scenario.name], env=env, stdout=subprocess.PIPE, check=True)
    return result.stdout


def strip_created_blocks(text):
    """The text rendering minus every `<family>_created` gauge block: HELP, TYPE and samples whose
    metric name ends in `_created` (no real family name does; asserted by the caller)."""
    kept = []
    for line in text.decode().splitlines(keepends=True):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            name = line.split(" ")[2]
        else:
            name = line.split("{")[0].split(" ")[0]
        if not name.endswith("_created"):
            kept.append(line)
    return "".join(kept).encode()


# ================================================================================================
# Goldens of the newest wire generation (tests/fixtures/wire_generations/)
# ================================================================================================
# The gnewest-20260924 captures (tools/gen_wire_newest.py) mirror the g20260814-6adad087 ones
# message for message, adding only the newest keys. The newest frontend prints, for them, what
# the 6adad087 frontend printed (its golden, produced by vLLM's own Python code) plus the newest
# families. So each newest golden is the 6adad087 golden with those families, recorded here
# from the newest capture with the Recorder above and rendered by prometheus_client, inserted
# where PrometheusStatLogger registers them (vllm/v1/metrics/loggers.py at vllm-project/vllm
# 13cbd441). vllm:corrupted_requests stays out: the goldens have the environment-gated
# families off.

WIRE_DIR = "tests/fixtures/wire_generations"
NEWEST_GENERATION = "gnewest-20260924"
NEWEST_BASE = "g20260814-6adad087"
WIRE_CREATED_TIMESTAMP = 1767225600.0   # the wire goldens' pinned `_created`
# (family, the family it is registered after)
NEWEST_FAMILY_ANCHORS = [
    # The EC connector's families follow the KV connector's (NIXL here), in the row's order.
    ("vllm:ec_cpu_save_bytes", "vllm:nixl_num_kv_expired_reqs"),
    ("vllm:ec_cpu_save_time_seconds", "vllm:ec_cpu_save_bytes"),
    ("vllm:ec_cpu_load_bytes", "vllm:ec_cpu_save_time_seconds"),
    ("vllm:ec_cpu_load_time_seconds", "vllm:ec_cpu_load_bytes"),
    ("vllm:ec_cpu_save_size_bytes", "vllm:ec_cpu_load_time_seconds"),
    ("vllm:ec_cpu_load_size_bytes", "vllm:ec_cpu_save_size_bytes"),
    ("vllm:num_requests_kv_fetch_by_stage", "vllm:num_requests_waiting_by_reason"),
    ("vllm:prompt_tokens_cached_by_source", "vllm:prompt_tokens_cached"),
    ("vllm:request_num_preemptions", "vllm:request_decode_time_seconds"),
]
PREEMPTED_EVENT = 3


class OneFamily:
    """A collector of one prometheus_client metric, for rendering it alone."""

    def __init__(self, metric):
        self.metric = metric

    def collect(self):
        return self.metric.collect()


def line_name(line):
    if line.startswith("# HELP ") or line.startswith("# TYPE "):
        return line.split(" ")[2]
    return line.split("{")[0].split(" ")[0]


def insert_after_family(text, anchor, block):
    """`block` inserted after the last line of family `anchor` (its samples and, in the text
    format, its separate `_created` block)."""
    names = {anchor + suffix for suffix in ("", "_total", "_created", "_bucket", "_count",
                                             "_sum")}
    lines = text.splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if line_name(line) in names)
    return "".join(lines[:last + 1]) + block + "".join(lines[last + 1:])


def replay_newest_case(case):
    """The Recorder fed with the case's messages, and the request_num_preemptions observations
    of the frontend that sent the sidecar's requests (each finished request: its PREEMPTED
    events). Returns the recorder."""
    config = case["configuration"]
    args = ["--served-model-name", config["served_model_name"],
            "--data-parallel-size", str(config["data_parallel_size"]),
            "--max-model-len", str(config["max_model_len"])]
    if config["kv_transfer_config"] is not None:
        args += ["--kv-transfer-config", json.dumps(config["kv_transfer_config"])]
    if config.get("ec_transfer_config") is not None:
        args += ["--ec-transfer-config", json.dumps(config["ec_transfer_config"])]
    recorder = Recorder(args)
    sidecar = []
    if case["requests"]:
        with open(os.path.join(REPO, WIRE_DIR, case["requests"])) as f:
            sidecar = [json.loads(line) for line in f if line.strip()]
    live = {}                       # request id -> PREEMPTED events so far
    pending = list(sidecar)
    messages = read_messages(os.path.join(REPO, WIRE_DIR, case["msgpack"]))
    for number, obj in enumerate(messages, start=1):
        while pending and not ("message" in pending[0] and pending[0]["message"] > number):
            line = pending.pop(0)
            if "request_id" in line:
                live.setdefault(line["request_id"], 0)
            for request_id in line.get("abort", []):
                live.pop(request_id, None)
            if line.get("message") == number:
                break
        if len(obj) > 4 and obj[4] is not None:
            continue                # a utility reply: the output handler records nothing
        recorder.record_message(obj)
        engine = obj[0]
        for output in obj[1]:
            if output[0] not in live:
                continue
            for event in output[7] or []:
                if event["type"] == PREEMPTED_EVENT:
                    live[output[0]] += 1
            if output[5] is not None:
                recorder.child("vllm:request_num_preemptions", engine).observe(
                    live.pop(output[0]))
    return recorder


def golden_value(text, sample):
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def check_newest_families(recorder, base_text, engines, model):
    """What the base golden says must hold for the added families: one preemption count per
    finished request, and the cache tiers sum to the local plus the external prefix-cache
    hits."""
    preemptions = recorder.metrics["vllm:request_num_preemptions"]
    cached = recorder.metrics["vllm:prompt_tokens_cached_by_source"]
    for engine in engines:
        labels = f'{{engine="{engine}",model_name="{model}"}}'
        finished = golden_value(base_text, "vllm:e2e_request_latency_seconds_count" + labels)
        observed = sum(b.get() for b in preemptions.labels(model, str(engine))._buckets)
        assert observed == finished, (engine, observed, finished)
        hits = (golden_value(base_text, "vllm:prefix_cache_hits_total" + labels) +
                golden_value(base_text, "vllm:external_prefix_cache_hits_total" + labels))
        tiers = sum(cached.labels(model, str(engine), source)._value.get()  # noqa: SLF001
                    for source in CACHE_HIT_SOURCES)
        assert tiers == hits, (engine, tiers, hits)


def write_newest_wire_goldens():
    manifest_path = os.path.join(REPO, WIRE_DIR, "manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    cases = {c["case"]: c for c in manifest["cases"]}
    for case in manifest["cases"]:
        if case["generation"] != NEWEST_GENERATION:
            continue
        base = cases[case["derived_from"]]
        assert base["generation"] == NEWEST_BASE, base["case"]
        with mock.patch("time.time", return_value=WIRE_CREATED_TIMESTAMP):
            recorder = replay_newest_case(case)
        config = case["configuration"]
        with open(os.path.join(REPO, WIRE_DIR, base["golden_text"])) as f:
            base_text = f.read()
        check_newest_families(recorder, base_text, range(config["data_parallel_size"]),
                              config["served_model_name"])
        for key, suffix, render in (("golden_text", ".golden.txt", generate_text),
                                    ("golden_openmetrics", ".golden.om.txt",
                                     generate_openmetrics)):
            with open(os.path.join(REPO, WIRE_DIR, base[key])) as f:
                text = f.read()
            for family, anchor in NEWEST_FAMILY_ANCHORS:
                if family not in recorder.metrics:
                    continue        # its gate is closed for this case
                block = render(OneFamily(recorder.metrics[family])).decode()
                block = block[:-len("# EOF\n")] if block.endswith("# EOF\n") else block
                text = insert_after_family(text, anchor, block)
            case[key] = case["case"] + suffix
            write(f"{WIRE_DIR}/{case[key]}", text.encode())
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


# ================================================================================================
# Main
# ================================================================================================


def write(relative_path, data):
    path = os.path.join(REPO, relative_path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def tsv_line(name, scenario, variant):
    args = replay_args(scenario, variant)
    for arg in args:
        assert " " not in arg and "\t" not in arg, f"{name}: argument with a space: {arg!r}"
    return "\t".join([name, input_path(scenario), expected_path(scenario, variant),
                      " ".join(args)]) + "\n"


def manifest():
    return (
        "# Everything in tests/golden/ is generated: do not edit it by hand; change the\n"
        "# generator and run tools/regen.sh. The replay goldens (<scenario>.txt, <scenario>.om,\n"
        "# <scenario>_no_created.txt, inputs/<scenario>.msgpack, scenarios.tsv) and this file\n"
        "# come from tools/gen_goldens.py, with:\n"
        f"python\t{platform.python_version()} ({sys.executable})\n"
        f"msgpack\t{'.'.join(map(str, msgpack.version))}\n"
        f"prometheus_client\t{prometheus_version()}\n"
        f"vllm_reference_commit\t{VLLM_REFERENCE_COMMIT}\n"
        f"created_timestamp\t{CREATED_TIMESTAMP!r}\n"
        "regenerate\ttools/regen.sh   (or: /usr/bin/python3 tools/gen_goldens.py)\n")


def prometheus_version():
    try:
        from importlib.metadata import version
        return version("prometheus_client")
    except Exception:  # pragma: no cover - Debian ships the dist-info, keep a readable fallback
        return getattr(prometheus_client, "__version__", "unknown")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--render-no-created":
        scenario = next(s for s in SCENARIOS if s.name == sys.argv[2])
        sys.stdout.buffer.write(record_and_render(scenario, "no_created"))
        return
    if os.environ.get("PROMETHEUS_DISABLE_CREATED_SERIES"):
        sys.exit("gen_goldens.py: unset PROMETHEUS_DISABLE_CREATED_SERIES (it would drop "
                 "_created from every golden)")
    tsv = ["# name\tinput\texpected\treplay args (space-separated); generated by "
           "tools/gen_goldens.py\n"]
    for scenario in SCENARIOS:
        write(input_path(scenario), b"".join(pack(m) for m in scenario.messages))
        text = record_and_render(scenario, "text")
        write(expected_path(scenario, "text"), text)
        tsv.append(tsv_line(scenario.name, scenario, "text"))
        for variant in scenario.variants:
            if variant == "no_created":
                rendered = render_without_created(scenario)
                assert rendered == strip_created_blocks(text), \
                    f"{scenario.name}: PROMETHEUS_DISABLE_CREATED_SERIES rendering differs " \
                    "from the text rendering minus its _created blocks"
            else:
                rendered = record_and_render(scenario, variant)
            write(expected_path(scenario, variant), rendered)
            tsv.append(tsv_line(f"{scenario.name}_{variant}", scenario, variant))
    write(f"{GOLDEN_DIR}/scenarios.tsv", "".join(tsv).encode())
    write(f"{GOLDEN_DIR}/MANIFEST", manifest().encode())
    write_newest_wire_goldens()


if __name__ == "__main__":
    main()
