#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End to end: prefill/decode disaggregation through a router, as vLLM's NIXL toy proxy does it.

Two `vmetrics serve`s, each with one stand-in engine (`vmetrics simulate --serve-requests
--connector nixl`): the prefill engine with `--kv-role kv_producer`, the decode engine with
`--kv-role kv_consumer`. A router (this file, Python stdlib) follows
tests/v1/kv_connector/nixl_integration/toy_proxy_server.py in vllm-project/vllm (030ea52e):
one X-Request-Id for both legs; to the prefill serve a copy of the request with
kv_transfer_params {do_remote_decode: true, do_remote_prefill: false, remote_*: null},
max_tokens 1, no stream, no stream_options, no min_tokens; then the original request, with the
kv_transfer_params the prefill answer carried, to the decode serve, whose answer the client
gets. Both /v1/completions and /inference/v1/generate (kv_transfer_params at the top level of
both bodies, max_tokens and min_tokens inside sampling_params for generate).

Checked: every answer (tokens, usage, finish reason, id from X-Request-Id, no
kv_transfer_params from the decode side); the prefill answers' params (NixlConnector's
request_finished shape: remote_block_ids naming every prompt block, remote_request_id the
engine request id, ...); with a seed the prefill's one token is the decode's first (the
stand-in engine is deterministic, as the NIXL integration tests compare P/D with direct
output); then /metrics on both sides, exactly: request and token families on both, the
vllm:nixl_* families only on the decode side with one transfer per request, bytes and
descriptors from the block counts, and the pulled prompt tokens as external_kv_transfer.
Also X-Request-Id: the header names the answer over the body's request_id (vLLM's
_base_request_id), on both APIs, and a request without params transfers nothing.

Usage: pd_disaggregation_e2e.py VMETRICS_BINARY
"""
import copy
import http.server
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

from e2e_support import fail, free_port, get_text as get

MODEL = "pd-model"
BLOCK_SIZE = 16  # the stand-in engine's
KV_LAYERS = 32  # SimulatorOptions::kKvLayers
KV_BYTES_PER_TOKEN = 32 * 8 * 128 * 2 * 2  # SimulatorOptions::kKvBytesPerToken
NIXL_CONFIG = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'


def post(url, body, headers=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")




class Instance:
    """One `vmetrics serve` and its stand-in engine."""

    def __init__(self, vmetrics, work, name, role, seed):
        self.name = name
        self.http = free_port()
        hs = free_port()
        self.log = os.path.join(work, name + ".serve.log")
        self.serve = subprocess.Popen(
            [vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs}",
             "--data-parallel-size", "1", "--kv-transfer-config", NIXL_CONFIG,
             "--served-model-name", MODEL, "--port", str(self.http),
             "--engine-ready-timeout", "60"],
            stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        self.engine = subprocess.Popen(
            [vmetrics, "simulate", "--handshake-address", f"tcp://127.0.0.1:{hs}",
             "--serve-requests", "--no-synthetic-requests", "--connector", "nixl",
             "--kv-role", role, "--kv-engine-id", name + "-engine", "--steps", "0",
             "--rate", "200", "--seed", str(seed)],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, name + ".engine.log"), "w"))
        self.url = f"http://127.0.0.1:{self.http}"

    def wait_ready(self):
        # serve answers HTTP before its engine joins; /health is 200 once every engine is ready.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.serve.poll() is not None or self.engine.poll() is not None:
                fail(f"{self.name}: serve or engine exited; log: {open(self.log).read()}")
            status, _ = get(self.url + "/health")
            if status == 200:
                return
            time.sleep(0.05)
        fail(f"{self.name}: not ready in 60 s; log: {open(self.log).read()}")

    def stop(self):
        for p in (self.engine, self.serve):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in (self.engine, self.serve):
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


class Router(http.server.ThreadingHTTPServer):
    """vLLM's NIXL toy proxy for /v1/completions and /inference/v1/generate."""

    daemon_threads = True

    def __init__(self, prefill_url, decode_url):
        super().__init__(("127.0.0.1", 0), RouterHandler)
        self.prefill_url = prefill_url
        self.decode_url = decode_url
        self.prefill_answers = {}  # X-Request-Id -> the prefill serve's answer
        self.lock = threading.Lock()


class RouterHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request_id = self.headers.get("X-Request-Id") or str(uuid.uuid4())
        headers = {"X-Request-Id": request_id}
        generate = self.path == "/inference/v1/generate"
        prefill = copy.deepcopy(body)
        prefill["kv_transfer_params"] = {
            "do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
            "remote_block_ids": None, "remote_host": None, "remote_port": None}
        prefill["stream"] = False
        prefill.pop("stream_options", None)
        params = prefill["sampling_params"] if generate else prefill
        params["max_tokens"] = 1
        params.pop("min_tokens", None)  # not supported for P; the decode request keeps it
        status, answer = post(self.server.prefill_url + self.path, prefill, headers)
        with self.server.lock:
            self.server.prefill_answers[request_id] = (status, answer)
        if status == 200 and answer.get("kv_transfer_params"):
            body["kv_transfer_params"] = answer["kv_transfer_params"]
        status, answer = post(self.server.decode_url + self.path, body, headers)
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def parse_metrics(text):
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, value = line.rsplit(" ", 1)
        name, labels = name_labels, {}
        if "{" in name_labels:
            name, rest = name_labels.split("{", 1)
            for part in rest.rstrip("}").split('",'):
                if part:
                    k, v = part.split("=", 1)
                    labels[k] = v.strip('"')
        samples.append((name, labels, float(value)))
    return samples


def total(samples, name, **labels):
    """The sum of `name`'s samples whose labels include `labels`; None when there are none."""
    values = [v for n, l, v in samples
              if n == name and all(l.get(k) == w for k, w in labels.items())]
    return sum(values) if values else None


def expect(what, got, want):
    if got != want:
        fail(f"{what}: got {got!r}, want {want!r}")


def check_prefill_params(params, engine_request_prefix, prompt_len):
    if not isinstance(params, dict):
        fail(f"prefill answered without kv_transfer_params: {params!r}")
    blocks = math.ceil(prompt_len / BLOCK_SIZE)
    expect("prefill params keys", list(params),
           ["do_remote_prefill", "do_remote_decode", "remote_block_ids", "remote_engine_id",
            "remote_request_id", "remote_host", "remote_port", "tp_size"])
    expect("do_remote_prefill", params["do_remote_prefill"], True)
    expect("do_remote_decode", params["do_remote_decode"], False)
    expect("remote_block_ids groups", len(params["remote_block_ids"]), 1)
    expect("remote_block_ids blocks", len(params["remote_block_ids"][0]), blocks)
    expect("remote_engine_id", params["remote_engine_id"], "prefill-engine")
    if not params["remote_request_id"].startswith(engine_request_prefix):
        fail(f"remote_request_id {params['remote_request_id']!r} does not start with "
             f"{engine_request_prefix!r}")
    expect("remote_host", params["remote_host"], "localhost")
    expect("remote_port", params["remote_port"], 5600)
    expect("tp_size", params["tp_size"], 1)
    return blocks


def main():
    vmetrics = sys.argv[1]
    work = tempfile.mkdtemp(prefix="vmetrics-pd-e2e-")
    prefill = Instance(vmetrics, work, "prefill", "kv_producer", 11)
    decode = Instance(vmetrics, work, "decode", "kv_consumer", 12)
    router = None
    try:
        prefill.wait_ready()
        decode.wait_ready()
        router = Router(prefill.url, decode.url)
        threading.Thread(target=router.serve_forever, daemon=True).start()
        router_url = f"http://127.0.0.1:{router.server_address[1]}"

        # (prompt length, max_tokens, min_tokens); prompts below, at and above one block.
        cases = [(5, 4, None), (16, 6, 2), (17, 3, None), (40, 8, 5)]
        routed = 0
        prompt_sum = blocks_sum = pulled_tokens = decode_tokens = 0
        for api in ("/v1/completions", "/inference/v1/generate"):
            generate = api == "/inference/v1/generate"
            for i, (plen, max_tokens, min_tokens) in enumerate(cases):
                prompt = [(7 * i + j) % 1000 + 3 for j in range(plen)]
                sampling = {"max_tokens": max_tokens, "seed": 100 + i}
                if min_tokens is not None:
                    sampling["min_tokens"] = min_tokens
                if generate:
                    body = {"model": MODEL, "token_ids": prompt, "sampling_params": sampling}
                else:
                    body = {"model": MODEL, "prompt": prompt, "return_token_ids": True,
                            **sampling}
                xid = f"pd-{'gen' if generate else 'cmpl'}-{i}"
                status, answer = post(router_url + api, body, {"X-Request-Id": xid})
                if status != 200:
                    fail(f"{api} {xid}: status {status}: {answer}")
                prefix = ("generate-tokens-" if generate else "cmpl-") + xid
                expect(f"{xid} id", answer["request_id" if generate else "id"], prefix)
                choice = answer["choices"][0]
                expect(f"{xid} tokens", len(choice["token_ids"]), max_tokens)
                expect(f"{xid} finish_reason", choice["finish_reason"], "length")
                expect(f"{xid} usage", (answer["usage"]["prompt_tokens"],
                                        answer["usage"]["completion_tokens"],
                                        answer["usage"]["total_tokens"]),
                       (plen, max_tokens, plen + max_tokens))
                expect(f"{xid} decode kv_transfer_params", answer["kv_transfer_params"], None)
                p_status, p_answer = router.prefill_answers[xid]
                expect(f"{xid} prefill status", p_status, 200)
                expect(f"{xid} prefill id", p_answer["request_id" if generate else "id"],
                       prefix)
                p_choice = p_answer["choices"][0]
                expect(f"{xid} prefill finish_reason", p_choice["finish_reason"], "length")
                expect(f"{xid} prefill tokens", len(p_choice["token_ids"]), 1)
                # Same seed, same stand-in: the prefill's token is the decode's first.
                expect(f"{xid} first token", p_choice["token_ids"][0], choice["token_ids"][0])
                blocks_sum += check_prefill_params(p_answer["kv_transfer_params"], prefix, plen)
                routed += 1
                prompt_sum += plen
                pulled_tokens += plen - 1
                decode_tokens += max_tokens
            print(f"ok {api}: {len(cases)} requests routed prefill -> decode", flush=True)

        # X-Request-Id names the answer over the body's request_id (vLLM's _base_request_id);
        # sent straight to the decode serve, without params: computed there, nothing pulled.
        direct_tokens = 0
        for api, body, key, prefix in (
                ("/v1/completions", {"model": MODEL, "prompt": [5, 6, 7], "max_tokens": 2,
                                     "request_id": "from-body"}, "id", "cmpl-"),
                ("/inference/v1/generate", {"model": MODEL, "token_ids": [5, 6, 7],
                                            "request_id": "from-body",
                                            "sampling_params": {"max_tokens": 2}},
                 "request_id", "generate-tokens-")):
            status, answer = post(decode.url + api, body, {"X-Request-Id": "from-header"})
            expect(f"{api} X-Request-Id status", status, 200)
            expect(f"{api} X-Request-Id", answer[key], prefix + "from-header")
            status, answer = post(decode.url + api, body)
            expect(f"{api} body request_id", answer[key], prefix + "from-body")
            direct_tokens += 4
        print("ok X-Request-Id: the header names the answer over the body's request_id",
              flush=True)

        # Params a transfer cannot start from (no remote_request_id, host, port): NIXL warns
        # "Got invalid KVTransferParams" and computes the prompt locally.
        status, answer = post(decode.url + "/v1/completions", {
            "model": MODEL, "prompt": [5, 6, 7], "max_tokens": 2,
            "kv_transfer_params": {"do_remote_prefill": True, "remote_block_ids": [[1]],
                                   "remote_engine_id": "prefill-engine"}})
        expect("invalid params status", status, 200)
        expect("invalid params tokens", len(answer["choices"][0]["token_ids"]), 2)
        direct_tokens += 2

        # /metrics: the answers were sent after the final outputs were recorded.
        p = parse_metrics(get(prefill.url + "/metrics")[1])
        d = parse_metrics(get(decode.url + "/metrics")[1])
        expect("prefill request_success length",
               total(p, "vllm:request_success_total", finished_reason="length"), routed)
        expect("prefill generation tokens", total(p, "vllm:generation_tokens_total"), routed)
        expect("prefill prompt tokens", total(p, "vllm:prompt_tokens_total"), prompt_sum)
        expect("prefill e2e latency count", total(p, "vllm:e2e_request_latency_seconds_count"),
               routed)
        expect("prefill external_kv_transfer tokens",
               total(p, "vllm:prompt_tokens_by_source_total", source="external_kv_transfer"), 0)
        for family in ("vllm:nixl_xfer_time_seconds_count", "vllm:nixl_bytes_transferred_count",
                       "vllm:nixl_num_descriptors_count", "vllm:nixl_post_time_seconds_count"):
            if total(p, family) not in (None, 0):
                fail(f"prefill reports a transfer: {family} {total(p, family)}")
        direct = 5
        expect("decode request_success length",
               total(d, "vllm:request_success_total", finished_reason="length"), routed + direct)
        expect("decode generation tokens", total(d, "vllm:generation_tokens_total"),
               decode_tokens + direct_tokens)
        expect("decode prompt tokens", total(d, "vllm:prompt_tokens_total"),
               prompt_sum + 3 * direct)
        expect("decode external_kv_transfer tokens",
               total(d, "vllm:prompt_tokens_by_source_total", source="external_kv_transfer"),
               pulled_tokens)
        expect("decode local_compute tokens",
               total(d, "vllm:prompt_tokens_by_source_total", source="local_compute"),
               routed + 3 * direct)
        expect("decode nixl transfers", total(d, "vllm:nixl_xfer_time_seconds_count"), routed)
        expect("decode nixl post times", total(d, "vllm:nixl_post_time_seconds_count"), routed)
        expect("decode nixl bytes", total(d, "vllm:nixl_bytes_transferred_sum"),
               blocks_sum * BLOCK_SIZE * KV_BYTES_PER_TOKEN)
        expect("decode nixl descriptors", total(d, "vllm:nixl_num_descriptors_sum"),
               blocks_sum * KV_LAYERS)
        for family in ("vllm:nixl_num_failed_transfers_total",
                       "vllm:nixl_num_failed_notifications_total",
                       "vllm:nixl_num_kv_expired_reqs_total"):
            if total(d, family) not in (None, 0):
                fail(f"decode reports a fault: {family} {total(d, family)}")
        print(f"ok /metrics: prefill {routed} requests and no transfer; decode {routed} NIXL "
              f"transfers of {blocks_sum} blocks, {pulled_tokens} prompt tokens pulled",
              flush=True)
    finally:
        if router is not None:
            router.shutdown()
        prefill.stop()
        decode.stop()


if __name__ == "__main__":
    main()
