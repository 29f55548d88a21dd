#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Imports the wire-generation captures into tests/fixtures/wire_generations/.

The captures are imported data, not generated files: they were produced once by running each
generation's own vLLM classes (see tests/fixtures/wire_generations/README.md), and this
repository cannot reproduce them (it has no vLLM). tools/regen.sh therefore does not run this
script; it is kept so that a refreshed capture set can be brought in the same way.

What it does, given the directory of a capture set (its manifest.json, README.md and the
per-case files):
  * copies, per case, `<case>.msgpack`, `<case>.golden.txt`, `<case>.golden.om.txt` and, for
    outputs cases, `<case>.requests.jsonl`, checking each .msgpack against the sha256 and the
    frame sizes the capture manifest records;
  * writes tests/fixtures/wire_generations/manifest.json: the capture manifest reduced to what
    tests need (see `reduce_case`), keeping the cases other tools own (`"source":
    "generated"`, written by tools/gen_wire_newest.py) as they are.

Run: /usr/bin/python3 tools/import_wire_generations.py CAPTURE_DIR
"""

import hashlib
import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "tests", "fixtures", "wire_generations")

# Why the newest upstream frontend prints fewer lines than an older generation's golden, per
# family (the family names a capture manifest lists under golden_lines_missing).
MISSING_REASONS = {
    "vllm:time_per_output_token_seconds": (
        "family removed from vLLM's frontend by PR #32661 (first in generation "
        "g20260204-08e09499); older frontends registered it"),
    "vllm:time_per_output_token_seconds_created": (
        "the _created sample of vllm:time_per_output_token_seconds, removed by PR #32661"),
    "vllm:iteration_tokens_total": (
        "since PR #43346 (first in generation g20260712-370b678a) the frontend observes "
        "locally computed prompt tokens + generation tokens per step; older frontends "
        "observed the whole prompt, so bucket counts and sums differ"),
}

GENERATION_NOTES = {
    # Span on upstream main and the PRs that shaped the generation (relative to the previous).
    "g20250927-6f5c0931": ("2025-09-19 to 2025-09-26",
                           "#22188 (kv_connector_stats, NIXL count payload, MultiConnector)"),
    "g20251105-65ac8d8d": ("2025-09-27 to 2025-11-04",
                           "#25787 #25388 #26171 #26060 #26245 #27366 #26811 #26218"),
    "g20260112-0565f1fd": ("2025-11-05 to 2026-01-11",
                           "#27306 #26801 #28245 #27793 #29825 #26813 #30738"),
    "g20260204-08e09499": ("2026-01-12 to 2026-02-03", "#28284 #32340 #33452 #32661"),
    "g20260413-f72b2097": ("2026-02-04 to 2026-04-12",
                           "#33290 #35451 #30950 #38709 #39102 #39364 #39442"),
    "g20260712-370b678a": ("2026-04-13 to 2026-07-11",
                           "#38435 #37460 #39693 #43392 #32374 #40010 #43346 #43854 #42967 "
                           "#42206 #44801"),
    "g20260812-f4e9bb01": ("2026-07-12 to 2026-08-11", "#42433 #46647 #48535 #49491 #50033"),
    "g20260814-6adad087": ("2026-08-12 to 2026-08-14", "#46747 #49577"),
}


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def reduce_newest_semantics(ns):
    """Per exposition format: 'identical', or the golden lines the newest frontend does not
    print (by family, with the reason) and the families it prints that the golden lacks."""
    if ns is None:
        return None
    out = {}
    for fmt in ("text", "openmetrics"):
        v = ns[fmt]
        if isinstance(v, str):
            out[fmt] = v
            continue
        missing = {}
        for family, lines in sorted(v["missing_lines"].items()):
            missing[family] = {
                "count": len(lines),
                "reason": MISSING_REASONS[family],
                "lines": lines,
            }
        out[fmt] = {
            "golden_lines_not_printed": missing,
            "families_not_in_golden": v["extra_families"],
        }
    return out


def reduce_case(c):
    case = {
        "case": c["case"],
        "source": "imported",
        "generation": c["generation"],
        "commit": c["engine_commit"],
        "kind": c["kind"],
        "description": c["description"],
        "configuration": {
            "served_model_name": c["served_model_name"],
            "data_parallel_size": c["data_parallel_size"],
            "max_model_len": c["max_model_len"],
            "kv_transfer_config": c["kv_transfer_config"],
            "speculative_config": c["speculative_config"],
        },
        "multi_connector_shape": c["multi_connector_shape"],
        "msgpack": c["msgpack"],
        "sha256": c["sha256"],
        "messages": c["messages"],
        "frames": [{"engine_index": f["engine_index"], "frame0_bytes": f["frame0_bytes"]}
                   for f in c["frames"]],
        "frontend_skipped_messages": c["frontend_skipped_messages"],
        "requests": c.get("requests"),
        "golden_text": c["golden_text"],
        "golden_openmetrics": c["golden_openmetrics"],
        "wire": c["wire"],
        "newest_semantics": reduce_newest_semantics(c.get("newest_semantics")),
    }
    return case


def check_capture(src, c):
    path = os.path.join(src, c["msgpack"])
    data = open(path, "rb").read()
    assert hashlib.sha256(data).hexdigest() == c["sha256"], c["case"]
    assert sum(f["frame0_bytes"] for f in c["frames"]) == len(data), c["case"]
    assert len(c["frames"]) == c["messages"], c["case"]
    assert not c["multi_frame_messages"], c["case"]


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: import_wire_generations.py CAPTURE_DIR\n")
        return 2
    src = argv[1]
    with open(os.path.join(src, "manifest.json")) as f:
        capture = json.load(f)
    os.makedirs(OUT_DIR, exist_ok=True)

    manifest_path = os.path.join(OUT_DIR, "manifest.json")
    kept, kept_generations = [], {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            old = json.load(f)
        kept = [c for c in old["cases"] if c.get("source") != "imported"]
        kept_generations = {name: g for name, g in old["generations"].items()
                            if name not in capture["generations"]}

    cases = []
    for c in capture["cases"]:
        check_capture(src, c)
        names = [c["msgpack"], c["golden_text"], c["golden_openmetrics"]]
        if c.get("requests"):
            names.append(c["requests"])
        for name in names:
            shutil.copyfile(os.path.join(src, name), os.path.join(OUT_DIR, name))
        cases.append(reduce_case(c))

    generations = {}
    for name, g in capture["generations"].items():
        span, prs = GENERATION_NOTES[name]
        generations[name] = {
            "commit": g["commit"],
            "span_on_main": span,
            "shaped_by": prs,
            "vllm_files": [{"path": f["path"], "use": f["use"]} for f in g["files"]],
        }
    generations.update(kept_generations)

    manifest = {
        "about": ("Captures of vLLM's EngineCoreOutputs stream, one set per wire generation; "
                  "see README.md in this directory."),
        "created_timestamp_pin": capture["created_timestamp"],
        "capture_tools": {
            "python": capture["interpreter"],
            "msgspec": capture["msgspec"],
            "numpy": capture["numpy"],
            "prometheus_client": capture["prometheus_client"],
        },
        "generations": generations,
        "cases": cases + kept,
    }
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=False)
        f.write("\n")
    print("imported %d cases into %s" % (len(cases), os.path.relpath(OUT_DIR, ROOT)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
