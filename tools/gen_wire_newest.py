#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the captures of the newest wire generation (after vLLM 6adad087) the tests decode.

No newer upstream tree could be run, so these bytes are encoded here, by a peer we did not
write (python3-msgpack), from the layout facts listed below; tests/fixtures/wire_generations/
README.md gives their upstream sources. python3-msgpack re-encodes every imported 6adad087
capture byte for byte as vLLM's MsgpackEncoder (msgspec) wrote it (checked in `main`), so the
same encoding rules hold here:

  * EngineCoreOutputs and EngineCoreOutput are array-like msgspec Structs: every position, in
    declaration order. EngineCoreOutput has 17 positions: the 16 of 6adad087 and, appended
    last, `spec_decode_metrics` (RequestSpecDecodeMetrics as a map, or nil);
  * SchedulerStats and the statistics nested in it are dataclasses: maps with every field in
    declaration order. SchedulerStats has 18 keys on main: 6adad087's 16 plus
    `num_kv_fetch_reqs_by_stage` (after num_skipped_waiting_reqs) and `ec_connector_stats`
    (after kv_connector_stats). PrefixCacheStats gains `hits_by_source` (last): a map
    CacheHitSource value -> tokens, non-zero entries only, filled in the connector prefix
    cache stats only;
  * MultiConnector children are flat (child class name -> the child's own payload, no `data`
    level); the NIXL payload has 8 keys (`num_failed_handshakes` after
    `num_failed_notifications`), one int 1 per failure.

Each capture mirrors its 6adad087 counterpart message for message (same engines, steps,
requests, values and sidecar), re-laid in the newest layout, with only these additions, so a
golden of the newest frontend differs from the 6adad087 golden by the newest families alone:
  * num_kv_fetch_reqs_by_stage per message (KV_FETCH_PLAN: all stages, a subset, explicit
    zeros or empty), never more requests than num_skipped_waiting_reqs;
  * hits_by_source in each connector_prefix_cache_stats (HITS_BY_SOURCE_PLAN), summing to its
    hits;
  * num_failed_handshakes entries in the NIXL payloads (HANDSHAKE_PLAN);
  * spec_decode_metrics on two final outputs (SPEC_DECODE_METRICS_PLAN);
  * ec_connector_stats nil (no EC connector is configured), except in stats_ec.

stats_ec is the stats_nixl_spec capture with the same additions plus an EC connector
(ECCPUConnector, --ec-transfer-config) whose ECCPUConnectorStats payloads ride some steps'
ec_connector_stats (EC_PLAN): {"types": name -> "counter" | "histogram", "data": name ->
number | list} (vllm/distributed/ec_transfer/ec_connector/cpu/metrics.py, vllm-project/vllm PR
#57333; the field itself is #54960's).

Outputs, in tests/fixtures/wire_generations/: GEN_<kind>.msgpack (frame 0 of every message,
back to back), GEN_outputs.requests.jsonl (the 6adad087 sidecar, unchanged), and this
generation's cases in manifest.json (other cases are kept as they are). No goldens: those come
from vLLM's Python frontend once it is run on these bytes.

Run: /usr/bin/python3 tools/gen_wire_newest.py   (Debian's python3-msgpack; nothing else)
"""

import hashlib
import json
import os
import shutil
import sys

import msgpack

import wire_layouts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.path.join(ROOT, "tests", "fixtures", "wire_generations")

BASE = "g20260814-6adad087"
# Named for the newest upstream state the layout facts were read from (the docs.vllm.ai
# "latest" API pages stamped 2026-09-24): no upstream main commit carrying every change below
# could be pinned, so the name carries a date, not a commit.
GENERATION = "gnewest-20260924"

# --- Layouts ----------------------------------------------------------------------------------

ENGINE_CORE_OUTPUTS_FIELDS = (
    "engine_index", "outputs", "scheduler_stats", "timestamp", "utility_output",
    "finished_requests", "wave_complete", "start_wave",
)
# EngineCoreOutput and SchedulerStats, position by position and key by key, from vmetrics'
# wire-generation tables (tools/wire_layouts.py): the layout facts above are those tables' rows.
BASE_OUTPUT_FIELDS = wire_layouts.output_fields(BASE)
OUTPUT_FIELDS = wire_layouts.output_fields(GENERATION)
assert OUTPUT_FIELDS == BASE_OUTPUT_FIELDS + ("spec_decode_metrics",), OUTPUT_FIELDS

BASE_SCHEDULER_STATS_FIELDS = wire_layouts.scheduler_stats_keys(BASE)
SCHEDULER_STATS_FIELDS = wire_layouts.scheduler_stats_keys(GENERATION)
NEW_SCHEDULER_STATS_DEFAULTS = {"num_kv_fetch_reqs_by_stage": {}, "ec_connector_stats": None}

PREFIX_CACHE_STATS_FIELDS = (
    "reset", "requests", "queries", "hits", "preempted_requests", "preempted_queries",
    "preempted_hits", "hits_by_source",
)
CACHE_HIT_SOURCES = ("device", "host", "p2p", "disk", "external_unspecified")
KV_FETCH_STAGES = ("waiting_to_start", "in_progress", "completed_waiting")

NIXL_FIELDS = (
    "transfer_duration", "post_duration", "bytes_transferred", "num_descriptors",
    "num_failed_transfers", "num_failed_notifications", "num_failed_handshakes",
    "num_kv_expired_reqs",
)
# The names of the nested keys are written here; their counts are the tables'.
assert len(PREFIX_CACHE_STATS_FIELDS) == \
    wire_layouts.generation(GENERATION)["prefix_cache_stats_keys"]
assert len(NIXL_FIELDS) == wire_layouts.generation(GENERATION)["nixl_keys"]

REQUEST_SPEC_DECODE_METRICS_FIELDS = (
    "num_spec_tokens", "histogram", "num_draft_tokens", "per_step_accepted",
    "per_step_drafted",
)

# --- What each capture adds to its 6adad087 counterpart -----------------------------------------
# Keys: kind -> message index -> value.

KV_FETCH_PLAN = {
    "stats_nixl_spec": {
        0: {"waiting_to_start": 1, "in_progress": 1},
        1: {"in_progress": 1},
        2: {"waiting_to_start": 0, "in_progress": 0, "completed_waiting": 1},
        3: {},
        4: {"waiting_to_start": 1, "in_progress": 1, "completed_waiting": 1},
        5: {"completed_waiting": 2},
        6: {},
    },
    "stats_multi": {0: {"waiting_to_start": 0, "in_progress": 0, "completed_waiting": 0}},
    "outputs": {0: {"waiting_to_start": 0, "in_progress": 0, "completed_waiting": 0}},
}
# The newest captures that are not the newest form of a 6adad087 capture of the same kind: kind ->
# the kind whose capture (and whose plans above) they start from.
DERIVED_KINDS = {"stats_ec": "stats_nixl_spec"}

# ECCPUConnectorStats.data per message (stats_ec): counters (name -> increment) and histograms
# (name -> samples), typed as increase_counter / observe_histogram type them.
EC_SAVE, EC_LOAD = "vllm:ec_cpu_save_", "vllm:ec_cpu_load_"
EC_PLAN = {
    "stats_ec": {
        0: ({EC_SAVE + "bytes": 9400000, EC_SAVE + "time_seconds": 0.021},
            {EC_SAVE + "size_bytes": [4700000, 4700000]}),
        1: ({EC_LOAD + "bytes": 8800000, EC_LOAD + "time_seconds": 0.0095},
            {EC_LOAD + "size_bytes": [8800000]}),
        3: ({EC_SAVE + "bytes": 42000000, EC_SAVE + "time_seconds": 0.07,
             EC_LOAD + "bytes": 500000, EC_LOAD + "time_seconds": 0.0004},
            {EC_SAVE + "size_bytes": [42000000], EC_LOAD + "size_bytes": [500000]}),
        6: ({EC_LOAD + "bytes": 260000000, EC_LOAD + "time_seconds": 0.25},
            {EC_LOAD + "size_bytes": [260000000]}),
    },
}
EC_TRANSFER_CONFIG = {"ec_connector": "ECCPUConnector", "ec_role": "ec_both"}

# Per message with connector_prefix_cache_stats; each sums to that message's hits. The first
# is out of CacheHitSource order (dict order is the engine's insertion order); the second is
# what the engine reports when a connector's split did not add up.
HITS_BY_SOURCE_PLAN = {
    "stats_nixl_spec": {
        1: {"p2p": 22, "host": 40},
        3: {"external_unspecified": 32},
        5: {"disk": 5},
    },
}
# Number of failed handshakes in the NIXL payload (bare, or the NixlConnector child).
HANDSHAKE_PLAN = {
    "stats_nixl_spec": {0: 1, 1: 2, 4: 1, 6: 1},
    "stats_multi": {2: 1, 3: 2},
}
# (message index, request_id) -> RequestSpecDecodeMetrics values, on final outputs only:
# one `summary` (per-step lists empty) and one `detailed`.
SPEC_DECODE_METRICS_PLAN = {
    "outputs": {
        (8, "dev-6-15b0"): (3, [1, 0, 1, 0], 6, [], []),
        (9, "foreign-4"): (3, [0, 1, 1, 0], 6, [1, 2], [3, 3]),
    },
}

DESCRIPTIONS = {
    "stats_nixl_spec": (
        "SchedulerStats only, 2 engines, 7 steps: the g20260814-6adad087 stats_nixl_spec "
        "capture re-laid in the newest layout (18 SchedulerStats keys, 8-key NIXL payload), "
        "plus num_kv_fetch_reqs_by_stage per step, hits_by_source in every connector prefix "
        "cache record and failed NIXL handshakes."),
    "stats_multi": (
        "SchedulerStats only, 2 engines, 6 steps, MultiConnector[NixlConnector, "
        "MooncakeStoreConnector] with flat children: the g20260814-6adad087 stats_multi "
        "capture re-laid in the newest layout, plus failed NIXL handshakes and one explicit "
        "all-zero num_kv_fetch_reqs_by_stage."),
    "stats_ec": (
        "SchedulerStats only, 2 engines, 7 steps: the newest stats_nixl_spec capture with an EC "
        "connector (ECCPUConnector) configured, whose save/load payloads ride four steps' "
        "ec_connector_stats."),
    "outputs": (
        "Request outputs, 2 engines: the g20260814-6adad087 outputs capture (same requests, "
        "sidecar and messages) with 17-position outputs; spec_decode_metrics on two final "
        "outputs (summary and detailed) and one explicit all-zero "
        "num_kv_fetch_reqs_by_stage."),
}


# --- Re-laying one message ----------------------------------------------------------------------

def ordered(fields, values, what):
    """A map with exactly `fields`, in that order (a dataclass as msgspec writes it)."""
    unknown = set(values) - set(fields)
    assert not unknown, (what, unknown)
    missing = set(fields) - set(values)
    assert not missing, (what, missing)
    return {name: values[name] for name in fields}


def relay_prefix_cache_stats(old, hits_by_source):
    if old is None:
        assert hits_by_source is None
        return None
    values = dict(old, hits_by_source=hits_by_source or {})
    assert sum(values["hits_by_source"].values()) in (0, values["hits"])
    assert all(k in CACHE_HIT_SOURCES and v > 0 for k, v in values["hits_by_source"].items())
    return ordered(PREFIX_CACHE_STATS_FIELDS, values, "PrefixCacheStats")


def relay_nixl(old, handshakes):
    return ordered(NIXL_FIELDS, dict(old, num_failed_handshakes=[1] * handshakes), "NIXL")


def relay_kv_connector_stats(old, handshakes):
    if old is None:
        assert not handshakes
        return None
    if "transfer_duration" in old:  # bare NIXL
        return relay_nixl(old, handshakes)
    flat = {}
    for child, wrapped in old.items():  # MultiConnector: drop the `data` level
        assert list(wrapped) == ["data"], child
        payload = wrapped["data"]
        flat[child] = relay_nixl(payload, handshakes) if child == "NixlConnector" else payload
    assert "NixlConnector" in flat or not handshakes
    return flat


def ec_payload(counters, histograms):
    types = {name: "counter" for name in counters}
    types.update({name: "histogram" for name in histograms})
    return {"types": types, "data": dict(counters, **histograms)}


def relay_scheduler_stats(old, kind, index):
    if old is None:
        return None
    assert tuple(old) == BASE_SCHEDULER_STATS_FIELDS, tuple(old)
    values = dict(old)
    values.update(NEW_SCHEDULER_STATS_DEFAULTS)
    ec = EC_PLAN.get(kind, {}).get(index)
    if ec is not None:
        values["ec_connector_stats"] = ec_payload(*ec)
    kind = DERIVED_KINDS.get(kind, kind)
    fetch = KV_FETCH_PLAN.get(kind, {}).get(index, {})
    assert set(fetch) <= set(KV_FETCH_STAGES)
    assert sum(fetch.values()) <= old["num_skipped_waiting_reqs"]
    values["num_kv_fetch_reqs_by_stage"] = fetch
    values["prefix_cache_stats"] = relay_prefix_cache_stats(old["prefix_cache_stats"], {})
    values["connector_prefix_cache_stats"] = relay_prefix_cache_stats(
        old["connector_prefix_cache_stats"], HITS_BY_SOURCE_PLAN.get(kind, {}).get(index))
    values["kv_connector_stats"] = relay_kv_connector_stats(
        old["kv_connector_stats"], HANDSHAKE_PLAN.get(kind, {}).get(index, 0))
    return ordered(SCHEDULER_STATS_FIELDS, values, "SchedulerStats")


def relay_output(old, kind, index):
    assert len(old) == len(BASE_OUTPUT_FIELDS)
    values = dict(zip(BASE_OUTPUT_FIELDS, old))
    plan = SPEC_DECODE_METRICS_PLAN.get(DERIVED_KINDS.get(kind, kind), {}).get(
        (index, values["request_id"]))
    values["spec_decode_metrics"] = None
    if plan is not None:
        assert values["finish_reason"] is not None, "spec_decode_metrics rides a final output"
        k, histogram, drafted, per_step_accepted, per_step_drafted = plan
        assert len(histogram) == k + 1
        values["spec_decode_metrics"] = ordered(
            REQUEST_SPEC_DECODE_METRICS_FIELDS,
            dict(num_spec_tokens=k, histogram=histogram, num_draft_tokens=drafted,
                 per_step_accepted=per_step_accepted, per_step_drafted=per_step_drafted),
            "RequestSpecDecodeMetrics")
    return [values[name] for name in OUTPUT_FIELDS]


def relay_message(old, kind, index):
    assert len(old) == len(ENGINE_CORE_OUTPUTS_FIELDS)
    new = list(old)
    new[1] = [relay_output(o, kind, index) for o in old[1]]
    new[2] = relay_scheduler_stats(old[2], kind, index)
    return new


# --- Reading the base captures ------------------------------------------------------------------

def load_manifest():
    with open(os.path.join(DIR, "manifest.json")) as f:
        return json.load(f)


def split_frames(case):
    with open(os.path.join(DIR, case["msgpack"]), "rb") as f:
        data = f.read()
    frames, offset = [], 0
    for frame in case["frames"]:
        frames.append(data[offset:offset + frame["frame0_bytes"]])
        offset += frame["frame0_bytes"]
    assert offset == len(data)
    return frames


def decode(frame):
    return msgpack.unpackb(frame, raw=False, strict_map_key=False, use_list=True)


def encode(obj):
    return msgpack.packb(obj, use_bin_type=True)


def check_encoder_matches_msgspec(manifest):
    """python3-msgpack must write every imported capture byte for byte as msgspec did."""
    for case in manifest["cases"]:
        if case.get("source") != "imported":
            continue
        for frame in split_frames(case):
            assert encode(decode(frame)) == frame, case["case"]


# --- Main -------------------------------------------------------------------------------------

GOLDEN_FIELDS = ("golden_text", "golden_openmetrics", "newest_semantics")


def main():
    manifest = load_manifest()
    check_encoder_matches_msgspec(manifest)
    base_cases = {c["case"]: c for c in manifest["cases"]}
    # Goldens for these cases are written by a later step (the newest frontend's rendering);
    # regenerating the bytes must not drop them.
    kept = {c["case"]: {k: c.get(k) for k in GOLDEN_FIELDS}
            for c in manifest["cases"] if c["generation"] == GENERATION}

    new_cases = []
    for kind in ("stats_nixl_spec", "stats_multi", "outputs", "stats_ec"):
        base = base_cases["%s_%s" % (BASE, DERIVED_KINDS.get(kind, kind))]
        name = "%s_%s" % (GENERATION, kind)
        frames = []
        for index, frame in enumerate(split_frames(base)):
            frames.append(encode(relay_message(decode(frame), kind, index)))
        data = b"".join(frames)
        with open(os.path.join(DIR, name + ".msgpack"), "wb") as f:
            f.write(data)
        requests = None
        if base.get("requests"):
            requests = name + ".requests.jsonl"
            shutil.copyfile(os.path.join(DIR, base["requests"]), os.path.join(DIR, requests))
        wire = dict(base["wire"])
        wire["engine_core_output_fields"] = list(OUTPUT_FIELDS)
        wire["scheduler_stats_fields"] = list(SCHEDULER_STATS_FIELDS)
        new_cases.append({
            "case": name,
            "source": "generated",
            "generator": "tools/gen_wire_newest.py",
            "generation": GENERATION,
            "commit": None,
            "derived_from": base["case"],
            "kind": base["kind"],
            "description": DESCRIPTIONS[kind],
            "configuration": (dict(base["configuration"], ec_transfer_config=EC_TRANSFER_CONFIG)
                              if kind in EC_PLAN else base["configuration"]),
            "multi_connector_shape": "flat" if base["multi_connector_shape"] else None,
            "msgpack": name + ".msgpack",
            "sha256": hashlib.sha256(data).hexdigest(),
            "messages": len(frames),
            "frames": [{"engine_index": decode(fr)[0], "frame0_bytes": len(fr)}
                       for fr in frames],
            "frontend_skipped_messages": base["frontend_skipped_messages"],
            "requests": requests,
            "golden_text": None,
            "golden_openmetrics": None,
            "wire": wire,
            "newest_semantics": None,
        })
        new_cases[-1].update(kept.get(name, {}))

    manifest["generations"][GENERATION] = {
        "commit": None,
        "span_on_main": "after 2026-08-14 (6adad087), as of the 2026-09-24 documentation",
        "shaped_by": ("#48915 (spec_decode_metrics), #52755 (flat MultiConnector children), "
                      "#54960 (ec_connector_stats), #56318 (hits_by_source), NIXL "
                      "num_failed_handshakes, num_kv_fetch_reqs_by_stage"),
        "vllm_files": [],
    }
    manifest["cases"] = ([c for c in manifest["cases"] if c["generation"] != GENERATION] +
                         new_cases)
    with open(os.path.join(DIR, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print("wrote %d %s cases to %s" % (len(new_cases), GENERATION, os.path.relpath(DIR, ROOT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
