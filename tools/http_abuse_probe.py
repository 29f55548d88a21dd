#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile-client probe for `vmetrics serve` (loopback only), for docs/reliability.md §1.2.

Each scenario abuses the server from 127.0.0.1 and times scrapes of /metrics from 127.0.0.2
(another client address) while it lasts:

  slow     N connections that send a request line a byte every --interval seconds (the idle
           timeout never fires);
  halfopen N connections that send part of a request and half-close (as wrk leaves them when it
           stops), then scrapes; also counts the server's CLOSE-WAIT sockets (`ss`);
  badreqs  N requests libmicrohttpd refuses itself (HTTP/9.9); the log lines are counted by the
           caller from the server's stderr.

Prints one JSON object per scenario. Uses only the Python standard library and `ss`.

Example:
  vmetrics serve ... --port 18412 2> serve.log &
  tools/http_abuse_probe.py --port 18412 slow --connections 1100 --duration 25
"""

import argparse
import json
import socket
import subprocess
import time


def scrape(port, timeout):
    """Seconds one GET /metrics from 127.0.0.2 took, or None when it failed or timed out."""
    begin = time.monotonic()
    try:
        s = socket.socket()
        s.settimeout(timeout)
        s.bind(("127.0.0.2", 0))
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        if not data.startswith(b"HTTP/1.1 200"):
            return None
    except OSError:
        return None
    return time.monotonic() - begin


def close_wait(port):
    out = subprocess.run(["ss", "-Htan", "state", "close-wait", "( sport = :%d )" % port],
                         capture_output=True, text=True, check=False).stdout
    return len([line for line in out.splitlines() if line.strip()])


def summary(times):
    ok = sorted(t for t in times if t is not None)
    return {
        "scrapes": len(times),
        "failed": len(times) - len(ok),
        "max_ms": round(1000 * ok[-1], 1) if ok else None,
        "median_ms": round(1000 * ok[len(ok) // 2], 1) if ok else None,
    }


def slow(args):
    line = b"GET /metrics HTTP/1.1\r\nHost: slow\r\nX-Slow: " + b"a" * 64
    socks = []
    for _ in range(args.connections):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", args.port))
        socks.append(s)
    sent = 0
    times = []
    end = time.monotonic() + args.duration
    next_byte = time.monotonic()
    while time.monotonic() < end:
        if time.monotonic() >= next_byte and sent < len(line):
            for s in socks:
                try:
                    s.send(line[sent:sent + 1])
                except OSError:
                    pass
            sent += 1
            next_byte += args.interval
        times.append(scrape(args.port, args.scrape_timeout))
    alive = 0
    for s in socks:
        try:
            s.recv(1)  # b"" (closed by the server) or a reply: not held open any more
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
        s.close()
    return dict(scenario="slow", connections=args.connections, still_open=alive, **summary(times))


def halfopen(args):
    socks = []
    for _ in range(args.connections):
        s = socket.socket()
        s.settimeout(5)
        try:
            s.connect(("127.0.0.1", args.port))
            s.sendall(b"GET /metrics HTTP/1.1\r\n")
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        socks.append(s)
    begin = time.monotonic()
    times = []
    waits = {}
    while time.monotonic() - begin < args.duration:
        times.append(scrape(args.port, args.scrape_timeout))
        for mark in (1, 5, 10, 30):
            if mark not in waits and time.monotonic() - begin >= mark:
                waits[mark] = close_wait(args.port)
    for s in socks:
        s.close()
    return dict(scenario="halfopen", connections=args.connections,
                close_wait_after_s=waits, **summary(times))


def badreqs(args):
    for _ in range(args.connections):
        try:
            s = socket.create_connection(("127.0.0.1", args.port), timeout=5)
            s.sendall(b"GET / HTTP/9.9\r\nHost: x\r\n\r\n")
            s.recv(4096)
            s.close()
        except OSError:
            pass
    return dict(scenario="badreqs", requests=args.connections)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("scenario", choices=["slow", "halfopen", "badreqs"])
    parser.add_argument("--connections", type=int, default=1100)
    parser.add_argument("--duration", type=float, default=25.0)
    parser.add_argument("--interval", type=float, default=10.0,
                        help="slow: seconds between the bytes of each slow client")
    parser.add_argument("--scrape-timeout", type=float, default=5.0)
    args = parser.parse_args()
    result = {"slow": slow, "halfopen": halfopen, "badreqs": badreqs}[args.scenario](args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
