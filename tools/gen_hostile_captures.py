#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes captures whose strings and values no real engine should send, for the check that
nothing from the wire can poison an exposition or crash a subcommand
(tests/cli/hostile_captures.sh).

A peer we did not write (python3-msgpack) encodes every capture. Strings that are not valid
UTF-8 are Python bytes packed as msgpack str (use_bin_type=False: raw bytes in the str type,
what a broken or hostile encoder could send; vLLM's own decoder refuses them). The message
shapes are tools/gen_fixtures.py's (EngineCoreOutputs with SchedulerStats only).

Outputs, in tests/fixtures/hostile_wire/:
  <name>.msgpack  one capture (concatenated frame-0 messages, the `replay` input format);
  scenarios.tsv   name, --kv-transfer-config JSON, then the sample lines the exposition must
                  hold (separated by tabs);
  README.md       what each capture holds.

`--big DIR` writes only big_names.msgpack into DIR: 300 Mooncake store operations named by
100 kB strings (30 MB, too big to commit; the test generates it in a temporary directory).

Run: /usr/bin/python3 tools/gen_hostile_captures.py   (tools/regen.sh runs it)
"""

import math
import os
import sys

import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as gf  # noqa: E402  (the message classes and their encoding)

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                       "hostile_wire")

STORE = '{"kv_connector":"MooncakeStoreConnector"}'
MULTI = ('{"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":['
         '{"kv_connector":"NixlConnector"},{"kv_connector":"MooncakeStoreConnector"}]}}')
NONE = ""


def record(status="ok", num_keys=1):
    return {"duration_seconds": 0.01, "num_keys": num_keys, "num_bytes": 64, "status": status,
            "num_failed_keys": 0}


def pack(obj):
    # gen_fixtures' encoding of the structs; bytes stay msgpack str (raw), not bin.
    return msgpack.packb(obj, default=gf.Encoder()._default, use_bin_type=False)


def message(kv=None, timestamp=10.0, **stats):
    s = gf.SchedulerStats(num_running_reqs=stats.pop("num_running_reqs", 1),
                          kv_connector_stats=kv, **stats)
    return pack(gf.EngineCoreOutputs(scheduler_stats=s, timestamp=timestamp))


def store_ok():
    return {"load_get": [record()]}


def big_names(count, size):
    return message({("%03d" % i + "x" * size)[:size]: [record()] for i in range(count)})


SCENARIOS = []  # (name, description, kv_transfer_config, expected lines, capture bytes)


def scenario(name, description, config, expected, *messages):
    SCENARIOS.append((name, description, config, expected, b"".join(messages)))


def define():
    skipped = 'vmetrics_wire_values_skipped_total{reason="%s"} %s'
    scenario("store_operation_invalid_utf8",
             "Mooncake store operations b'op\\xfe' and b'\\xff\\xfe' (not UTF-8) beside load_get, "
             "in two messages",
             STORE, [skipped % ("invalid_utf8", "15.0")],
             message({b"op\xfe": [record()], "load_get": [record()], b"\xff\xfe": [record()]}),
             message({b"op\xfe": [record()]}))
    scenario("store_status_invalid_utf8",
             "Mooncake store record with status b'ok\\xc0\\xaf' (an overlong '/') and a surrogate "
             "b'\\xed\\xa0\\x80'",
             STORE, [skipped % ("invalid_utf8", "10.0")],
             message({"load_get": [record(b"ok\xc0\xaf"), record()],
                      "save_put": [record(b"\xed\xa0\x80")]}))
    scenario("multi_child_invalid_utf8",
             "MultiConnector child keys b'Nixl\\xfeConnector' and b'\\x80' beside a valid "
             "MooncakeStoreConnector child",
             MULTI,
             ['vmetrics_kv_connector_payloads_total{connector="unknown",outcome="invalid_utf8"} '
              '2.0'],
             message({b"Nixl\xfeConnector": {"transfer_duration": [0.1]}, b"\x80": {},
                      "MooncakeStoreConnector": store_ok()}))
    scenario("control_characters",
             "Mooncake store operation 'op\\n# TYPE forged counter\\nforged 1' and status "
             "'\\x1b[2J\\r', and an operation with a NUL (valid UTF-8: label values, escaped "
             "by the exposition where its grammar says so; the log escapes them)",
             STORE, [],
             message({"op\n# TYPE forged counter\nforged 1": [record("\x1b[2J\r")],
                      "nul\x00op": [record()]}))
    scenario("long_names",
             "200 Mooncake store operations named by 10 kB strings (2 MB on the wire)",
             STORE, [skipped % ("label_value_too_long", "1000.0")],
             big_names(200, 10 * 1024))
    scenario("negative_and_nan_increments",
             "prefix_cache_stats queries -5 and a Mooncake store record with num_keys -3 "
             "(negative counter increments), a store record with a NaN duration (a NaN "
             "histogram observation)",
             STORE, [skipped % ("negative_increment", "2.0"), skipped % ("nan_observation", "1.0")],
             message({"load_get": [record(num_keys=-3)]},
                     prefix_cache_stats=gf.PrefixCacheStats(requests=1, queries=-5, hits=0)),
             message({"load_get": [dict(record(), duration_seconds=math.nan)]}))
    scenario("huge_integers",
             "num_running_reqs = 2^64-1 and num_waiting_reqs = 2^63 (above int64), a store "
             "record with num_keys 2^64-1",
             STORE, [skipped % ("integer_overflow", "2.0")],
             message({"load_get": [record(num_keys=2**64 - 1)]}, num_running_reqs=2**64 - 1,
                     num_waiting_reqs=2**63))
    scenario("wrong_types",
             "num_running_reqs 'x', kv_cache_usage b'\\xfe' (a str that is not UTF-8 where a "
             "float belongs), a store operation whose records are a str, a record whose status "
             "is a list",
             STORE, [skipped % ("wrong_type", "4.0")],
             message({"load_get": "not a list", "save_put": [record(status=[1, 2])]},
                     num_running_reqs="x", kv_cache_usage=b"\xfe"))


def main(argv):
    if len(argv) == 3 and argv[1] == "--big":
        with open(os.path.join(argv[2], "big_names.msgpack"), "wb") as f:
            f.write(big_names(300, 100 * 1024))
        return 0
    define()
    os.makedirs(OUT_DIR, exist_ok=True)
    for old in os.listdir(OUT_DIR):
        os.remove(os.path.join(OUT_DIR, old))
    readme = ["# Hostile captures", "",
              "Written by tools/gen_hostile_captures.py (python3-msgpack %s); do not edit. "
              "tests/cli/hostile_captures.sh replays and decodes each one and checks the "
              "expositions with promtool and prometheus_client's OpenMetrics parser." %
              ".".join(map(str, msgpack.version)), ""]
    tsv = ["# name\tkv_transfer_config\texpected sample lines..."]
    for name, description, config, expected, data in SCENARIOS:
        with open(os.path.join(OUT_DIR, name + ".msgpack"), "wb") as f:
            f.write(data)
        readme.append("- `%s.msgpack`: %s." % (name, description))
        tsv.append("\t".join([name, config or "-"] + expected))
    with open(os.path.join(OUT_DIR, "README.md"), "w") as f:
        f.write("\n".join(readme) + "\n")
    with open(os.path.join(OUT_DIR, "scenarios.tsv"), "w") as f:
        f.write("\n".join(tsv) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
