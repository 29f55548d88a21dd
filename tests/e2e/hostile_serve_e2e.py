#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End to end: hostile engine output through `vmetrics serve`'s /metrics stays parsable.

For every capture of tests/fixtures/hostile_wire/ (tools/gen_hostile_captures.py: label
strings that are not UTF-8, control characters, 10 kB names, negative/NaN increments, integers
above 2^63-1, fields of the wrong type): `vmetrics serve` with the capture's
--kv-transfer-config meets one stand-in engine (tools/stand_in_engine.py --replay-capture) that
sends the capture's messages byte for byte and then ENGINE_CORE_DEAD. Once /metrics shows the
engine dead (every message before the death recorded) it is scraped in text 0.0.4 and in
OpenMetrics (Accept: application/openmetrics-text), and each body must pass
  - the C++ exposition grammar checker (the exposition_check command of tests/support/),
  - prometheus_client's parsers after a strict UTF-8 decode (the OpenMetrics one strict,
    consumed whole),
  - `promtool check metrics` (text; the lint lines vLLM's names draw are accepted, as in
    tests/cli/promtool_check.sh),
and the text body holds the sample lines scenarios.tsv lists (the skips are counted).

Usage: hostile_serve_e2e.py VMETRICS_BINARY EXPOSITION_CHECK PROMTOOL SOURCE_DIR
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parser
from prometheus_client.parser import text_string_to_metric_families as text_parser

from e2e_support import free_port

OPENMETRICS = "application/openmetrics-text; version=1.0.0"
# promtool's lint lines vLLM's own names draw (tests/cli/promtool_check.sh).
ACCEPTED_LINT = [re.compile(r"^[^ ]+ metric names should not contain ':'$"),
                 re.compile(r'^vllm:iteration_tokens_total non-counter metrics should not have '
                            r'"_total" suffix$')]


def scrape(port, accept=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if accept:
        request.add_header("Accept", accept)
    with urllib.request.urlopen(request, timeout=10) as r:
        return r.read(), r.headers.get("Content-Type", "")


def problems(body, fmt, exposition_check, promtool, work, name):
    """Why `body` (bytes, format `fmt`) is not a valid exposition; [] when it is."""
    found = []
    path = os.path.join(work, f"{name}.{fmt}")
    with open(path, "wb") as f:
        f.write(body)
    checked = subprocess.run([exposition_check, fmt, path], capture_output=True, text=True)
    if checked.returncode != 0:
        found.append(f"exposition_check {fmt}: {checked.stderr.strip()[:600]}")
    try:
        text = body.decode("utf-8")  # strict: invalid UTF-8 raises
        list((om_parser if fmt == "openmetrics" else text_parser)(text))
    except Exception as e:  # noqa: BLE001 (any failure is the answer)
        found.append(f"prometheus_client {fmt}: {type(e).__name__}: {str(e)[:300]}")
    if fmt == "text":
        lint = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
        err = lint.stderr.decode("utf-8", "backslashreplace").splitlines()
        unexpected = [l for l in err if not any(p.match(l) for p in ACCEPTED_LINT)]
        if lint.returncode not in (0, 3) or (lint.returncode == 3 and unexpected):
            found.append(f"promtool exit {lint.returncode}: {unexpected[:5] or err[:5]}")
    return found


def run_scenario(args, name, config, expected, work):
    vmetrics, exposition_check, promtool, source = args
    capture = os.path.join(source, "tests/fixtures/hostile_wire", name + ".msgpack")
    hs_port, http_port = free_port(), free_port()
    log = os.path.join(work, name + ".serve.log")
    command = [vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs_port}",
               "--data-parallel-size", "1", "--max-model-len", "4096",
               "--served-model-name", "hostile", "--port", str(http_port),
               "--engine-ready-timeout", "60"]
    if config != "-":
        command += ["--kv-transfer-config", config]
    env = dict(os.environ)
    env.pop("PROMETHEUS_DISABLE_CREATED_SERIES", None)
    serve = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(log, "w"), env=env)
    engine = None
    failures = []
    try:
        engine = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(source, "tools/stand_in_engine.py"),
             "--handshake-address", f"tcp://127.0.0.1:{hs_port}", "--engine-index", "0",
             "--max-model-len", "4096", "--replay-capture", capture, "--die"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, name + ".engine.log"), "w"))
        if engine.wait(60) != 0:
            return [f"the stand-in engine failed: {open(os.path.join(work, name + '.engine.log')).read()}"]
        # ENGINE_CORE_DEAD came after the capture on the same socket: once /metrics shows the
        # engine dead, every message before it was recorded.
        dead = 'vmetrics_engine_up{engine="0"} 0.0'
        deadline = time.monotonic() + 60
        while True:
            try:
                text, _ = scrape(http_port)
                if dead in text.decode("utf-8", "replace").splitlines():
                    break
            except OSError:
                pass  # serve not answering yet
            if time.monotonic() > deadline:
                return [f"/metrics never showed {dead}; serve log:\n{open(log).read()[-2000:]}"]
            time.sleep(0.1)
        for fmt, accept in (("text", None), ("openmetrics", OPENMETRICS)):
            body, content_type = scrape(http_port, accept)
            if fmt == "openmetrics" and not content_type.startswith("application/openmetrics-text"):
                failures.append(f"Accept {accept} answered with {content_type}")
            failures += problems(body, fmt, exposition_check, promtool, work, name)
            if fmt == "text":
                lines = set(body.decode("utf-8", "replace").splitlines())
                failures += [f"/metrics lacks {line!r}" for line in expected if line not in lines]
            print(f"{name}: {fmt} /metrics {len(body)} bytes", flush=True)
        if serve.poll() is not None:
            failures.append(f"serve exited {serve.returncode}")
    finally:
        if engine is not None and engine.poll() is None:
            engine.kill()
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(30)
        except subprocess.TimeoutExpired:
            serve.kill()
    return failures


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    args = sys.argv[1:]
    source = args[3]
    work = tempfile.mkdtemp(prefix="vmetrics-hostile-serve-")
    failures, checked = [], 0
    with open(os.path.join(source, "tests/fixtures/hostile_wire/scenarios.tsv")) as f:
        for row in f:
            cols = row.rstrip("\n").split("\t")
            if not cols[0] or cols[0].startswith("#"):
                continue
            name, config, expected = cols[0], cols[1], cols[2:]
            failures += [f"{name}: {p}" for p in run_scenario(args, name, config, expected, work)]
            checked += 1
    for failure in failures:
        print("FAIL:", failure, flush=True)
    if failures or checked == 0:
        return 1
    print(f"hostile_serve: {checked} captures through serve, both formats valid", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
