#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the msgpack fixtures the protocol tests decode.

A peer we did not write (python3-msgpack) encodes every fixture, so the C++ decoder is checked
against bytes it had no hand in producing. The classes below mirror vLLM's wire types by hand,
at vLLM commit 6adad08767583f52eb4d2122111af0bf638ed5e6 plus the newer keys called out per type,
following msgspec's encoding rules (docs/design.md §4.1, docs/wire_format.md):

  * msgspec Structs with array_like=True (EngineCoreOutputs, EngineCoreOutput, UtilityOutput)
    travel as arrays of ALL their positions (omit_defaults has no effect on array-like structs);
  * dataclasses (SchedulerStats, PrefixCacheStats, PrefillStats, ...) and the map-encoded
    Struct EngineCoreEvent travel as maps with every field, in definition order;
  * floats are always float64; ints take the smallest msgpack width;
  * NamedTuples (LogprobsLists, LogprobsTensors) are arrays;
  * tensors are [dtype, shape, data], data being ext type 3 (raw bytes) below the zero-copy
    threshold (VLLM_MSGPACK_ZERO_COPY_THRESHOLD, 256 bytes) or an int index into the aux frames
    (frame 0 is the body; the first aux buffer is index 1).

Outputs, in tests/fixtures/:
  <name>.msgpack  single-frame messages (frame 0 only), possibly several concatenated;
  <name>.frames   one multi-frame message as a msgpack array of bin frames [frame0, aux1, ...]
                  (a container for fixtures only; on the wire these are ZeroMQ frames);
  MANIFEST        generator versions, the vLLM commit, and the regeneration command;
  README.md       one line per fixture saying what it holds.
and seeds the decode fuzzer's corpus (fuzz/corpus/decode/seed-*).

Run: /usr/bin/python3 tools/gen_fixtures.py   (Debian's python3-msgpack; no other dependency)
Unit tests read only the committed files; nothing runs Python at test time.
"""

import dataclasses
import enum
import os
import platform
import struct
import sys
from collections import namedtuple
from dataclasses import dataclass, field
from typing import Any

import msgpack

import wire_layouts  # tools/: every generation's layout, from vmetrics' tables

VLLM_COMMIT = "6adad08767583f52eb4d2122111af0bf638ed5e6"
VLLM_GENERATION = "g20260814-6adad087"  # the wire generation of that commit
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_DIR = os.path.join(ROOT, "tests", "fixtures")
CORPUS_DIR = os.path.join(ROOT, "fuzz", "corpus", "decode")
ZERO_COPY_THRESHOLD = 256  # VLLM_MSGPACK_ZERO_COPY_THRESHOLD default
EXT_PICKLE = 1
EXT_CLOUDPICKLE = 2
EXT_RAW_VIEW = 3

# A field that newer engines send and older ones do not: left out of the map when OMIT.
OMIT = object()
# A positional field with no default (msgspec raises if it is missing).
REQUIRED = object()


# --- Enums (vllm/v1/engine/__init__.py) -------------------------------------------------------

class FinishReason(enum.IntEnum):
    STOP = 0
    LENGTH = 1
    ABORT = 2
    ERROR = 3
    REPETITION = 4


class EngineCoreEventType(enum.IntEnum):
    QUEUED = 1
    SCHEDULED = 2
    PREEMPTED = 3


# --- Tensors (vllm/v1/serial_utils.py) -------------------------------------------------------

class Tensor:
    """A numpy array or torch tensor: dtype string, shape, C-contiguous little-endian bytes."""

    def __init__(self, dtype, shape, data):
        self.dtype, self.shape, self.data = dtype, list(shape), bytes(data)


def i8(values):
    return struct.pack("<%dq" % len(values), *values)


def i4(values):
    return struct.pack("<%di" % len(values), *values)


def f4(values):
    return struct.pack("<%df" % len(values), *values)


def flat(rows):
    return [v for row in rows for v in row]


# --- Array-like msgspec Structs ---------------------------------------------------------------

class ArrayStruct:
    """msgspec Struct with array_like=True: every position, in declaration order.

    `_truncate=n` keeps only the first n positions (an older or hand-written encoder);
    `_extra=[...]` appends positions a newer engine would send.
    """

    FIELDS = ()

    def __init__(self, _truncate=None, _extra=(), **kwargs):
        names = [n for n, _ in self.FIELDS]
        unknown = set(kwargs) - set(names)
        assert not unknown, unknown
        for name, default in self.FIELDS:
            value = kwargs.get(name, default)
            assert value is not REQUIRED, "%s.%s is required" % (type(self).__name__, name)
            setattr(self, name, value)
        self._truncate = _truncate
        self._extra = list(_extra)

    def to_wire(self):
        values = [getattr(self, n) for n, _ in self.FIELDS]
        if self._truncate is not None:
            values = values[: self._truncate]
        return values + self._extra


class EngineCoreOutput(ArrayStruct):
    FIELDS = (
        ("request_id", REQUIRED),
        ("new_token_ids", REQUIRED),
        ("new_logprobs", None),
        ("new_prompt_logprobs_tensors", None),
        ("pooling_output", None),
        ("finish_reason", None),
        ("stop_reason", None),
        ("events", None),
        ("kv_transfer_params", None),
        ("ec_transfer_params", None),
        ("trace_headers", None),
        ("prefill_stats", None),
        ("routed_experts", None),
        ("num_nans_in_logits", 0),
        ("mm_cache_miss_hashes", None),
        ("new_sampling_mask", None),
    )


class EngineCoreOutputs(ArrayStruct):
    FIELDS = (
        ("engine_index", 0),
        ("outputs", []),
        ("scheduler_stats", None),
        ("timestamp", 0.0),
        ("utility_output", None),
        ("finished_requests", None),
        ("wave_complete", None),
        ("start_wave", None),
    )


class UtilityOutput(ArrayStruct):
    FIELDS = (("call_id", REQUIRED), ("failure_message", None), ("result", None))


# UtilityResult travels as [type_info, value]; type_info is nil unless insecure serialization.
def utility_result(value):
    return [None, value]


# --- NamedTuples (arrays) ---------------------------------------------------------------------

LogprobsLists = namedtuple(
    "LogprobsLists",
    ["logprob_token_ids", "logprobs", "sampled_token_ranks", "cu_num_generated_tokens"],
)
LogprobsTensors = namedtuple(
    "LogprobsTensors", ["logprob_token_ids", "logprobs", "selected_token_ranks"]
)


# --- Map-encoded types (dataclasses; EngineCoreEvent is a map-encoded Struct) -------------------

@dataclass
class EngineCoreEvent:
    type: EngineCoreEventType
    timestamp: float


@dataclass
class PrefillStats:
    num_prompt_tokens: int = 0
    num_computed_tokens: int = 0
    num_cached_tokens: int = 0
    num_local_cached_tokens: int = 0
    num_external_cached_tokens: int = 0
    num_cache_creation_tokens: int = 0


@dataclass
class SchedulerIterationDetails:
    iteration_index: int
    num_ctx_requests: int
    num_ctx_tokens: int
    num_generation_requests: int
    num_generation_tokens: int
    elapsed_ms: float
    num_encoder_inputs: int = 0
    num_encoder_output_tokens: int = 0
    is_dummy: bool = False


@dataclass
class PrefixCacheStats:  # BaseCacheStats fields first
    reset: bool = False
    requests: int = 0
    queries: int = 0
    hits: int = 0
    preempted_requests: int = 0
    preempted_queries: int = 0
    preempted_hits: int = 0
    hits_by_source: Any = OMIT  # newer engines: dict[CacheHitSource(str), int]


@dataclass
class KVCacheEvictionEvent:
    lifetime_seconds: float
    idle_seconds: float
    reuse_gaps_seconds: tuple


@dataclass
class SpecDecodingStats:
    num_spec_tokens: int
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_accepted_tokens_per_pos: list = field(default_factory=list)
    num_draft_tokens_per_pos: list = field(default_factory=list)


@dataclass
class CUDAGraphStat:
    num_unpadded_tokens: int
    num_padded_tokens: int
    num_paddings: int
    runtime_mode: str


@dataclass
class DebugPerfStats:
    calc_duration: float = 0.0
    num_prefill_requests: int = 0
    num_decode_requests: int = 0
    context_breakdown: Any = None
    num_flops_per_gpu_breakdown: Any = None
    num_read_bytes_per_gpu_breakdown: Any = None
    num_write_bytes_per_gpu_breakdown: Any = None


@dataclass
class PerfStats:
    num_flops_per_gpu: int = 0
    num_read_bytes_per_gpu: int = 0
    num_write_bytes_per_gpu: int = 0
    debug_stats: Any = None


@dataclass
class EngineSleepState:  # newer engines (sleep telemetry)
    scheduler_paused: bool = False
    weights: str = "resident"
    kv_cache: str = "resident"


# SchedulerStats: the keys of VLLM_COMMIT's generation in definition order, at their defaults
# (vmetrics' wire table, tools/wire_layouts.py), then the sleep-telemetry keys of newer engines,
# left out of the map unless set.
SchedulerStats = dataclasses.make_dataclass(
    "SchedulerStats",
    [(key, Any, field(default_factory=factory))
     for key, factory in wire_layouts.scheduler_stats_factories(
         VLLM_GENERATION, {"PrefixCacheStats": PrefixCacheStats})]
    + [("sleep_state", Any, field(default=OMIT)),        # newer engines
       ("sleep_state_only", Any, field(default=OMIT))])  # newer engines


SCHEDULER_STATS_KEYS = [f.name for f in dataclasses.fields(SchedulerStats)]


# --- Encoder ----------------------------------------------------------------------------------

class Encoder:
    """vLLM's MsgpackEncoder, reduced to what the output path uses."""

    def __init__(self, threshold=ZERO_COPY_THRESHOLD):
        self.threshold = threshold
        self.aux = []

    def _default(self, obj):
        if isinstance(obj, ArrayStruct):
            return obj.to_wire()
        if dataclasses.is_dataclass(obj):
            return {
                f.name: getattr(obj, f.name)
                for f in dataclasses.fields(obj)
                if getattr(obj, f.name) is not OMIT
            }
        if isinstance(obj, Tensor):
            # serial_utils._encode_ndarray: small or 0-d buffers inline as ext 3, the rest out
            # of band with their frame index.
            if len(obj.data) < self.threshold or not obj.shape:
                data = msgpack.ExtType(EXT_RAW_VIEW, obj.data)
            else:
                self.aux.append(obj.data)
                data = len(self.aux)
            return [obj.dtype, obj.shape, data]
        if isinstance(obj, (set, frozenset)):
            return sorted(obj)
        raise TypeError("cannot encode %r" % (obj,))

    def encode(self, obj):
        self.aux = []
        body = msgpack.packb(obj, default=self._default, use_bin_type=True)
        return [body] + self.aux


def encode(obj, threshold=ZERO_COPY_THRESHOLD):
    return Encoder(threshold).encode(obj)


def body(obj):
    frames = encode(obj)
    assert len(frames) == 1, "expected a single-frame message"
    return frames[0]


# --- Shared payloads --------------------------------------------------------------------------

# The three kv_connector_stats payloads of vLLM's Rust fixture script
# (rust/src/engine-core-client/src/tests/python_compat.py in vllm-project/vllm).
NIXL = {
    "transfer_duration": [0.01, 0.02],
    "post_duration": [0.001, 0.002],
    "bytes_transferred": [4096, 8192],
    "num_descriptors": [2, 4],
    "num_failed_transfers": [],
    "num_failed_notifications": [],
    "num_kv_expired_reqs": [1],
}
MOONCAKE_STORE = {
    "load_get": [
        {"duration_seconds": 0.05, "num_keys": 3, "num_bytes": 1024, "status": "ok",
         "num_failed_keys": 0}
    ]
}
UNSUPPORTED_CHILD = {"sample_count": 1}

# Richer store payload (MooncakeStoreConnectorStats, mooncake/store/metrics.py): three operations,
# one partial failure.
MOONCAKE_STORE_3OPS = {
    "load_get": [
        {"duration_seconds": 0.02, "num_keys": 4, "num_bytes": 16777216, "status": "ok",
         "num_failed_keys": 0}
    ],
    "save_put": [
        {"duration_seconds": 0.31, "num_keys": 8, "num_bytes": 33554432,
         "status": "partial_failure", "num_failed_keys": 1}
    ],
    "lookup_exists": [
        {"duration_seconds": 0.0004, "num_keys": 8, "num_bytes": 0, "status": "ok",
         "num_failed_keys": 0}
    ],
}
# MooncakeKVConnectorStats.data (vllm/distributed/kv_transfer/kv_connector/v1/mooncake/stats.py in
# vllm-project/vllm).
MOONCAKE_P2P = {
    "transfer_duration": [0.004],
    "bytes_transferred": [2097152],
    "num_descriptors": [16],
    "num_failed_transfers": [],
    "num_failed_recvs": [1],
    "num_kv_expired_reqs": [],
}
# NIXL after PR #55854 (num_failed_handshakes) and the newest test file
# (num_notifications_after_expiry).
NIXL_EXTRA_KEYS = dict(NIXL, num_failed_handshakes=[1, 1], num_notifications_after_expiry=[1])
# OffloadingConnector's typed payload: label-value tuples as keys; () is the unlabelled entry.
OFFLOADING = {
    "types": {
        "vllm:kv_offload_store_bytes": "counter",
        "vllm:kv_offload_store_size": "histogram",
    },
    "data": {
        "vllm:kv_offload_store_bytes": {(): 4194304},
        "vllm:kv_offload_store_size": {(): [4194304]},
    },
    "info": None,
}
# The same with its config facts (`info`, OffloadingManager.config_info() as the CPU manager
# fills it) and both directions, and three hostile variants of `info`: a value of a type str()
# does not print as a fact, a key that is not a string, an `info` that is not a map.
OFFLOADING_INFO = {
    "types": {
        "vllm:kv_offload_load_bytes": "counter",
        "vllm:kv_offload_load_time": "counter",
        "vllm:kv_offload_load_size": "histogram",
        "vllm:kv_offload_store_bytes": "counter",
    },
    "data": {
        "vllm:kv_offload_load_bytes": {(): 2097152},
        "vllm:kv_offload_load_time": {(): 0.001},
        "vllm:kv_offload_load_size": {(): [2097152]},
        "vllm:kv_offload_store_bytes": {(): 1048576},
    },
    "info": {"cpu_num_chunks": 4096, "cpu_blocks_per_chunk": 1,
             "cpu_kv_bytes_per_chunk": 2097152, "cpu_capacity_tokens_at_max_len": "None"},
}
OFFLOADING_HOSTILE_INFO = [
    dict(OFFLOADING_INFO, info={"cpu_num_chunks": [1, 2], "cpu_blocks_per_chunk": 1}),
    dict(OFFLOADING_INFO, info={7: "seven", "cpu_num_chunks": 4096}),
    dict(OFFLOADING_INFO, info=3),
]
HF3FS = {
    "save_duration": [0.02, 0.03],
    "load_duration": [0.01],
    "num_failed_save": 1,
    "num_failed_load": 0,
    "num_transfer_task": 3,
}
HISPARSE = {"cache_hits": [5, 3], "cache_misses": [1], "host_to_device_bytes": [65536]}
# A third-party connector that describes itself (_metrics_descriptor, docs/design.md §3.6).
ACME_DESCRIPTOR = {
    "descriptor_version": 1,
    "connector_id": "AcmeConnector",
    "metrics": [
        {"name": "vllm:acme_hits", "type": "counter", "documentation": "Acme cache hits.",
         "samples_path": "hits", "sample_kind": "inc_by_sum_u64"}
    ],
}
ACME = {"_metrics_descriptor": ACME_DESCRIPTOR, "hits": [2, 3]}


def stats_with_kv(payload, **kw):
    """An EngineCoreOutputs carrying only SchedulerStats with this kv_connector_stats."""
    stats = SchedulerStats(num_running_reqs=1, kv_connector_stats=payload, **kw)
    return EngineCoreOutputs(scheduler_stats=stats, timestamp=10.0)


def full_scheduler_stats():
    """Every SchedulerStats key with a non-default value, including the newer ones."""
    return SchedulerStats(
        num_running_reqs=3,
        num_waiting_reqs=2,
        num_skipped_waiting_reqs=1,
        step_counter=70000,  # uint32 on the wire
        current_wave=4,
        kv_cache_usage=0.375,
        iteration_details=SchedulerIterationDetails(
            iteration_index=12, num_ctx_requests=1, num_ctx_tokens=128,
            num_generation_requests=2, num_generation_tokens=2, elapsed_ms=3.5,
            num_encoder_inputs=1, num_encoder_output_tokens=64, is_dummy=False),
        prefix_cache_stats=PrefixCacheStats(
            reset=False, requests=2, queries=256, hits=128, preempted_requests=1,
            preempted_queries=16, preempted_hits=8),
        connector_prefix_cache_stats=PrefixCacheStats(
            reset=True, requests=1, queries=128, hits=64, hits_by_source={"host": 16, "p2p": 48}),
        kv_cache_eviction_events=[
            KVCacheEvictionEvent(12.5, 3.0, (0.5, 1.25)),
            KVCacheEvictionEvent(2.0, 2.0, ()),
        ],
        spec_decoding_stats=SpecDecodingStats(
            num_spec_tokens=3, num_drafts=2, num_draft_tokens=6, num_accepted_tokens=4,
            num_accepted_tokens_per_pos=[2, 1, 1], num_draft_tokens_per_pos=[2, 2, 2]),
        kv_connector_stats=NIXL,
        waiting_lora_adapters={"lora-a": 1},
        running_lora_adapters={"lora-b": 2, "lora-c": 1},
        cudagraph_stats=CUDAGraphStat(5, 8, 3, "FULL"),
        perf_stats=PerfStats(
            num_flops_per_gpu=2**40 + 7,  # uint64 on the wire
            num_read_bytes_per_gpu=2**33,
            num_write_bytes_per_gpu=4096,
            debug_stats=DebugPerfStats(calc_duration=0.002, num_prefill_requests=1,
                                       num_decode_requests=2, context_breakdown={"attn": 10})),
        sleep_state=EngineSleepState(scheduler_paused=True, weights="offloaded",
                                     kv_cache="released"),
        sleep_state_only=False,
    )


# A value of the wrong type for each SchedulerStats key (one message per key, in key order).
WRONG_TYPES = {
    "num_running_reqs": "3",
    "num_waiting_reqs": 2.5,  # msgspec refuses a float for an int field
    "num_skipped_waiting_reqs": [1],
    "step_counter": {"a": 1},
    "current_wave": True,
    "kv_cache_usage": "0.5",
    "iteration_details": [1, 2],
    "prefix_cache_stats": 7,
    "connector_prefix_cache_stats": "x",
    "kv_cache_eviction_events": {"a": 1},
    "spec_decoding_stats": [],
    "kv_connector_stats": [1, 2],  # not a map: the payload is marked malformed
    "waiting_lora_adapters": "a",
    "running_lora_adapters": [["a", 1]],
    "cudagraph_stats": 5,
    "perf_stats": "x",
    "sleep_state": 1,
    "sleep_state_only": "yes",
}
assert list(WRONG_TYPES) == SCHEDULER_STATS_KEYS


def valid_stats_for_wrong_type_base():
    """The valid values the wrong-type messages start from (the C++ test mirrors them)."""
    return SchedulerStats(
        num_running_reqs=5,
        num_waiting_reqs=6,
        num_skipped_waiting_reqs=7,
        step_counter=8,
        current_wave=9,
        kv_cache_usage=0.5,
        iteration_details=SchedulerIterationDetails(1, 2, 3, 4, 5, 6.0),
        prefix_cache_stats=PrefixCacheStats(queries=10, hits=4),
        connector_prefix_cache_stats=PrefixCacheStats(queries=3, hits=2),
        kv_cache_eviction_events=[KVCacheEvictionEvent(1.0, 0.5, (0.25,))],
        spec_decoding_stats=SpecDecodingStats(num_spec_tokens=2, num_drafts=1,
                                              num_draft_tokens=2, num_accepted_tokens=1,
                                              num_accepted_tokens_per_pos=[1, 0],
                                              num_draft_tokens_per_pos=[1, 1]),
        kv_connector_stats=NIXL,
        waiting_lora_adapters={"a": 1},
        running_lora_adapters={"b": 2},
        cudagraph_stats=CUDAGraphStat(1, 2, 1, "PIECEWISE"),
        perf_stats=PerfStats(11, 12, 13),
        sleep_state=EngineSleepState(),
        sleep_state_only=True,
    )


def wrong_type_messages():
    messages = []
    for key, bad in WRONG_TYPES.items():
        stats = valid_stats_for_wrong_type_base()
        setattr(stats, key, bad)
        messages.append(body(EngineCoreOutputs(scheduler_stats=stats, timestamp=1.0)))
    return messages


# --- Fixtures ---------------------------------------------------------------------------------

FIXTURES = []  # (file name, description, list of frames per message, kind)


def lora_duplicate_keys():
    """A SchedulerStats message whose LoRA maps repeat keys. A dict cannot hold a key twice, so
    placeholder keys of the same length are encoded and then renamed in the bytes; Python's own
    reading of the result is checked here."""
    running = {"r%02d" % i: i for i in range(40)}
    running.update({"rX5": 100, "rY9": 139})
    stats = SchedulerStats(num_running_reqs=1,
                           waiting_lora_adapters={"lora-a": 1, "lora-b": 2, "lora-X": 3},
                           running_lora_adapters=running)
    data = body(EngineCoreOutputs(scheduler_stats=stats, timestamp=11.0))
    for placeholder, key in ((b"\xa6lora-X", b"\xa6lora-a"), (b"\xa3rX5", b"\xa3r05"),
                             (b"\xa3rY9", b"\xa3r39")):
        assert data.count(placeholder) == 1
        data = data.replace(placeholder, key)
    decoded = msgpack.unpackb(data, raw=False, strict_map_key=False)
    stats_map = next(v for v in decoded if isinstance(v, dict))
    assert list(stats_map["waiting_lora_adapters"].items()) == [("lora-a", 3), ("lora-b", 2)]
    expected_running = {"r%02d" % i: i for i in range(40)}
    expected_running.update({"r05": 100, "r39": 139})
    assert list(stats_map["running_lora_adapters"].items()) == list(expected_running.items())
    return data


def single(name, description, *messages):
    """Single-frame messages, concatenated into <name>.msgpack."""
    frames = []
    for m in messages:
        frames.append([m if isinstance(m, bytes) else body(m)])
    FIXTURES.append((name + ".msgpack", description, frames))


def multi(name, description, obj, threshold):
    frames = encode(obj, threshold)
    assert len(frames) > 1, "expected aux frames"
    FIXTURES.append((name + ".frames", description, [frames]))


def reference_example():
    """vLLM's worked example (docs/wire_format.md "Worked example"), checked byte for byte below."""
    out = EngineCoreOutput(
        request_id="r1", new_token_ids=[42],
        events=[EngineCoreEvent(EngineCoreEventType.QUEUED, 1.5),
                EngineCoreEvent(EngineCoreEventType.SCHEDULED, 1.75)],
        prefill_stats=PrefillStats(num_prompt_tokens=7, num_computed_tokens=7))
    stats = SchedulerStats(num_running_reqs=1, kv_cache_usage=0.25)
    data = body(EngineCoreOutputs(outputs=[out], scheduler_stats=stats, timestamp=2.0))
    assert len(data) == 644, len(data)
    assert data.startswith(bytes.fromhex("9800 91dc 0010 a272 3191 2ac0 c0c0 c0c0 9282 a474 7970 6501")), data[:24].hex()
    return data


def logprobs_lists(tokens, k):
    """LogprobsLists for `tokens` generated tokens with k+1 logprob columns each."""
    cols = k + 1
    ids = [[100 * t + c for c in range(cols)] for t in range(tokens)]
    lps = [[-0.25 * (t + 1) - c for c in range(cols)] for t in range(tokens)]
    ranks = [t % 3 + 1 for t in range(tokens)]
    return LogprobsLists(
        Tensor("<i8", [tokens, cols], i8(flat(ids))),
        Tensor("<f4", [tokens, cols], f4(flat(lps))),
        Tensor("<i8", [tokens], i8(ranks)),
        [0, tokens],
    )


# Prompt logprobs: torch tensors, so dtypes are torch names.
PROMPT_LOGPROBS = LogprobsTensors(
    Tensor("int64", [3, 2], i8([1, 2, 3, 4, 5, 6])),
    Tensor("float32", [3, 2], f4([-1.0, -2.0, -3.0, -4.0, -5.0, -6.0])),
    Tensor("int64", [3], i8([1, 1, 2])),
)


def define_fixtures():
    # -- The set vLLM's Rust frontend checks (python_compat.py) --------------------------------
    single("outputs_finish_length",
           "as in vLLM's python_compat.py: one output for req-1 (tokens 11, 12), finish_reason "
           "LENGTH, "
           "finished_requests={'req-1'}, all 8 envelope positions",
           EngineCoreOutputs(outputs=[EngineCoreOutput(
               request_id="req-1", new_token_ids=[11, 12], finish_reason=FinishReason.LENGTH)],
               finished_requests={"req-1"}))
    single("outputs_sampling_mask",
           "one output whose new_sampling_mask (position 15) is set: SamplingMaskLists "
           "(vllm/v1/outputs.py) token_ids <i8 [3], offsets <i8 [2], cu_num_generated_tokens nil",
           EngineCoreOutputs(outputs=[EngineCoreOutput(
               request_id="req-mask", new_token_ids=[5],
               new_sampling_mask=[Tensor("<i8", [3], i8([1, 0, 1])),
                                  Tensor("<i8", [2], i8([0, 3])), None])], timestamp=1.0))
    single("logprobs_inline",
           "new_logprobs LogprobsLists of 2 tokens x 3 columns: <i8 ids, <f4 logprobs, "
           "<i8 ranks inline as ext 3, cu_num_generated_tokens [0, 2]",
           EngineCoreOutputs(outputs=[EngineCoreOutput(
               request_id="req-lp", new_token_ids=[0, 100],
               new_logprobs=logprobs_lists(2, 2))], timestamp=3.0))
    multi("logprobs_aux",
          "same LogprobsLists as logprobs_inline with threshold 1: the three tensors are aux "
          "frames 1, 2, 3",
          EngineCoreOutputs(outputs=[EngineCoreOutput(
              request_id="req-lp", new_token_ids=[0, 100],
              new_logprobs=logprobs_lists(2, 2))], timestamp=3.0), threshold=1)
    multi("logprobs_mixed",
          "LogprobsLists of 16 tokens x 5 columns at the default 256-byte threshold: ids (640 B) "
          "and logprobs (320 B) are aux frames 1 and 2, ranks (128 B) inline",
          EngineCoreOutputs(outputs=[EngineCoreOutput(
              request_id="req-big", new_token_ids=list(range(16)),
              new_logprobs=logprobs_lists(16, 4))], timestamp=4.0), threshold=256)
    single("prompt_logprobs_inline",
           "new_prompt_logprobs_tensors LogprobsTensors (torch int64/float32, shape [3, 2] and "
           "[3]) inline as ext 3",
           EngineCoreOutputs(outputs=[EngineCoreOutput(
               request_id="req-plp", new_token_ids=[9],
               new_prompt_logprobs_tensors=PROMPT_LOGPROBS)], timestamp=5.0))
    multi("prompt_logprobs_aux",
          "same LogprobsTensors as prompt_logprobs_inline with threshold 1: aux frames 1, 2, 3",
          EngineCoreOutputs(outputs=[EngineCoreOutput(
              request_id="req-plp", new_token_ids=[9],
              new_prompt_logprobs_tensors=PROMPT_LOGPROBS)], timestamp=5.0), threshold=1)
    single("kv_nixl", "bare NIXL payload (vLLM's python_compat.py), 7 keys", stats_with_kv(NIXL))
    single("kv_mooncake_store",
           "bare Mooncake store payload (vLLM's python_compat.py): one load_get record",
           stats_with_kv(MOONCAKE_STORE))
    single("kv_mooncake_store_defaults",
           "bare Mooncake store payload whose records omit num_bytes, status and "
           "num_failed_keys (Python defaults 0, 'ok', 0); operations save_exists and "
           "write_back_put",
           stats_with_kv({"save_exists": [{"duration_seconds": 0.001, "num_keys": 2}],
                          "write_back_put": [{"duration_seconds": 0.5, "num_keys": 1,
                                              "num_bytes": 4096, "status": "error",
                                              "num_failed_keys": 1}]}))
    single("kv_mooncake_store_key_orders",
           "bare Mooncake store payload whose records give their keys in different orders: "
           "load_get records in store order, reversed (status error), with an extra key and "
           "defaults, then shuffled with a trailing extra key (status partial_failure); "
           "save_put records in store order, then one with 38 unknown keys before "
           "duration_seconds and num_keys",
           stats_with_kv({
               "load_get": [
                   {"duration_seconds": 0.1, "num_keys": 1, "num_bytes": 10, "status": "ok",
                    "num_failed_keys": 0},
                   {"num_failed_keys": 2, "status": "error", "num_bytes": 20, "num_keys": 3,
                    "duration_seconds": 0.2},
                   {"duration_seconds": 0.3, "extra": 7, "num_keys": 4},
                   {"num_keys": 5, "duration_seconds": 0.4, "status": "partial_failure",
                    "num_bytes": 50, "num_failed_keys": 1, "note": "x"}],
               "save_put": [
                   {"duration_seconds": 0.5, "num_keys": 6, "num_bytes": 60, "status": "ok",
                    "num_failed_keys": 0},
                   dict([("x%02d" % i, 0) for i in range(38)] +
                        [("duration_seconds", 0.6), ("num_keys", 7)])]}))
    single("kv_multi_unsupported_child",
           "MultiConnector: NixlConnector, MooncakeStoreConnector and "
           "UnsupportedConnector {'sample_count': 1} (vLLM's python_compat.py)",
           stats_with_kv({"NixlConnector": NIXL, "MooncakeStoreConnector": MOONCAKE_STORE,
                          "UnsupportedConnector": UNSUPPORTED_CHILD}))
    single("outputs_extended",
           "newer engine: one 19-position output (16 + 3 extra trailing fields) and a "
           "10-position envelope (8 + 2 extra trailing)",
           EngineCoreOutputs(
               engine_index=1,
               outputs=[EngineCoreOutput(
                   request_id="req-ext", new_token_ids=[1, 2],
                   finish_reason=FinishReason.STOP, stop_reason=2,
                   _extra=[{"spec": 1}, [1, 2, 3], "future"])],
               timestamp=6.0,
               _extra=[{"future_envelope_field": True}, 42]))

    # -- KV-connector identification --------------------------------------------------------
    single("kv_mooncake_p2p", "bare Mooncake P2P (MooncakeConnector) payload, 6 keys",
           stats_with_kv(MOONCAKE_P2P))
    single("kv_multi_mooncake_p2p",
           "MultiConnector: NixlConnector and a MooncakeConnector (P2P) child",
           stats_with_kv({"NixlConnector": NIXL, "MooncakeConnector": MOONCAKE_P2P}))
    single("kv_multi_data_wrapped",
           "MultiConnector in the pre-September-2026 shape: each child {'data': {...}} "
           "(NixlConnector, MooncakeStoreConnector with 3 operations)",
           stats_with_kv({"NixlConnector": {"data": NIXL},
                          "MooncakeStoreConnector": {"data": MOONCAKE_STORE_3OPS}}))
    single("kv_nixl_extra_keys",
           "bare NIXL payload plus num_failed_handshakes and num_notifications_after_expiry",
           stats_with_kv(NIXL_EXTRA_KEYS))
    single("kv_multi_nixl_extra_keys",
           "MultiConnector with one NixlConnector child carrying the two newer NIXL keys",
           stats_with_kv({"NixlConnector": NIXL_EXTRA_KEYS}))
    single("kv_nixl_missing_key",
           "bare NIXL payload without num_failed_notifications (post_duration present)",
           stats_with_kv({k: v for k, v in NIXL.items() if k != "num_failed_notifications"}))
    nixl_no_post = {k: v for k, v in NIXL.items()
                    if k not in ("post_duration", "num_failed_notifications")}
    single("kv_nixl_missing_post_duration",
           "bare NIXL payload without post_duration and num_failed_notifications",
           stats_with_kv(nixl_no_post))
    single("kv_offloading",
           "bare OffloadingConnector typed payload {types, data, info=None}; data values are "
           "maps keyed by the empty tuple (an empty msgpack array as a map key)",
           stats_with_kv(OFFLOADING))
    single("kv_offloading_info",
           "bare OffloadingConnector typed payload with both directions and its `info` map "
           "(CPU manager config facts: ints and the string None)",
           stats_with_kv(OFFLOADING_INFO))
    single("kv_offloading_hostile_info",
           "three OffloadingConnector payloads whose `info` is hostile: a list value, an int "
           "key, an int instead of a map (each skipped whole; the data still records)",
           *[stats_with_kv(p) for p in OFFLOADING_HOSTILE_INFO])
    single("kv_hf3fs", "bare HF3FSKVConnector payload (scalar failure counts)",
           stats_with_kv(HF3FS))
    single("kv_hisparse", "bare HiSparseConnector payload", stats_with_kv(HISPARSE))
    single("kv_multi_offloading_hf3fs_hisparse",
           "MultiConnector: OffloadingConnector (its own top-level 'data' key), "
           "HF3FSKVConnector, HiSparseConnector",
           stats_with_kv({"OffloadingConnector": OFFLOADING, "HF3FSKVConnector": HF3FS,
                          "HiSparseConnector": HISPARSE}))
    single("kv_multi_descriptor",
           "MultiConnector: NixlPullConnector child and a third-party AcmeConnector child that "
           "carries a _metrics_descriptor",
           stats_with_kv({"NixlPullConnector": NIXL, "AcmeConnector": ACME}))
    single("kv_bare_descriptor",
           "bare third-party AcmeConnector payload carrying its _metrics_descriptor",
           stats_with_kv(ACME))
    hisparse_descriptor = {
        "descriptor_version": 1, "connector_id": "HiSparseConnector",
        "metrics": [{"name": "vllm:hisparse_cache_hits", "type": "counter",
                     "documentation": "Number of HiSparse device hot-buffer hits.",
                     "samples_path": "cache_hits", "sample_kind": "inc_by_sum_u64"}]}
    single("kv_hisparse_descriptor",
           "bare HiSparseConnector payload with the _metrics_descriptor a Rust-frontend engine "
           "attaches once (metrics_descriptor.py)",
           stats_with_kv(dict(HISPARSE, _metrics_descriptor=hisparse_descriptor)))
    single("kv_empty_map", "kv_connector_stats = {} (nothing happened)", stats_with_kv({}))
    single("kv_not_a_map", "kv_connector_stats = [1, 2]: not a map", stats_with_kv([1, 2]))
    single("kv_multi_child_not_a_map",
           "MultiConnector: a valid NixlConnector child and MooncakeStoreConnector = [1, 2]",
           stats_with_kv({"NixlConnector": NIXL, "MooncakeStoreConnector": [1, 2]}))
    single("kv_nixl_wrong_types",
           "bare NIXL payload whose transfer_duration is a str and bytes_transferred holds a str",
           stats_with_kv(dict(NIXL, transfer_duration="fast", bytes_transferred=[4096, "x"])))

    # -- SchedulerStats ---------------------------------------------------------------------
    single("scheduler_stats_full",
           "engine 2, every SchedulerStats key set (iteration_details, hits_by_source, two "
           "eviction events, spec decoding, NIXL, LoRA maps, cudagraph, perf with debug_stats, "
           "sleep_state, sleep_state_only)",
           EngineCoreOutputs(engine_index=2, scheduler_stats=full_scheduler_stats(),
                             timestamp=123.25))
    old = {  # an older engine: encoder_cache_usage, no num_skipped_waiting_reqs/iteration_details
        "num_running_reqs": 4, "num_waiting_reqs": 1, "step_counter": 0, "current_wave": 0,
        "kv_cache_usage": 0.5, "encoder_cache_usage": 0.125,
        "prefix_cache_stats": PrefixCacheStats(requests=1, queries=32, hits=16),
        "connector_prefix_cache_stats": None, "kv_cache_eviction_events": [],
        "spec_decoding_stats": None, "kv_connector_stats": None,
        "waiting_lora_adapters": {}, "running_lora_adapters": {},
    }
    single("scheduler_stats_old_engine",
           "an older engine's SchedulerStats: unknown key encoder_cache_usage, no "
           "num_skipped_waiting_reqs, iteration_details, cudagraph_stats or perf_stats",
           EngineCoreOutputs(scheduler_stats=old, timestamp=7.0))
    single("scheduler_stats_lora_duplicate_keys",
           "LoRA maps whose keys repeat, as Python's msgpack reads them: waiting_lora_adapters "
           "lora-a 1, lora-b 2, lora-a 3 (Python: {'lora-a': 3, 'lora-b': 2}); "
           "running_lora_adapters r00..r39 = 0..39 then r05 = 100 and r39 = 139 (Python: 40 "
           "keys, r05 100, r39 139)",
           lora_duplicate_keys())
    single("scheduler_stats_wrong_type_each_field",
           "%d concatenated messages; message i gives SchedulerStats key i (definition order) a "
           "value of the wrong type, every other key a valid value" % len(WRONG_TYPES),
           *wrong_type_messages())
    nested = valid_stats_for_wrong_type_base()
    nested.prefix_cache_stats = {"reset": False, "requests": 1, "queries": 10, "hits": "x",
                                 "preempted_requests": 0, "preempted_queries": 0,
                                 "preempted_hits": 0}
    single("scheduler_stats_nested_wrong_type",
           "prefix_cache_stats.hits is a str; everything else valid",
           EngineCoreOutputs(scheduler_stats=nested, timestamp=1.0))
    ints = SchedulerStats(
        kv_cache_usage=1,
        iteration_details=SchedulerIterationDetails(1, 1, 1, 1, 1, elapsed_ms=4),
        kv_cache_eviction_events=[KVCacheEvictionEvent(3, 0, (1, 2))])
    single("ints_for_floats",
           "float fields sent as msgpack ints (msgspec accepts them): timestamp 5, event "
           "timestamp 2, kv_cache_usage 1, elapsed_ms 4, eviction lifetime 3 / idle 0 / gaps "
           "[1, 2]",
           EngineCoreOutputs(outputs=[EngineCoreOutput(
               request_id="r-int", new_token_ids=[1],
               events=[EngineCoreEvent(EngineCoreEventType.QUEUED, 2)])],
               scheduler_stats=ints, timestamp=5))
    single("stats_only_sleep",
           "stats-only message (no outputs) with sleep_state (paused, weights discarded) and "
           "sleep_state_only=True",
           EngineCoreOutputs(scheduler_stats=SchedulerStats(
               sleep_state=EngineSleepState(True, "discarded", "released"),
               sleep_state_only=True), timestamp=8.0))

    # -- Envelope shapes --------------------------------------------------------------------
    single("utility_call_id_u64_max",
           "UtilityOutput call_id = 2^64-1 (uint64), result ['generate'] as a UtilityResult",
           EngineCoreOutputs(utility_output=UtilityOutput(
               call_id=2**64 - 1, result=utility_result(["generate"])), timestamp=9.0))
    single("utility_call_id_minus_one",
           "UtilityOutput call_id = -1, failure_message 'boom', result nil",
           EngineCoreOutputs(utility_output=UtilityOutput(call_id=-1, failure_message="boom"),
                             timestamp=9.5))
    single("envelope_short",
           "a 2-position envelope [3, [output]] whose output has only its 2 required positions",
           EngineCoreOutputs(engine_index=3, outputs=[EngineCoreOutput(
               request_id="r-short", new_token_ids=[7], _truncate=2)], _truncate=2))
    single("reference_example",
           "vLLM's worked example, 644 bytes: r1/token 42, QUEUED@1.5 and SCHEDULED@1.75, "
           "prefill_stats 7/7, num_running_reqs=1, kv_cache_usage=0.25, timestamp 2.0",
           reference_example())
    single("events",
           "output r-ev with QUEUED@1.0, SCHEDULED@1.5, PREEMPTED@2.25, SCHEDULED@3.0; output "
           "r-none with events nil",
           EngineCoreOutputs(outputs=[
               EngineCoreOutput(request_id="r-ev", new_token_ids=[1], events=[
                   EngineCoreEvent(EngineCoreEventType.QUEUED, 1.0),
                   EngineCoreEvent(EngineCoreEventType.SCHEDULED, 1.5),
                   EngineCoreEvent(EngineCoreEventType.PREEMPTED, 2.25),
                   EngineCoreEvent(EngineCoreEventType.SCHEDULED, 3.0)]),
               EngineCoreOutput(request_id="r-none", new_token_ids=[2])], timestamp=3.5))
    single("finish_reasons",
           "five outputs f0..f4 with finish_reason STOP..REPETITION; stop_reason: f0 int 128001, "
           "f1 str '</s>', others nil; finished_requests f0..f4",
           EngineCoreOutputs(outputs=[
               EngineCoreOutput(request_id="f%d" % r, new_token_ids=[r], finish_reason=r,
                                stop_reason={0: 128001, 1: "</s>"}.get(int(r)))
               for r in FinishReason], finished_requests={"f%d" % r for r in FinishReason},
               timestamp=4.5))
    single("output_all_fields",
           "one output with every position set: pooling_output <f4 [2], finish ABORT, "
           "kv_transfer_params, ec_transfer_params, trace_headers, prefill_stats (all 6 keys), "
           "routed_experts <i4 [2, 2], num_nans_in_logits 3, mm_cache_miss_hashes [h1, h2]",
           EngineCoreOutputs(outputs=[EngineCoreOutput(
               request_id="r-all", new_token_ids=[3, 4, 5],
               pooling_output=Tensor("<f4", [2], f4([0.5, -1.5])),
               finish_reason=FinishReason.ABORT,
               stop_reason=None,
               events=[EngineCoreEvent(EngineCoreEventType.QUEUED, 0.5)],
               kv_transfer_params={"do_remote_prefill": True, "remote_block_ids": [1, 2]},
               ec_transfer_params={"ec": "x"},
               trace_headers={"traceparent": "00-abc-def-01"},
               prefill_stats=PrefillStats(100, 60, 40, 30, 10, 5),
               routed_experts=Tensor("<i4", [2, 2], i4([0, 3, 1, 2])),
               num_nans_in_logits=3,
               mm_cache_miss_hashes=["h1", "h2"],
           )], timestamp=5.5))
    single("wave_messages",
           "two concatenated DP-control messages: wave_complete=5, then start_wave=6",
           EngineCoreOutputs(engine_index=1, timestamp=1.0, wave_complete=5),
           EngineCoreOutputs(engine_index=1, timestamp=2.0, start_wave=6))
    single("stream_dp_engines",
           "three concatenated stats-only messages from engines 0, 1, 2 with num_running_reqs "
           "10, 11, 12",
           *[EngineCoreOutputs(engine_index=e, scheduler_stats=SchedulerStats(
               num_running_reqs=10 + e), timestamp=float(e)) for e in range(3)])
    multi("pooling_aux_extended",
          "a 9-position envelope (first byte 0x99, odd: the fuzz seed splits it) whose output's "
          "pooling_output <f4 [64] (256 B) is aux frame 1",
          EngineCoreOutputs(outputs=[EngineCoreOutput(
              request_id="r-pool", new_token_ids=[],
              pooling_output=Tensor("<f4", [64], f4([0.5 * i for i in range(64)])))],
              timestamp=6.5, _extra=[None]), threshold=256)

    # -- Hostile inputs (hand-built bytes) -----------------------------------------------------
    single("hostile_array32_huge",
           "envelope whose outputs header is array32 claiming 0xffffffff elements",
           bytes.fromhex("98 00 dd ff ff ff ff c0 cb 00 00 00 00 00 00 00 00 c0 c0 c0 c0"))
    single("hostile_map32_huge",
           "envelope whose scheduler_stats header is map32 claiming 0xffffffff pairs",
           bytes.fromhex("98 00 90 df ff ff ff ff a1 61 01 c0 c0 c0 c0 c0"))
    single("hostile_str32_huge",
           "an output whose request_id is str32 claiming 4 GB (0xffffffff bytes)",
           bytes.fromhex("98 00 91 92 db ff ff ff ff 61 62 63 c0 c0 c0 c0 c0 c0"))
    single("hostile_bin32_huge",
           "an output whose kv_transfer_params is bin32 claiming 0xffffffff bytes",
           bytes.fromhex("98 00 91 99 a1 72 90 c0 c0 c0 c0 c0 c0 c6 ff ff ff ff 00"))
    single("hostile_ext32_huge",
           "a pooling_output tensor whose data is ext32 (type 3) claiming 0xffffffff bytes",
           bytes.fromhex("98 00 91 95 a1 72 90 c0 c0 93 a3 3c 66 34 91 01 c9 ff ff ff ff 03 00"))
    single("hostile_pickle_ext",
           "an output whose pooling_output tensor data is ext type 1 (pickle)",
           EngineCoreOutputs(outputs=[EngineCoreOutput(
               request_id="r-pickle", new_token_ids=[1],
               pooling_output=["<f4", [1], msgpack.ExtType(EXT_PICKLE, b"\x80\x04K\x01.")])]))
    single("hostile_cloudpickle_utility",
           "a UtilityOutput whose result value is ext type 2 (cloudpickle)",
           EngineCoreOutputs(utility_output=UtilityOutput(
               call_id=7, result=[None, msgpack.ExtType(EXT_CLOUDPICKLE, b"\x80\x04N.")])))
    single("hostile_unknown_ext",
           "an output whose pooling_output tensor data is ext type 42 (unknown)",
           EngineCoreOutputs(outputs=[EngineCoreOutput(
               request_id="r-ext42", new_token_ids=[1],
               pooling_output=["<f4", [1], msgpack.ExtType(42, b"\0\0\0\0")])]))
    claim = 50000
    single("hostile_outputs_count_claim",
           "an outputs array32 claiming %d outputs whose first element is nil: the count fits "
           "the remaining bytes, but no output follows" % claim,
           bytes.fromhex("98 00 dd") + struct.pack(">I", claim) + b"\xc0" * claim
           + bytes.fromhex("c0 cb 00 00 00 00 00 00 00 00 c0 c0 c0 c0"))
    evict_stats = body(EngineCoreOutputs(scheduler_stats=SchedulerStats(
        num_running_reqs=2, kv_cache_eviction_events="EVICT"), timestamp=1.0))
    evict_marker = msgpack.packb("EVICT")
    assert evict_stats.count(evict_marker) == 1
    single("hostile_eviction_events_count_claim",
           "kv_cache_eviction_events is an array32 claiming %d events, all nil (a wrong type, "
           "skipped); num_running_reqs=2" % claim,
           evict_stats.replace(evict_marker, b"\xdd" + struct.pack(">I", claim)
                               + b"\xc0" * claim))
    single("hostile_finished_requests_str",
           "finished_requests is the str 'req-1' instead of a list",
           EngineCoreOutputs(outputs=[], finished_requests="req-1"))
    single("hostile_finished_requests_array32_huge",
           "finished_requests is an array32 claiming 0xffffffff ids",
           bytes.fromhex("98 00 90 c0 cb 00 00 00 00 00 00 00 00 c0 dd ff ff ff ff c0 c0"))
    depth = 100000
    single("hostile_deep_nesting",
           "an envelope whose 9th (extra, ignored) position nests %d arrays" % depth,
           bytes.fromhex("99 00 90 c0 cb 00 00 00 00 00 00 00 00 c0 c0 c0 c0")
           + b"\x91" * depth + b"\xc0")
    deep_payload = stats_with_kv({"NixlConnector": {"transfer_duration": [0.5]},
                                  "DeepConnector": {"k": "DEEP"}})
    deep = body(deep_payload)
    marker = msgpack.packb("DEEP")
    assert deep.count(marker) == 1
    single("kv_deep_nesting",
           "MultiConnector whose DeepConnector child nests %d arrays under key 'k'" % depth,
           deep.replace(marker, b"\x91" * depth + b"\xc0"))
    single("hostile_c1",
           "an envelope whose second position is the never-used byte 0xc1",
           bytes.fromhex("98 00 c1 c0 cb 00 00 00 00 00 00 00 00 c0 c0 c0 c0"))
    single("hostile_envelope_map", "a map where the EngineCoreOutputs array belongs",
           msgpack.packb({"engine_index": 0, "outputs": []}))
    single("hostile_output_one_position",
           "an output with only request_id (new_token_ids is required)",
           bytes.fromhex("92 00 91 91 a1 72"))
    single("hostile_request_id_int", "an output whose request_id is an int",
           bytes.fromhex("92 00 91 92 05 90"))
    single("hostile_finish_reason_str", "an output whose finish_reason is the str 'stop'",
           EngineCoreOutputs(outputs=[EngineCoreOutput(
               request_id="r", new_token_ids=[], finish_reason="stop")]))
    single("hostile_token_float", "an output whose new_token_ids holds a float",
           EngineCoreOutputs(outputs=[EngineCoreOutput(request_id="r", new_token_ids=[1.5])]))


# --- Writing ----------------------------------------------------------------------------------

def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def fuzz_seed(frames):
    """The decode fuzzer's input for these frames (see fuzz/decode_fuzz_check.h): frame 0, then
    for an odd first byte one aux frame followed by its length as 2 little-endian bytes."""
    if len(frames) == 1:
        return frames[0]
    if len(frames) == 2 and frames[0][0] & 1 and len(frames[1]) <= 0xFFFF:
        return frames[0] + frames[1] + struct.pack("<H", len(frames[1]))
    return None


def main():
    define_fixtures()
    os.makedirs(FIXTURE_DIR, exist_ok=True)
    os.makedirs(CORPUS_DIR, exist_ok=True)
    names = {n for n, _, _ in FIXTURES}
    assert len(names) == len(FIXTURES), "duplicate fixture name"
    # Drop files this script wrote last time (listed in the old MANIFEST) that no longer have
    # a fixture. Other generators share tests/fixtures/, so nothing else is touched; in the
    # corpus only seed-* files are ours (minimized crash inputs stay).
    manifest_path = os.path.join(FIXTURE_DIR, "MANIFEST")
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            for line in f:
                if line.startswith("file: "):
                    old = line[len("file: "):].strip()
                    if old not in names and os.path.isfile(os.path.join(FIXTURE_DIR, old)):
                        os.remove(os.path.join(FIXTURE_DIR, old))
    for old in os.listdir(CORPUS_DIR):
        if old.startswith("seed-"):
            os.remove(os.path.join(CORPUS_DIR, old))

    readme = [
        "# Protocol fixtures",
        "",
        "Generated by `tools/gen_fixtures.py` (python3-msgpack, mirroring vLLM's msgspec structs",
        "at commit %s); do not edit. Regenerate with" % VLLM_COMMIT[:8],
        "`/usr/bin/python3 tools/gen_fixtures.py`. `.msgpack` files hold single-frame messages",
        "(several are concatenated where noted); a `.frames` file is one multi-frame message",
        "stored as a msgpack array of bin frames `[frame0, aux1, ...]`.",
        "",
        "| File | Bytes | Holds |",
        "|---|---|---|",
    ]
    for name, description, messages in FIXTURES:
        path = os.path.join(FIXTURE_DIR, name)
        if name.endswith(".frames"):
            (frames,) = messages
            data = msgpack.packb(frames, use_bin_type=True)
            seed = fuzz_seed(frames)
        else:
            data = b"".join(m[0] for m in messages)
            seed = data
        write(path, data)
        # Seeds above 64 KiB (the deep-nesting inputs) would raise libFuzzer's max_len for every
        # mutation; the fixture tests replay them instead.
        if seed is not None and len(seed) <= 65536:
            write(os.path.join(CORPUS_DIR, "seed-" + name.rsplit(".", 1)[0]), seed)
        readme.append("| `%s` | %d | %s |" % (name, len(data), description))
    write(os.path.join(FIXTURE_DIR, "README.md"), ("\n".join(readme) + "\n").encode())

    manifest = [
        "generator: tools/gen_fixtures.py",
        "python: %s" % platform.python_version(),
        "msgpack: %s" % ".".join(str(v) for v in msgpack.version),
        "vllm_commit: %s" % VLLM_COMMIT,
        "regenerate: /usr/bin/python3 tools/gen_fixtures.py",
        "fixtures: %d" % len(FIXTURES),
    ] + ["file: %s" % n for n, _, _ in FIXTURES]
    write(os.path.join(FIXTURE_DIR, "MANIFEST"), ("\n".join(manifest) + "\n").encode())
    print("wrote %d fixtures to %s" % (len(FIXTURES), os.path.relpath(FIXTURE_DIR, ROOT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
