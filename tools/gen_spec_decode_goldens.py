#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Per-request speculative-decoding metrics: tests/fixtures/spec_decode_metrics.jsonl.

An engine run with --per-request-spec-decode-metrics sends, on a request's final output,
EngineCoreOutput.spec_decode_metrics: RequestSpecDecodeMetrics as a map {num_spec_tokens,
histogram, num_draft_tokens, per_step_accepted, per_step_drafted} (vllm-project/vllm PR
#48915; the histogram has num_spec_tokens + 1 entries, index j counting the verification
steps that accepted exactly j drafts; the per-step lists are kept by `detailed` engines only).
The response object `metrics.speculative_decoding` is, as that PR and the documentation page
it adds to vllm-project/vllm ("Per-Request Acceptance Metrics") define it:
  mean_acceptance_length    1 + num_accepted_draft_tokens / num_spec_steps (1.0 without steps)
  draft_acceptance_rate     num_accepted_draft_tokens / num_draft_tokens (0.0 without drafts)
  acceptance_histogram      the histogram
  num_spec_steps            sum of the histogram
  num_accepted_draft_tokens sum of j * histogram[j]
  num_draft_tokens, num_spec_tokens
  per_step_accepted, per_step_drafted   `detailed`, when the engine kept them (non-empty)

Each line: a name, the map's bytes as Python's msgpack writes them (hex), whether an engine
could have sent it ("valid"), and for valid ones the response object at `summary` and at
`detailed`, serialised by Python's json (compact separators, as the token APIs write JSON):
protocol_test decodes the bytes (DecodeSpecDecodeMetrics accepts exactly the valid ones),
frontend_test compares SpeculativeDecodingJson with the two strings.

Run with Debian's interpreter: /usr/bin/python3 tools/gen_spec_decode_goldens.py
"""

import json
import os

import msgpack

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                   "spec_decode_metrics.jsonl")


def metrics(k, histogram, drafted, accepted=(), drafted_per_step=()):
    return {"num_spec_tokens": k, "histogram": list(histogram), "num_draft_tokens": drafted,
            "per_step_accepted": list(accepted), "per_step_drafted": list(drafted_per_step)}


def response(m, detailed):
    steps = sum(m["histogram"])
    accepted = sum(j * count for j, count in enumerate(m["histogram"]))
    drafted = m["num_draft_tokens"]
    out = {
        "mean_acceptance_length": 1.0 + accepted / steps if steps else 1.0,
        "draft_acceptance_rate": accepted / drafted if drafted else 0.0,
        "acceptance_histogram": m["histogram"],
        "num_spec_steps": steps,
        "num_accepted_draft_tokens": accepted,
        "num_draft_tokens": drafted,
        "num_spec_tokens": m["num_spec_tokens"],
    }
    if detailed and m.get("per_step_accepted"):
        out["per_step_accepted"] = m["per_step_accepted"]
        out["per_step_drafted"] = m["per_step_drafted"]
    return out


# The PR's own example: 43 steps, 10 accepted of 129 drafted, k = 3.
PR_EXAMPLE = metrics(3, [39, 1, 0, 3], 129)

VALID = [
    ("pr_example_summary", PR_EXAMPLE),
    ("detailed_lists", metrics(3, [1, 1, 1, 2], 15, [0, 3, 2, 3, 1], [3, 3, 3, 3, 3])),
    ("variable_draft_lengths", metrics(4, [1, 0, 1, 1, 0], 10, [3, 2, 0], [4, 2, 4])),
    ("nothing_drafted", metrics(3, [0, 0, 0, 0], 0)),
    ("all_rejected", metrics(2, [4, 0, 0], 8, [0, 0, 0, 0], [2, 2, 2, 2])),
    ("key_order_of_a_dict", dict(reversed(list(metrics(1, [2, 5], 7).items())))),
    ("newer_keys_skipped", dict(metrics(2, [1, 2, 3], 12), diffusion_trace_version=1,
                                future={"a": [1, 2]})),
    ("lists_absent", {"num_spec_tokens": 1, "histogram": [3, 4], "num_draft_tokens": 7}),
    ("one_third", metrics(1, [2, 1], 3)),
    ("large_counts", metrics(7, [0, 0, 0, 0, 0, 0, 0, 2**40], 7 * 2**40)),
]

INVALID = [
    ("no_num_spec_tokens", {"histogram": [1, 2], "num_draft_tokens": 2}),
    ("histogram_too_short", metrics(3, [1, 2, 3], 9)),
    ("histogram_too_long", metrics(1, [1, 2, 3], 9)),
    ("negative_count", metrics(1, [1, -2], 3)),
    ("negative_drafts", metrics(1, [1, 2], -3)),
    ("float_count", metrics(1, [1, 2.5], 3)),
    ("string_spec_tokens", dict(metrics(1, [1, 2], 3), num_spec_tokens="1")),
    ("per_step_lengths_differ", metrics(1, [1, 1], 2, [0, 1], [1])),
    ("spec_tokens_above_bound", metrics(1025, [0] * 1026, 0)),
    ("accepted_sum_overflows", metrics(2, [0, 0, 2**62], 0)),
    ("steps_sum_overflows", metrics(1, [2**62, 2**62], 0)),
    ("not_a_map", [3, [1, 2, 3, 4], 6]),
    ("nil_histogram", dict(metrics(1, [1, 1], 2), histogram=None)),
]


def main():
    lines = []
    for name, m in VALID:
        lines.append({"name": name, "msgpack": msgpack.packb(m).hex(), "valid": True,
                      "summary": json.dumps(response(m, False), separators=(",", ":")),
                      "detailed": json.dumps(response(m, True), separators=(",", ":"))})
    for name, m in INVALID:
        lines.append({"name": name, "msgpack": msgpack.packb(m).hex(), "valid": False})
    with open(OUT, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
