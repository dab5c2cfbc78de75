"""Throughput of `tokometer sweep`: setups predicted per second by the vector decode step.

The grid is every catalog model x every catalog device x the fit ladder's quants x 8 context depths
x 9 batch sizes (about 3.5 million setups), computed by `tokometer.usecases.sweep.sweep` exactly as the CLI
does, memory verdict included. Catalogs are loaded once before timing (the CLI pays that once too).
Target: at least 1,000,000 setups per second. Prints the medians and, as its last line,
`configs_per_s=<number>`.
"""

from __future__ import annotations

import argparse
import statistics
import time

CONTEXTS = (0, 512, 2048, 8192, 16384, 32768, 65536, 131072)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--min-configs", type=int, default=1_000_000)
    args = parser.parse_args()

    from tokometer.usecases.sweep import sweep

    def run() -> int:
        result = sweep(["all"], ["all"], ["all"], CONTEXTS, BATCHES)
        return result.size

    size = run()  # warm: catalogs parsed, model specs accounted, numpy loaded
    if size < args.min_configs:
        raise SystemExit(f"grid has {size:,} setups, fewer than {args.min_configs:,}")
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    best, median = min(times), statistics.median(times)
    print(f"setups per sweep: {size:,}")
    print(f"sweep time: median {median * 1e3:.0f} ms, best {best * 1e3:.0f} ms over {args.runs} runs")
    print(f"configs_per_s={size / median:.0f}")


if __name__ == "__main__":
    main()
