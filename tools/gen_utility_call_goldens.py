#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""UTILITY call bodies as Python's msgpack writes them: tests/fixtures/utility_calls.jsonl.

vLLM's frontend sends a UTILITY call as the tuple (client_index, call_id, method_name, args)
encoded by its MsgpackEncoder (AsyncMPClient._call_utility_async in vllm/v1/engine/core_client.py
at vllm-project/vllm 6adad087; the same tuple at every generation's commit). For plain data
(None, bool, int, str, lists of str) msgspec writes what Python's msgpack writes: ints in their
shortest form, str as str, tuples and lists as arrays. Each line here is one call that a vLLM
frontend of some generation makes for the control routes (docs/wire_format.md, "Utility
calls"), with the body msgpack.packb gives it; requests_test encodes the same calls with
EncodeUtilityCall and compares the bytes, and frontend_test the collective_rpc calls whose
keyword arguments come from a JSON body (MsgpackFromJson).

Run with Debian's interpreter: /usr/bin/python3 tools/gen_utility_call_goldens.py
"""

import json
import os

import msgpack

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                   "utility_calls.jsonl")

# (client_index, call_id, method, args): call ids as uuid1().int >> 64 gives them (any u64,
# above 2**63 as often as not), and small ones.
CALLS = [
    (0, 0xFEDCBA9876543210, "sleep", (1, "abort")),
    (0, 7, "sleep", (2, "wait")),
    (0, 1 << 63, "sleep", (1,)),
    (0, 0x0123456789ABCDEF, "wake_up", (None,)),
    (0, 300, "wake_up", (["weights", "kv_cache"],)),
    (0, 65536, "is_sleeping", ()),
    (0, 2**32, "reset_prefix_cache", (False, False)),
    (0, 12, "reset_prefix_cache", (True, True)),
    (0, 13, "reset_prefix_cache", ()),
    (0, 0xFFFFFFFFFFFFFFFF, "pause_scheduler", ("keep", False)),
    (0, 127, "resume_scheduler", ()),
    (0, 128, "is_scheduler_paused", ()),
    (3, 255, "sleep", (-1, "abort")),
    (65535, 256, "sleep", (2**40, "k" * 40)),
    (0, 5, "set_weight_version", ("v2",)),
    (0, 6, "get_weight_version", ()),
    # collective_rpc(method, timeout, args, kwargs): a request body's JSON object as kwargs, as
    # Python's json module reads it (keys here in sorted order, as the line writes them).
    (0, 20, "collective_rpc", ("start_weight_update", None, (), None)),
    (0, 21, "collective_rpc",
     ("init_weight_transfer_engine", None, (),
      {"init_info": {"master_address": "10.0.0.1", "master_port": 29500, "rank_offset": 1,
                     "scale": 0.5, "world_size": 2.0}})),
    (0, 22, "collective_rpc",
     ("update_weights", None, (),
      {"update_info": {"dtype_names": ["bfloat16"], "names": ["lm_head.weight"],
                       "packed": False, "shapes": [[32000, 4096]]}})),
]


def main():
    lines = []
    for client_index, call_id, method, args in CALLS:
        body = msgpack.packb((client_index, call_id, method, args), use_bin_type=True)
        lines.append(json.dumps({"client_index": client_index, "call_id": str(call_id),
                                 "method": method, "args": list(args), "hex": body.hex()},
                                sort_keys=True))
    with open(OUT, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
