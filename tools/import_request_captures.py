#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Imports the frontend-to-engine request captures into tests/fixtures/requests/.

The captures are imported data, not generated files: for each wire generation they hold the ADD
and ABORT bodies that generation's own vLLM frontend code sent its engine for the same 18 user
requests (see tests/fixtures/requests/README.md), produced once by running vLLM's own classes at
the generation's commit. This repository has no vLLM and cannot reproduce them, so
tools/regen.sh does not run this script; it is kept so that a refreshed set can be brought in
the same way.

Given the directory of a capture set, it copies every `<generation>_requests.jsonl` and
`<generation>_handshake.json`, checking each body's sha256 against the one its line records.

Run: /usr/bin/python3 tools/import_request_captures.py CAPTURE_DIR
"""

import hashlib
import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "tests", "fixtures", "requests")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    names = sorted(n for n in os.listdir(src)
                   if n.endswith("_requests.jsonl") or n.endswith("_handshake.json"))
    if not names:
        sys.exit(f"{src}: no <generation>_requests.jsonl files")
    os.makedirs(OUT_DIR, exist_ok=True)
    for name in names:
        path = os.path.join(src, name)
        if name.endswith(".jsonl"):
            with open(path) as f:
                for line in f:
                    message = json.loads(line)
                    body = bytes.fromhex(message["body_hex"])
                    if hashlib.sha256(body).hexdigest() != message["sha256"]:
                        sys.exit(f"{name}: message {message['seq']}: sha256 does not match")
        shutil.copyfile(path, os.path.join(OUT_DIR, name))
        print(f"imported {name}")


if __name__ == "__main__":
    main()
