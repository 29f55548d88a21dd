#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`vmetrics bench-serve` against both token APIs of one `vmetrics serve`, with stand-in engines.

Starts `vmetrics serve` (data parallel 2, --http-max-connections-per-address raised past the
concurrency: every bench-serve connection comes from 127.0.0.1) and two stand-in engines
(`vmetrics simulate --serve-requests --no-synthetic-requests`, 2 x 256 sequences, --rate steps
per second), waits for /health 200, then for /v1/completions and /inference/v1/generate,
streamed and as whole answers ("stream": false, bench-serve --no-stream), at each concurrency
runs bench-serve and checks that the request families moved by exactly what was sent:
vllm:request_success_total, vllm:e2e_request_latency_seconds_count, vllm:prompt_tokens_total and
vllm:generation_tokens_total (deltas of /metrics around the run). Prints one table row per run
(bench/README.md, "Token APIs under load").

With --floor FLOOR_BINARY (bench/token_floor.cc) it also measures, in the same run: serve's CPU
time (/proc/<pid>/task/*/schedstat, ns) per request and per output token; /health and /metrics
latency p99.9 while the load runs (one client each, back to back on a kept-alive connection);
and the floor, the same HTTP server answering a trivial route after one ZeroMQ round trip per
request, at the same concurrency and the same requests, its CPU per request beside serve's, and
the probes' p99.9 against it under the same load ("Token APIs against their floor"); for streams
also the paced floor, the same server writing serve's chunks (one token each) at the engines'
step (1000 / --rate ms). On a machine with two cores or more, serve and the floor are pinned to
core 0 and everything else (stand-in engines, echo, bench-serve, the probes) to the other cores
(taskset). --json prints the rows as JSON lines instead of the table (bench/compare).

Usage: serve_apis.py VMETRICS_BINARY [--concurrency 64,512] [--requests-per-connection 8]
       [--prompt-len 128] [--max-tokens 16] [--rate 100] [--answers both|streamed|whole]
       [--floor FLOOR_BINARY] [--json]
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
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


def cpu_seconds(pid):
    """CPU time of process `pid`, its threads summed (/proc/<pid>/task/*/schedstat, in ns: clock
    ticks of /proc/<pid>/stat are 10 ms, too coarse for the floor's few seconds of requests)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total / 1e9


def pinning():
    """(serve's taskset prefix, everyone else's): core 0 for serve, the others for the rest."""
    cores = os.cpu_count() or 1
    if cores < 2 or not shutil.which("taskset"):
        return [], []
    return ["taskset", "-c", "0"], ["taskset", "-c", f"1-{cores - 1}"]


class Probe:
    """GETs `path` back to back on one kept-alive connection until stopped; latencies in ms."""

    def __init__(self, port, path):
        self.port, self.path, self.ms, self.errors = port, path, [], 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self.stopping.is_set():
            t0 = time.perf_counter()
            try:
                conn.request("GET", self.path)
                r = conn.getresponse()
                r.read()
                if r.status != 200:
                    self.errors += 1
            except (OSError, http.client.HTTPException):
                self.errors += 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                continue
            self.ms.append((time.perf_counter() - t0) * 1e3)
        conn.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join()

    def quantile(self, q):
        """The q quantile (nearest rank), None without samples."""
        if not self.ms:
            return None
        v = sorted(self.ms)
        return v[min(len(v) - 1, max(0, int(q * len(v) + 0.5) - 1))]


def bench_serve(vmetrics, prefix, url, requests, c, a, stream=True):
    """One bench-serve run: (report text, completed, failed, req/s, output tok/s, ttft, e2e)."""
    run = subprocess.run(
        prefix + [vmetrics, "bench-serve", "--url", url, "--requests", str(requests),
                  "--concurrency", str(c), "--prompt-len", str(a.prompt_len), "--max-tokens",
                  str(a.max_tokens), "--seed", "1"] + ([] if stream else ["--no-stream"]),
        capture_output=True, text=True)
    report = run.stdout + run.stderr

    def field(pattern):
        m = re.search(pattern, report)
        return m.groups() if m else None

    completed = int((field(r"completed requests:\s+(\d+)") or ["0"])[0])
    failed = int((field(r"failed requests:\s+(\d+)") or ["0"])[0])
    rps = float((field(r"request throughput:\s+([\d.]+)") or ["0"])[0])
    tps = float((field(r"output token throughput:\s+([\d.]+)") or ["0"])[0])
    ttft = field(r"TTFT ms\s+p50 ([\d.]+)\s+p90 [\d.]+\s+p99 ([\d.]+)") or ("-", "-")
    e2e = field(r"E2E ms\s+p50 ([\d.]+)\s+p90 [\d.]+\s+p99 ([\d.]+)") or ("-", "-")
    return report, completed, failed, rps, tps, ttft, e2e


def floor_runs(floor, vmetrics, others, serve_pin, a, concurrencies, modes, work, step_ms=0,
               prefix="floor"):
    """{(path, stream, concurrency): row} of the floor with the same requests: its CPU per
    request, req/s, failures, and /health and /metrics p99.9 in a second pass (the probes'
    own latency on their core: what serve's p99.9 is read against). With step_ms, streams are
    paced as the engines pace them (one chunk per token per step: token_floor.cc)."""
    port = free_port()
    address = f"ipc://{work}/floor-echo"
    echo = subprocess.Popen(others + [floor, "echo", address], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    server = subprocess.Popen(
        serve_pin + [floor, "serve", address, str(port), str(2 * max(concurrencies) + 64),
                     str(max(concurrencies) + 64), str(a.max_tokens), str(step_ms)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = {}
    try:
        deadline = time.monotonic() + 30
        while get(f"http://127.0.0.1:{port}/health")[0] != 200:
            if time.monotonic() > deadline or server.poll() is not None:
                sys.exit("the floor did not start")
            time.sleep(0.05)
        for path in ("/v1/completions", "/inference/v1/generate"):
            for stream in modes:
                for c in concurrencies:
                    requests = c * a.requests_per_connection
                    url = f"http://127.0.0.1:{port}{path}"
                    cpu0 = cpu_seconds(server.pid)
                    _, completed, failed, rps, _, _, _ = bench_serve(
                        vmetrics, others, url, requests, c, a, stream)
                    cpu = cpu_seconds(server.pid) - cpu0
                    with Probe(port, "/health") as health, Probe(port, "/metrics") as metrics:
                        probed = bench_serve(vmetrics, others, url, requests, c, a, stream)
                    out[(path, stream, c)] = {
                        f"{prefix}_cpu_us_per_request": cpu / completed * 1e6 if completed
                        else None,
                        f"{prefix}_req_per_s": rps, f"{prefix}_failed": failed + probed[2],
                        f"{prefix}_health_p999_ms": health.quantile(0.999),
                        f"{prefix}_metrics_p999_ms": metrics.quantile(0.999)}
    finally:
        for p in (server, echo):
            p.send_signal(signal.SIGTERM)
        for p in (server, echo):
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
    return out


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
    ap.add_argument("--answers", choices=("both", "streamed", "whole"), default="both",
                    help="streamed requests, whole answers (\"stream\": false), or both")
    ap.add_argument("--floor", help="bench/token_floor.cc's binary: CPU, probes and the floor")
    ap.add_argument("--json", action="store_true", help="JSON lines instead of the table")
    a = ap.parse_args()
    serve_pin, others = pinning() if a.floor else ([], [])
    if others:  # the probes run in this process
        os.sched_setaffinity(0, range(1, os.cpu_count()))
    concurrencies = [int(c) for c in a.concurrency.split(",")]
    modes = {"both": (True, False), "streamed": (True,), "whole": (False,)}[a.answers]
    work = tempfile.mkdtemp(prefix="vmetrics-serve-apis-")
    http, hs = free_port(), free_port()
    serve = subprocess.Popen(
        serve_pin + [a.vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs}",
         "--data-parallel-size", "2", "--served-model-name", "bench-model", "--port", str(http),
         "--http-max-connections", str(2 * max(concurrencies) + 64),
         "--http-max-connections-per-address", str(max(concurrencies) + 64)],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "serve.log"), "w"))
    engines = subprocess.Popen(
        others + [a.vmetrics, "simulate", "--handshake-address", f"tcp://127.0.0.1:{hs}", "--engines", "2",
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
        rows = []
        for path, stream, c in ((p, m, c) for p in ("/v1/completions", "/inference/v1/generate")
                                for m in modes for c in concurrencies):
                requests = c * a.requests_per_connection
                before = get(base + "/metrics")[1]
                cpu0 = cpu_seconds(serve.pid)
                report, completed, failed, rps, tps, ttft, e2e = bench_serve(
                    a.vmetrics, others, base + path, requests, c, a, stream)
                cpu = cpu_seconds(serve.pid) - cpu0
                after = get(base + "/metrics")[1]
                want = {"vllm:request_success_total": completed,
                        "vllm:e2e_request_latency_seconds_count": completed,
                        "vllm:prompt_tokens_total": completed * a.prompt_len,
                        "vllm:generation_tokens_total": completed * a.max_tokens}
                got = {f: family_sum(after, f) - family_sum(before, f) for f in FAMILIES}
                match = failed == 0 and completed == requests and all(
                    got[f] == want[f] for f in FAMILIES)
                ok = ok and match
                row = {"api": path, "stream": stream, "concurrency": c, "requests": completed,
                       "failed": failed,
                       "req_per_s": rps, "output_tok_per_s": tps, "ttft_ms": ttft,
                       "e2e_ms": e2e, "families_match": match,
                       "mismatch": None if match else {"got": got, "want": want}}
                if a.floor:
                    # The probes in a second pass of the same load: their scrapes would be
                    # counted in serve's CPU per request.
                    with Probe(http, "/health") as health, Probe(http, "/metrics") as metrics:
                        probed = bench_serve(a.vmetrics, others, base + path, requests, c, a,
                                             stream)
                    ok = ok and probed[2] == 0
                    tokens = completed * a.max_tokens
                    row.update({
                        "serve_cpu_us_per_request": cpu / completed * 1e6 if completed else None,
                        "serve_cpu_us_per_output_token": cpu / tokens * 1e6 if tokens else None,
                        "health_p999_ms": health.quantile(0.999),
                        "health_samples": len(health.ms), "health_errors": health.errors,
                        "metrics_p999_ms": metrics.quantile(0.999),
                        "metrics_samples": len(metrics.ms), "metrics_errors": metrics.errors})
                rows.append(row)
                if failed:
                    print(report, file=sys.stderr)
        if a.floor:
            floor = floor_runs(a.floor, a.vmetrics, others, serve_pin, a, concurrencies, modes,
                               work)
            # Streams again against a floor that writes serve's chunks at the engines' pace.
            paced = floor_runs(a.floor, a.vmetrics, others, serve_pin, a, concurrencies,
                               [m for m in modes if m], work, step_ms=round(1000 / a.rate),
                               prefix="paced_floor")
            for row in rows:
                key = (row["api"], row["stream"], row["concurrency"])
                row.update(floor[key])
                row.update(paced.get(key, {}))
                ok = ok and row["floor_failed"] == 0 and row.get("paced_floor_failed", 0) == 0
        if a.json:
            for row in rows:
                print(json.dumps(row), flush=True)
        elif a.floor:
            print(f"pinned: serve and the floor {' '.join(serve_pin) or 'not pinned'}; engines, "
                  f"echo, bench-serve, probes {' '.join(others) or 'not pinned'}")
            def ratio(x, y):
                return f"{x / y:.1f}" if x and y else "-"

            def ms(v):
                return f"{v:.1f}" if v is not None else "-"

            print("| API | answers | concurrency | requests | req/s | serve CPU us/request "
                  "| us/output token | floor CPU us/request | x floor | paced floor | x paced "
                  "| /health p99.9 ms (n), floor's | /metrics p99.9 ms (n), floor's "
                  "| families match |")
            print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|")
            for r in rows:
                us, fus = r["serve_cpu_us_per_request"], r["floor_cpu_us_per_request"]
                pus = r.get("paced_floor_cpu_us_per_request")
                print(f"| `{r['api']}` | {'streamed' if r['stream'] else 'whole'} | "
                      f"{r['concurrency']} | {r['requests']} | {r['req_per_s']:.0f} | {us:.0f} | "
                      f"{r['serve_cpu_us_per_output_token']:.1f} | {fus:.0f} | "
                      f"{ratio(us, fus)} | {f'{pus:.0f}' if pus else '-'} | {ratio(us, pus)} | "
                      f"{ms(r['health_p999_ms'])} ({r['health_samples']}), "
                      f"{ms(r['floor_health_p999_ms'])} | {ms(r['metrics_p999_ms'])} "
                      f"({r['metrics_samples']}), {ms(r['floor_metrics_p999_ms'])} | "
                      f"{'yes' if r['families_match'] else 'NO: ' + repr(r['mismatch'])} |")
        else:
            print("| API | answers | concurrency | requests | req/s | output tok/s "
                  "| TTFT p50 / p99 (ms) | E2E p50 / p99 (ms) | families match |")
            print("|---|---|---:|---:|---:|---:|---|---|---|")
            for r in rows:
                print(f"| `{r['api']}` | {'streamed' if r['stream'] else 'whole'} | "
                      f"{r['concurrency']} | {r['requests']} | "
                      f"{r['req_per_s']:.0f} | {r['output_tok_per_s']:.0f} | "
                      f"{r['ttft_ms'][0]} / {r['ttft_ms'][1]} | "
                      f"{r['e2e_ms'][0]} / {r['e2e_ms'][1]} | "
                      f"{'yes' if r['families_match'] else 'NO: ' + repr(r['mismatch'])} |")
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
