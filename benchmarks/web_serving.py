"""How long the Serving page's API calls take over HTTP: `/api/simulate` (a rate sweep of 8 points plus
an offline saturation run and the chosen point) and `/api/plan`, against `tokometer serve`.

Cases: the page's default (Llama 3.1 8B bf16 on one H100, 1,000 requests per point), the largest
call the API accepts (2,000 requests per point, 16 rates, a 70B model on TP 4 with 4 replicas),
and the default plan (9 priced GPUs x 3 formats x TP 1-8). Prints each median of `--repeat` calls
and, as its last line, `simulate_api_ms=<median of the default case>`; writes
artifacts/web_serving.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from web_helpers import start_serve, stop  # noqa: E402

CASES = {
    "simulate_default": ("/api/simulate", {"model": "llama-3.1-8b", "quant": "bf16", "hw": "h100-sxm",
                                           "slo_ttft_ms": 500, "slo_tpot_ms": 50}),
    "simulate_largest": ("/api/simulate", {"model": "llama-3.1-70b", "quant": "bf16", "hw": "h100-sxm", "tp": 4, "replicas": 4,
                                           "num_requests": 2000, "rates_per_s": [round(2 + 2 * i, 1) for i in range(16)]}),
    "plan_default": ("/api/plan", {"model": "llama-3.1-8b", "rate_per_s": 10, "prompt_tokens": 1000, "output_tokens": 200,
                                   "slo_ttft_ms": 500, "slo_tpot_ms": 50}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as home:
        proc, base = start_serve(home)
        try:
            with httpx.Client(base_url=base, timeout=120) as client:
                for name, (path, body) in CASES.items():
                    client.post(path, json=body).raise_for_status()  # warm: catalogs, imports
                    times = []
                    for _ in range(args.repeat):
                        start = time.perf_counter()
                        client.post(path, json=body).raise_for_status()
                        times.append((time.perf_counter() - start) * 1e3)
                    results[name] = statistics.median(times)
                    print(f"{name}: median {results[name]:,.0f} ms over {args.repeat} calls")
        finally:
            stop(proc)
    out = Path(__file__).resolve().parents[1] / "artifacts" / "web_serving.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"simulate_api_ms={results['simulate_default']:.0f}")


if __name__ == "__main__":
    main()
