#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End to end: what strangers send to `vmetrics serve`'s engine sockets cannot grow its memory.

`vmetrics serve` with one stand-in engine (`vmetrics simulate --serve-requests`), its input and
output sockets on known ports. Then, as a hostile peer on the engines' network would:
  1. CONNECTIONS connections (pyzmq DEALERs), half to the handshake ROUTER and half to the
     input ROUTER, each sending one 990,000-byte message (a registration is under 400 bytes);
  2. one PUSH to the output socket sending an 80 MiB frame (a step's outputs are kilobytes).
Each peer watches its own socket (a ZeroMQ monitor) until serve closes the connection, which
ZeroMQ does at the message's header once it is over the limit (64 KiB on the join sockets,
64 MiB on the output socket), before allocating it. So the test waits on those closings, not on
time, and then reads serve's VmRSS: it must stay within RSS_GROWTH_LIMIT of what it was before
the floods (without the limits the first flood alone held about CONNECTIONS x 990 kB).
Afterwards the engine still serves: /health is 200 and a completion is answered.

Usage: engine_socket_floods_e2e.py VMETRICS_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

from e2e_support import fail, free_port, get_text, post_json, stop

CONNECTIONS = 200
MESSAGE_BYTES = 990_000
OUTPUT_FRAME_BYTES = 80 << 20
RSS_GROWTH_LIMIT = 48 << 20
WAIT_S = 60


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    fail("no VmRSS")


def wait_all_closed(monitors, what):
    """Waits until every monitor reported its connection closed by the peer."""
    poller = zmq.Poller()
    for m in monitors:
        poller.register(m, zmq.POLLIN)
    open_ones = set(monitors)
    deadline = time.monotonic() + WAIT_S
    while open_ones:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0:
            fail(f"{what}: {len(open_ones)} of {len(monitors)} connections were never closed by "
                 "serve (a message over the limit was kept)")
        for sock, _ in poller.poll(left_ms):
            event = recv_monitor_message(sock)
            if event["event"] == zmq.EVENT_DISCONNECTED and sock in open_ones:
                open_ones.discard(sock)
                poller.unregister(sock)


def flood(ctx, kind, address, count, payload, what):
    sockets, monitors = [], []
    for _ in range(count):
        s = ctx.socket(kind)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RECONNECT_IVL, 60_000)  # one attempt each: no resend in the window
        monitors.append(s.get_monitor_socket(zmq.EVENT_DISCONNECTED))
        s.connect(address)
        sockets.append(s)
    for s in sockets:
        s.send(payload, copy=False)
    wait_all_closed(monitors, what)
    for s in sockets:
        s.disable_monitor()
        s.close()
    for m in monitors:
        m.close()


def main():
    vmetrics = sys.argv[1]
    work = tempfile.mkdtemp(prefix="vmetrics-floods-")
    http, hs, inp, out = free_port(), free_port(), free_port(), free_port()
    log = os.path.join(work, "serve.log")
    serve = subprocess.Popen(
        [vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs}",
         "--input-address", f"tcp://127.0.0.1:{inp}", "--output-address", f"tcp://127.0.0.1:{out}",
         "--data-parallel-size", "1", "--port", str(http), "--max-model-len", "64",
         "--engine-ready-timeout", "60"],
        stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    engine = subprocess.Popen(
        [vmetrics, "simulate", "--handshake-address", f"tcp://127.0.0.1:{hs}", "--serve-requests",
         "--no-synthetic-requests", "--steps", "0", "--rate", "500", "--max-model-len", "64"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{http}"
    ctx = zmq.Context()
    try:
        deadline = time.monotonic() + 60
        while get_text(url + "/health")[0] != 200:
            if serve.poll() is not None or time.monotonic() > deadline:
                fail(f"serve not ready; log:\n{open(log).read()}")
            time.sleep(0.05)
        status, _ = post_json(url + "/v1/completions", {"prompt": [1, 2], "max_tokens": 2})
        if status != 200:
            fail(f"a completion before the floods: {status}")
        before = rss_bytes(serve.pid)

        payload = b"x" * MESSAGE_BYTES
        flood(ctx, zmq.DEALER, f"tcp://127.0.0.1:{hs}", CONNECTIONS // 2, payload,
              "handshake socket")
        flood(ctx, zmq.DEALER, f"tcp://127.0.0.1:{inp}", CONNECTIONS // 2, payload,
              "input socket")
        after_join = rss_bytes(serve.pid)
        flood(ctx, zmq.PUSH, f"tcp://127.0.0.1:{out}", 1, b"y" * OUTPUT_FRAME_BYTES,
              "output socket")
        after_output = rss_bytes(serve.pid)

        growth = after_output - before
        print(f"serve VmRSS: {before >> 20} MiB before, {after_join >> 20} MiB after "
              f"{CONNECTIONS} x {MESSAGE_BYTES} bytes to the join sockets, {after_output >> 20} "
              f"MiB after an {OUTPUT_FRAME_BYTES >> 20} MiB output frame (growth "
              f"{growth / (1 << 20):.1f} MiB, limit {RSS_GROWTH_LIMIT >> 20} MiB)", flush=True)
        if growth > RSS_GROWTH_LIMIT:
            fail(f"serve grew by {growth} bytes")
        if get_text(url + "/health")[0] != 200:
            fail("/health is not 200 after the floods")
        status, answer = post_json(url + "/v1/completions", {"prompt": [1, 2], "max_tokens": 2})
        if status != 200 or len(json.loads(answer)["choices"][0]["token_ids"]) != 2:
            fail(f"a completion after the floods: {status} {answer[:200]}")
    finally:
        ctx.destroy(linger=0)
        stop(engine, serve)
    print("engine_socket_floods_e2e: floods refused at their headers, memory bounded", flush=True)


if __name__ == "__main__":
    main()
