#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in vLLM EngineCore written in Python, for testing a frontend against Python encoding.

It meets the frontend the way vLLM's EngineCoreProc does (vllm/v1/engine/core.py in
vllm-project/vllm; docs/design.md §5.2-§5.5):

  frontend mode (--handshake-address): connect a DEALER whose identity is the 2-byte
  little-endian engine index, send HELLO, wait for INIT, connect a DEALER (same identity) to
  every INIT input address and send the EngineCoreReadyResponse on each, connect a PUSH to every
  output address, send READY, close the handshake socket;

  bootstrapped mode (--input-address/--output-address): only the registration and the PUSH.

Between steps it answers the UTILITY calls a Python API server makes at startup
(reset_mm_cache -> None, get_supported_tasks -> ["generate"], is_sleeping -> False, anything
else -> None), so it can also stand in behind a real `vllm serve --data-parallel-size-local 0`
frontend (docs/design.md §5.5); --hold keeps it serving after the last step until SIGINT/SIGTERM.

It sends --steps EngineCoreOutputs, each with a SchedulerStats (a dataclass, so a map of
all 16 keys) and, for --connector, a kv_connector_stats payload taken from a small
deterministic script (NIXL, Mooncake P2P, Mooncake store, or all three in a MultiConnector), all
encoded with python3-msgpack the way msgspec encodes them. At the end it prints what it sent
as one JSON object on stdout (the layout of `vmetrics simulate --report-totals`, per engine
reduced to what this script sends), with --print-frames also the hex of every frame 0.

With --replay-case CASE it speaks an older (or newer) vLLM instead: the handshake form of the
case's wire generation (an empty registration frame and num_gpu_blocks on READY up to
g20260204; the ready response's field set of its generation after), and as its outputs the
messages of the case's capture in tests/fixtures/wire_generations/ whose engine_index is its
own, byte for byte as that generation's vLLM encoded them (docs/wire_format.md, "Wire generations").
With --replay-capture FILE it speaks the newest vLLM and sends the messages of any capture
(tests/fixtures/hostile_wire/ for one) whose engine_index is its own, byte for byte.

Needs only /usr/bin/python3 with python3-zmq and python3-msgpack (Debian 12).
"""

import argparse
import json
import os
import random
import signal
import sys
import time

import msgpack
import zmq

ENGINE_CORE_DEAD = b"ENGINE_CORE_DEAD"
UTILITY = b"\x03"  # EngineCoreRequestType.UTILITY
UTILITY_RESULTS = {"get_supported_tasks": ["generate"], "is_sleeping": False}


def pack(obj):
    # msgspec writes Python floats as float64 and ints in their smallest encoding, str as str
    # and bytes as bin: python3-msgpack with use_bin_type does the same.
    return msgpack.packb(obj, use_bin_type=True)


def make_socket(ctx, kind, identity=None, linger=None):
    """vLLM's make_zmq_socket: unlimited high-water marks on data sockets."""
    sock = ctx.socket(kind)
    if kind in (zmq.PULL, zmq.DEALER, zmq.ROUTER, zmq.PUSH):
        sock.setsockopt(zmq.RCVHWM, 0)
        sock.setsockopt(zmq.SNDHWM, 0)
    if identity is not None:
        sock.setsockopt(zmq.IDENTITY, identity)
    if linger is not None:
        sock.setsockopt(zmq.LINGER, linger)
    return sock


def ready_response(args, connector_class):
    """EngineCoreReadyResponse, the newest Python key set, in definition order."""
    return {
        "max_model_len": args.max_model_len,
        "num_gpu_blocks": args.num_gpu_blocks,
        "block_size": 16,
        "dp_stats_address": None,
        "dtype": "bfloat16",
        "vllm_version": "0.0.0+stand-in",
        "world_size": 1,
        "data_parallel_size": args.data_parallel_size,
        "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "decode_context_parallel_size": 1,
        "data_parallel_rank": args.engine_index,
        "max_num_seqs": 256,
        "max_num_batched_tokens": 8192,
        "instance_id": "stand-in-%d" % args.engine_index,
        "kv_cache_size_tokens": args.num_gpu_blocks * 16,
        "kv_cache_max_concurrency": args.num_gpu_blocks * 16 / args.max_model_len,
        "kv_events_config": None,
        "kv_connector": connector_class,
        "kv_role": "kv_both" if connector_class else None,
        "kv_engine_id": None,
        "weight_transfer_backend": None,
        "enable_sleep_mode": False,
        "supports_draft_weight_updates": False,
        "effective_attention_block_size": 16,
        "a_key_from_the_future": {"ignored": [1, 2, 3]},
    }


WIRE_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "tests", "fixtures", "wire_generations")


def load_case(case_name):
    """The case's manifest entry and its messages (frame 0 of each, in capture order)."""
    with open(os.path.join(WIRE_FIXTURES, "manifest.json")) as f:
        case = next(c for c in json.load(f)["cases"] if c["case"] == case_name)
    with open(os.path.join(WIRE_FIXTURES, case["msgpack"]), "rb") as f:
        data = f.read()
    messages, offset = [], 0
    for frame in case["frames"]:
        messages.append(data[offset:offset + frame["frame0_bytes"]])
        offset += frame["frame0_bytes"]
    return case, messages


def load_capture(path):
    """The messages of a capture file (one msgpack value each, concatenated), as bytes."""
    with open(path, "rb") as f:
        data = f.read()
    unpacker = msgpack.Unpacker(raw=True, strict_map_key=False, max_buffer_size=len(data) + 1)
    unpacker.feed(data)
    messages, offset = [], 0
    for _ in unpacker:
        end = unpacker.tell()
        messages.append(data[offset:end])
        offset = end
    return messages


def engine_of(message):
    """The engine_index of an EngineCoreOutputs message (0 if it is not an array with one)."""
    try:
        value = msgpack.unpackb(message, raw=True, strict_map_key=False)
        return value[0] if isinstance(value, list) and isinstance(value[0], int) else 0
    except Exception:  # noqa: BLE001 (a hostile message: sent by engine 0)
        return 0


def generation_registration(args, generation):
    """The registration frame an engine of `generation` sends (vllm/v1/engine/core.py at the
    generation's commit): None = the empty frame of engines before 2026-04-09."""
    date = generation[1:9]
    if date < "20260413":
        return None
    response = {"max_model_len": args.max_model_len, "num_gpu_blocks": args.num_gpu_blocks,
                "dp_stats_address": None}
    if date == "20260413":
        return response
    commit = {"20260712": "370b678a0"}.get(date)
    response = {"max_model_len": args.max_model_len, "num_gpu_blocks": args.num_gpu_blocks,
                "block_size": 16, "dp_stats_address": None, "dtype": "bfloat16",
                # A source build's version names its commit (setuptools-scm).
                "vllm_version": "0.0.0.dev0+g%s" % commit if commit else "dev",
                "world_size": 1, "data_parallel_size": args.data_parallel_size,
                "kv_cache_size_tokens": args.num_gpu_blocks * 16,
                "kv_cache_max_concurrency": args.num_gpu_blocks * 16 / args.max_model_len}
    if date == "20260712":
        return response
    return ready_response(args, None)


CONNECTOR_CLASS = {
    "none": None,
    "nixl": "NixlConnector",
    "mooncake-p2p": "MooncakeConnector",
    "mooncake-store": "MooncakeStoreConnector",
    "multi": "MultiConnector",
}


class Script:
    """The deterministic payload script: what each step reports."""

    def __init__(self, seed, engine_index):
        self.rng = random.Random(seed * 65537 + engine_index)

    def nixl(self):
        n = self.rng.randint(0, 3)
        fail = self.rng.random() < 0.2
        return {
            "transfer_duration": [round(self.rng.lognormvariate(-4.0, 0.8), 6) for _ in range(n)],
            "post_duration": [round(self.rng.lognormvariate(-7.0, 0.5), 7) for _ in range(n)],
            "bytes_transferred": [self.rng.choice([65536, 1048576, 4194304, 67108864]) for _ in range(n)],
            "num_descriptors": [self.rng.randint(8, 512) for _ in range(n)],
            "num_failed_transfers": [1] if fail else [],
            "num_failed_notifications": [],
            "num_kv_expired_reqs": [1] if self.rng.random() < 0.1 else [],
        }

    def mooncake_p2p(self):
        n = self.rng.randint(0, 2)
        return {
            "transfer_duration": [round(self.rng.lognormvariate(-5.0, 0.6), 6) for _ in range(n)],
            "bytes_transferred": [self.rng.choice([131072, 2097152, 33554432]) for _ in range(n)],
            "num_descriptors": [self.rng.randint(8, 512) for _ in range(n)],
            "num_failed_transfers": [],
            "num_failed_recvs": [1] if self.rng.random() < 0.15 else [],
            "num_kv_expired_reqs": [],
        }

    def store(self):
        payload = {}
        for op in ("lookup_exists", "load_get", "save_exists", "save_put"):
            if self.rng.random() < 0.5:
                continue
            records = []
            for _ in range(self.rng.randint(1, 2)):
                keys = self.rng.randint(1, 16)
                u = self.rng.random()
                status = "ok" if u < 0.8 else ("partial_failure" if u < 0.95 else "error")
                failed = 0 if status == "ok" else (keys if status == "error" else 1)
                records.append({
                    "duration_seconds": round(self.rng.lognormvariate(-4.5, 0.7), 6),
                    "num_keys": keys,
                    "num_bytes": 0 if op.endswith("exists") else keys * 262144,
                    "status": status,
                    "num_failed_keys": failed,
                })
            payload[op] = records
        return payload


def transfer_empty(p):
    return not any(p[k] for k in p)


def scheduler_stats(step, rng, kv):
    running = rng.randint(0, 64)
    return {
        "num_running_reqs": running,
        "num_waiting_reqs": rng.randint(0, 8),
        "num_skipped_waiting_reqs": rng.randint(0, 2),
        "step_counter": 0,
        "current_wave": 0,
        "kv_cache_usage": round(running / 64.0, 4),
        "iteration_details": None,
        "prefix_cache_stats": {"reset": False, "requests": 1, "queries": 128 + step,
                               "hits": 64, "preempted_requests": 0, "preempted_queries": 0,
                               "preempted_hits": 0},
        "connector_prefix_cache_stats": None if kv is None else {
            "reset": False, "requests": 1, "queries": 64, "hits": 32, "preempted_requests": 0,
            "preempted_queries": 0, "preempted_hits": 0},
        "kv_cache_eviction_events": [],
        "spec_decoding_stats": None,
        "kv_connector_stats": kv,
        "waiting_lora_adapters": {},
        "running_lora_adapters": {},
        "cudagraph_stats": None,
        "perf_stats": None,
    }


class Totals:
    def __init__(self, engine_index):
        self.doc = {"engine_index": engine_index, "messages": 0, "kv_connector": {
            "messages": 0, "payloads": {}, "fields": {}, "store": []},
            "prefix_cache": {"requests": 0, "queries": 0, "hits": 0}, "frames": []}
        self.store = {}

    def transfer(self, cls, payload):
        kv = self.doc["kv_connector"]
        kv["payloads"][cls] = kv["payloads"].get(cls, 0) + 1
        fields = kv["fields"].setdefault(cls, {})
        for key, values in payload.items():
            f = fields.setdefault(key, {"count": 0, "sum": 0.0})
            for v in values:
                f["count"] += 1
                f["sum"] += v

    def store_payload(self, payload):
        kv = self.doc["kv_connector"]
        kv["payloads"]["MooncakeStoreConnector"] = kv["payloads"].get("MooncakeStoreConnector", 0) + 1
        for op, records in payload.items():
            for r in records:
                t = self.store.setdefault((op, r["status"]), {
                    "operation": op, "status": r["status"], "records": 0,
                    "duration_seconds_sum": 0.0, "num_keys": 0, "num_bytes": 0,
                    "num_failed_keys": 0})
                t["records"] += 1
                t["duration_seconds_sum"] += r["duration_seconds"]
                t["num_keys"] += r["num_keys"]
                t["num_bytes"] += r["num_bytes"]
                t["num_failed_keys"] += r["num_failed_keys"]

    def finish(self):
        self.doc["kv_connector"]["store"] = [self.store[k] for k in sorted(self.store)]
        return self.doc


def build_step(args, step, script, rng, totals):
    """One EngineCoreOutputs (positional, all 8 fields) and its bookkeeping."""
    kv = None
    if args.connector == "nixl":
        p = script.nixl()
        if not transfer_empty(p):
            kv = p
            totals.transfer("NixlConnector", p)
    elif args.connector == "mooncake-p2p":
        p = script.mooncake_p2p()
        if not transfer_empty(p):
            kv = p
            totals.transfer("MooncakeConnector", p)
    elif args.connector == "mooncake-store":
        p = script.store()
        if p:
            kv = p
            totals.store_payload(p)
    elif args.connector == "multi":
        children = {}
        nixl, store, p2p = script.nixl(), script.store(), script.mooncake_p2p()
        if not transfer_empty(nixl):
            children["NixlConnector"] = nixl
            totals.transfer("NixlConnector", nixl)
        if store:
            children["MooncakeStoreConnector"] = store
            totals.store_payload(store)
        if not transfer_empty(p2p):
            children["MooncakeConnector"] = p2p
            totals.transfer("MooncakeConnector", p2p)
        if children:
            kv = children
    if kv is not None:
        totals.doc["kv_connector"]["messages"] += 1
    stats = scheduler_stats(step, rng, kv)
    pc = totals.doc["prefix_cache"]
    for k in ("requests", "queries", "hits"):
        pc[k] += stats["prefix_cache_stats"][k]
    outputs = []
    if step == 1:
        # One request output with events and prefill stats, like a first token.
        outputs.append([
            "stand-in-%d-1" % args.engine_index, [42], None, None, None, None, None,
            [{"type": 1, "timestamp": 1.5}, {"type": 2, "timestamp": 1.75}],
            None, None, None,
            {"num_prompt_tokens": 7, "num_computed_tokens": 7, "num_cached_tokens": 0,
             "num_local_cached_tokens": 0, "num_external_cached_tokens": 0,
             "num_cache_creation_tokens": 0},
            None, 0, None, None])
    timestamp = 1000.0 + step * 0.01
    return [args.engine_index, outputs, stats, timestamp, None, None, None, None]


def serve_input(args, input_sockets, output_sockets, timeout_ms):
    """Answers UTILITY calls arriving within timeout_ms; returns how many were answered."""
    poller = zmq.Poller()
    for s in input_sockets:
        poller.register(s, zmq.POLLIN)
    answered = 0
    for sock, _ in poller.poll(timeout_ms):
        while True:
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            # The engine's DEALER receives [request_type, body, aux...].
            if len(frames) < 2 or frames[0] != UTILITY:
                continue  # requests are not simulated
            client_index, call_id, method = msgpack.unpackb(frames[1], raw=False)[:3]
            result = UTILITY_RESULTS.get(method)
            reply = [args.engine_index, [], None, time.monotonic(),
                     [call_id, None, [None, result]], None, None, None]
            output_sockets[min(client_index, len(output_sockets) - 1)].send(pack(reply))
            answered += 1
    return answered


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--handshake-address")
    ap.add_argument("--input-address")
    ap.add_argument("--output-address")
    ap.add_argument("--engine-index", type=int, default=0)
    ap.add_argument("--data-parallel-size", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--connector", choices=sorted(CONNECTOR_CLASS), default="none")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-model-len", type=int, default=4096)
    ap.add_argument("--num-gpu-blocks", type=int, default=2048)
    ap.add_argument("--empty-registration", action="store_true",
                    help="register with an empty frame and put num_gpu_blocks/dp_stats_address "
                         "on READY (engines before 2026-04-09)")
    ap.add_argument("--die", action="store_true", help="send ENGINE_CORE_DEAD after the steps")
    ap.add_argument("--print-frames", action="store_true")
    ap.add_argument("--interval-ms", type=int, default=0,
                    help="pause between steps, answering UTILITY calls meanwhile")
    ap.add_argument("--hold", action="store_true",
                    help="after the steps keep answering UTILITY calls until SIGINT/SIGTERM")
    ap.add_argument("--timeout-ms", type=int, default=30000)
    ap.add_argument("--replay-case",
                    help="speak this tests/fixtures/wire_generations case's generation and send "
                         "its messages of this engine index instead of --steps")
    ap.add_argument("--replay-capture",
                    help="send the messages of this capture (concatenated msgpack values, e.g. "
                         "tests/fixtures/hostile_wire/) whose engine_index is this engine's, "
                         "byte for byte, instead of --steps")
    args = ap.parse_args()
    replay = None
    if args.replay_capture:
        replay = [m for m in load_capture(args.replay_capture) if engine_of(m) == args.engine_index]
    if args.replay_case:
        case, messages = load_case(args.replay_case)
        replay = [m for m in messages
                  if msgpack.unpackb(m, raw=True, strict_map_key=False)[0] == args.engine_index]
        registration_doc = generation_registration(args, case["generation"])
        args.empty_registration = registration_doc is None
    if bool(args.handshake_address) == bool(args.input_address and args.output_address):
        ap.error("give --handshake-address or --input-address and --output-address")

    identity = args.engine_index.to_bytes(2, "little")
    ctx = zmq.Context()
    handshake = None
    if args.handshake_address:
        handshake = make_socket(ctx, zmq.DEALER, identity=identity, linger=5000)
        handshake.connect(args.handshake_address)
        handshake.send(pack({"status": "HELLO", "local": False, "headless": True}))
        if not handshake.poll(args.timeout_ms):
            print("stand-in engine: no INIT within %d ms" % args.timeout_ms, file=sys.stderr)
            return 1
        init = msgpack.unpackb(handshake.recv(), raw=False)
        inputs = init["addresses"]["inputs"]
        outputs = init["addresses"]["outputs"]
    else:
        inputs, outputs = [args.input_address], [args.output_address]

    if args.replay_case:
        registration = b"" if args.empty_registration else pack(registration_doc)
    else:
        registration = b"" if args.empty_registration else pack(
            ready_response(args, CONNECTOR_CLASS[args.connector]))
    input_sockets = []
    for address in inputs:
        s = make_socket(ctx, zmq.DEALER, identity=identity, linger=1000)
        s.connect(address)
        s.send(registration)
        input_sockets.append(s)
    output_sockets = []
    for address in outputs:
        s = make_socket(ctx, zmq.PUSH, linger=4000)
        s.connect(address)
        output_sockets.append(s)
    if handshake is not None:
        ready = {"status": "READY", "local": False, "headless": True}
        if args.data_parallel_size > 1:
            ready["parallel_config_hash"] = "stand-in"
        if args.empty_registration:
            ready["num_gpu_blocks"] = args.num_gpu_blocks
            ready["dp_stats_address"] = None
        handshake.send(pack(ready))
        handshake.close()

    script = Script(args.seed, args.engine_index)
    rng = random.Random(args.seed * 31 + args.engine_index)
    totals = Totals(args.engine_index)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    signal.signal(signal.SIGINT, lambda *_: stop.append(True))
    utility_replies = 0
    for frame in replay or []:
        output_sockets[0].send(frame)
        totals.doc["messages"] += 1
        utility_replies += serve_input(args, input_sockets, output_sockets, args.interval_ms)
    for step in range(1, 0 if replay is not None else args.steps + 1):
        if stop:
            break
        frame = pack(build_step(args, step, script, rng, totals))
        output_sockets[0].send(frame)
        totals.doc["messages"] += 1
        if args.print_frames:
            totals.doc["frames"].append(frame.hex())
        utility_replies += serve_input(args, input_sockets, output_sockets, args.interval_ms)
    while args.hold and not stop:
        utility_replies += serve_input(args, input_sockets, output_sockets, 200)
    totals.doc["utility_replies"] = utility_replies
    if args.die:
        for s in output_sockets:
            s.send(ENGINE_CORE_DEAD)
    for s in output_sockets + input_sockets:
        s.close()  # the PUSH linger delivers what is queued
    ctx.term()
    json.dump(totals.finish(), sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
