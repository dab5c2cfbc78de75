"""Speed of the serving simulator: simulated requests per wall-clock second, and peak memory.

100,000 requests of 1,000 prompt / 200 output tokens arrive as a Poisson stream at 95 % of the
saturation rate (found by an offline run of the same lengths) on one H100 SXM replica of Llama 3.1
8B in BF16 under the vLLM scheduler: about 256 sequences decode in each of ~80,000 steps.
Target: >= 50,000 requests per second on a 2-core machine, peak resident memory < 500 MB.
Prints the figures and, as its last line, `requests_per_s=<number>`.
"""

from __future__ import annotations

import argparse
import resource
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    from dataclasses import replace

    from tokometer.costmodel.serving import Workload, fixed
    from tokometer.usecases.simulate import deploy, run

    dep = deploy("llama-3.1-8b", "h100-sxm", quant="bf16", engine="vllm")
    base = Workload(arrival="offline", num_requests=2000, prompt=fixed(1000), output=fixed(200))
    saturation = run(dep, base).req_per_s
    workload = replace(base, arrival="poisson", num_requests=args.requests, rate_per_s=0.95 * saturation)
    best = float("inf")
    result = None
    for _ in range(args.runs):
        start = time.perf_counter()
        result = run(dep, workload, seed=1)
        best = min(best, time.perf_counter() - start)
    assert result is not None
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"deployment: {dep.label}; saturation {saturation:.1f} req/s, offered {workload.rate_per_s:.1f} req/s")
    print(
        f"simulated: {result.completed:,} requests, {result.steps:,} steps, mean batch {result.mean_batch:.0f}, "
        f"{result.req_per_s:.1f} req/s, p99 TTFT {(result.ttft_s.p99 or 0) * 1e3:.0f} ms"
    )
    print(f"wall: best {best:.2f} s of {args.runs}; peak resident memory {peak_mb:.0f} MB")
    print(f"requests_per_s={args.requests / best:.0f}")


if __name__ == "__main__":
    main()
