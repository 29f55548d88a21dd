#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the numpy arrays of the token APIs' answers as vLLM's frontend makes them.

Regenerate (from the repository root, with Debian's python3-numpy and python3-msgpack):

    /usr/bin/python3 tools/gen_numpy_goldens.py     (or tools/regen.sh for every generator)

routed_experts: the engine sends each output's expert routing as an np.ndarray, which vLLM's
MsgpackEncoder writes as [dtype.str, shape, data] with the data inline as ext type 3
(CUSTOM_TYPE_RAW_VIEW) below VLLM_MSGPACK_ZERO_COPY_THRESHOLD (vllm/v1/serial_utils.py at
vllm-project/vllm 6adad087; larger arrays go in an aux frame, whose bytes are the same). The
frontend concatenates a request's chunks on axis 0 when it finishes
(vllm/v1/engine/output_processor.py) and answers base64 of np.save's .npy file
(numpy2base64, vllm/utils/serial_utils.py). This script does those steps with numpy and
msgpack itself.

sampling_mask: each output's SamplingMaskLists (token_ids, offsets, cu_num_generated_tokens
None) is merged with SamplingMaskLists.merge and listed with to_nested_list
(vllm/v1/outputs.py at 6adad087), restated here.

Writes tests/golden/numpy_arrays.json (or into the directory given as the one argument): a
list of cases, each {"name", "kind", "frames": [hex of one EngineCoreOutputs message per
chunk, as a g20260814-6adad087 engine sends it: one output for request REQUEST_ID with one
new token and the chunk, the last one finished ("length")], "answer": what vLLM's server puts
in the answer}. tests/frontend/response_features_test.cc decodes the frames with vmetrics'
decoder, feeds them through the request service and compares the answer. Each frame is also
a seed of the decode fuzzer: fuzz/corpus/decode/numpy-<case>-<n> (only numpy-* files there are
this script's; tools/gen_fixtures.py owns the seed-* ones).
"""

import base64
import io
import json
import os
import sys

import msgpack

try:
    import numpy as np
except ImportError:  # a machine set up before tools/setup.sh listed python3-numpy
    np = None

CUSTOM_TYPE_RAW_VIEW = 3


def encode_ndarray(a):
    """MsgpackEncoder._encode_ndarray for a C-contiguous array, data inline."""
    assert a.flags.c_contiguous
    return [a.dtype.str, list(a.shape), msgpack.ExtType(CUSTOM_TYPE_RAW_VIEW, a.tobytes())]


def numpy2base64(a):
    with io.BytesIO() as buffer:
        np.save(buffer, a, allow_pickle=False)
        return base64.b64encode(buffer.getbuffer()).decode("ascii")


def merge(chunks):
    """SamplingMaskLists.merge, then to_nested_list."""
    token_ids = np.concatenate([c[0] for c in chunks])
    counts = np.concatenate([np.diff(c[1]) for c in chunks])
    offsets = np.empty(len(counts) + 1, dtype=np.int64)
    offsets[0] = 0
    np.cumsum(counts, dtype=np.int64, out=offsets[1:])
    return [token_ids[int(offsets[i]):int(offsets[i + 1])].tolist()
            for i in range(len(offsets) - 1)]


REQUEST_ID = "generate-tokens-r-e"
FINISH_LENGTH = 1
# EngineCoreOutput's positions at 6adad087 (vllm/v1/engine/__init__.py).
OUTPUT_FIELDS = ("request_id", "new_token_ids", "new_logprobs", "new_prompt_logprobs_tensors",
                 "pooling_output", "finish_reason", "stop_reason", "events",
                 "kv_transfer_params", "ec_transfer_params", "trace_headers", "prefill_stats",
                 "routed_experts", "num_nans_in_logits", "mm_cache_miss_hashes",
                 "new_sampling_mask")


def frames(field, values):
    """One EngineCoreOutputs message per value, `field` of its one output set to it."""
    out = []
    for i, value in enumerate(values):
        output = dict.fromkeys(OUTPUT_FIELDS)
        output.update(request_id=REQUEST_ID, new_token_ids=[100 + i], num_nans_in_logits=0)
        output[field] = value
        if i == len(values) - 1:
            output["finish_reason"] = FINISH_LENGTH
        message = [0, [[output[f] for f in OUTPUT_FIELDS]], None, 1000.0 + i, None, None,
                   None, None]
        out.append(msgpack.packb(message).hex())
    return out


def routed(name, chunks):
    return {"name": name, "kind": "routed_experts",
            "frames": frames("routed_experts", [encode_ndarray(c) for c in chunks]),
            "answer": numpy2base64(np.concatenate(chunks, axis=0))}


def mask(name, chunks):
    return {"name": name, "kind": "sampling_mask",
            "frames": frames("new_sampling_mask",
                             [[encode_ndarray(t), encode_ndarray(o), None] for t, o in chunks]),
            "answer": merge(chunks)}


def main():
    if np is None:
        print("gen_numpy_goldens: python3-numpy is not installed (tools/setup.sh installs it); "
              "tests/golden/numpy_arrays.json and its fuzz seeds kept as they are")
        return
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden")
    rng = np.random.default_rng(20260814)
    # [tokens, layers, experts per token]: uint8 for up to 256 experts, uint16, int32 beyond.
    u8 = rng.integers(0, 64, size=(5, 3, 2), dtype=np.uint8)
    u16 = rng.integers(0, 1000, size=(4, 2, 8), dtype=np.uint16)
    i32 = rng.integers(0, 70000, size=(3, 61, 8), dtype=np.int32)
    cases = [
        routed("uint8_one_chunk", [u8]),
        routed("uint8_prefill_then_decode", [u8[:3], u8[3:4], u8[4:]]),
        routed("uint16_two_chunks", [u16[:1], u16[1:]]),
        routed("int32_61_layers", [i32]),
        routed("empty_first_chunk", [u8[:0], u8[:2]]),
        routed("ten_thousand_tokens", [np.zeros((10000, 1, 1), dtype=np.uint8)]),
        mask("two_outputs", [
            (np.array([5, 9, 11, 5], dtype=np.int64), np.array([0, 3, 4], dtype=np.int64)),
            (np.array([7], dtype=np.int64), np.array([0, 1], dtype=np.int64)),
        ]),
        mask("int32_with_empty_position", [
            (np.array([1, 2], dtype=np.int32), np.array([0, 0, 2], dtype=np.int32)),
        ]),
        # Offsets that do not start at 0: merge() keeps the counts, not the positions.
        mask("offsets_not_from_zero", [
            (np.array([4, 5, 6], dtype=np.int64), np.array([1, 2, 3], dtype=np.int64)),
            (np.array([8], dtype=np.int64), np.array([0, 1], dtype=np.int64)),
        ]),
    ]
    corpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus",
                          "decode")
    for old in os.listdir(corpus):
        if old.startswith("numpy-"):
            os.remove(os.path.join(corpus, old))
    for case in cases:
        for i, frame in enumerate(case["frames"]):
            if len(frame) // 2 <= 65536:  # libFuzzer's max_len, as gen_fixtures.py keeps it
                with open(os.path.join(corpus, "numpy-%s-%d" % (case["name"], i)), "wb") as f:
                    f.write(bytes.fromhex(frame))
    path = os.path.join(out_dir, "numpy_arrays.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"numpy": np.__version__, "msgpack": ".".join(map(str, msgpack.version)),
                   "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
