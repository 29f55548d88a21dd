#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End to end: per-request speculative-decoding metrics, engine to answer to /metrics.

`vmetrics serve --speculative-config '{"num_speculative_tokens": 3}'
--per-request-spec-decode-metrics detailed` (the wire generation recognised, not pinned) in
front of a stand-in engine of the newest layout run as an engine with the same flag
(`vmetrics simulate --engine-wire gnewest --per-request-spec-decode-metrics detailed`): each
request's final output carries its RequestSpecDecodeMetrics map.

Checked: every single-choice answer of both APIs, streamed (on the usage chunk only) or not,
has metrics.speculative_decoding whose members agree with each other as vLLM defines them
(steps = sum of the histogram = per-step list lengths, accepted = sum of j * histogram[j] = sum
of per_step_accepted, the two ratios); a one-token request reports an all-zero histogram; an
n = 2 answer has metrics null; and, summed over the answers, steps, drafts and accepted drafts
equal serve's own vllm:spec_decode_num_drafts_total, _num_draft_tokens_total and
_num_accepted_tokens_total, as vLLM's documentation says they reconcile.

Usage: spec_decode_metrics_e2e.py VMETRICS_BINARY
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

from e2e_support import fail, free_port, get_text, post_json, stop, until


def check_object(tag, m, k=3):
    """The members of one metrics.speculative_decoding agree as vLLM defines them."""
    hist = m["acceptance_histogram"]
    steps, accepted, drafted = m["num_spec_steps"], m["num_accepted_draft_tokens"], \
        m["num_draft_tokens"]
    problems = []
    if m["num_spec_tokens"] != k or len(hist) != k + 1:
        problems.append("num_spec_tokens / histogram length")
    if steps != sum(hist) or accepted != sum(j * c for j, c in enumerate(hist)):
        problems.append("sums of the histogram")
    if steps and (m["per_step_accepted"] is None or len(m["per_step_accepted"]) != steps or
                  sum(m["per_step_accepted"]) != accepted or
                  sum(m["per_step_drafted"]) != drafted):
        problems.append("per-step lists")
    want_mean = 1 + accepted / steps if steps else 1.0
    want_rate = accepted / drafted if drafted else 0.0
    if not math.isclose(m["mean_acceptance_length"], want_mean) or \
            not math.isclose(m["draft_acceptance_rate"], want_rate):
        problems.append("ratios")
    if problems:
        fail(f"{tag}: {', '.join(problems)}: {m}")
    return steps, drafted, accepted


def stream(url, path, body):
    """The events of a streamed answer, [DONE] left out."""
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read().decode()
    events = [json.loads(chunk[len("data: "):]) for chunk in text.split("\n\n")
              if chunk.startswith("data: ") and chunk != "data: [DONE]"]
    return events


def counter(text, name):
    total = 0.0
    for m in re.finditer(rf"^{name}\{{[^}}]*\}} (\S+)$", text, re.M):
        total += float(m.group(1))
    return total


def main():
    vmetrics = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        http, hs = free_port(), free_port()
        url = f"http://127.0.0.1:{http}"
        serve = subprocess.Popen(
            [vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs}",
             "--port", str(http), "--engine-ready-timeout", "60", "--max-model-len", "4096",
             "--speculative-config", '{"num_speculative_tokens": 3}',
             "--per-request-spec-decode-metrics", "detailed"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "serve.log"), "w"))
        engine = subprocess.Popen(
            [vmetrics, "simulate", "--handshake-address", f"tcp://127.0.0.1:{hs}",
             "--serve-requests", "--no-synthetic-requests", "--steps", "0", "--rate", "200",
             "--engine-wire", "gnewest", "--num-speculative-tokens", "3",
             "--per-request-spec-decode-metrics", "detailed"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "engine.log"), "w"))
        try:
            until("serve ready", lambda: get_text(url + "/health")[0] == 200)
            totals = [0, 0, 0]

            def add(tag, m):
                for i, v in enumerate(check_object(tag, m)):
                    totals[i] += v

            for i in range(6):
                status, text = post_json(url + "/v1/completions",
                                         {"prompt": [1, 2, 3], "max_tokens": 24,
                                          "ignore_eos": True})
                if status != 200:
                    fail(f"completion {i}: {status} {text}")
                add(f"completion {i}", json.loads(text)["metrics"]["speculative_decoding"])
            status, text = post_json(url + "/inference/v1/generate",
                                     {"token_ids": [4, 5], "sampling_params":
                                      {"max_tokens": 24, "ignore_eos": True}})
            if status != 200:
                fail(f"generate: {status} {text}")
            add("generate", json.loads(text)["metrics"]["speculative_decoding"])

            # One token: the request verified no drafts.
            status, text = post_json(url + "/v1/completions",
                                     {"prompt": [1], "max_tokens": 1, "ignore_eos": True})
            one = json.loads(text)["metrics"]["speculative_decoding"]
            if one["acceptance_histogram"] != [0, 0, 0, 0] or one["mean_acceptance_length"] != 1.0 \
                    or one["draft_acceptance_rate"] != 0.0 or "per_step_accepted" in one:
                fail(f"one-token request: {one}")

            for path, body in (("/v1/completions", {"prompt": [7, 8], "max_tokens": 24}),
                               ("/inference/v1/generate",
                                {"token_ids": [7, 8], "sampling_params": {"max_tokens": 24}})):
                body = dict(body, stream=True, stream_options={"include_usage": True})
                if path == "/v1/completions":
                    body["ignore_eos"] = True
                else:
                    body["sampling_params"]["ignore_eos"] = True
                events = stream(url, path, body)
                carriers = [e for e in events if "metrics" in e]
                if len(carriers) != 1 or carriers[0] is not events[-1] or events[-1]["choices"]:
                    fail(f"{path} stream: metrics not on the usage chunk alone: {events[-1]}")
                add(f"{path} stream", carriers[0]["metrics"]["speculative_decoding"])

            print(f"ok answers: steps, drafts, accepted = {totals}", flush=True)

            # Every request so far had one choice: the families are the answers' sums.
            _, metrics = get_text(url + "/metrics")
            families = [counter(metrics, "vllm:spec_decode_num_drafts_total"),
                        counter(metrics, "vllm:spec_decode_num_draft_tokens_total"),
                        counter(metrics, "vllm:spec_decode_num_accepted_tokens_total")]
            if totals[0] == 0 or families != [float(t) for t in totals]:
                fail(f"families {families} are not the answers' sums {totals}")
            print(f"ok families reconcile: {families}", flush=True)

            status, text = post_json(url + "/v1/completions",
                                     {"prompt": [1, 2], "max_tokens": 8, "n": 2,
                                      "ignore_eos": True})
            if status != 200 or json.loads(text).get("metrics", "absent") is not None:
                fail(f"n = 2: metrics not null: {status} {text}")
            print("ok n = 2: metrics null", flush=True)
        finally:
            stop(engine, serve)


if __name__ == "__main__":
    main()
