#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tests/golden/float_format.tsv: doubles and prometheus_client's floatToGoString of them.

Regenerate (from the repository root, with Debian's python3-prometheus-client 0.16):

    /usr/bin/python3 tools/gen_float_table.py            (or tools/regen.sh for every generator)

It writes tests/golden/float_format.tsv (or the path given as its one argument).

Each line is `<16 lower-case hex digits of the IEEE-754 bits>\t<floatToGoString(v)>`.
tests/exposition/float_format_test.cc formats every value with vmetrics::FormatGoFloat and
requires identical text. The values are deterministic (fixed seed), so rerunning the script
gives the same file; the count is kept so the file stays below ~6 MB.
"""

import math
import os
import random
import struct
import sys

from prometheus_client.utils import floatToGoString

SEED = 20260917


def bits(v):
    return struct.unpack('<Q', struct.pack('<d', v))[0]


def from_bits(b):
    return struct.unpack('<d', struct.pack('<Q', b))[0]


def values():
    rng = random.Random(SEED)
    out = []

    # Specials and signed zeros.
    out += [0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan, 0.1 + 0.2, 1 / 3, 2 / 3]
    # Two NaN payloads other than the default quiet NaN.
    out += [from_bits(0x7FF0000000000001), from_bits(0xFFF8000000000123)]
    # Extremes and subnormals.
    out += [5e-324, -5e-324, 2.2250738585072014e-308, 2.2250738585072009e-308,
            1.7976931348623157e308, -1.7976931348623157e308]
    out += [from_bits(rng.getrandbits(52)) for _ in range(1000)]  # positive subnormals
    out += [-from_bits(rng.getrandbits(52)) for _ in range(200)]

    # Decades 1e-30 .. 1e30 and their neighbours, both signs: the repr switch points are
    # 1e-4/1e-5 and 1e16, Go's is 1e6, the three-digit exponent quirk is 1e10..1e15.
    for e in range(-30, 31):
        v = float(f'1e{e}')
        for w in (v, math.nextafter(v, 0.0), math.nextafter(v, math.inf)):
            out += [w, -w, 2.5 * w, 9.99 * w, 1.2345678901234567 * w]
    # Around the boundaries, the largest values below them.
    out += [999999.9999999999, 999999.0, 1000000.0, 1000001.0, 1234567.0, 12345678.0,
            1723456789.123456, 9999999999999998.0, 1e16, 123456789012.0, 2097152.0,
            0.0001, 0.00011, 9.999999999999999e-05, 0.00009999, 2560.0, 100000.0]

    # Powers of two over the whole exponent range.
    out += [math.ldexp(1.0, e) for e in range(-1074, 1024)]

    # Integers: small ones exactly, then random ones up to 2^53, both signs.
    out += [float(i) for i in range(-1000, 10001)]
    for _ in range(25000):
        n = rng.getrandbits(rng.randint(1, 53))
        out.append(float(n) if rng.random() < 0.8 else -float(n))

    # k/1000 (latency-like), and k/1e6.
    out += [k / 1000 for k in range(0, 20000)]
    out += [rng.randint(0, 10**9) / 1e6 for _ in range(5000)]

    # Unix timestamps with sub-second parts, as `_created` samples have.
    out += [rng.uniform(1.5e9, 2.2e9) for _ in range(10000)]
    # Sums that pick up rounding error, like histogram `_sum` values.
    for _ in range(5000):
        acc = 0.0
        for _ in range(rng.randint(2, 12)):
            acc += rng.choice((0.1, 0.2, 0.3, 0.005, 0.025, 1.5, 7.0))
        out.append(acc)
    # Uniform magnitudes from 1e-8 to 1e20 (log scale), both signs.
    for _ in range(15000):
        v = 10 ** rng.uniform(-8, 20)
        out.append(v if rng.random() < 0.8 else -v)

    # Random 64-bit patterns: every exponent and mantissa.
    out += [from_bits(rng.getrandbits(64)) for _ in range(60000)]
    return out


def main():
    default = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'golden',
                           'float_format.tsv')
    path = sys.argv[1] if len(sys.argv) > 1 else default
    lines = [f'{bits(v):016x}\t{floatToGoString(v)}\n' for v in values()]
    with open(path, 'w', encoding='ascii', newline='\n') as f:
        f.write(''.join(lines))


if __name__ == '__main__':
    main()
