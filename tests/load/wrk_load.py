#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Load: `wrk` (Debian package) scrapes /metrics of `vmetrics serve` with 64 connections while
8 simulated engines (`vmetrics simulate`, MultiConnector of NIXL, Mooncake store and Mooncake
P2P) each push 1,000 steps a second. Checks (docs/reliability.md §5):

- every response is a 200: wrk reports no non-2xx/3xx response and no socket error;
- the recorded totals are exact: after the engines finish, every counter checked on /metrics
  equals what the simulator reports it sent (--report-totals), and nothing failed to decode;
- resident memory is flat after warm-up: VmRSS of the serve process, sampled every second from
  /proc/PID/status, grows by at most max(2 MiB, 2%) over the second half of the wrk run.

Scrapes use Prometheus 2.42's request headers (OpenMetrics first, gzip), as a real scraper does.
The engines send stats-only messages (SchedulerStats with every connector, no request
outputs): with request outputs, a simulated engine at its 256-request peak costs more CPU to
encode a step than two cores shared with wrk and the server have for 8,000 steps a second, and
serve does not record request outputs (the request path is `replay --requests`).

Usage: wrk_load.py VMETRICS_BINARY [--duration 60] [--connections 64] [--engines 8]
                   [--rate 1000] [--threads 2]
`make load` runs the full 60 s; ctest runs a 5 s version (load_wrk_short). Prints the figures
docs/reliability.md records. Exit 0 on success, 1 with a message on the first failed check.
Every process it starts is stopped by PID.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

MULTI = json.dumps({
    "kv_connector": "MultiConnector",
    "kv_connector_extra_config": {"connectors": [
        {"kv_connector": "NixlConnector"},
        {"kv_connector": "MooncakeStoreConnector"},
        {"kv_connector": "MooncakeConnector"}]}}, separators=(",", ":"))
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def fail(msg):
    print("FAIL:", msg, flush=True)
    sys.exit(1)


def http_get(url, timeout=10):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def samples(text):
    """name{labels} -> value, for every sample line of a text exposition."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            out[series] = float(value)
    return out


def rss_kib(pid):
    """VmRSS of `pid`, or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return None


class RssSampler(threading.Thread):
    """VmRSS of `pid` once a second, with the time of each sample."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.samples, self.stop = pid, [], threading.Event()

    def run(self):
        t0 = time.monotonic()
        while not self.stop.is_set():
            kib = rss_kib(self.pid)
            if kib is None:
                return
            self.samples.append((time.monotonic() - t0, kib))
            self.stop.wait(1.0)


def check_totals(metrics, totals):
    """Every counter checked equals what the simulator sent; returns how many were checked."""
    checked = 0

    def expect(series, want):
        nonlocal checked
        got = metrics.get(series)
        if got is None or abs(got - want) > 1e-9 * max(1.0, abs(want)):
            fail(f"{series}: /metrics has {got}, the simulator sent {want}")
        checked += 1

    payloads = {}
    for e in totals["engines"]:
        lab = f'engine="{e["engine_index"]}",model_name="m"'
        expect(f"vllm:prefix_cache_queries_total{{{lab}}}", e["prefix_cache"]["queries"])
        expect(f"vllm:prefix_cache_hits_total{{{lab}}}", e["prefix_cache"]["hits"])
        expect(f"vllm:external_prefix_cache_queries_total{{{lab}}}",
               e["connector_prefix_cache"]["queries"])
        fields = e["kv_connector"]["fields"]
        for metric, cls, field, what in [
                ("vllm:nixl_xfer_time_seconds_count", "NixlConnector", "transfer_duration", "count"),
                ("vllm:nixl_num_failed_transfers_total", "NixlConnector", "num_failed_transfers", "sum"),
                ("vllm:mooncake_xfer_time_seconds_count", "MooncakeConnector", "transfer_duration", "count"),
                ("vllm:mooncake_num_failed_recvs_total", "MooncakeConnector", "num_failed_recvs", "sum")]:
            expect(f"{metric}{{{lab}}}", fields.get(cls, {}).get(field, {"count": 0, "sum": 0})[what])
        for rec in e["kv_connector"]["store"]:
            store = f'{lab},operation="{rec["operation"]}",status="{rec["status"]}"'
            expect(f"vllm:mooncake_store_operation_total{{{store}}}", rec["records"])
            expect(f"vllm:mooncake_store_operation_keys_total{{{store}}}", rec["num_keys"])
        for cls, n in e["kv_connector"]["payloads"].items():
            payloads[cls] = payloads.get(cls, 0) + n
    for cls, n in payloads.items():
        expect(f'vmetrics_kv_connector_payloads_total{{connector="{cls}",outcome="recorded"}}', n)
    expect('vmetrics_decode_errors_total{part="message"}', 0)
    expect("vmetrics_unknown_engine_messages_total", 0)
    return checked


def parse_wrk(out):
    """The figures of wrk's summary."""
    fig = {"non2xx": 0, "socket_errors": 0}
    m = re.search(r"(\d+) requests in ([\d.]+)(\w+), ([\d.]+)(\w+) read", out)
    if not m:
        fail("cannot read wrk's summary:\n" + out)
    fig["requests"] = int(m.group(1))
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    fig["rps"] = float(m.group(1)) if m else 0.0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        fig["non2xx"] = int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        fig["socket_errors"] = sum(int(x) for x in m.groups())
    for pct in ("50", "99"):
        m = re.search(rf"^\s+{pct}%\s+(\S+)", out, re.M)
        fig[f"p{pct}"] = m.group(1) if m else "?"
    return fig


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vmetrics")
    ap.add_argument("--duration", type=int, default=60, help="seconds of wrk load")
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2, help="wrk threads")
    ap.add_argument("--engines", type=int, default=8)
    ap.add_argument("--rate", type=int, default=1000, help="steps per second per engine")
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        fail("wrk is not installed (tools/setup.sh installs it)")
    work = tempfile.mkdtemp(prefix="vmetrics-load-")
    procs = []
    try:
        hs = f"ipc://{work}/handshake"
        serve = subprocess.Popen(
            [args.vmetrics, "serve", "--handshake-address", hs,
             "--input-address", f"ipc://{work}/input", "--output-address", f"ipc://{work}/output",
             "--data-parallel-size", str(args.engines), "--kv-transfer-config", MULTI,
             "--served-model-name", "m", "--port", "0", "--engine-ready-timeout", "60"],
            stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve.log"), "w"), text=True)
        procs.append(serve)
        # The engines stream for the whole wrk run and one second beyond it.
        steps = args.rate * (args.duration + 1)
        totals_path = os.path.join(work, "totals.json")
        sim = subprocess.Popen(
            [args.vmetrics, "simulate", "--handshake-address", hs, "--engines", str(args.engines),
             "--steps", str(steps), "--rate", str(args.rate), "--connector", "multi",
             "--stats-only", "--seed", "7", "--report-totals", totals_path],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "simulate.log"), "w"))
        procs.append(sim)
        line = serve.stdout.readline()  # printed once HTTP is up (engines may still be joining)
        m = re.search(r"listening on http://[\d.]+:(\d+)", line)
        if not m:
            fail(f"serve did not start: {line!r}; log: {open(os.path.join(work, 'serve.log')).read()}")
        base = f"http://127.0.0.1:{m.group(1)}"

        sampler = RssSampler(serve.pid)
        sampler.start()
        t0 = time.monotonic()
        wrk = subprocess.run(
            ["wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{args.duration}s",
             "--latency", "--timeout", "10s", "-H", f"Accept: {PROMETHEUS_ACCEPT}",
             "-H", "Accept-Encoding: gzip", f"{base}/metrics"],
            capture_output=True, text=True, check=False)
        wrk_seconds = time.monotonic() - t0
        if serve.poll() is not None:
            fail(f"serve exited with {serve.returncode} during the load; its log:\n" +
                 open(os.path.join(work, "serve.log")).read()[-4000:])
        if wrk.returncode != 0:
            fail("wrk failed: " + wrk.stderr + wrk.stdout)
        fig = parse_wrk(wrk.stdout)
        try:
            sim_status = sim.wait(120)
        except subprocess.TimeoutExpired:
            sim_status = "a timeout"
        sim_seconds = time.monotonic() - t0
        if sim_status != 0:
            fail(f"simulate ended with {sim_status}: " +
                 open(os.path.join(work, "simulate.log")).read()[-4000:])
        sampler.stop.set()
        sampler.join()

        # The engines closed their sockets after their last step; the frontend declares each
        # dead only after reading its connection to the end, so 8 dead engines = all recorded.
        deadline = time.monotonic() + 60
        while True:
            status, body = http_get(f"{base}/health")
            if body.count(" is dead: ") == args.engines:
                break
            if time.monotonic() > deadline:
                fail(f"the engines were not all seen to finish: /health {status}: {body}")
            time.sleep(0.1)
        status, text = http_get(f"{base}/metrics")
        if status != 200:
            fail(f"/metrics answered {status} after the run")
        totals = json.load(open(totals_path))
        checked = check_totals(samples(text), totals)
        messages = sum(e["messages"] for e in totals["engines"])

        if fig["non2xx"] or fig["socket_errors"]:
            fail(f"wrk saw {fig['non2xx']} non-2xx/3xx responses and {fig['socket_errors']} "
                 f"socket errors:\n{wrk.stdout}")
        # Flat after warm-up: the first half of the run warms up (allocator arenas, socket
        # buffers and ZeroMQ queues grow while the engines' backlog does, then level off); a
        # leak per scrape or per message would keep growing through the second half.
        warm = max(2.0, wrk_seconds / 2)
        during = [kib for t, kib in sampler.samples if t <= wrk_seconds]
        after_warm = [kib for t, kib in sampler.samples if warm <= t <= wrk_seconds]
        if len(after_warm) < 2:
            fail(f"too few RSS samples after warm-up: {sampler.samples}")
        growth = after_warm[-1] - after_warm[0]
        allowed = max(2048, after_warm[0] // 50)
        print(f"load: wrk {args.connections} connections x {wrk_seconds:.0f} s on /metrics: "
              f"{fig['requests']} responses, all 200 ({fig['rps']:.0f}/s, p50 {fig['p50']}, "
              f"p99 {fig['p99']}), 0 socket errors")
        print(f"load: {args.engines} engines x {args.rate} Hz: {messages} messages, "
              f"{checked} counters exact, 0 decode errors")
        print(f"load: VmRSS KiB: start {during[0]}, peak {max(during)}; after warm-up "
              f"({warm:.0f} s) {after_warm[0]}, min {min(after_warm)}, max {max(after_warm)}, "
              f"end {after_warm[-1]}; growth {growth} KiB (allowed {allowed})")
        print(f"load: the engines' {messages} messages took {sim_seconds:.0f} s "
              f"({messages / sim_seconds:.0f}/s)")
        if growth > allowed:
            fail(f"resident memory grew {growth} KiB after warm-up (allowed {allowed}): "
                 f"{sampler.samples}")
        print("load: 1 passed, 0 failed")
    finally:
        for p in reversed(procs):
            stop(p)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
