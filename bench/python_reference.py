#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The Python side of `bench/compare`: vLLM's Python frontend, as far as metrics go, timed on the
same captures as the C++ benchmarks.

What it models (vllm/v1/metrics/loggers.py PrometheusStatLogger and the KV-connector
*PromMetrics classes at the reference commit, docs/recording.md for the rules):

  * decoding: `msgpack.unpackb` (python3-msgpack's C extension) of every frame 0. vLLM decodes
    with msgspec into typed Structs, which is not packaged in Debian; both are C decoders that
    build Python objects for every value, so this stands in for it (see bench/README.md);
  * recording: children resolved per engine at start-up (`make_per_engine`: one child per
    engine in a dict, as vLLM does), then per message `.set()`, `.inc()` and `.observe()` on
    them; NIXL-like connectors observe/increment every list element, the Mooncake store caches
    its five children per (engine, operation, status), HF3FS adds scalars; vmetrics' own
    accounting counter is incremented too, so the exposition is the one `vmetrics replay`
    renders;
  * rendering: prometheus_client's `generate_latest` (text 0.0.4) and the OpenMetrics one, with
    `gzip.compress` as prometheus_client's `_bake_output` does for `Accept-Encoding: gzip`.

Family names, HELP texts, buckets and connector rows come from tools/gen_goldens.py (the
independent golden generator), so this file holds only the hot path.

Usage (bench/compare runs all of these; every mode prints one JSON object per line):
    /usr/bin/python3 bench/python_reference.py decode-record --captures bench/captures w1
    /usr/bin/python3 bench/python_reference.py decode-record --captures bench/captures --requests w2
    /usr/bin/python3 bench/python_reference.py render --captures bench/captures --engines 64
    /usr/bin/python3 bench/python_reference.py dump --captures bench/captures --out DIR
Timings are CPU time of this process (time.process_time), like Google Benchmark's CPU column.
"""

import argparse
import gzip
import json
import os
import sys
import time
from unittest import mock

import msgpack
from prometheus_client.exposition import generate_latest as generate_text
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
import gen_goldens as G  # noqa: E402  (family tables and connector rows)
import gen_request_goldens as R  # noqa: E402  (the per-request algorithm, OutputProcessor's)

CREATED = 123.456  # `_created` of every child in dumps; render_bench pins the same value

# The families SchedulerStats does not feed, in registration order, with the histogram scale
# FeedRequestFamilies (bench/workloads.cc) uses. Keep the two lists identical.
REQUEST_FAMILIES = [
    ("vllm:mm_cache_queries", 0), ("vllm:mm_cache_hits", 0), ("vllm:num_preemptions", 0),
    ("vllm:prompt_tokens", 0), ("vllm:prompt_tokens_by_source", 0),
    ("vllm:prompt_tokens_cached", 0), ("vllm:generation_tokens", 0),
    ("vllm:request_success", 0), ("vllm:request_prompt_tokens", 16),
    ("vllm:request_generation_tokens", 16), ("vllm:iteration_tokens_total", 16),
    ("vllm:request_max_num_generation_tokens", 16), ("vllm:request_params_n", 1),
    ("vllm:request_params_max_tokens", 16), ("vllm:time_to_first_token_seconds", 0.05),
    ("vllm:inter_token_latency_seconds", 0.05),
    ("vllm:request_time_per_output_token_seconds", 0.05),
    ("vllm:e2e_request_latency_seconds", 0.05), ("vllm:request_queue_time_seconds", 0.05),
    ("vllm:request_inference_time_seconds", 0.05), ("vllm:request_prefill_time_seconds", 0.05),
    ("vllm:request_decode_time_seconds", 0.05), ("vllm:request_prefill_kv_computed_tokens", 16),
]


class Frontend:
    """The metrics side of vLLM's Python frontend for one workload (bench/workloads.h)."""

    def __init__(self, meta):
        self.model = meta["served_model_name"]
        self.engines = list(range(meta["engines"]))
        self.engine_set = set(self.engines)
        self.max_model_len = G.DEFAULT_MAX_MODEL_LEN
        self.spec_tokens = meta["num_speculative_tokens"]
        self.kv_cache_metrics = meta["kv_cache_metrics"]
        config = json.loads(meta["kv_transfer_config"]) if meta["kv_transfer_config"] else None
        self.connector_top, self.connector_children = G.configured_connector_classes(config)
        self.exposition = G.Exposition()
        self.metrics = {}
        self.rows = {}        # class name -> per-engine row state
        self.accounting = {}  # (class name, outcome) -> child
        self.children = {}    # (family, engine, extra labels...) -> child, for record_iteration
        self.register(meta.get("cache_config") or [])

    # ---- registration (docs/recording.md "Family order") ---------------------------------

    def metric(self, family, labelnames, registry=None):
        buckets = family.buckets
        if buckets == G.TOKENS_1_2_5:
            buckets = G.build_1_2_5_buckets(self.max_model_len)
        registry = registry or self.exposition.vllm
        if family.kind == G.COUNTER:
            m = G.Counter(family.name, family.help, labelnames, registry=registry)
        elif family.kind == G.GAUGE:
            m = G.Gauge(family.name, family.help, labelnames, registry=registry)
        else:
            m = G.Histogram(family.name, family.help, labelnames, buckets=buckets,
                            registry=registry)
        self.metrics[family.name] = m
        return m

    def per_engine(self, family):
        """vLLM's make_per_engine: {engine: child}, or {engine: {extra value: child}}."""
        if family.extra is None:
            m = self.metric(family, ["model_name", "engine"])
            return {e: m.labels(self.model, str(e)) for e in self.engines}
        label, values = family.extra
        m = self.metric(family, ["model_name", "engine", label])
        children = {e: {} for e in self.engines}
        for value in values:
            for e in self.engines:
                child = m.labels(self.model, str(e), value)
                if family.initial is not None:
                    child.set(family.initial[value])
                children[e][value] = child
        return children

    def register_row(self, row):
        class_names = row.class_names
        if any(c in self.rows for c in class_names):
            return
        if row.children == G.EAGER:
            # Family by family, every engine (create_metric_per_engine).
            fields = [(f, self.per_engine(f.family)) for f in row.fields]
            state = ("eager", fields)
        else:
            labelnames = ["model_name", "engine"] + list(row.record_labels)
            metrics = [self.metric(f.family, labelnames) for f in row.fields]
            state = ("store", metrics, {})
        for c in class_names:
            self.rows[c] = state

    def register(self, cache_config):
        if self.spec_tokens > 0:
            self.spec = [self.per_engine(f) for f in G.SPEC_DECODE_FAMILIES[:3]]
            per_pos = self.metric(G.SPEC_DECODE_FAMILIES[3], ["model_name", "engine", "position"])
            self.spec_per_pos = {e: [per_pos.labels(self.model, str(e), str(p))
                                     for p in range(self.spec_tokens)] for e in self.engines}
        for class_name in self.connector_children:
            row = G.row_for_class(class_name)
            if row is not None:
                self.register_row(row)
        self.mfu = [self.per_engine(f) for f in G.MFU_FAMILIES]
        # The gated families stay off: the workloads configure no kv_role and no NaN checking.
        s = {f.name: self.per_engine(f) for f in G.SCHEDULER_FAMILIES if f.gate is None}
        self.running = s["vllm:num_requests_running"]
        self.waiting = s["vllm:num_requests_waiting"]
        self.waiting_by_reason = s["vllm:num_requests_waiting_by_reason"]
        self.kv_usage = s["vllm:kv_cache_usage_perc"]
        self.prefix_queries = s["vllm:prefix_cache_queries"]
        self.prefix_hits = s["vllm:prefix_cache_hits"]
        self.external_queries = s["vllm:external_prefix_cache_queries"]
        self.external_hits = s["vllm:external_prefix_cache_hits"]
        self.cached_by_source = s["vllm:prompt_tokens_cached_by_source"]
        if self.kv_cache_metrics:
            self.residency = [self.per_engine(f) for f in G.KV_RESIDENCY_FAMILIES]
        if cache_config:
            info = self.metric(G.CACHE_CONFIG_INFO, [k for k, _ in cache_config] + ["engine"])
            for e in self.engines:
                info.labels(*[v for _, v in cache_config], str(e)).set(1)
        else:
            self.metric(G.CACHE_CONFIG_INFO, ["engine"])
        decode_errors = self.metric(G.DECODE_ERRORS, ["part"], self.exposition.vmetrics)
        for part in G.DECODE_ERROR_PARTS:
            decode_errors.labels(part)  # eager, as vmetrics registers them
        self.metric(G.UNKNOWN_ENGINE, [], self.exposition.vmetrics)
        self.payloads = self.metric(G.KV_PAYLOADS, ["connector", "outcome"],
                                    self.exposition.vmetrics)

    # ---- one message ---------------------------------------------------------------------

    def record(self, frame):
        msg = msgpack.unpackb(frame, raw=False, strict_map_key=False)
        self.record_message(msg)
        return msg

    def record_message(self, msg):
        engine = msg[0]
        if engine not in self.engine_set:
            self.metrics[G.UNKNOWN_ENGINE.name].inc()
            return
        stats = msg[2] if len(msg) > 2 else None
        if stats is None or (len(msg) > 4 and msg[4] is not None):
            return
        running, waiting = stats["num_running_reqs"], stats["num_waiting_reqs"]
        deferred = stats["num_skipped_waiting_reqs"]
        self.running[engine].set(running)
        self.waiting[engine].set(waiting + deferred)
        by_reason = self.waiting_by_reason[engine]
        by_reason["capacity"].set(waiting)
        by_reason["deferred"].set(deferred)
        self.kv_usage[engine].set(stats["kv_cache_usage"])
        prefix = stats["prefix_cache_stats"]
        self.prefix_queries[engine].inc(prefix["queries"])
        self.prefix_hits[engine].inc(prefix["hits"])
        self.cached_by_source[engine]["device"].inc(prefix["hits"])
        external = stats["connector_prefix_cache_stats"]
        if external is not None:
            self.external_queries[engine].inc(external["queries"])
            self.external_hits[engine].inc(external["hits"])
            for tier, tokens in external.get("hits_by_source", {}).items():
                self.cached_by_source[engine][tier].inc(tokens)
        spec = stats["spec_decoding_stats"]
        if spec is not None and self.spec_tokens > 0:
            self.spec[0][engine].inc(spec["num_drafts"])
            self.spec[1][engine].inc(spec["num_draft_tokens"])
            self.spec[2][engine].inc(spec["num_accepted_tokens"])
            per_pos = spec["num_accepted_tokens_per_pos"]
            for p, child in enumerate(self.spec_per_pos[engine]):
                child.inc(per_pos[p] if p < len(per_pos) else 0)
        kv = stats["kv_connector_stats"]
        if kv:
            self.record_kv_connector_stats(engine, kv)
        perf = stats.get("perf_stats")
        if perf is not None:
            values = (perf["num_flops_per_gpu"], perf["num_read_bytes_per_gpu"],
                      perf["num_write_bytes_per_gpu"])
            if any(values):
                for per_engine, value in zip(self.mfu, values):
                    per_engine[engine].inc(value)
        if self.kv_cache_metrics:
            lifetime, idle, gap = (r[engine] for r in self.residency)
            for event in stats["kv_cache_eviction_events"]:
                lifetime.observe(event["lifetime_seconds"])
                idle.observe(event["idle_seconds"])
                for g in event["reuse_gaps_seconds"]:
                    gap.observe(g)

    def account(self, class_name, outcome):
        child = self.accounting.get((class_name, outcome))
        if child is None:
            child = self.accounting[(class_name, outcome)] = self.payloads.labels(class_name,
                                                                                  outcome)
        child.inc()

    def record_kv_connector_stats(self, engine, payload):
        if self.connector_top == G.MULTI_CONNECTOR:
            for class_name, child in payload.items():
                if isinstance(child, dict) and len(child) == 1 and isinstance(child.get("data"),
                                                                               dict):
                    child = child["data"]
                self.record_payload(engine, class_name, child)
        else:
            self.record_payload(engine, self.connector_top, payload)

    def record_payload(self, engine, class_name, payload):
        state = self.rows.get(class_name)
        if state is None:
            self.account(class_name, "unknown_connector")
            return
        if state[0] == "eager":
            # NixlPromMetrics.observe and friends: every list element, or the scalar.
            for field, per_engine in state[1]:
                child = per_engine[engine]
                if field.how == G.ADD_SCALAR:
                    child.inc(payload.get(field.key, 0))
                elif field.how == G.OBSERVE_EACH:
                    for v in payload.get(field.key, ()):
                        child.observe(v)
                else:
                    for v in payload.get(field.key, ()):
                        child.inc(v)
        else:
            # MooncakeStorePromMetrics: five children per (engine, operation, status).
            metrics, cache = state[1], state[2]
            for operation, records in payload.items():
                for record in records:
                    status = str(record.get("status", "ok"))
                    key = (engine, operation, status)
                    children = cache.get(key)
                    if children is None:
                        children = cache[key] = [m.labels(self.model, str(engine), operation,
                                                          status) for m in metrics]
                    children[0].observe(float(record["duration_seconds"]))
                    children[1].inc()
                    children[2].inc(int(record["num_keys"]))
                    children[3].inc(int(record.get("num_bytes", 0)))
                    children[4].inc(int(record.get("num_failed_keys", 0)))
        self.account(class_name, "recorded")

    def child(self, name, engine, *extra):
        """A request family's child, resolved once (vLLM keeps them per engine from start-up)."""
        key = (name, engine) + extra
        child = self.children.get(key)
        if child is None:
            child = self.children[key] = self.metrics[name].labels(self.model, str(engine), *extra)
        return child

    def feed_request_families(self):
        """The same values as FeedRequestFamilies() in bench/workloads.cc."""
        for f, (name, base) in enumerate(REQUEST_FAMILIES):
            metric = self.metrics[name]
            for c, child in enumerate(list(metric._metrics.values())):
                if isinstance(metric, G.Counter):
                    child.inc(1.5 * (c + 1) * (f + 1))
                elif isinstance(metric, G.Histogram):
                    for j in range(8):
                        child.observe(base * (1 + (7 * c + 13 * j + f) % 50) / 8)


# ---- helpers ---------------------------------------------------------------------------------


def load(captures, name):
    with open(os.path.join(captures, "workloads.json")) as f:
        meta = json.load(f)[name]
    frames = []
    with open(os.path.join(captures, os.path.basename(meta["path"])), "rb") as f:
        data = f.read()
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
    unpacker.feed(data)
    # Split without keeping the decoded objects: tell() gives each message's end.
    start = 0
    for _ in unpacker:
        end = unpacker.tell()
        frames.append(data[start:end])
        start = end
    return meta, frames


def w3_frontend(captures, name, created=None):
    meta, frames = load(captures, name)
    patcher = mock.patch("time.time", return_value=created) if created is not None else None
    if patcher:
        patcher.start()
    try:
        fe = Frontend(meta)
        for frame in frames:
            fe.record(frame)
        fe.feed_request_families()
    finally:
        if patcher:
            patcher.stop()
    return fe


class RequestReplay:
    """W2 with its requests: the rules of RequestReplay in bench/workloads.h (intake derived
    from the capture, iteration timestamp = message timestamp + 0.005), on the Python frontend
    of tools/gen_request_goldens.py and its record_iteration (PrometheusStatLogger part C)."""

    def __init__(self, frames):
        self.intake = []
        for frame in frames:
            msg = msgpack.unpackb(frame, raw=False, strict_map_key=False)
            self.intake.append([
                {"request_id": o[0], "arrival_time": msg[3] - 0.1,
                 "prompt_len": o[11]["num_prompt_tokens"], "max_tokens": 2048}
                for o in msg[1] if R.field(o, 11) is not None])

    def run(self, fe, frames):
        requests = R.Frontend()  # every pass starts with no live requests
        for frame, intake in zip(frames, self.intake):
            msg = fe.record(frame)
            for line in intake:
                requests.add(line)
            it = requests.process(msg, msg[3] + 0.005, 0.0)
            if it is not None and msg[0] in fe.engine_set:
                R.record_iteration(fe, msg[0], it)


def timed(fn, min_seconds):
    """Runs fn() until min_seconds of CPU time have passed; returns (runs, cpu seconds)."""
    runs, start = 0, time.process_time()
    while True:
        fn()
        runs += 1
        spent = time.process_time() - start
        if spent >= min_seconds:
            return runs, spent


def emit(**fields):
    print(json.dumps(fields), flush=True)


def cmd_decode_record(args):
    meta, frames = load(args.captures, args.workload)
    fe = Frontend(meta)
    replay = RequestReplay(frames) if args.requests else None

    def one_pass():
        if replay is not None:
            replay.run(fe, frames)
            return
        for frame in frames:
            fe.record(frame)

    runs, cpu = timed(one_pass, args.min_seconds)
    messages = runs * len(frames)
    emit(mode="decode-record-requests" if args.requests else "decode-record",
         workload=args.workload, messages_per_s=messages / cpu,
         bytes_per_s=runs * meta["bytes"] / cpu, outputs_per_s=runs * meta["outputs"] / cpu,
         us_per_message=cpu / messages * 1e6, passes=runs)
    if args.requests:
        return

    def decode_pass():
        for frame in frames:
            msgpack.unpackb(frame, raw=False, strict_map_key=False)

    runs, cpu = timed(decode_pass, args.min_seconds / 2)
    emit(mode="decode", workload=args.workload, messages_per_s=runs * len(frames) / cpu,
         us_per_message=cpu / (runs * len(frames)) * 1e6)


def cmd_render(args):
    name = "w3" if args.engines == 64 else f"w3_{args.engines}"
    fe = w3_frontend(args.captures, name)
    for fmt, gen in (("text", generate_text), ("openmetrics", generate_openmetrics)):
        out = gen(fe.exposition)
        runs, cpu = timed(lambda: gen(fe.exposition), args.min_seconds)
        emit(mode="render", format=fmt, gzip=False, engines=args.engines,
             ms_per_render=cpu / runs * 1e3, exposition_bytes=len(out))
        runs, cpu = timed(lambda: gzip.compress(gen(fe.exposition)), args.min_seconds)
        emit(mode="render", format=fmt, gzip=True, engines=args.engines,
             ms_per_render=cpu / runs * 1e3, gzip_bytes=len(gzip.compress(out)))


def cmd_dump(args):
    """Renderings with `_created` pinned, for the byte-for-byte check against C++."""
    os.makedirs(args.out, exist_ok=True)
    for name, engines in (("w3_1", 1), ("w3_8", 8), ("w3", 64)):
        fe = w3_frontend(args.captures, name, created=CREATED)
        with open(os.path.join(args.out, f"w3_{engines}.txt"), "wb") as f:
            f.write(generate_text(fe.exposition))
        with open(os.path.join(args.out, f"w3_{engines}.om"), "wb") as f:
            f.write(generate_openmetrics(fe.exposition))
    for name in ("w1", "w2"):
        meta, frames = load(args.captures, name)
        with mock.patch("time.time", return_value=CREATED):
            fe = Frontend(meta)
            for frame in frames:
                fe.record(frame)
        with open(os.path.join(args.out, f"{name}.txt"), "wb") as f:
            f.write(generate_text(fe.exposition))
    meta, frames = load(args.captures, "w2")
    with mock.patch("time.time", return_value=CREATED):
        fe = Frontend(meta)
        RequestReplay(frames).run(fe, frames)
    with open(os.path.join(args.out, "w2_requests.txt"), "wb") as f:
        f.write(generate_text(fe.exposition))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("decode-record")
    p.add_argument("--captures", default=os.path.join(REPO, "bench", "captures"))
    p.add_argument("--min-seconds", type=float, default=2.0)
    p.add_argument("workload", choices=("w1", "w2"))
    p.add_argument("--requests", action="store_true",
                   help="W2 with its requests known (RequestReplay)")
    p = sub.add_parser("render")
    p.add_argument("--captures", default=os.path.join(REPO, "bench", "captures"))
    p.add_argument("--min-seconds", type=float, default=2.0)
    p.add_argument("--engines", type=int, choices=(1, 8, 64), default=64)
    p = sub.add_parser("dump")
    p.add_argument("--captures", default=os.path.join(REPO, "bench", "captures"))
    p.add_argument("--out", required=True)
    args = parser.parse_args()
    {"decode-record": cmd_decode_record, "render": cmd_render, "dump": cmd_dump}[args.mode](args)


if __name__ == "__main__":
    main()
