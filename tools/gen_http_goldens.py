#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Renders the HTTP request families of vLLM's API server with prometheus_client.

Regenerate (from the repository root, with Debian's python3-prometheus-client 0.16):

    /usr/bin/python3 tools/gen_http_goldens.py     (or tools/regen.sh for every generator)

vLLM instruments its FastAPI app with prometheus-fastapi-instrumentator
(vllm/entrypoints/serve/instrumentator/metrics.py, vllm-project/vllm at 6adad087):
`Instrumentator(excluded_handlers=[...], registry=...).add().instrument(app)`. With no
instrumentation added, the middleware installs the library's `metrics.default()`
(trallnag/prometheus-fastapi-instrumentator src/prometheus_fastapi_instrumentator/metrics.py
and middleware.py, identical at v8.0.0 and v8.0.2 = c1c1fb645ce3b28d538413a9ac18cc7559c0c385).
This script states those families and the middleware's per-request rules (exclusion by
regular-expression search, untemplated requests grouped as "none", status grouped as "2xx")
in its own words, with prometheus_client doing the recording and rendering, and feeds them a
fixed list of requests.

Writes, into tests/golden/ (or the directory given as its one argument):
    inputs/http_requests.tsv  the requests: method, path, route path ("-" when no route
                              matched), status, request and response Content-Length, seconds
    http_families.txt         text 0.0.4 (prometheus_client.generate_latest)
    http_families.om          OpenMetrics

tests/frontend/http_families_test.cc feeds the same requests to frontend::HttpFamilies with a
FixedClock(123.456) and compares byte for byte.
"""

import os
import re
import sys
from unittest import mock

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Histogram, Summary
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

# vllm/entrypoints/serve/instrumentator/metrics.py at 6adad087.
EXCLUDED_HANDLERS = ['/metrics', '/health', '/load', '/ping', '/version', '/server_info']

# instrument()'s default buckets; metrics.default() appends +Inf.
HIGHR_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5,
                 5, 7.5, 10, 30, 60]
LOWR_BUCKETS = [0.1, 0.5, 1]

# (method, path, route path or None, status, request Content-Length, response Content-Length,
# seconds). The route path is what the app's router matched (None: nothing did).
REQUESTS = [
    ('POST', '/v1/completions', '/v1/completions', 200, 57, 310, 0.25),
    ('POST', '/v1/completions', '/v1/completions', 200, 64, 0, 1.5),      # a stream
    ('POST', '/v1/completions', '/v1/completions', 400, 12, 151, 0.001),
    ('GET', '/v1/models', '/v1/models', 200, 0, 220, 0.01),               # on a bound
    ('GET', '/metrics', '/metrics', 200, 0, 4096, 0.002),                 # excluded
    ('GET', '/health', '/health', 200, 0, 0, 0.0005),                     # excluded
    ('GET', '/ping', '/ping', 200, 0, 2, 0.0001),                         # excluded
    ('POST', '/ping', '/ping', 200, 0, 2, 0.0001),                        # excluded
    ('GET', '/version', '/version', 200, 0, 40, 0.0001),                  # excluded
    ('GET', '/load', '/load', 200, 0, 20, 0.0001),                        # excluded
    ('GET', '/nope', None, 404, 0, 22, 0.0003),                           # "none"
    ('DELETE', '/nope/metrics', None, 404, 0, 22, 0.0003),                # excluded by its path
    ('GET', '/v1/completions', None, 405, 0, 31, 0.0002),                 # "none"
    ('POST', '/inference/v1/generate', '/inference/v1/generate', 200, 80, 95, 60),
    ('POST', '/inference/v1/generate', '/inference/v1/generate', 503, 80, 70, 61),
    ('POST', '/abort_requests', '/abort_requests', 200, 30, 0, 0.1),
    ('POST', '/v1/completions', '/v1/completions', 500, 57, 0, 0.5),     # client left
    ('BREW', '/pot', None, 404, 5, 22, 0.0004),
]


def build_registry():
    reg = CollectorRegistry(auto_describe=True)
    total = Counter('http_requests_total',
                    'Total number of requests by method, status and handler.',
                    ('method', 'status', 'handler'), registry=reg)
    in_size = Summary('http_request_size_bytes',
                      'Content length of incoming requests by handler. '
                      'Only value of header is respected. Otherwise ignored. '
                      'No percentile calculated. ',
                      ('handler',), registry=reg)
    out_size = Summary('http_response_size_bytes',
                       'Content length of outgoing responses by handler. '
                       'Only value of header is respected. Otherwise ignored. '
                       'No percentile calculated. ',
                       ('handler',), registry=reg)
    highr = Histogram('http_request_duration_highr_seconds',
                      'Latency with many buckets but no API specific labels. '
                      'Made for more accurate percentile calculations. ',
                      buckets=HIGHR_BUCKETS + [float('inf')], registry=reg)
    lowr = Histogram('http_request_duration_seconds',
                     'Latency with only few buckets by handler. '
                     'Made to be only used if aggregation by handler is important. ',
                     ('method', 'handler'), buckets=LOWR_BUCKETS + [float('inf')],
                     registry=reg)
    excluded = [re.compile(p) for p in EXCLUDED_HANDLERS]
    for method, path, route, status, in_len, out_len, seconds in REQUESTS:
        handler = route if route is not None else path
        if any(p.search(handler) for p in excluded):
            continue
        if route is None:
            handler = 'none'
        group = str(status)[0] + 'xx'
        total.labels(method, group, handler).inc()
        in_size.labels(handler).observe(in_len)
        out_size.labels(handler).observe(out_len)
        highr.observe(seconds)
        lowr.labels(method, handler).observe(seconds)
    return reg


def main():
    default = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'golden')
    out_dir = sys.argv[1] if len(sys.argv) > 1 else default
    with open(os.path.join(out_dir, 'inputs', 'http_requests.tsv'), 'w') as f:
        f.write('# method\tpath\troute\tstatus\trequest_length\tresponse_length\tseconds\n')
        for method, path, route, status, in_len, out_len, seconds in REQUESTS:
            f.write('\t'.join([method, path, route or '-', str(status), str(in_len),
                               str(out_len), repr(float(seconds))]) + '\n')
    with mock.patch('time.time', return_value=123.456):
        reg = build_registry()
    with open(os.path.join(out_dir, 'http_families.txt'), 'wb') as f:
        f.write(prometheus_client.generate_latest(reg))
    with open(os.path.join(out_dir, 'http_families.om'), 'wb') as f:
        f.write(generate_openmetrics(reg))


if __name__ == '__main__':
    main()
