#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End to end: `vmetrics serve` sends every engine wire generation requests its decoder accepts.

For each wire generation vmetrics knows, one `vmetrics serve` and one stand-in engine
(`vmetrics simulate --engine-wire GENERATION --serve-requests`) that speaks that generation:
its handshake (the empty input registration and READY with num_gpu_blocks up to g20260204, then
its ready response's key set), its output layouts, and its request layout. The stand-in decodes
every ADD with that generation's table as its msgspec decoder would, and a refused ADD ends its
input as it ends a vLLM engine's input thread (counted as requests_rejected). serve runs twice
per generation: without --engine-wire (the generation recognised from the handshake, or, where
the handshake cannot tell, the layout every candidate reads alike) and with it.

Each run sends requests on both token APIs with every kind of parameter (greedy, sampling with a
seed, stop ids with ignore_eos and min_tokens, n > 1, penalties and logit_bias, cache_salt, a
LoRA adapter, streaming, logprobs, generate's max_tokens null) and checks: every answer is 200
with tokens (logprobs: 400 naming them where the generation sends list-form logprobs, which
vmetrics does not read), vmetrics_engine_wire_info names the generation and a request layout
that is not refused, and the stand-in's totals show every engine request served and none
rejected.

Usage: requests_per_generation_e2e.py VMETRICS_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from e2e_support import fail, free_port, get_text as get, post_json as post, stop

GENERATIONS = ["g20250927-6f5c0931", "g20251105-65ac8d8d", "g20260112-0565f1fd",
               "g20260204-08e09499", "g20260413-f72b2097", "g20260712-370b678a",
               "g20260812-f4e9bb01", "g20260814-6adad087", "gnewest-20260924"]
# Generations whose engines send sample logprobs as lists (wire_generations.cc).
LIST_LOGPROBS = {"g20250927-6f5c0931", "g20251105-65ac8d8d"}
MAX_MODEL_LEN = 64
MODEL = "wire-model"






# (API path, body, engine requests it makes, what the answer must show)
def requests_for(generation):
    completions = "/v1/completions"
    generate = "/inference/v1/generate"
    cases = [
        (completions, {"prompt": [1, 2, 3, 4], "max_tokens": 5, "temperature": 0}, 1),
        (completions, {"prompt": [1, 2, 3], "max_tokens": 6, "temperature": 0.7, "top_p": 0.9,
                       "top_k": 40, "min_p": 0.05, "seed": 7}, 1),
        (completions, {"prompt": [5, 6], "max_tokens": 8, "stop_token_ids": [13],
                       "ignore_eos": True, "min_tokens": 2}, 1),
        (completions, {"prompt": [1, 2], "max_tokens": 4, "n": 3, "temperature": 0.8,
                       "seed": 42}, 3),
        (completions, {"prompt": [1], "max_tokens": 3, "presence_penalty": 0.5,
                       "frequency_penalty": -0.5, "repetition_penalty": 1.2,
                       "logit_bias": {"15": 5.0}}, 1),
        (completions, {"prompt": [1, 2], "max_tokens": 3, "cache_salt": "tenant-42"}, 1),
        (completions, {"prompt": [1, 2], "max_tokens": 3, "model": "sql"}, 1),
        (completions, {"prompt": [[1, 2], [3, 4]], "max_tokens": 3}, 2),
        (completions, {"prompt": [1, 2], "max_tokens": 4, "stream": True}, 1),
        (generate, {"token_ids": [1, 2, 3], "sampling_params": {"max_tokens": 4,
                                                                "temperature": 0}}, 1),
        (generate, {"token_ids": [1, 2, 3], "sampling_params": {"max_tokens": None}}, 1),
        (generate, {"token_ids": [1, 2], "sampling_params": {"max_tokens": 3, "seed": 3},
                    "stream": True}, 1),
    ]
    logprobs = (completions, {"prompt": [1, 2], "max_tokens": 3, "logprobs": 2}, 1)
    if generation in LIST_LOGPROBS:
        return cases, [logprobs]
    return cases + [logprobs], []


def run(vmetrics, work, generation, forced):
    http = free_port()
    hs = free_port()
    name = f"{generation}-{'forced' if forced else 'auto'}"
    log = os.path.join(work, name + ".serve.log")
    totals_path = os.path.join(work, name + ".totals.json")
    serve_args = [vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs}",
                  "--data-parallel-size", "1", "--served-model-name", MODEL,
                  "--port", str(http), "--engine-ready-timeout", "60",
                  "--max-model-len", str(MAX_MODEL_LEN), "--eos-token-id", "2",
                  "--enable-lora", "--lora-modules", "sql=/adapters/sql"]
    if forced:
        serve_args += ["--engine-wire", generation]
    serve = subprocess.Popen(serve_args, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    engine = subprocess.Popen(
        [vmetrics, "simulate", "--handshake-address", f"tcp://127.0.0.1:{hs}",
         "--engine-wire", generation, "--serve-requests", "--no-synthetic-requests",
         "--steps", "0", "--rate", "500", "--seed", "5", "--max-model-len", str(MAX_MODEL_LEN),
         "--report-totals", totals_path],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, name + ".engine.log"), "w"))
    url = f"http://127.0.0.1:{http}"
    try:
        deadline = time.monotonic() + 60
        while get(url + "/health")[0] != 200:
            if serve.poll() is not None or engine.poll() is not None or \
                    time.monotonic() > deadline:
                fail(f"{name}: not ready; serve log:\n{open(log).read()}")
            time.sleep(0.05)
        cases, refused = requests_for(generation)
        expected = 0
        for path, body, engine_requests in cases:
            status, answer = post(url + path, body)
            if status != 200:
                fail(f"{name}: {path} {json.dumps(body)} -> {status} {answer}\n"
                     f"serve log:\n{open(log).read()}")
            if body.get("stream"):
                if not answer.rstrip().endswith("data: [DONE]") or '"error"' in answer:
                    fail(f"{name}: stream {json.dumps(body)} ended badly: {answer[-300:]}")
            else:
                doc = json.loads(answer)
                for choice in doc["choices"]:
                    tokens = choice.get("token_ids")
                    if tokens is None and "text" in choice:
                        tokens = choice.get("text")
                    if choice.get("finish_reason") not in ("length", "stop"):
                        fail(f"{name}: {json.dumps(body)}: finish {choice.get('finish_reason')}")
                if path.endswith("completions") and body.get("logprobs") and \
                        doc["choices"][0].get("logprobs") is None:
                    fail(f"{name}: logprobs asked, none answered: {answer}")
            expected += engine_requests
        for path, body, _ in refused:
            status, answer = post(url + path, body)
            if status != 400 or "logprobs" not in answer:
                fail(f"{name}: {json.dumps(body)} -> {status} {answer}; want a 400 naming "
                     "logprobs")
        status, text = get(url + "/metrics")
        info = [line for line in text.splitlines()
                if line.startswith("vmetrics_engine_wire_info{") and line.endswith(" 1.0")]
        if len(info) != 1 or f'generation="{generation}"' not in info[0] or \
                'requests="refused' in info[0]:
            fail(f"{name}: vmetrics_engine_wire_info: {info}")
    finally:
        stop(engine)  # first: it writes its totals as it exits
        stop(serve)
    totals = json.load(open(totals_path))
    engine_totals = totals["engines"][0]
    if engine_totals.get("requests_rejected", 0) != 0:
        fail(f"{name}: the stand-in {generation} engine refused "
             f"{engine_totals['requests_rejected']} ADDs; engine totals: {engine_totals}")
    served = engine_totals.get("requests_served", engine_totals.get("served_requests"))
    if served is not None and served < expected:
        fail(f"{name}: {served} engine requests served, {expected} sent")
    print(f"ok {name}: {expected} engine requests, none refused; {info[0]}", flush=True)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    vmetrics = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        for generation in GENERATIONS:
            for forced in (False, True):
                run(vmetrics, work, generation, forced)
    print("requests_per_generation_e2e: every generation served on both APIs")


if __name__ == "__main__":
    main()
