#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End to end: `vmetrics serve` with engines of an older vLLM wire generation.

Two stand-in engines (tools/stand_in_engine.py --replay-case) meet `vmetrics serve` with the
handshake of a case's wire generation (an empty registration frame and READY with
num_gpu_blocks for g20250927; the ready response with vllm_version for g20260712) and send that
case's messages byte for byte as that generation's vLLM encoded them
(tests/fixtures/wire_generations/). serve is started WITHOUT --engine-wire. Checked on /metrics:
vmetrics_engine_wire_info{engine,generation,requests} is 1 for the case's generation for both
engines (with the request layout its messages leave possible),
and every sample of the case's golden (what that generation's own Python frontend exposed) is
there, except `_created` samples (serve's own clock) and the lines the manifest's
newest_semantics says the newest frontend does not print.

Usage: wire_generations_serve_e2e.py VMETRICS_BINARY SOURCE_DIR
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from e2e_support import fail, free_port

CASES = ["g20250927-6f5c0931_stats_nixl_spec", "g20260712-370b678a_stats_nixl_spec"]


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def expected_lines(source, case):
    golden = open(os.path.join(source, "tests/fixtures/wire_generations",
                               case["golden_text"])).read().splitlines()
    skip, skip_prefix = set(), set()
    ns = case.get("newest_semantics")
    if isinstance(ns, dict) and isinstance(ns.get("text"), dict):
        for entry in ns["text"]["golden_lines_not_printed"].values():
            for line in entry["lines"]:
                if line.endswith(" <ts>"):
                    skip_prefix.add(line[: -len("<ts>")])
                else:
                    skip.add(line)
    want = []
    for line in golden:
        if not line or line.startswith("#"):
            continue
        name = line.split("{")[0].split(" ")[0]
        if name.endswith("_created") or line in skip or line[: line.rfind(" ") + 1] in skip_prefix:
            continue
        want.append(line)
    return want


def run_case(vmetrics, source, case, work):
    config = case["configuration"]
    generation = case["generation"]
    hs_port, http_port = free_port(), free_port()
    log = os.path.join(work, case["case"] + ".serve.log")
    serve = subprocess.Popen(
        [vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs_port}",
         "--data-parallel-size", str(config["data_parallel_size"]),
         "--kv-transfer-config", json.dumps(config["kv_transfer_config"]),
         "--speculative-config", json.dumps(config["speculative_config"]),
         "--max-model-len", str(config["max_model_len"]),
         "--served-model-name", config["served_model_name"], "--port", str(http_port),
         "--engine-ready-timeout", "60"],
        stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
    engines = []
    try:
        for index in range(config["data_parallel_size"]):
            engines.append(subprocess.Popen(
                ["/usr/bin/python3", os.path.join(source, "tools/stand_in_engine.py"),
                 "--handshake-address", f"tcp://127.0.0.1:{hs_port}",
                 "--engine-index", str(index),
                 "--data-parallel-size", str(config["data_parallel_size"]),
                 "--max-model-len", str(config["max_model_len"]),
                 "--replay-case", case["case"], "--hold"],
                stdout=subprocess.DEVNULL,
                stderr=open(os.path.join(work, f"{case['case']}.engine{index}.log"), "w")))
        line = serve.stdout.readline()
        if "listening on" not in line:
            fail(f"serve did not start: {line!r}; log: {open(log).read()}")
        # The engines hold after their last message (an engine that exits is dead, and a dead
        # engine's request gauges are 0): serve records what they sent as it arrives.
        want = expected_lines(source, case)
        info = [f'vmetrics_engine_wire_info{{engine="{i}",generation="{generation}",requests="'
                for i in range(config["data_parallel_size"])]
        deadline = time.monotonic() + 60
        missing = want + info
        while time.monotonic() < deadline:
            have = set(metrics(http_port).splitlines())
            missing = [w for w in want if w not in have]
            missing += [i for i in info
                        if not any(h.startswith(i) and h.endswith("} 1.0") for h in have)]
            if not missing:
                break
            if any(e.poll() is not None for e in engines):
                fail(f"{case['case']}: a stand-in engine ended; serve log: {open(log).read()}")
            time.sleep(0.2)
        if missing:
            fail(f"{case['case']}: /metrics lacks {len(missing)} expected lines, first: "
                 f"{missing[:5]}\nserve log:\n{open(log).read()}")
        print(f"ok {case['case']}: recognised as {generation}, {len(want)} golden samples on "
              "/metrics", flush=True)
    finally:
        for e in engines:
            if e.poll() is None:
                e.kill()
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(30)
        except subprocess.TimeoutExpired:
            serve.kill()


def main():
    vmetrics, source = sys.argv[1], sys.argv[2]
    manifest = json.load(open(os.path.join(source, "tests/fixtures/wire_generations/manifest.json")))
    by_name = {c["case"]: c for c in manifest["cases"]}
    work = tempfile.mkdtemp(prefix="vmetrics-wire-e2e-")
    for name in CASES:
        run_case(vmetrics, source, by_name[name], work)


if __name__ == "__main__":
    main()
