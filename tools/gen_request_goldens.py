#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Golden expositions for `vmetrics replay --requests`: the request and iteration families.

For every scenario in SCENARIOS this script writes

  tests/golden/inputs/requests_<name>.msgpack   the EngineCoreOutputs an engine would send
  tests/golden/inputs/requests_<name>.jsonl     the frontend side (src/offline/requests_sidecar.h):
                                                requests sent, client aborts, and per message the
                                                frontend's time.time() (and time.monotonic())
  tests/golden/requests_<name>.txt              the exposition prometheus_client renders

and (re)writes its own `requests_*` lines at the end of tests/golden/scenarios.tsv, leaving every
other line alone (run it after tools/gen_goldens.py, which rewrites that file).

The scheduler-side recording (registration, SchedulerStats) is tools/gen_goldens.py's Recorder.
The request side below -- per-request state, IterationStats, the per-output and per-finish
algorithm, and how IterationStats feeds the families -- is written from vLLM's Python code
(vllm/v1/engine/output_processor.py, vllm/v1/metrics/stats.py and loggers.py at vllm-project/vllm
6adad087) and docs/recording.md ("The per-output and per-finish algorithm", "Recording one
IterationStats", C.1-C.9), never from src/.

Run with Debian's interpreter: /usr/bin/python3 tools/gen_request_goldens.py
"""

import json
import math
import os
import sys
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_goldens as base  # noqa: E402
from prometheus_client.exposition import generate_latest  # noqa: E402

PREFIX = "requests_"
QUEUED, SCHEDULED, PREEMPTED = 1, 2, 3
STOP, LENGTH, ABORT, ERROR, REPETITION = 0, 1, 2, 3, 4
FINISH_LABEL = {STOP: "stop", LENGTH: "length", ABORT: "abort", ERROR: "error",
                REPETITION: "repetition"}

# ================================================================================================
# The frontend's request statistics (RequestStateStats, IterationStats, FinishedRequestStats)
# ================================================================================================


class RequestStateStats:
    def __init__(self, arrival_time):
        self.num_generation_tokens = 0
        self.arrival_time = arrival_time
        self.queued_ts = 0.0
        self.scheduled_ts = 0.0
        self.first_token_ts = 0.0
        self.last_token_ts = 0.0
        self.first_token_latency = 0.0
        self.is_corrupted = False
        self.num_preemptions = 0


class RequestState:
    def __init__(self, line):
        self.request_id = line["request_id"]
        self.prompt_len = line["prompt_len"]
        self.max_tokens_param = line.get("max_tokens", 16)
        self.parent = line.get("parent") or None
        self.n = line.get("n", 1)
        self.lora_name = line.get("lora") or None
        self.is_prefilling = True
        self.num_cached_tokens = 0
        self.stats = RequestStateStats(line["arrival_time"])


class ParentRequest:
    def __init__(self, n):
        self.n = n
        self.children_left = n
        self.max_num_generation_tokens = 0


class IterationStats:
    def __init__(self, iteration_timestamp):
        self.iteration_timestamp = iteration_timestamp
        self.num_generation_tokens = 0
        self.prompt = dict(computed=0, local_cache_hit=0, external_kv_transfer=0,
                           cached_tokens=0, total=0)
        self.num_preempted_reqs = 0
        self.finished_requests = []
        self.max_num_generation_tokens_iter = []
        self.n_params_iter = []
        self.time_to_first_tokens_iter = []
        self.inter_token_latencies_iter = []


def prompt_update(prompt, prefill_stats):
    prompt["computed"] += prefill_stats.get("num_computed_tokens", 0)
    prompt["cached_tokens"] += prefill_stats.get("num_cached_tokens", 0)
    prompt["total"] += prefill_stats.get("num_prompt_tokens", 0)
    prompt["local_cache_hit"] += prefill_stats.get("num_local_cached_tokens", 0)
    prompt["external_kv_transfer"] += prefill_stats.get("num_external_cached_tokens", 0)


def field(output, position, default=None):
    return output[position] if len(output) > position else default


class Frontend:
    """OutputProcessor + IterationStats as the reference describes them."""

    def __init__(self):
        self.states = {}
        self.parents = {}
        # LoRARequestStates: adapter name -> (waiting ids, running ids), first-seen order.
        self.lora = {}

    def lora_transition(self, state, to):
        """to: "waiting", "running" or None (finished or aborted)."""
        if state.lora_name is None:
            return
        if state.lora_name not in self.lora:
            if to is None:
                return
            self.lora[state.lora_name] = (set(), set())
        waiting, running = self.lora[state.lora_name]
        waiting.discard(state.request_id)
        running.discard(state.request_id)
        if to == "waiting":
            waiting.add(state.request_id)
        elif to == "running":
            running.add(state.request_id)
        if not waiting and not running:
            del self.lora[state.lora_name]

    def update_scheduler_stats(self, stats):
        for name, (waiting, running) in self.lora.items():
            stats["waiting_lora_adapters"][name] = len(waiting)
            stats["running_lora_adapters"][name] = len(running)

    def add(self, line):
        if line["request_id"] in self.states:
            return
        state = RequestState(line)
        if state.parent is not None and state.parent not in self.parents:
            self.parents[state.parent] = ParentRequest(state.n)
        self.states[state.request_id] = state

    def abort(self, request_ids):
        for request_id in request_ids:
            state = self.states.pop(request_id, None)
            if state is not None:
                self.lora_transition(state, None)
            if state is not None and state.parent is not None:
                parent = self.parents[state.parent]
                parent.children_left -= 1
                if parent.children_left <= 0:
                    del self.parents[state.parent]

    def process(self, message, iteration_timestamp, monotonic):
        outputs = message[1]
        if not outputs:
            return None
        it = IterationStats(iteration_timestamp)
        timestamp = message[3]
        if timestamp == 0.0:
            timestamp = monotonic
        for output in outputs:
            state = self.states.get(output[0])
            if state is None:
                continue
            stats = state.stats
            new_tokens = len(output[1])
            prefill_stats = field(output, 11)
            it.num_generation_tokens += new_tokens
            if state.is_prefilling:
                if prefill_stats is not None:
                    prompt_update(it.prompt, prefill_stats)
                ttft = it.iteration_timestamp - stats.arrival_time
                it.time_to_first_tokens_iter.append(ttft)
                stats.first_token_latency = ttft
            stats.num_generation_tokens += new_tokens
            events = field(output, 7)
            if events is not None:
                for event in events:
                    if event["type"] == QUEUED:
                        stats.queued_ts = event["timestamp"]
                        self.lora_transition(state, "waiting")
                    elif event["type"] == SCHEDULED:
                        if stats.scheduled_ts == 0.0:
                            stats.scheduled_ts = event["timestamp"]
                        self.lora_transition(state, "running")
                    elif event["type"] == PREEMPTED:
                        it.num_preempted_reqs += 1
                        stats.num_preemptions += 1
                        self.lora_transition(state, "waiting")
            if state.is_prefilling:
                stats.first_token_ts = timestamp
            else:
                it.inter_token_latencies_iter.append(timestamp - stats.last_token_ts)
            stats.last_token_ts = timestamp
            if state.is_prefilling:
                if prefill_stats is not None:
                    state.num_cached_tokens = prefill_stats.get("num_cached_tokens", 0)
                state.is_prefilling = False
            finish_reason = field(output, 5)
            if finish_reason is not None:
                del self.states[state.request_id]
                self.lora_transition(state, None)
                self.finish(state, finish_reason, it)
        return it

    def finish(self, state, finish_reason, it):
        s = state.stats
        decode_time = s.last_token_ts - s.first_token_ts
        if s.num_generation_tokens - 1 > 0:
            tpot = decode_time / (s.num_generation_tokens - 1)
        else:
            tpot = 0
        it.finished_requests.append(dict(
            finish_reason=finish_reason,
            e2e_latency=it.iteration_timestamp - s.arrival_time,
            num_prompt_tokens=state.prompt_len,
            num_generation_tokens=s.num_generation_tokens,
            max_tokens_param=state.max_tokens_param,
            queued_time=s.scheduled_ts - s.queued_ts,
            prefill_time=s.first_token_ts - s.scheduled_ts,
            inference_time=s.last_token_ts - s.scheduled_ts,
            decode_time=decode_time,
            mean_time_per_output_token=tpot,
            num_cached_tokens=state.num_cached_tokens,
            num_preemptions=s.num_preemptions))
        if state.parent is None:
            it.max_num_generation_tokens_iter.append(s.num_generation_tokens)
            it.n_params_iter.append(1)
            return
        parent = self.parents[state.parent]
        parent.max_num_generation_tokens = max(parent.max_num_generation_tokens,
                                               s.num_generation_tokens)
        parent.children_left -= 1
        if parent.children_left == 0:
            it.max_num_generation_tokens_iter.append(parent.max_num_generation_tokens)
            it.n_params_iter.append(parent.n)
            del self.parents[state.parent]


class Observed:
    """A histogram child whose observe() skips NaN and infinite values and counts them in
    vmetrics_wire_values_skipped_total (nan_observation, infinite_observation), where Python's
    would add them to _sum (a NaN _sum makes the OpenMetrics exposition unparsable; vmetrics
    skips them: docs/recording.md). Finite values, negative ones too, are observed."""

    def __init__(self, recorder, child):
        self.recorder, self.child = recorder, child

    def observe(self, value):
        if math.isnan(value):
            self.recorder.skip("nan_observation")
        elif math.isinf(value):
            self.recorder.skip("infinite_observation")
        else:
            self.child.observe(value)


def record_iteration(recorder, engine, it):
    """PrometheusStatLogger.record, part C (docs/recording.md C.1-C.9), in order; histogram
    observations through Observed."""
    def child(name, *extra):
        c = recorder.child(name, engine, *extra)
        return Observed(recorder, c) if hasattr(c, "observe") else c
    child("vllm:num_preemptions").inc(it.num_preempted_reqs)                       # C.2
    child("vllm:prompt_tokens").inc(it.prompt["total"])                            # C.3
    child("vllm:prompt_tokens_by_source", "local_compute").inc(it.prompt["computed"])  # C.4
    child("vllm:prompt_tokens_by_source", "local_cache_hit").inc(it.prompt["local_cache_hit"])
    child("vllm:prompt_tokens_by_source", "external_kv_transfer").inc(
        it.prompt["external_kv_transfer"])
    child("vllm:prompt_tokens_cached").inc(it.prompt["cached_tokens"])             # C.5
    child("vllm:generation_tokens").inc(it.num_generation_tokens)                  # C.6
    child("vllm:iteration_tokens_total").observe(                                  # C.7
        it.prompt["computed"] + it.num_generation_tokens)
    for value in it.max_num_generation_tokens_iter:                                # C.8
        child("vllm:request_max_num_generation_tokens").observe(value)
    for value in it.n_params_iter:
        child("vllm:request_params_n").observe(value)
    for value in it.time_to_first_tokens_iter:
        child("vllm:time_to_first_token_seconds").observe(value)
    for value in it.inter_token_latencies_iter:
        child("vllm:inter_token_latency_seconds").observe(value)
    for f in it.finished_requests:                                                 # C.9
        child("vllm:request_success", FINISH_LABEL[f["finish_reason"]]).inc()
        child("vllm:e2e_request_latency_seconds").observe(f["e2e_latency"])
        child("vllm:request_queue_time_seconds").observe(f["queued_time"])
        child("vllm:request_prefill_time_seconds").observe(f["prefill_time"])
        child("vllm:request_inference_time_seconds").observe(f["inference_time"])
        child("vllm:request_decode_time_seconds").observe(f["decode_time"])
        child("vllm:request_num_preemptions").observe(f["num_preemptions"])
        child("vllm:request_prefill_kv_computed_tokens").observe(
            f["num_prompt_tokens"] - max(f["num_cached_tokens"], 0))
        child("vllm:request_prompt_tokens").observe(f["num_prompt_tokens"])
        child("vllm:request_generation_tokens").observe(f["num_generation_tokens"])
        child("vllm:request_time_per_output_token_seconds").observe(
            f["mean_time_per_output_token"])
        if f["max_tokens_param"]:
            child("vllm:request_params_max_tokens").observe(f["max_tokens_param"])


def replay(messages, sidecar, args):
    """Decode, record scheduler stats (gen_goldens), and run the frontend per the sidecar."""
    with mock.patch("time.time", return_value=base.CREATED_TIMESTAMP):
        recorder = base.Recorder(args + ["--created-timestamp", repr(base.CREATED_TIMESTAMP)])
        frontend = Frontend()
        pending = list(sidecar)
        clocks = {"iteration_timestamp": 0.0, "monotonic": 0.0}

        def advance(number):
            while pending:
                line = pending[0]
                if "message" in line and line["message"] > number:
                    return
                pending.pop(0)
                if "message" in line:
                    clocks["iteration_timestamp"] = line["iteration_timestamp"]
                    clocks["monotonic"] = line.get("monotonic", clocks["monotonic"])
                    if line["message"] == number:
                        return
                elif "abort" in line:
                    frontend.abort(line["abort"])
                else:
                    frontend.add(line)

        for number, message in enumerate(messages, start=1):
            # The output handler: outputs, then the LoRA adapters into the SchedulerStats, then
            # PrometheusStatLogger.record (scheduler part, then iteration part).
            advance(number)
            it = frontend.process(message, clocks["iteration_timestamp"], clocks["monotonic"])
            recorder.record_message(message, frontend.update_scheduler_stats)
            if it is not None and message[0] in recorder.engines:
                record_iteration(recorder, message[0], it)
    return generate_latest(recorder.exposition)


# ================================================================================================
# Scenarios: (messages, sidecar lines, replay args)
# ================================================================================================

out = base.engine_core_output


def output(request_id, tokens, events=None, prefill=None, finish=None):
    return out(request_id, tokens, events=events, prefill_stats=prefill, finish_reason=finish)


def ev(kind, timestamp):
    return {"type": kind, "timestamp": timestamp}


def prefill(prompt, local=0, external=0):
    cached = local + external
    return {"num_prompt_tokens": prompt, "num_computed_tokens": prompt - cached,
            "num_cached_tokens": cached, "num_local_cached_tokens": local,
            "num_external_cached_tokens": external, "num_cache_creation_tokens": 0}


def msg(timestamp, outputs, engine=0, stats=None, finished=None):
    return base.engine_core_outputs(engine, outputs, stats, timestamp, finished_requests=finished)


def req(request_id, arrival, prompt_len, **extra):
    line = {"request_id": request_id, "arrival_time": arrival, "prompt_len": prompt_len}
    line.update(extra)
    return line


def at(number, iteration_timestamp, **extra):
    line = {"message": number, "iteration_timestamp": iteration_timestamp}
    line.update(extra)
    return line


def scenario_plain():
    """Two sequential requests streamed one token per step (the shape of vLLM's e2e check:
    N=2, P=6, M=4), with SchedulerStats on every step."""
    messages, sidecar = [], []
    t0, mono = 1000.0, 50.0
    n = 0
    for index, request_id in enumerate(("a", "b")):
        arrival = t0 + 10 * index
        sidecar.append(req(request_id, arrival, 6, max_tokens=4))
        queued = mono + 10 * index
        for step in range(4):
            events = [ev(QUEUED, queued), ev(SCHEDULED, queued + 0.03125)] if step == 0 else None
            finish = LENGTH if step == 3 else None
            o = output(request_id, [100 + step], events, prefill(6) if step == 0 else None, finish)
            stats = base.scheduler_stats(num_running_reqs=0 if finish is not None else 1,
                                         kv_cache_usage=0.125,
                                         prefix_cache_stats=base.prefix_cache_stats(
                                             requests=1 if step == 0 else 0,
                                             queries=6 if step == 0 else 0))
            n += 1
            messages.append(msg(queued + 0.0625 + 0.046875 * step, [o], stats=stats))
            sidecar.append(at(n, arrival + 0.125 + 0.05 * step))
    return messages, sidecar, []


def scenario_cached_prefill():
    """Prefill with local and external cached tokens, several requests in one step, and a
    spec-decoding step that brings three tokens in one output (one ITL sample)."""
    sidecar = [req("x", 200.0, 100, max_tokens=8), req("y", 200.25, 40, max_tokens=8),
               req("z", 200.5, 3000, max_tokens=1000)]
    messages = [
        msg(10.5, [output("x", [1], [ev(QUEUED, 10.0), ev(SCHEDULED, 10.25)], prefill(100, 64, 0)),
                   output("y", [2], [ev(QUEUED, 10.1), ev(SCHEDULED, 10.25)],
                          prefill(40, 16, 16))]),
        msg(10.75, [output("x", [3, 4, 5]), output("y", [6], finish=STOP),
                    output("z", [7], [ev(QUEUED, 10.3), ev(SCHEDULED, 10.5)],
                           prefill(3000, 0, 2048))]),
        msg(11.5, [output("x", [8, 9], finish=LENGTH), output("z", [10], finish=STOP)]),
    ]
    sidecar[2:2] = [at(1, 200.875)]
    sidecar += [at(2, 201.0), at(3, 201.75)]
    return messages, sidecar, ["--kv-transfer-config", base.NIXL_CONFIG]


def scenario_preemption():
    """A request preempted mid-decode and rescheduled: one preemption, queued_ts moves to the
    last QUEUED, scheduled_ts keeps the first SCHEDULED (a negative queue time)."""
    sidecar = [req("p1", 300.0, 20, max_tokens=5), at(1, 300.5)]
    messages = [
        msg(20.25, [output("p1", [1], [ev(QUEUED, 20.0), ev(SCHEDULED, 20.125)], prefill(20))]),
        msg(20.5, [output("p1", [2])]),
        msg(22.0, [output("p1", [3], [ev(PREEMPTED, 20.75), ev(QUEUED, 20.75),
                                      ev(SCHEDULED, 21.5)])]),
        msg(22.25, [output("p1", [4])]),
        msg(22.5, [output("p1", [5], finish=LENGTH)]),
    ]
    sidecar += [at(2, 300.75), at(3, 302.25), at(4, 302.5), at(5, 302.75)]
    return messages, sidecar, []


def scenario_finish_reasons():
    """Every finish reason; engine-initiated abort and error without events (raw monotonic
    prefill/inference times), an error before any token (TTFT sample, no tokens), max_tokens 0
    and None (not observed), a max_tokens above the largest 1-2-5 bucket."""
    sidecar = [req("s", 400.0, 5, max_tokens=3), req("l", 400.0, 5, max_tokens=2),
               req("a", 400.0, 5, max_tokens=0), req("e", 400.0, 5, max_tokens=None),
               req("r", 400.0, 5, max_tokens=100000), at(1, 400.5)]
    messages = [
        msg(40.5, [output("s", [1], [ev(QUEUED, 40.0), ev(SCHEDULED, 40.25)], prefill(5)),
                   output("l", [1], [ev(QUEUED, 40.0), ev(SCHEDULED, 40.25)], prefill(5)),
                   output("r", [1], [ev(QUEUED, 40.0), ev(SCHEDULED, 40.25)], prefill(5))]),
        msg(40.75, [output("s", [2], finish=STOP), output("l", [2], finish=LENGTH),
                    output("r", [2], finish=REPETITION)]),
        # Engine-initiated finishes: separate messages, no tokens, no events.
        msg(41.0, [output("a", [], finish=ABORT)], finished=["a"]),
        msg(41.25, [output("e", [], finish=ERROR)], finished=["e"]),
    ]
    sidecar += [at(2, 400.75), at(3, 401.0), at(4, 401.5)]
    return messages, sidecar, ["--max-model-len", "4096"]


def scenario_parallel_sampling():
    """n=3 on engine 1 (two engines): each child is a request of its own; the parent's max
    generation tokens and n are observed once, when the last child finishes. Plus an ordinary
    request on engine 0."""
    sidecar = [req(f"{i}_par", 500.0, 8, max_tokens=4, n=3, parent="par") for i in range(3)]
    sidecar += [req("solo", 500.0, 8, max_tokens=4), at(1, 500.25)]
    ev0 = [ev(QUEUED, 50.0), ev(SCHEDULED, 50.0625)]
    messages = [
        msg(50.125, [output(f"{i}_par", [i], ev0, prefill(8, 8 if i else 0)) for i in range(3)],
            engine=1),
        msg(50.25, [output("solo", [5], ev0, prefill(8)), ], engine=0),
        msg(50.375, [output("0_par", [1], finish=STOP), output("1_par", [1, 2]),
                     output("2_par", [3])], engine=1),
        msg(50.5, [output("1_par", [3], finish=LENGTH)], engine=1),
        msg(50.625, [output("2_par", [4], finish=STOP)], engine=1),
        msg(50.75, [output("solo", [6], finish=STOP)], engine=0),
    ]
    sidecar += [at(2, 500.3), at(3, 500.4), at(4, 500.5), at(5, 500.6), at(6, 500.7)]
    return messages, sidecar, ["--data-parallel-size", "2"]


def scenario_unknown_ids():
    """Outputs for ids never sent and for a client-aborted request are skipped; a message whose
    outputs are all unknown still observes iteration_tokens_total once (0); a stats-only message
    observes nothing; an output from an unconfigured engine records nothing."""
    sidecar = [req("k", 600.0, 4, max_tokens=3), req("gone", 600.0, 4, max_tokens=3),
               at(1, 600.5)]
    messages = [
        msg(60.5, [output("stranger", [1, 2, 3], [ev(PREEMPTED, 60.0)], prefill(50)),
                   output("k", [1], [ev(QUEUED, 60.0), ev(SCHEDULED, 60.25)], prefill(4)),
                   output("gone", [1], [ev(QUEUED, 60.0), ev(SCHEDULED, 60.25)], prefill(4))]),
        msg(60.75, [output("gone", [2]), output("nobody", [9])]),
        base.stats_message(0, 61.0, num_running_reqs=1),
        msg(61.25, [output("k", [2], finish=STOP)], engine=5),
        msg(61.5, [output("k", [3], finish=STOP)]),
    ]
    sidecar += [{"abort": ["gone"]}, at(2, 600.75), at(3, 601.0), at(4, 601.25), at(5, 601.5)]
    return messages, sidecar, []


def scenario_quirks():
    """A message timestamp of 0.0 (the frontend's monotonic clock replaces it), a NaN event
    timestamp (the queue-time observation is skipped and counted as nan_observation, where
    Python's would make _sum NaN), and an output that carries no prefill_stats on the first
    step."""
    sidecar = [req("q", 700.0, 9, max_tokens=2), req("nan", 700.0, 9, max_tokens=2),
               at(1, 700.5, monotonic=70.25)]
    messages = [
        msg(0.0, [output("q", [1], [ev(QUEUED, 70.0), ev(SCHEDULED, 70.125)])]),
        msg(70.5, [output("q", [2], finish=STOP),
                   output("nan", [1], [ev(QUEUED, float("nan")), ev(SCHEDULED, 70.375)],
                          prefill(9))]),
        msg(70.75, [output("nan", [2], finish=LENGTH)]),
    ]
    sidecar += [at(2, 700.75), at(3, 701.0)]
    return messages, sidecar, []


def scenario_lora():
    """--enable-lora: the adapters of the requests in flight name the children of
    vllm:lora_requests_info after each message's outputs (running, preempted back to waiting,
    finished, aborted), added to what the engine itself sent; a request without an adapter and a
    message without SchedulerStats add nothing."""
    stats = base.scheduler_stats
    sidecar = [req("a", 800.0, 4, max_tokens=3, lora="sql"), req("b", 800.0, 4, lora="chat"),
               req("c", 800.0, 4, max_tokens=2), at(1, 800.5)]
    messages = [
        msg(80.0, [output("a", [1], [ev(QUEUED, 79.5), ev(SCHEDULED, 79.75)]),
                   output("b", [1], [ev(QUEUED, 79.5), ev(SCHEDULED, 79.75)]),
                   output("c", [1], [ev(QUEUED, 79.5), ev(SCHEDULED, 79.75)])],
            stats=stats(num_running_reqs=3)),
        msg(80.25, [output("b", [], [ev(PREEMPTED, 80.125)]), output("a", [2]),
                    output("c", [2], finish=LENGTH)],
            stats=stats(num_running_reqs=1, num_waiting_reqs=1)),
        msg(80.5, [output("a", [3], finish=LENGTH)], stats=stats(num_waiting_reqs=1)),
        msg(80.75, [], stats=stats(num_waiting_reqs=1,
                                   waiting_lora_adapters={"engine-side": 2, "chat": 7})),
        msg(81.0, [], stats=stats()),
        msg(81.25, [output("d", [1], [ev(QUEUED, 81.0), ev(SCHEDULED, 81.125)])]),
    ]
    sidecar += [at(2, 800.75), at(3, 801.0), at(4, 801.25), {"abort": ["b"]}, at(5, 801.5),
                req("d", 801.6, 2, lora="late"), at(6, 801.75)]
    return messages, sidecar, ["--enable-lora", "--max-loras", "2"]


def scenario_custom_buckets():
    """The preemption scenario with request_latency and request_num_preemptions buckets of
    --custom-histogram-buckets."""
    messages, sidecar, args = scenario_preemption()
    return messages, sidecar, args + [
        "--custom-histogram-buckets", '{"request_latency":[0.5,1,2],"request_num_preemptions":[1]}']


SCENARIOS = [
    ("plain", scenario_plain),
    ("cached_prefill", scenario_cached_prefill),
    ("preemption", scenario_preemption),
    ("finish_reasons", scenario_finish_reasons),
    ("parallel_sampling", scenario_parallel_sampling),
    ("unknown_ids", scenario_unknown_ids),
    ("quirks", scenario_quirks),
    ("lora", scenario_lora),
    ("custom_buckets", scenario_custom_buckets),
]


def write(relative_path, data):
    path = os.path.join(base.REPO, relative_path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    if os.environ.get("PROMETHEUS_DISABLE_CREATED_SERIES"):
        sys.exit("gen_request_goldens.py: unset PROMETHEUS_DISABLE_CREATED_SERIES")
    lines = []
    for short, build in SCENARIOS:
        name = PREFIX + short
        messages, sidecar, args = build()
        input_rel = f"{base.INPUT_DIR}/{name}.msgpack"
        sidecar_name = f"{name}.jsonl"
        write(input_rel, b"".join(base.pack(m) for m in messages))
        write(f"{base.INPUT_DIR}/{sidecar_name}",
              "".join(json.dumps(line, allow_nan=True) + "\n" for line in sidecar).encode())
        decoded = base.read_messages(os.path.join(base.REPO, input_rel))
        text = replay(decoded, sidecar, args)
        expected_rel = f"{base.GOLDEN_DIR}/{name}.txt"
        write(expected_rel, text)
        # The sidecar path is relative to the capture's directory (replay tries it there).
        replay_args = args + ["--requests", sidecar_name,
                              "--created-timestamp", repr(base.CREATED_TIMESTAMP)]
        assert all(" " not in a and "\t" not in a for a in replay_args), replay_args
        lines.append("\t".join([name, input_rel, expected_rel, " ".join(replay_args)]) + "\n")
    tsv_path = os.path.join(base.REPO, base.GOLDEN_DIR, "scenarios.tsv")
    with open(tsv_path) as f:
        kept = [line for line in f if not line.startswith(PREFIX)]
    with open(tsv_path, "w") as f:
        f.write("".join(kept + lines))


if __name__ == "__main__":
    main()
