#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Seeds the corpora of the KV-connector and descriptor fuzzers from the committed fixtures.

The fixtures (tools/gen_fixtures.py, tools/gen_descriptor_fixtures.py) were encoded by a peer
we did not write (python3-msgpack); the seeds are byte ranges cut out of them, never
re-encoded, so the fuzzers start from exactly what the decoder is tested on.

Outputs:
  fuzz/corpus/kv_connector/seed-<fixture>[-<n>]  every distinct non-nil kv_connector_stats
      value of the tests/fixtures/*.msgpack messages and the descriptor scenario messages
      (input of fuzz/kv_connector_fuzz.cc);
  fuzz/corpus/descriptor/seed-<fixture>  the descriptor fixtures, valid and invalid
      (tests/fixtures/descriptor_v1/descriptor_*, invalid_*), and every `_metrics_descriptor`
      value found in those kv_connector_stats values (input of fuzz/descriptor_fuzz.cc);
  fuzz/corpus/record/seed-ec_cpu-<n>  each message of the ec_cpu golden scenario
      (tests/golden/inputs/ec_cpu.msgpack, tools/gen_goldens.py): ECCPUConnector payloads in
      ec_connector_stats, well-formed and hostile (input of fuzz/record_fuzz.cc, which records
      with that EC connector configured); only these seeds are rewritten in that corpus;
  fuzz/corpus/wire_recognition/seed-<case>[-<n>]  every capture of
      tests/fixtures/wire_generations/ as a whole stream, and each of its messages alone, in
      the fuzzer's input layout (each message prefixed by its length, 2 bytes little endian;
      input of fuzz/wire_recognition_fuzz.cc).
Only seed-* files are written or removed: minimized crash inputs kept in the corpora stay.

Run: /usr/bin/python3 tools/gen_fuzz_seeds.py   (Debian's python3-msgpack; tools/regen.sh runs it)
"""
import glob
import os

import msgpack

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
KV_CORPUS = os.path.join(ROOT, "fuzz", "corpus", "kv_connector")
DESCRIPTOR_CORPUS = os.path.join(ROOT, "fuzz", "corpus", "descriptor")
WIRE_CORPUS = os.path.join(ROOT, "fuzz", "corpus", "wire_recognition")
WIRE_FIXTURES = os.path.join(FIXTURES, "wire_generations")
RECORD_CORPUS = os.path.join(ROOT, "fuzz", "corpus", "record")
EC_SCENARIO = os.path.join(ROOT, "tests", "golden", "inputs", "ec_cpu.msgpack")


def kv_connector_stats_values(data):
    """The raw bytes of each message's SchedulerStats.kv_connector_stats, in stream order."""
    unpacker = msgpack.Unpacker(raw=True, strict_map_key=False)
    unpacker.feed(data)
    values = []
    while unpacker.tell() < len(data):
        positions = unpacker.read_array_header()  # EngineCoreOutputs
        for position in range(positions):
            if position != 2:
                unpacker.skip()
                continue
            start = unpacker.tell()
            unpacker.skip()
            if data[start:unpacker.tell()] == b"\xc0":  # no SchedulerStats
                continue
            # Re-read the SchedulerStats map from its start, key by key.
            stats = msgpack.Unpacker(raw=True, strict_map_key=False)
            stats.feed(data[start:unpacker.tell()])
            for _ in range(stats.read_map_header()):
                key = stats.unpack()
                value_start = stats.tell()
                stats.skip()
                value = data[start + value_start:start + stats.tell()]
                if key == b"kv_connector_stats" and value != b"\xc0":
                    values.append(value)
    return values


def descriptors_in(value):
    """Every `_metrics_descriptor` value nested in a decoded kv_connector_stats value."""
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == b"_metrics_descriptor":
                found.append(msgpack.packb(v, use_bin_type=True))
            else:
                found.extend(descriptors_in(v))
    return found


def reset(corpus):
    os.makedirs(corpus, exist_ok=True)
    for old in os.listdir(corpus):
        if old.startswith("seed-"):
            os.remove(os.path.join(corpus, old))


def write(corpus, name, data, written):
    if data in written:
        return
    written.add(data)
    with open(os.path.join(corpus, "seed-" + name), "wb") as f:
        f.write(data)


def wire_seeds():
    """The wire-generation captures, split by the manifest's frame sizes."""
    import json
    with open(os.path.join(WIRE_FIXTURES, "manifest.json")) as f:
        manifest = json.load(f)
    written = set()
    for case in manifest["cases"]:
        with open(os.path.join(WIRE_FIXTURES, case["msgpack"]), "rb") as f:
            data = f.read()
        messages, offset = [], 0
        for frame in case["frames"]:
            size = frame["frame0_bytes"]
            messages.append(data[offset:offset + size])
            offset += size
        framed = [len(m).to_bytes(2, "little") + m for m in messages if len(m) < 65536]
        write(WIRE_CORPUS, case["case"], b"".join(framed[:64]), written)
        for i, m in enumerate(framed):
            write(WIRE_CORPUS, "%s-%d" % (case["case"], i + 1), m, written)
    return len(written)


def ec_record_seeds():
    """The ec_cpu scenario's messages, one seed each (an 8-position envelope starts 0x98, even:
    the fuzzer takes it as one frame). The rest of the record corpus is not ours."""
    for old in os.listdir(RECORD_CORPUS):
        if old.startswith("seed-ec_cpu-"):
            os.remove(os.path.join(RECORD_CORPUS, old))
    with open(EC_SCENARIO, "rb") as f:
        unpacker = msgpack.Unpacker(f, raw=True, strict_map_key=False)
        offsets = []
        while True:
            start = unpacker.tell()
            try:
                unpacker.unpack()
            except msgpack.OutOfData:
                break
            offsets.append((start, unpacker.tell()))
    with open(EC_SCENARIO, "rb") as f:
        data = f.read()
    written = set()
    for i, (start, end) in enumerate(offsets):
        assert data[start] == 0x98
        write(RECORD_CORPUS, "ec_cpu-%d" % (i + 1), data[start:end], written)
    return len(written)


def main():
    reset(KV_CORPUS)
    reset(DESCRIPTOR_CORPUS)
    reset(WIRE_CORPUS)
    wire = wire_seeds()
    record = ec_record_seeds()
    kv_written, descriptor_written = set(), set()
    sources = sorted(glob.glob(os.path.join(FIXTURES, "*.msgpack")))
    sources += sorted(glob.glob(os.path.join(FIXTURES, "descriptor_v1", "scenario_*.msgpack")))
    for path in sources:
        name = os.path.basename(path)[: -len(".msgpack")]
        with open(path, "rb") as f:
            data = f.read()
        try:
            values = kv_connector_stats_values(data)
        except (msgpack.UnpackException, ValueError):
            continue  # hostile fixtures: the decode fuzzer's seeds
        for i, value in enumerate(values):
            write(KV_CORPUS, name if i == 0 else "%s-%d" % (name, i), value, kv_written)
            try:
                decoded = msgpack.unpackb(value, raw=True, strict_map_key=False, use_list=False)
            except (msgpack.UnpackException, ValueError):
                continue
            for j, descriptor in enumerate(descriptors_in(decoded)):
                write(DESCRIPTOR_CORPUS, "%s-%d-%d" % (name, i, j), descriptor, descriptor_written)
    for pattern in ("descriptor_*.msgpack", "invalid_*.msgpack"):
        for path in sorted(glob.glob(os.path.join(FIXTURES, "descriptor_v1", pattern))):
            with open(path, "rb") as f:
                data = f.read()
            write(DESCRIPTOR_CORPUS, os.path.basename(path)[: -len(".msgpack")], data,
                  descriptor_written)
    print("gen_fuzz_seeds: %d kv_connector seeds, %d descriptor seeds, %d wire_recognition "
          "seeds, %d record seeds" % (len(kv_written), len(descriptor_written), wire, record))


if __name__ == "__main__":
    main()
