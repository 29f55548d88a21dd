#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End to end: GET /kv_event_sources lists each data-parallel rank's KV-event publisher.

`vmetrics serve --data-parallel-size 2 --api-key KEY` and two stand-in engines, one process
per rank (`vmetrics simulate --engine-start-index R --kv-events-config ...`), whose ready
responses carry kv_events_config as a vLLM engine reports it (vLLM 48fc2e279, #50033). The
route is vLLM's of #55844: {"<rank>": <that rank's KVEventsConfig>}.

Checked: before the engines are in, 503; once both are ready, exactly the two ranks' resolved
configs (endpoints offset by the rank); without the key, 401; rank 1's engine stopped: /health
503 and its entry kept (the table holds what each rank last reported); rank 1 restarted with
another endpoint: once it registered again (/health 200), its entry is the new one.

Usage: kv_event_sources_e2e.py VMETRICS_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from e2e_support import fail, free_port, get_text, stop, until

KEY = "sk-kv-sources"


def get(url, key=KEY):
    """GETs `url` with the API key (none when `key` is None): (status, text)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()



def config(endpoint, replay):
    return {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": endpoint,
            "replay_endpoint": replay, "buffer_steps": 10000, "hwm": 100000,
            "max_queue_size": 100000, "topic": "kv-events"}


def main():
    vmetrics = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        http, hs = free_port(), free_port()
        url = f"http://127.0.0.1:{http}"
        serve = subprocess.Popen(
            [vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs}",
             "--data-parallel-size", "2", "--port", str(http), "--engine-ready-timeout", "60",
             "--api-key", KEY],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "serve.log"), "w"))

        def engine(rank, events):
            return subprocess.Popen(
                [vmetrics, "simulate", "--handshake-address", f"tcp://127.0.0.1:{hs}",
                 "--engine-start-index", str(rank), "--engines", "1", "--steps", "0",
                 "--rate", "20", "--kv-events-config", json.dumps(events)],
                stdout=subprocess.DEVNULL,
                stderr=open(os.path.join(work, f"engine{rank}.log"), "a"))

        engines = {}
        try:
            until("serve answers", lambda: get_text(url + "/health")[0] != 0)
            status, body = get(url + "/kv_event_sources")
            if status != 503:
                fail(f"before the engines: {status} {body}")
            print("ok before the engines: 503", flush=True)

            events = {"enable_kv_cache_events": True, "endpoint": "tcp://127.0.0.1:25557",
                      "replay_endpoint": "tcp://127.0.0.1:25567", "topic": "kv-events"}
            engines = {rank: engine(rank, events) for rank in (0, 1)}
            until("both engines ready", lambda: get_text(url + "/health")[0] == 200)
            want = {"0": config("tcp://127.0.0.1:25557", "tcp://127.0.0.1:25567"),
                    "1": config("tcp://127.0.0.1:25558", "tcp://127.0.0.1:25568")}
            status, body = get(url + "/kv_event_sources")
            if status != 200 or json.loads(body) != want:
                fail(f"both ranks: {status} {body}, want {want}")
            if list(json.loads(body)) != ["0", "1"]:
                fail(f"not in rank order: {body}")
            for key in (None, "sk-wrong"):
                status, body = get(url + "/kv_event_sources", key)
                if status != 401:
                    fail(f"key {key!r}: {status} {body}")
            print("ok both ranks listed, behind the API key", flush=True)

            stop(engines.pop(1))
            until("rank 1 seen dead", lambda: get_text(url + "/health")[0] == 503)
            status, body = get(url + "/kv_event_sources")
            if status != 200 or json.loads(body) != want:
                fail(f"rank 1 dead: {status} {body}, want {want}")
            print("ok rank 1 dead: its last report kept", flush=True)

            events["endpoint"] = "tcp://127.0.0.1:26000"  # rank 1 binds 26001
            events["replay_endpoint"] = None
            engines[1] = engine(1, events)
            until("rank 1 back", lambda: get_text(url + "/health")[0] == 200)
            want["1"] = config("tcp://127.0.0.1:26001", None)
            status, body = get(url + "/kv_event_sources")
            if status != 200 or json.loads(body) != want:
                fail(f"rank 1 restarted: {status} {body}, want {want}")
            print("ok rank 1 restarted: its new publisher listed", flush=True)
        finally:
            stop(*engines.values(), serve)


if __name__ == "__main__":
    main()
