# SPDX-License-Identifier: Apache-2.0
"""What the end-to-end scripts in this directory share (each runs as a script, so this file's
directory is on its import path)."""
import socket
import sys


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fail(msg):
    print("FAIL:", msg, flush=True)
    sys.exit(1)
