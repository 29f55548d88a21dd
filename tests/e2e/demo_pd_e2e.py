#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`vmetrics demo --pd`, short: it routes requests through a prefill and a decode instance and
prints both /metrics excerpts, in which the request families move on both sides and the
vllm:nixl_* families on the decode side only; the prefill answers carry NIXL's params.

Usage: demo_pd_e2e.py VMETRICS_BINARY
"""
import json
import re
import subprocess
import sys


def fail(msg, out=""):
    print("FAIL:", msg, flush=True)
    if out:
        print(out, flush=True)
    sys.exit(1)


def samples(section, prefix):
    return [float(line.rsplit(" ", 1)[1]) for line in section
            if line.strip().startswith(prefix)]


def main():
    vmetrics = sys.argv[1]
    run = subprocess.run([vmetrics, "demo", "--pd", "--duration", "3", "--port", "0",
                          "--request-rate", "20", "--rate", "200"],
                         capture_output=True, text=True, timeout=120)
    out = run.stdout
    if run.returncode != 0:
        fail(f"exit {run.returncode}: {run.stderr}", out)
    lines = out.splitlines()
    routed = re.search(r"^routed (\d+) requests prefill -> decode", out, re.M)
    if not routed or int(routed.group(1)) == 0:
        fail("no request routed", out)
    params = json.loads(lines[lines.index(routed.group(0) + "; a prefill answer's "
                                          "kv_transfer_params:") + 1])
    for key in ("do_remote_prefill", "remote_block_ids", "remote_engine_id",
                "remote_request_id", "remote_host", "remote_port", "tp_size"):
        if key not in params:
            fail(f"prefill params lack {key}: {params}", out)
    if params["remote_engine_id"] != "prefill-engine" or params["do_remote_prefill"] is not True:
        fail(f"unexpected prefill params: {params}", out)
    starts = [i for i, line in enumerate(lines) if re.match(r"^(prefill|decode) http.* shows", line)]
    if len(starts) != 2:
        fail("expected a prefill and a decode excerpt", out)
    prefill = lines[starts[0] + 1:starts[1]]
    decode = lines[starts[1] + 1:]
    for name, section in (("prefill", prefill), ("decode", decode)):
        if sum(samples(section, 'vllm:request_success_total{')) <= 0:
            fail(f"{name}: no finished request in the excerpt", out)
        if sum(samples(section, "vllm:generation_tokens_total{")) <= 0:
            fail(f"{name}: no generation tokens in the excerpt", out)
    # The prefill side's NIXL children exist (its engine reported the connector) but stay 0:
    # reads are issued and reported by the decode side.
    if sum(samples(prefill, "vllm:nixl_xfer_time_seconds_count{")) != 0:
        fail("the prefill side shows NIXL transfers", out)
    if sum(samples(decode, "vllm:nixl_xfer_time_seconds_count{")) <= 0:
        fail("the decode side shows no NIXL transfer", out)
    if sum(samples(decode, "vllm:nixl_bytes_transferred_sum{")) <= 0:
        fail("the decode side shows no NIXL bytes", out)
    print(f"ok: {routed.group(1)} requests routed; NIXL transfers on the decode side only",
          flush=True)


if __name__ == "__main__":
    main()
