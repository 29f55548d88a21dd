#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End to end with real peers: `vmetrics simulate` (two engines, MultiConnector of NIXL,
Mooncake store and Mooncake P2P) -> `vmetrics serve` -> a real Prometheus server (Debian
package `prometheus`) scraping it on loopback. Then asks Prometheus' HTTP API:

- the `vllm:` names arrive with their colons;
- `vllm:nixl_xfer_time_seconds_bucket` has Python's `le` values ("0.005", "1.0", "5.0");
- every counter equals what the simulator reports it sent (its --report-totals file);
- with --dashboard FILE: every PromQL expression of the Grafana dashboard returns data, and
  every template variable (job, instance, model_name, engine) offers at least one value;
- with --rules FILE: Prometheus loads the rules, evaluates every one without error, and the
  recorded series carry the scrape's `job` and `instance`.

Usage: prometheus_e2e.py VMETRICS_BINARY [--dashboard deploy/grafana/vmetrics-kv-transfer.json]
                         [--dashboard-queries-tool tools/dashboard_queries.py]
                         [--rules deploy/prometheus/vmetrics-rules.yml]
Exit 0 on success, 1 with a message on the first failed check. Every process it starts is
stopped by PID; waiting is by polling Prometheus' own readiness and query results, bounded.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from e2e_support import fail, free_port

MULTI = json.dumps({
    "kv_connector": "MultiConnector",
    "kv_connector_extra_config": {"connectors": [
        {"kv_connector": "NixlConnector"},
        {"kv_connector": "MooncakeStoreConnector"},
        {"kv_connector": "MooncakeConnector"}]}}, separators=(",", ":"))


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_until(what, fn, timeout_s):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:  # not up yet
            last = e
        time.sleep(0.2)
    fail(f"timed out waiting for {what} (last: {last!r})")


class Prometheus:
    def __init__(self, workdir, target_port, rules=None):
        self.port = free_port()
        cfg = os.path.join(workdir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n")
            if rules:
                f.write(f"rule_files:\n  - {json.dumps(os.path.abspath(rules))}\n")
            f.write("scrape_configs:\n  - job_name: vmetrics\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{target_port}']\n")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={cfg}",
             f"--storage.tsdb.path={os.path.join(workdir, 'tsdb')}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(workdir, "prometheus.log"), "w"))
        wait_until("prometheus ready",
                   lambda: http_get(f"http://127.0.0.1:{self.port}/-/ready").strip() != "", 60)

    def api(self, path, params=None):
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        doc = json.loads(http_get(url))
        if doc.get("status") != "success":
            fail(f"{path} {params!r} failed: {doc}")
        return doc["data"]

    def query(self, expr):
        return self.api("query", {"query": expr})["result"]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def check_rules(prom):
    """Every rule of the loaded file evaluates without error, and each recording rule's series
    (those with data now) keep the scrape's job and instance."""
    def rules():
        return [r for g in prom.api("rules")["groups"] for r in g["rules"]]

    # Each group evaluates once per evaluation_interval (1s) after loading; a rule not yet
    # evaluated has the zero time.
    def all_evaluated():
        loaded = rules()
        return loaded if loaded and all(
            not r.get("lastEvaluation", "0001").startswith("0001") for r in loaded) else None

    loaded = wait_until("every rule evaluated once", all_evaluated, 30)
    bad = [f"{r['name']}: {r.get('health')} {r.get('lastError', '')}"
           for r in loaded if r.get("health") != "ok"]
    if bad:
        fail("rules that do not evaluate:\n  " + "\n  ".join(bad))
    # A recording rule's rate() needs two scrapes inside its window at evaluation time, and a
    # loaded machine may evaluate late: poll (bounded) until the recorded series exist.
    def recorded_series():
        return [(r["name"], s["metric"]) for r in loaded if r["type"] == "recording"
                for s in prom.query(r["name"])]

    series = wait_until("the recording rules' series", recorded_series, 30)
    for name, labels in series:
        if labels.get("job") != "vmetrics" or not labels.get("instance"):
            fail(f"{name} lost job or instance: {labels}")
    recorded = len(series)
    print(f"rules: {len(loaded)} evaluate cleanly; {recorded} recorded series keep job and "
          "instance")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vmetrics")
    ap.add_argument("--dashboard")
    ap.add_argument("--dashboard-queries-tool")
    ap.add_argument("--rules")
    args = ap.parse_args()
    if shutil.which("prometheus") is None:
        fail("the prometheus server is not installed (tools/setup.sh installs it)")
    work = tempfile.mkdtemp(prefix="vmetrics-e2e-")
    procs = []
    prom = None
    try:
        hs_port, http_port = free_port(), free_port()
        serve = subprocess.Popen(
            [args.vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs_port}",
             "--data-parallel-size", "2", "--kv-transfer-config", MULTI,
             "--served-model-name", "e2e-model", "--port", str(http_port),
             "--engine-ready-timeout", "60"],
            stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve.log"), "w"), text=True)
        procs.append(serve)
        totals_path = os.path.join(work, "totals.json")
        sim = subprocess.Popen(
            [args.vmetrics, "simulate", "--handshake-address", f"tcp://127.0.0.1:{hs_port}",
             "--engines", "2", "--steps", "300", "--rate", "100", "--connector", "multi",
             "--seed", "7", "--report-totals", totals_path],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "simulate.log"), "w"))
        procs.append(sim)
        line = serve.stdout.readline()
        if "listening on" not in line:
            fail(f"serve did not start: {line!r}; log: {open(os.path.join(work, 'serve.log')).read()}")
        prom = Prometheus(work, http_port, args.rules)
        if sim.wait(120) != 0:
            fail("simulate failed: " + open(os.path.join(work, "simulate.log")).read())
        totals = json.load(open(totals_path))

        expected_xfer = {str(e["engine_index"]):
                         e["kv_connector"]["fields"]["NixlConnector"]["transfer_duration"]["count"]
                         for e in totals["engines"]}

        def scraped_everything():
            got = {r["metric"]["engine"]: float(r["value"][1])
                   for r in prom.query('vllm:nixl_xfer_time_seconds_count{model_name="e2e-model"}')}
            return got == {k: float(v) for k, v in expected_xfer.items()} and got
        wait_until("Prometheus to scrape every NIXL transfer the simulator sent",
                   scraped_everything, 60)

        names = json.loads(http_get(
            f"http://127.0.0.1:{prom.port}/api/v1/label/__name__/values"))["data"]
        for n in ["vllm:nixl_xfer_time_seconds_bucket", "vllm:mooncake_num_failed_recvs_total",
                  "vllm:mooncake_store_operation_total", "vllm:num_requests_running"]:
            if n not in names:
                fail(f"{n} not among Prometheus' metric names (colons lost?)")
        les = {r["metric"]["le"] for r in prom.query(
            'vllm:nixl_xfer_time_seconds_bucket{engine="0"}')}
        for le in ["0.005", "1.0", "5.0", "+Inf"]:
            if le not in les:
                fail(f'le="{le}" missing from vllm:nixl_xfer_time_seconds_bucket: {sorted(les)}')

        # Counters equal what was sent, per engine.
        checks = [("vllm:nixl_num_failed_transfers_total", "NixlConnector", "num_failed_transfers"),
                  ("vllm:nixl_num_kv_expired_reqs_total", "NixlConnector", "num_kv_expired_reqs"),
                  ("vllm:mooncake_num_failed_recvs_total", "MooncakeConnector", "num_failed_recvs"),
                  ("vllm:mooncake_xfer_time_seconds_count", "MooncakeConnector", "transfer_duration")]
        for metric, cls, field in checks:
            got = {r["metric"]["engine"]: float(r["value"][1]) for r in prom.query(metric)}
            for e in totals["engines"]:
                f = e["kv_connector"]["fields"].get(cls, {}).get(field, {"count": 0, "sum": 0})
                want = f["count"] if metric.endswith("_count") else f["sum"]
                if abs(got.get(str(e["engine_index"]), -1) - want) > 1e-9:
                    fail(f"{metric} engine {e['engine_index']}: Prometheus has "
                         f"{got.get(str(e['engine_index']))}, simulator sent {want}")
        store = {}
        for r in prom.query("vllm:mooncake_store_operation_total"):
            m = r["metric"]
            store[(m["engine"], m["operation"], m["status"])] = float(r["value"][1])
        for e in totals["engines"]:
            for rec in e["kv_connector"]["store"]:
                key = (str(e["engine_index"]), rec["operation"], rec["status"])
                if store.get(key) != float(rec["records"]):
                    fail(f"store operations {key}: Prometheus {store.get(key)}, sent {rec['records']}")
        prefix = {r["metric"]["engine"]: float(r["value"][1])
                  for r in prom.query("vllm:prefix_cache_queries_total")}
        for e in totals["engines"]:
            if prefix.get(str(e["engine_index"])) != float(e["prefix_cache"]["queries"]):
                fail(f"prefix_cache_queries engine {e['engine_index']}: "
                     f"{prefix.get(str(e['engine_index']))} vs {e['prefix_cache']['queries']}")

        if args.dashboard:
            tool = args.dashboard_queries_tool
            exprs = subprocess.run([sys.executable, tool, args.dashboard], check=True,
                                   capture_output=True, text=True).stdout.splitlines()
            empty = [x for x in exprs if x.strip()]

            # Rates need two scrapes of a moving counter inside their window, which a loaded
            # machine may take a while to make: poll (bounded) until every expression has data.
            def every_expression_has_data():
                empty[:] = [x for x in empty if not prom.query(x)]
                return not empty
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not every_expression_has_data():
                time.sleep(0.5)
            if empty:
                fail("dashboard expressions returning no data:\n  " + "\n  ".join(empty))
            print(f"dashboard: {len(exprs)} expressions all return data")

            variables = json.loads(subprocess.run(
                [sys.executable, tool, args.dashboard, "--variables", "--format", "json"],
                check=True, capture_output=True, text=True).stdout)
            for v in variables:
                values = {r["metric"].get(v["refId"], "") for r in prom.query(v["expr"])}
                values.discard("")
                if not values:
                    fail(f"dashboard variable {v['panel']} offers no value: {v['expr']}")
            names = ", ".join(v["panel"] for v in variables)
            print(f"dashboard: variables {names} all offer values")

        if args.rules:
            check_rules(prom)
        print("e2e: 1 passed, 0 failed")
    finally:
        if prom:
            prom.stop()
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
