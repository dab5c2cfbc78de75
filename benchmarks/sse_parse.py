"""Parse time of one huge SSE line, to show the line parser is linear in the bytes received.

A server can send one enormous line; the client's size caps stop reading it, but the parser must
never be the reason a run hangs. Times `parse_sse` on lines of 4 and 16 MiB, arriving in reads of
`--read-kib` KiB, and prints each time and, as its last line, `ratio=<16 MiB time / 4 MiB time>`:
about 4 for a linear parser (a quadratic one gives about 16).
"""

from __future__ import annotations

import argparse
import time

from tokometer.bench.sse import parse_sse


def parse_time_s(mib: int, read_bytes: int) -> float:
    line = b"data: " + b"x" * (mib << 20) + b"\n\n"
    chunks = [(float(i), line[i : i + read_bytes]) for i in range(0, len(line), read_bytes)]
    start = time.perf_counter()
    events = parse_sse(chunks)
    elapsed = time.perf_counter() - start
    assert len(events) == 1 and len(events[0].data) == mib << 20
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--read-kib", type=int, default=64)
    args = parser.parse_args()
    read_bytes = args.read_kib << 10
    small = min(parse_time_s(4, read_bytes) for _ in range(3))
    large = min(parse_time_s(16, read_bytes) for _ in range(3))
    print(f"4 MiB line: {small:.3f} s; 16 MiB line: {large:.3f} s (reads of {args.read_kib} KiB)")
    print(f"ratio={large / small:.2f}")


if __name__ == "__main__":
    main()
