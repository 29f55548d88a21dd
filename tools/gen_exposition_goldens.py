#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Renders a small registry with prometheus_client into the exposition goldens.

Regenerate (from the repository root, with Debian's python3-prometheus-client 0.16):

    /usr/bin/python3 tools/gen_exposition_goldens.py     (or tools/regen.sh for every generator)

Writes, into tests/golden/ (or the directory given as its one argument):
    exposition_basic.txt         text 0.0.4 (prometheus_client.generate_latest)
    exposition_basic.om          OpenMetrics (prometheus_client.openmetrics.exposition)
    exposition_no_created.txt    the same with _created series disabled
    exposition_no_created.om     (PROMETHEUS_DISABLE_CREATED_SERIES=True)

tests/exposition/text_writer_test.cc builds the same registry with vmetrics::Registry and a
FixedClock(123.456) and compares byte for byte. Keep build_registry() and the C++
BuildBasicRegistry() in step: same families in the same order, same children in the same
order, same operations.

time.time is pinned to 123.456 (as client_python's own tests do) so `_created` is fixed.
"""

import os
import sys
from unittest import mock

import prometheus_client
import prometheus_client.metrics
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

NIXL_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0]
TOKEN_BUCKETS = [1.0, 2.0, 5.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0, 2097152.0,
                 5000000.0, 123456789012.0]
ML = ['model_name', 'engine']  # declaration order; rendering sorts them


def build_registry():
    reg = CollectorRegistry(auto_describe=True)

    # 1. Labelled gauge, two engines.
    g = Gauge('vllm:num_requests_running', 'Number of requests in model execution batches.',
              ML, registry=reg)
    g.labels('m', '0').set(3)
    g.labels('m', '1').set(0)

    # 2. Counter registered without _total; engine 1 created before engine 0 (creation order
    #    is render order, not label order). Large value: three-digit exponent quirk.
    c = Counter('vllm:prompt_tokens', 'Number of prefill tokens processed.', ML, registry=reg)
    c.labels('m', '1').inc(0.001)
    c.labels('m', '0').inc(123456789012)

    # 3. Counter registered with _total (stripped, then re-added on the sample).
    c = Counter('vllm:estimated_flops_per_gpu_total', 'Estimated FLOPs per GPU.', ML,
                registry=reg)
    c.labels('m', '0').inc(2097152)
    c.labels('m', '0').inc(1)

    # 4. Unlabelled counter: no "{}".
    c = Counter('vllm:unlabelled_events', 'Events without labels.', registry=reg)
    c.inc(5)

    # 5. Gauge with awkward values, escaped label values and an escaped HELP.
    g = Gauge('vllm:test_values', 'Help with back\\slash, "quotes" and\nnewline.', ['v'],
              registry=reg)
    for label, value in [
        ('tiny', 0.001),
        ('sum01_02', 0.1 + 0.2),
        ('million', 1234567),
        ('neg_million', -1234567),
        ('bigint', 123456789012345678),
        ('e16', 1e16),
        ('e21', 1e21),
        ('e-5', 1e-05),
        ('e-7', 1.5e-07),
        ('neg', -2.5),
        ('zero', 0.0),
        ('neg_zero', -0.0),
        ('nan', float('nan')),
        ('inf', float('inf')),
        ('minus_inf', float('-inf')),
        ('esc"\\\n', 1),
        ('caf\u00e9 \u6a21\u578b', 2),
        ('', 7),
    ]:
        g.labels(label).set(value)

    # 6. NIXL histogram: observations on bucket bounds, above the top bucket, and NaN.
    h = Histogram('vllm:nixl_xfer_time_seconds',
                  'Histogram of transfer duration for NIXL KV Cache transfers.', ML,
                  buckets=NIXL_BUCKETS, registry=reg)
    for v in [0.005, 0.02, 0.1, 0.15, 0.25, 7.0]:
        h.labels('m', '0').observe(v)
    for v in [0.5, float('nan'), 0.75]:
        h.labels('m', '1').observe(v)

    # 7. Token histogram with large bounds (1e+06, 2.097152e+06, 1.23456789012e+011).
    h = Histogram('vllm:request_prompt_tokens', 'Number of prefill tokens processed.', ML,
                  buckets=TOKEN_BUCKETS, registry=reg)
    for v in [1, 2097152, 3000000, 1e12]:
        h.labels('m', '0').observe(v)

    # 8. Histogram whose labels sort on both sides of `le`.
    h = Histogram('vllm:test_le_order', 'Labels before and after le.', ['zone', 'kind'],
                  buckets=[0.1, 1.0], registry=reg)
    h.labels('z"1', 'k\\1').observe(0.5)

    # 9. Unlabelled histogram.
    h = Histogram('vllm:unlabelled_seconds', 'Histogram without labels.', buckets=[0.5, 1.0],
                  registry=reg)
    h.observe(0.7)

    # 10. Negative first bound: prometheus_client writes no _sum.
    h = Histogram('vllm:test_negative_buckets', 'Negative first bucket.', ['engine'],
                  buckets=[-1.0, 0.0, 1.0], registry=reg)
    h.labels('0').observe(-2)
    h.labels('0').observe(0.5)

    # 11-13. Labelled families that have no children yet: HELP and TYPE only.
    Counter('vllm:lora_failures', 'Failures with no children.', ['model_name'], registry=reg)
    Histogram('vllm:empty_histogram', 'Histogram with no children.', ML, buckets=[1.0],
              registry=reg)
    Gauge('vllm:lora_requests_info', 'Running stats on lora requests.',
          ['max_lora', 'waiting_lora_adapters', 'running_lora_adapters'], registry=reg)
    return reg


def render(out_dir, stem):
    with mock.patch('time.time', return_value=123.456):
        reg = build_registry()
    with open(os.path.join(out_dir, stem + '.txt'), 'wb') as f:
        f.write(prometheus_client.generate_latest(reg))
    with open(os.path.join(out_dir, stem + '.om'), 'wb') as f:
        f.write(generate_openmetrics(reg))


def main():
    default = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'golden')
    out_dir = sys.argv[1] if len(sys.argv) > 1 else default
    render(out_dir, 'exposition_basic')
    # What PROMETHEUS_DISABLE_CREATED_SERIES=True does, read once at import by metrics.py.
    prometheus_client.metrics._use_created = False
    render(out_dir, 'exposition_no_created')


if __name__ == '__main__':
    main()
