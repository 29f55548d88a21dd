#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End to end: an RL trainer's cycle against `vmetrics serve` in development mode.

`VLLM_SERVER_DEV_MODE=1 vmetrics serve --data-parallel-size 2` and two stand-in engines
(`vmetrics simulate --engines 2 --serve-requests`), which keep the state the UTILITY calls change
and report it when asked. The cycle is what RL frameworks do between rollouts with vLLM's
development routes (vllm/entrypoints/serve/dev/ at vllm-project/vllm 6adad087): generate, sleep,
a weight update (start, update_weights, finish with a version), wake up, reset the prefix cache,
generate again.

Checked: the log's development-mode warning; every route's answer and body; /is_sleeping and
vllm:engine_sleep_state of both engines after the sleep and after the wake-up; the version the
engines hold; both generations of requests answered in full.

Usage: rl_cycle_e2e.py VMETRICS_BINARY
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

from e2e_support import fail, free_port, get_text, post_json, stop, until



def sleep_states(url):
    """{(engine, state): value} of vllm:engine_sleep_state on /metrics."""
    _, text = get_text(url + "/metrics")
    states = {}
    for m in re.finditer(r'^vllm:engine_sleep_state\{engine="(\d+)",model_name="[^"]*",'
                         r'sleep_state="(\w+)"\} (\S+)$', text, re.M):
        states[(m.group(1), m.group(2))] = float(m.group(3))
    return states


def main():
    vmetrics = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        http, hs = free_port(), free_port()
        url = f"http://127.0.0.1:{http}"
        log = os.path.join(work, "serve.log")
        serve = subprocess.Popen(
            [vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs}",
             "--data-parallel-size", "2", "--port", str(http), "--engine-ready-timeout", "60"],
            env=dict(os.environ, VLLM_SERVER_DEV_MODE="1"),
            stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        engines = subprocess.Popen(
            [vmetrics, "simulate", "--handshake-address", f"tcp://127.0.0.1:{hs}",
             "--engines", "2", "--serve-requests", "--no-synthetic-requests",
             "--served-stop", "earliest", "--steps", "0", "--rate", "200"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "engines.log"), "w"))
        try:
            until("serve ready", lambda: get_text(url + "/health")[0] == 200)
            if "development endpoints are enabled" not in open(log).read():
                fail("no development-mode warning in the log")

            def rollout(tag):
                for rank in (0, 1):
                    body = json.dumps({"token_ids": [1, 2, 3],
                                       "sampling_params": {"max_tokens": 4, "ignore_eos": True}})
                    req = urllib.request.Request(
                        url + "/inference/v1/generate", data=body.encode(), method="POST",
                        headers={"Content-Type": "application/json",
                                 "X-data-parallel-rank": str(rank)})
                    with urllib.request.urlopen(req, timeout=30) as r:
                        answer = json.loads(r.read())
                    if len(answer["choices"][0]["token_ids"]) != 4:
                        fail(f"{tag} rollout on rank {rank}: {answer}")

            def call(path, body=None, want=200):
                status, text = post_json(url + path, body if body is not None else {})
                if status != want:
                    fail(f"{path}: {status} {text}")
                return json.loads(text)

            rollout("first")
            slept = call("/sleep?level=1")
            if slept != {"status": "sleeping", "level": 1, "engines": [0, 1]}:
                fail(f"/sleep: {slept}")
            states = sleep_states(url)
            for engine in ("0", "1"):
                if (states.get((engine, "awake")), states.get((engine, "weights_offloaded"))) != \
                        (0.0, 1.0):
                    fail(f"engine {engine} after /sleep: {states}")
            _, text = get_text(url + "/is_sleeping")
            if json.loads(text)["is_sleeping"] is not True:
                fail(f"/is_sleeping after /sleep: {text}")
            print("ok asleep: both engines, vllm:engine_sleep_state", flush=True)

            if call("/start_weight_update") != {"message": "Weight update started"}:
                fail("/start_weight_update")
            call("/update_weights", {"update_info": {"names": ["lm_head.weight"],
                                                     "dtype_names": ["bfloat16"],
                                                     "shapes": [[32000, 4096]]}})
            call("/finish_weight_update", {"weight_version": "step-1"})
            _, text = get_text(url + "/weight_info")
            if json.loads(text) != {"weight_version": "step-1"}:
                fail(f"/weight_info: {text}")
            print("ok weights updated to step-1", flush=True)

            if call("/wake_up") != {"status": "awake", "engines": [0, 1]}:
                fail("/wake_up")
            _, text = get_text(url + "/is_sleeping")
            if json.loads(text)["is_sleeping"] is not False:
                fail(f"/is_sleeping after /wake_up: {text}")
            states = sleep_states(url)
            for engine in ("0", "1"):
                if states.get((engine, "awake")) != 1.0 or \
                        states.get((engine, "weights_offloaded")) != 0.0:
                    fail(f"engine {engine} after /wake_up: {states}")
            if call("/reset_prefix_cache") != {"success": True}:
                fail("/reset_prefix_cache")
            rollout("second")
            print("ok awake, cache reset, second rollout answered", flush=True)
        finally:
            stop(engines, serve)


if __name__ == "__main__":
    main()
