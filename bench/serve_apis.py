#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`vmetrics bench-serve` against both token APIs of one `vmetrics serve`, with stand-in engines.

Starts `vmetrics serve` (data parallel 2, --http-max-connections-per-address raised past the
concurrency: every bench-serve connection comes from 127.0.0.1) and two stand-in engines
(`vmetrics simulate --serve-requests --no-synthetic-requests`, 2 x 256 sequences, --rate steps
per second), waits for /health 200, then for /v1/completions and /inference/v1/generate at each
concurrency runs bench-serve and checks that the request families moved by exactly what was
sent: vllm:request_success_total, vllm:e2e_request_latency_seconds_count, vllm:prompt_tokens_total
and vllm:generation_tokens_total (deltas of /metrics around the run). Prints one table row per
run (bench/README.md, "Token APIs under load").

Usage: serve_apis.py VMETRICS_BINARY [--concurrency 64,512] [--requests-per-connection 8]
       [--prompt-len 128] [--max-tokens 16] [--rate 100]
"""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except OSError:
        return 0, ""


def family_sum(text, name):
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


FAMILIES = ("vllm:request_success_total", "vllm:e2e_request_latency_seconds_count",
            "vllm:prompt_tokens_total", "vllm:generation_tokens_total")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vmetrics")
    ap.add_argument("--concurrency", default="64,512")
    ap.add_argument("--requests-per-connection", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--rate", type=float, default=100)
    a = ap.parse_args()
    concurrencies = [int(c) for c in a.concurrency.split(",")]
    work = tempfile.mkdtemp(prefix="vmetrics-serve-apis-")
    http, hs = free_port(), free_port()
    serve = subprocess.Popen(
        [a.vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs}",
         "--data-parallel-size", "2", "--served-model-name", "bench-model", "--port", str(http),
         "--http-max-connections", str(2 * max(concurrencies) + 64),
         "--http-max-connections-per-address", str(max(concurrencies) + 64)],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "serve.log"), "w"))
    engines = subprocess.Popen(
        [a.vmetrics, "simulate", "--handshake-address", f"tcp://127.0.0.1:{hs}", "--engines", "2",
         "--serve-requests", "--no-synthetic-requests", "--steps", "0", "--rate", str(a.rate),
         "--seed", "1"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "engines.log"), "w"))
    base = f"http://127.0.0.1:{http}"
    ok = True
    try:
        deadline = time.monotonic() + 60
        while get(base + "/health")[0] != 200:
            if time.monotonic() > deadline or serve.poll() is not None:
                sys.exit("serve did not become ready; log in " + work)
            time.sleep(0.05)
        print("| API | concurrency | requests | req/s | output tok/s | TTFT p50 / p99 (ms) "
              "| E2E p50 / p99 (ms) | families match |")
        print("|---|---:|---:|---:|---:|---|---|---|")
        for path in ("/v1/completions", "/inference/v1/generate"):
            for c in concurrencies:
                requests = c * a.requests_per_connection
                before = get(base + "/metrics")[1]
                run = subprocess.run(
                    [a.vmetrics, "bench-serve", "--url", base + path, "--requests",
                     str(requests), "--concurrency", str(c), "--prompt-len", str(a.prompt_len),
                     "--max-tokens", str(a.max_tokens), "--seed", "1"],
                    capture_output=True, text=True)
                report = run.stdout + run.stderr
                after = get(base + "/metrics")[1]

                def field(pattern):
                    m = re.search(pattern, report)
                    return m.groups() if m else None

                completed = int(field(r"completed requests:\s+(\d+)")[0])
                failed = int(field(r"failed requests:\s+(\d+)")[0])
                rps = float(field(r"request throughput:\s+([\d.]+)")[0])
                tps = float(field(r"output token throughput:\s+([\d.]+)")[0])
                ttft = field(r"TTFT ms\s+p50 ([\d.]+)\s+p90 [\d.]+\s+p99 ([\d.]+)")
                e2e = field(r"E2E ms\s+p50 ([\d.]+)\s+p90 [\d.]+\s+p99 ([\d.]+)")
                want = {"vllm:request_success_total": completed,
                        "vllm:e2e_request_latency_seconds_count": completed,
                        "vllm:prompt_tokens_total": completed * a.prompt_len,
                        "vllm:generation_tokens_total": completed * a.max_tokens}
                got = {f: family_sum(after, f) - family_sum(before, f) for f in FAMILIES}
                match = failed == 0 and completed == requests and all(
                    got[f] == want[f] for f in FAMILIES)
                ok = ok and match
                print(f"| `{path}` | {c} | {completed} | {rps:.0f} | {tps:.0f} | "
                      f"{ttft[0]} / {ttft[1]} | {e2e[0]} / {e2e[1]} | "
                      f"{'yes' if match else 'NO: ' + repr(got) + ' want ' + repr(want)} |",
                      flush=True)
                if failed:
                    print(report, file=sys.stderr)
    finally:
        for p in (engines, serve):
            p.send_signal(signal.SIGTERM)
        for p in (engines, serve):
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
