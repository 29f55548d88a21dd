#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End to end: vLLM's benchmark client through vLLM's NIXL toy proxy to two `vmetrics serve`s.

The router (this file, Python stdlib) behaves as
tests/v1/kv_connector/nixl_integration/toy_proxy_server.py does in vllm-project/vllm at
6adad087: a fresh uuid4 as X-Request-Id of both legs; `Authorization: Bearer
{os.environ.get('OPENAI_API_KEY')}` on both, so "Bearer None" when the variable is unset; to the
prefill serve a shallow copy of the body with kv_transfer_params {do_remote_decode: true,
do_remote_prefill: false, remote_*: null}, stream false, max_tokens 1, max_completion_tokens 1
when present, no stream_options, no min_tokens or min_completion_tokens; then the original
body, with the kv_transfer_params the prefill answer carried, to the decode serve, whose bytes
are streamed back as they come, labelled application/json as the toy proxy labels them.

The client sends what vLLM's benchmark client sends (async_request_openai_completions in
vllm/benchmarks/lib/endpoint_request_func.py at 6adad087): model, a token-id prompt,
repetition_penalty 1.0, max_tokens, logprobs (null unless asked), stream true, stream_options
{include_usage: true}, ignore_eos, then `vllm bench serve`'s sampling parameters (top_p, top_k,
min_p, temperature, frequency_penalty, presence_penalty) and --extra-body; and best_of 1, which
its predecessors (benchmarks/backend_request_func.py before a4f1ee35d) always sent. Its stream is
read as that function reads it (messages split at blank lines, ":" comments skipped, chunks with
choices counted as tokens, the usage chunk's counts).

The serves run with --eos-token-id and their stand-in engines stop at the first token a stop
token can end (`--served-stop earliest`), so ignore_eos decides the answer's length.

Checked: every answer (one chunk per token, the usage counts, the id the router chose, logprobs
when asked, [DONE] last); what the prefill leg carried and answered (1 token and
NixlConnector's params); then /metrics on both sides: the requests, the tokens, one NIXL transfer
per routed request on the decode side only, and best_of and max_completion_tokens, which
vLLM's CompletionRequest does not declare, ignored and counted on both. Last, serves with
--api-key: the proxy's OPENAI_API_KEY passes them, its "Bearer None" is refused.

Usage: pd_toy_proxy_e2e.py VMETRICS_BINARY
"""
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

from e2e_support import fail, free_port, get_text, stop
from pd_disaggregation_e2e import parse_metrics, total

MODEL = "toy-proxy-model"
EOS = 2
NIXL_CONFIG = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'


class Instance:
    """One `vmetrics serve` and its stand-in engine in a NIXL role."""

    def __init__(self, vmetrics, work, name, role, seed, api_key=None):
        self.name = name
        http, hs = free_port(), free_port()
        self.log = os.path.join(work, name + ".serve.log")
        self.serve = subprocess.Popen(
            [vmetrics, "serve", "--handshake-address", f"tcp://127.0.0.1:{hs}",
             "--data-parallel-size", "1", "--kv-transfer-config", NIXL_CONFIG,
             "--served-model-name", MODEL, "--port", str(http), "--eos-token-id", str(EOS),
             "--max-logprobs", "5", "--engine-ready-timeout", "60"] +
            (["--api-key", api_key] if api_key else []),
            stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        self.engine = subprocess.Popen(
            [vmetrics, "simulate", "--handshake-address", f"tcp://127.0.0.1:{hs}",
             "--serve-requests", "--no-synthetic-requests", "--connector", "nixl",
             "--kv-role", role, "--kv-engine-id", name + "-engine", "--served-stop", "earliest",
             "--steps", "0", "--rate", "200", "--seed", str(seed)],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, name + ".engine.log"), "w"))
        self.url = f"http://127.0.0.1:{http}"

    def wait_ready(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.serve.poll() is not None or self.engine.poll() is not None:
                fail(f"{self.name}: serve or engine exited; log: {open(self.log).read()}")
            if get_text(self.url + "/health")[0] == 200:
                return
            time.sleep(0.05)
        fail(f"{self.name}: not ready in 60 s; log: {open(self.log).read()}")


class Router(http.server.ThreadingHTTPServer):
    """toy_proxy_server.py at 6adad087: one prefill and one decode instance."""

    daemon_threads = True

    def __init__(self, prefill_url, decode_url):
        super().__init__(("127.0.0.1", 0), RouterHandler)
        self.prefill_url = prefill_url
        self.decode_url = decode_url
        self.legs = []  # (request id, prefill body, prefill headers, prefill answer)
        self.lock = threading.Lock()


class RouterHandler(http.server.BaseHTTPRequestHandler):
    # HTTP/1.0: the decode bytes are relayed as they come and the end of the answer is the end
    # of the connection, as a streamed answer without a length.
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path != "/healthcheck":
            self.send_error(404)
            return
        self.reply(200, json.dumps({"status": "ok", "prefill_instances": 1,
                                    "decode_instances": 1}).encode())

    def reply(self, status, data):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        if self.path != "/v1/completions":
            self.send_error(404)
            return
        req_data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request_id = str(uuid.uuid4())
        headers = {"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY')}",
                   "X-Request-Id": request_id, "Content-Type": "application/json"}
        prefill = dict(req_data)  # the toy proxy's req_data.copy(): shallow
        prefill["kv_transfer_params"] = {
            "do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
            "remote_block_ids": None, "remote_host": None, "remote_port": None}
        prefill["stream"] = False
        prefill["max_tokens"] = 1
        if "max_completion_tokens" in prefill:
            prefill["max_completion_tokens"] = 1
        prefill.pop("stream_options", None)
        prefill.pop("min_tokens", None)  # "not supported for P"
        prefill.pop("min_completion_tokens", None)
        try:
            with urllib.request.urlopen(urllib.request.Request(
                    self.server.prefill_url + self.path, data=json.dumps(prefill).encode(),
                    headers=headers, method="POST"), timeout=30) as r:
                answer = json.loads(r.read())
        except urllib.error.HTTPError as e:  # raise_for_status: the proxy answers 500
            self.reply(500, e.read())
            return
        with self.server.lock:
            self.server.legs.append((request_id, prefill, headers, answer))
        if answer.get("kv_transfer_params"):
            req_data["kv_transfer_params"] = answer["kv_transfer_params"]
        decode = urllib.request.Request(self.server.decode_url + self.path,
                                        data=json.dumps(req_data).encode(), headers=headers,
                                        method="POST")
        try:
            with urllib.request.urlopen(decode, timeout=30) as r:
                self.send_response(r.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                while chunk := r.read1(65536):
                    self.wfile.write(chunk)
                    self.wfile.flush()
        except urllib.error.HTTPError as e:
            self.reply(500, e.read())


def benchmark_request(url, prompt, output_len, logprobs=None, ignore_eos=True,
                      extra_body=None):
    """async_request_openai_completions' payload and stream reading, synchronously: the
    answer's chunks with choices, its usage, its event texts and its Content-Type."""
    payload = {"model": MODEL, "prompt": prompt, "repetition_penalty": 1.0,
               "max_tokens": output_len, "logprobs": logprobs, "stream": True,
               "stream_options": {"include_usage": True}}
    if ignore_eos:
        payload["ignore_eos"] = ignore_eos
    # `vllm bench serve`'s sampling parameters, then --extra-body, as its extra_body.
    payload.update({"top_p": 0.9, "top_k": 20, "min_p": 0.0, "temperature": 0.7,
                    "frequency_penalty": 0.0, "presence_penalty": 0.0, "best_of": 1,
                    **(extra_body or {})})
    headers = {"Content-Type": "application/json"}  # no OPENAI_API_KEY: no Authorization
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), headers=headers,
                                     method="POST")
    with urllib.request.urlopen(request, timeout=60) as r:
        content_type = r.headers.get("Content-Type")
        text = r.read().decode()
    chunks, usage, messages = [], None, []
    for message in (m.strip() for m in text.split("\n\n")):
        if not message or message.startswith(":"):
            continue
        messages.append(message)
        data = message.removeprefix("data: ")
        if data == "[DONE]":
            continue
        doc = json.loads(data)
        if doc.get("choices"):
            chunks.append(doc)
        elif doc.get("usage"):
            usage = doc["usage"]
    return chunks, usage, messages, content_type


def expect(what, got, want):
    if got != want:
        fail(f"{what}: got {got!r}, want {want!r}")


def main():
    vmetrics = sys.argv[1]
    os.environ.pop("OPENAI_API_KEY", None)  # the proxy sends "Bearer None"
    work = tempfile.mkdtemp(prefix="vmetrics-toy-proxy-e2e-")
    prefill = Instance(vmetrics, work, "prefill", "kv_producer", 21)
    decode = Instance(vmetrics, work, "decode", "kv_consumer", 22)
    router = None
    try:
        prefill.wait_ready()
        decode.wait_ready()
        router = Router(prefill.url, decode.url)
        threading.Thread(target=router.serve_forever, daemon=True).start()
        router_url = f"http://127.0.0.1:{router.server_address[1]}"
        expect("healthcheck", get_text(router_url + "/healthcheck"),
               (200, '{"status": "ok", "prefill_instances": 1, "decode_instances": 1}'))

        # (prompt length, output_len, logprobs, extra body): prompts below, at and past a block.
        cases = [(5, 4, None, {}), (16, 6, 2, {"max_completion_tokens": 6}),
                 (17, 3, None, {"min_tokens": 2}), (40, 8, None, {"max_completion_tokens": 8})]
        prompt_sum = tokens_sum = 0
        for i, (plen, output_len, logprobs, extra) in enumerate(cases):
            prompt = [(11 * i + j) % 900 + 3 for j in range(plen)]
            chunks, usage, messages, content_type = benchmark_request(
                router_url + "/v1/completions", prompt, output_len, logprobs, extra_body=extra)
            expect(f"request {i} Content-Type", content_type, "application/json")
            expect(f"request {i} chunks with choices", len(chunks), output_len)
            expect(f"request {i} usage", usage, {"prompt_tokens": plen,
                                                 "completion_tokens": output_len,
                                                 "total_tokens": plen + output_len})
            expect(f"request {i} last event", messages[-1], "data: [DONE]")
            request_id, sent, headers, answer = router.legs[-1]
            for chunk in chunks:
                expect(f"request {i} chunk id", chunk["id"], "cmpl-" + request_id)
                expect(f"request {i} logprobs", chunk["choices"][0]["logprobs"] is not None,
                       logprobs is not None)
            expect(f"request {i} finish", chunks[-1]["choices"][0]["finish_reason"], "length")
            # The prefill leg: the toy proxy's rewrite, and the answer it forwards params from.
            expect(f"request {i} Authorization", headers["Authorization"], "Bearer None")
            expect(f"request {i} prefill fields",
                   {k: sent.get(k) for k in ("stream", "max_tokens", "max_completion_tokens",
                                             "min_tokens", "ignore_eos", "best_of")},
                   {"stream": False, "max_tokens": 1,
                    "max_completion_tokens": 1 if "max_completion_tokens" in extra else None,
                    "min_tokens": None, "ignore_eos": True, "best_of": 1})
            expect(f"request {i} prefill stream_options", "stream_options" in sent, False)
            expect(f"request {i} prefill tokens", answer["usage"]["completion_tokens"], 1)
            params = answer.get("kv_transfer_params") or {}
            expect(f"request {i} prefill params",
                   (params.get("do_remote_prefill"), params.get("remote_engine_id"),
                    params.get("remote_request_id", "").startswith("cmpl-" + request_id)),
                   (True, "prefill-engine", True))
            prompt_sum += plen
            tokens_sum += output_len
        print(f"ok {len(cases)} benchmark requests routed prefill -> decode", flush=True)

        # Without ignore_eos the decode engine stops at its first token (--served-stop
        # earliest): the field reached it through the router.
        chunks, usage, _, _ = benchmark_request(router_url + "/v1/completions", [7, 8, 9], 5,
                                                ignore_eos=False)
        expect("without ignore_eos", (len(chunks), usage["completion_tokens"],
                                      chunks[-1]["choices"][0]["finish_reason"]),
               (1, 1, "stop"))
        print("ok without ignore_eos: stopped at the stop token", flush=True)

        routed = len(cases) + 1
        with_max_completion = sum("max_completion_tokens" in c[3] for c in cases)
        p = parse_metrics(get_text(prefill.url + "/metrics")[1])
        d = parse_metrics(get_text(decode.url + "/metrics")[1])
        expect("prefill requests", total(p, "vllm:request_success_total"), routed)
        expect("prefill generation tokens", total(p, "vllm:generation_tokens_total"), routed)
        expect("prefill prompt tokens", total(p, "vllm:prompt_tokens_total"), prompt_sum + 3)
        expect("decode requests", total(d, "vllm:request_success_total"), routed)
        expect("decode generation tokens", total(d, "vllm:generation_tokens_total"),
               tokens_sum + 1)
        # The stop request's prefill finished with "stop": NixlConnector returns no params
        # then, so the decode side computed it and pulled nothing.
        expect("decode nixl transfers", total(d, "vllm:nixl_xfer_time_seconds_count"),
               len(cases))
        if total(p, "vllm:nixl_xfer_time_seconds_count") not in (None, 0):
            fail("the prefill side reports a transfer")
        for side, samples in (("prefill", p), ("decode", d)):
            expect(f"{side} best_of ignored",
                   total(samples, "vmetrics_request_fields_ignored_total", field="best_of"),
                   routed)
            expect(f"{side} max_completion_tokens ignored",
                   total(samples, "vmetrics_request_fields_ignored_total",
                         field="max_completion_tokens"), with_max_completion)
        print(f"ok /metrics: {routed} requests on each side, {len(cases)} NIXL transfers on the "
              "decode side, best_of and max_completion_tokens ignored and counted", flush=True)
    finally:
        if router is not None:
            router.shutdown()
        stop(prefill.engine, prefill.serve, decode.engine, decode.serve)
    check_api_key(vmetrics, work)


def check_api_key(vmetrics, work):
    """Serves with --api-key behind the proxy: its OPENAI_API_KEY is what passes them; unset,
    its "Bearer None" is refused (401) and the proxy answers 500, as its raise_for_status
    does."""
    key = "sk-toy-proxy"
    prefill = Instance(vmetrics, work, "prefill-key", "kv_producer", 31, api_key=key)
    decode = Instance(vmetrics, work, "decode-key", "kv_consumer", 32, api_key=key)
    router = None
    try:
        prefill.wait_ready()
        decode.wait_ready()
        router = Router(prefill.url, decode.url)
        threading.Thread(target=router.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{router.server_address[1]}/v1/completions"
        os.environ["OPENAI_API_KEY"] = key
        chunks, usage, _, _ = benchmark_request(url, [4, 5, 6, 7], 3)
        expect("with the key", (len(chunks), usage["completion_tokens"]), (3, 3))
        del os.environ["OPENAI_API_KEY"]
        try:
            benchmark_request(url, [4, 5, 6, 7], 3)
            fail("Bearer None passed a serve with --api-key")
        except urllib.error.HTTPError as e:
            expect("Bearer None", (e.code, json.loads(e.read())), (500, {"error": "Unauthorized"}))
        print("ok --api-key: the proxy's OPENAI_API_KEY passes, its Bearer None does not",
              flush=True)
    finally:
        if router is not None:
            router.shutdown()
        stop(prefill.engine, prefill.serve, decode.engine, decode.serve)


if __name__ == "__main__":
    main()
