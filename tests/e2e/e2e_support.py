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


def post_json(url, body, timeout=30):
    """POSTs `body` as JSON: (status, response text), for error statuses too."""
    import json
    import urllib.error
    import urllib.request
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def get_text(url):
    """GETs `url`: (status, text); (0, "") when nothing answers."""
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def stop(*processes):
    """SIGTERM to each process still running, then waits for all (killing any that hang)."""
    import signal
    import subprocess
    for p in processes:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in processes:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()


def until(what, check, seconds=60):
    """Polls `check` until it is true (a readiness condition of a process under test), or fails
    naming `what` after `seconds`."""
    import time
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    fail(f"not within {seconds} s: {what}")
