"""Speed of the serving simulator: simulated requests per wall-clock second, and peak memory.

100,000 requests of 1,000 prompt / 200 output tokens arrive as a Poisson stream at 95 % of the
saturation rate (found by an offline run of the same lengths) on one H100 SXM replica of Llama 3.1
8B in BF16 under the vLLM scheduler: about 256 sequences decode in each of ~80,000 steps.
Target (issue #29): >= 150,000 requests per second on a 2-core machine, peak resident memory < 500 MB;
compare trees side by side (alternate runs of each, same load), not against a figure from another day.

`--case` runs the same stream through the features the plain run leaves off, to check that they
cost what they must and that the plain run pays nothing for them (issue #29):
- `spec`: speculative decoding with an EAGLE-3 head (its default drafts and acceptance), the
  drafter's forwards charged each step and decodes advancing by E(a, k) tokens a pass;
- `prefix`: every request starts with one of 4 shared 800-token system prompts (1,800-token
  prompts in all) that the engine's prefix cache serves once cached.
Prints the figures and, as its last line, `requests_per_s=<number>`.
"""

from __future__ import annotations

import argparse
import resource
import time

CASES = ("plain", "spec", "prefix")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--case", choices=CASES, default="plain")
    args = parser.parse_args()

    from dataclasses import replace

    from tokometer.costmodel.serving import Workload, fixed
    from tokometer.usecases.simulate import deploy, run

    spec = {"spec_method": "eagle3"} if args.case == "spec" else {}
    dep = deploy("llama-3.1-8b", "h100-sxm", quant="bf16", engine="vllm", **spec)
    base = Workload(arrival="offline", num_requests=2000, prompt=fixed(1000), output=fixed(200))
    if args.case == "prefix":
        base = replace(base, system_prompt_tokens=800, system_prompt_share=1.0, system_prompts=4)
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
    print(f"case {args.case}; deployment: {dep.label}; saturation {saturation:.1f} req/s, offered {workload.rate_per_s:.1f} req/s")
    print(
        f"simulated: {result.completed:,} requests, {result.steps:,} steps, mean batch {result.mean_batch:.0f}, "
        f"{result.req_per_s:.1f} req/s, p99 TTFT {(result.ttft_s.p99 or 0) * 1e3:.0f} ms"
        + (f", prefix hit share {hits:.2f}" if (hits := getattr(result, "prefix_hit_share", None)) is not None else "")
    )  # getattr: the plain case also runs on trees older than prefix caching, for side-by-side figures
    print(f"wall: best {best:.2f} s of {args.runs}; peak resident memory {peak_mb:.0f} MB")
    print(f"requests_per_s={args.requests / best:.0f}")


if __name__ == "__main__":
    main()
