#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End to end: an engine that stops answering is fenced within the bound, and taken back.

`vmetrics serve --engine-stall-timeout 2` with one stand-in engine (`vmetrics simulate
--serve-requests`, 20 steps a second). A long completion is in flight when the engine's process
is frozen (SIGSTOP): within the bound (plus the watch's quarter-second tick) the client gets a
503 naming the engine, /health answers 503 naming it, vmetrics_engine_up is 0 and a new request
is refused at once with a 503; nothing hangs. Then the process resumes (SIGCONT): its next
message takes it back, /health is 200 again and a new request completes.

Usage: silent_engine_e2e.py VMETRICS_BINARY
"""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from e2e_support import fail, free_port, get_text as get, post_json as post, stop

BOUND_S = 2.0






def until(what, check, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    fail(f"not within {seconds} s: {what}")


def main():
    vmetrics = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        http = free_port()
        hs = free_port()
        log = os.path.join(work, "serve.log")
        serve = subprocess.Popen(
            [vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs}",
             "--data-parallel-size", "1", "--port", str(http), "--engine-ready-timeout", "60",
             "--engine-stall-timeout", str(BOUND_S)],
            stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        engine = subprocess.Popen(
            [vmetrics, "simulate", "--handshake-address", f"tcp://127.0.0.1:{hs}",
             "--serve-requests", "--no-synthetic-requests", "--steps", "0", "--rate", "20",
             "--seed", "3"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{http}"
        try:
            until("serve ready", lambda: get(url + "/health")[0] == 200, 60)
            status, _ = post(url + "/v1/completions", {"prompt": [1, 2], "max_tokens": 3,
                                                       "ignore_eos": True})
            if status != 200:
                fail(f"a request before the freeze: {status}")
            result = {}

            def long_request():
                start = time.monotonic()
                result["answer"] = post(url + "/v1/completions",
                                        {"prompt": [1, 2, 3], "max_tokens": 400,
                                         "ignore_eos": True}, timeout=60)
                result["seconds"] = time.monotonic() - start
            t = threading.Thread(target=long_request)
            t.start()
            time.sleep(0.3)  # the request is running: tokens come at 20 steps a second
            engine.send_signal(signal.SIGSTOP)
            frozen = time.monotonic()
            t.join(60)
            status, body = result["answer"]
            waited = time.monotonic() - frozen
            if status != 503 or "engine 0 stopped answering" not in body:
                fail(f"the request in flight got {status} {body}")
            if waited > BOUND_S + 1.0:
                fail(f"the request in flight ended {waited:.2f} s after the freeze; bound "
                     f"{BOUND_S} s")
            status, body = get(url + "/health")
            if status != 503 or "engine 0" not in body:
                fail(f"/health while fenced: {status} {body}")
            _, text = get(url + "/metrics")
            if 'vmetrics_engine_up{engine="0"} 0.0' not in text.splitlines():
                fail("vmetrics_engine_up is not 0 while fenced")
            start = time.monotonic()
            status, body = post(url + "/v1/completions", {"prompt": [1], "max_tokens": 2})
            if status != 503 or time.monotonic() - start > 1:
                fail(f"a new request while fenced: {status} {body}")
            engine.send_signal(signal.SIGCONT)
            resumed = time.monotonic()
            until("/health 200 after SIGCONT", lambda: get(url + "/health")[0] == 200, 5)
            back = time.monotonic() - resumed
            status, body = post(url + "/v1/completions", {"prompt": [1, 2], "max_tokens": 3,
                                                          "ignore_eos": True})
            if status != 200:
                fail(f"a request after the engine came back: {status} {body}")
            print(f"ok: fenced {waited:.2f} s after the freeze (bound {BOUND_S} s), taken back "
                  f"{back:.2f} s after it resumed", flush=True)
        finally:
            if engine.poll() is None:
                engine.send_signal(signal.SIGCONT)
            stop(engine, serve)
    print("silent_engine_e2e: passed")


if __name__ == "__main__":
    main()
