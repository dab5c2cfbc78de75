"""Wall time of `tokometer estimate` as a ratio to `python -c pass`, run side by side.

The quick CLI path must not import heavy libraries (numpy, matplotlib, huggingface_hub):
target ratio under 10x. Prints the medians and, as its last line, `ratio=<number>`.

`--no-cache` turns off the parsed-catalog cache (catalog/cache.py) for the estimate runs, which
gives the figure before that cache. The first estimate run fills the cache and is not counted.
With PYTHONDONTWRITEBYTECODE set and no .pyc beside the sources, every run compiles tokometer
from source (about 30 ms more than an installed package pays); the script says so.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def wall(cmd: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-cache", action="store_true", help="turn the parsed-catalog cache off (the 'before' figure)")
    args = parser.parse_args()
    env = {**os.environ, "TOKOMETER_CATALOG_CACHE": "0" if args.no_cache else "1"}
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set; without .pyc files tokometer is compiled on every run")
    exe = shutil.which("tokometer")
    estimate = [exe, "estimate"] if exe else [sys.executable, "-m", "tokometer", "estimate"]
    baseline = [sys.executable, "-c", "pass"]
    wall(estimate, env)  # warm the OS file cache and fill the catalog cache
    base_times, est_times = [], []
    for _ in range(args.runs):  # interleaved, so machine noise hits both alike
        base_times.append(wall(baseline))
        est_times.append(wall(estimate, env))
    base, est = statistics.median(base_times), statistics.median(est_times)
    print(f"python -c pass: median {base * 1e3:.1f} ms over {args.runs} runs")
    print(f"tokometer estimate{' (catalog cache off)' if args.no_cache else ''}: median {est * 1e3:.1f} ms over {args.runs} runs")
    print(f"ratio={est / base:.2f}")


if __name__ == "__main__":
    main()
