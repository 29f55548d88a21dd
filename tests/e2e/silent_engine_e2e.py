#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End to end: an engine that stops answering is fenced within the bound, and taken back.

`vmetrics serve --engine-stall-timeout 2` with one stand-in engine (`vmetrics simulate
--serve-requests`, 20 steps a second). A long completion is in flight when the engine's process
is frozen (SIGSTOP): within the bound (plus the watch's quarter-second tick) the client gets a
503 naming the engine, /health answers 503 naming it, vmetrics_engine_up is 0 and a new request
is refused at once with a 503; nothing hangs. Then the process resumes (SIGCONT): its next
message takes it back, /health is 200 again and a new request completes. Last, serve gets
SIGTERM with three requests in flight: each client's request ends (none hangs), serve exits 0,
and the engine counts an ABORT for each (it stops computing for nobody).

Usage: silent_engine_e2e.py VMETRICS_BINARY
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from e2e_support import fail, free_port, get_text as get, post_json as post, stop

BOUND_S = 2.0






def running(url):
    """vllm:num_requests_running on /metrics (0 when absent)."""
    for line in get(url + "/metrics")[1].splitlines():
        if line.startswith("vllm:num_requests_running{"):
            return float(line.rsplit(" ", 1)[1])
    return 0


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
        totals = os.path.join(work, "totals.json")
        serve = subprocess.Popen(
            [vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs}",
             "--data-parallel-size", "1", "--port", str(http), "--engine-ready-timeout", "60",
             "--engine-stall-timeout", str(BOUND_S)],
            stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        engine = subprocess.Popen(
            [vmetrics, "simulate", "--handshake-address", f"tcp://127.0.0.1:{hs}",
             "--serve-requests", "--no-synthetic-requests", "--steps", "0", "--rate", "20",
             "--seed", "3", "--report-totals", totals],
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
            if waited > BOUND_S + 1.5:  # the watch ticks every 0.25 s; slack for loaded CI
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
            # SIGTERM with requests in flight: each client's request ends (a 503, or the
            # connection closed as the server goes), and each is aborted at the engine.
            answers = []

            def in_flight():
                try:
                    answers.append(post(url + "/v1/completions",
                                        {"prompt": [1, 2], "max_tokens": 400,
                                         "ignore_eos": True}, timeout=60))
                except OSError as e:  # closed by the stopping server
                    answers.append((0, str(e)))
            threads = [threading.Thread(target=in_flight) for _ in range(3)]
            for t in threads:
                t.start()
            until("three requests running", lambda: running(url) >= 3, 10)
            start = time.monotonic()
            serve.send_signal(signal.SIGTERM)
            for t in threads:
                t.join(60)
            if serve.wait(30) != 0 or len(answers) != 3 or any(a[0] == 200 for a in answers):
                fail(f"SIGTERM with requests in flight: exit {serve.returncode}, {answers}")
            stopped = time.monotonic() - start
            stop(engine)
            aborted = json.load(open(totals))["engines"][0]["requests_aborted"]
            # One for the request fenced earlier (read once the engine resumed), three now.
            if aborted != 4:
                fail(f"the engine counted {aborted} aborted requests; want 4 (the fenced one and "
                     "the 3 in flight at SIGTERM)")
            print(f"ok: SIGTERM ended the 3 requests in flight and aborted them at the engine "
                  f"({aborted} ABORTs), serve gone {stopped:.2f} s after the signal", flush=True)
        finally:
            if engine.poll() is None:
                engine.send_signal(signal.SIGCONT)
            stop(engine, serve)
    print("silent_engine_e2e: passed")


if __name__ == "__main__":
    main()
