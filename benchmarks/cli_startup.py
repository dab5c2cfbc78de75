"""Wall time of `tokometer estimate` as a ratio to `python -c pass`, run side by side.

The quick CLI path must not import heavy libraries (numpy, matplotlib, huggingface_hub):
target ratio under 10x. Prints the medians and, as its last line, `ratio=<number>`.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    exe = shutil.which("tokometer")
    estimate = [exe, "estimate"] if exe else [sys.executable, "-m", "tokometer", "estimate"]
    baseline = [sys.executable, "-c", "pass"]
    wall(estimate)  # warm the file cache
    base_times, est_times = [], []
    for _ in range(args.runs):  # interleaved, so machine noise hits both alike
        base_times.append(wall(baseline))
        est_times.append(wall(estimate))
    base, est = statistics.median(base_times), statistics.median(est_times)
    print(f"python -c pass: median {base * 1e3:.1f} ms over {args.runs} runs")
    print(f"tokometer estimate: median {est * 1e3:.1f} ms over {args.runs} runs")
    print(f"ratio={est / base:.2f}")


if __name__ == "__main__":
    main()
