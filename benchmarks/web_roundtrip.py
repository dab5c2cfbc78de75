"""Calculator round trip of the web app: an input changed to the new number painted, in Chromium.

Starts `tokometer serve` on a free port, opens the throughput page in headless Chromium (Debian's
`chromium`, driven by Playwright), and times, inside the page, a changed input -> form submit ->
POST /api/estimate -> rendered result -> next frame. Also times the bare API (HTTP POST from
Python, keep-alive) and the panorama. Target: round trip under 100 ms. Prints the figures and,
as its last line, `roundtrip_ms=<median>`; writes them to artifacts/web_roundtrip.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from web_helpers import CHROMIUM, CHROMIUM_ARGS, start_serve, stop  # noqa: E402

TARGET_MS = 100.0
ROUND_TRIP_JS = """async (params) => {
  const input = document.querySelector('#f-params_b');
  const out = document.querySelector('[data-testid=result]');
  const before = out.dataset.ready;
  const painted = new Promise((resolve) => {
    const watch = new MutationObserver(() => {
      if (out.dataset.ready !== before) {
        watch.disconnect();
        requestAnimationFrame(() => resolve(performance.now()));
      }
    });
    watch.observe(out, { attributes: true });
  });
  const start = performance.now();
  input.value = String(params);
  document.querySelector('form[data-testid=form]').requestSubmit();
  const end = await painted;
  return { ms: end - start, shown: document.querySelector('[data-testid=ceiling]').dataset.value };
}"""


def start_server(home: str) -> tuple[subprocess.Popen[str], str]:
    try:
        return start_serve(home)
    except RuntimeError as exc:
        raise SystemExit(str(exc)) from None


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "max": ordered[-1],
        "n": len(ordered),
    }


def api_latency(base: str, runs: int) -> dict[str, Any]:
    body = {"params_b": 70, "bits": 16, "bandwidth_gb_per_s": 3350}
    with httpx.Client(base_url=base) as client:
        for _ in range(10):
            client.post("/api/estimate", json=body).raise_for_status()
        estimate_ms = []
        for _ in range(runs):
            start = time.perf_counter()
            client.post("/api/estimate", json=body).raise_for_status()
            estimate_ms.append((time.perf_counter() - start) * 1e3)
        panorama_ms = []
        for _ in range(max(3, runs // 20)):
            start = time.perf_counter()
            client.post("/api/panorama", json={"model": "llama-3.1-8b"}).raise_for_status()
            panorama_ms.append((time.perf_counter() - start) * 1e3)
    return {"estimate": summary(estimate_ms), "panorama": summary(panorama_ms)}


def browser_round_trip(base: str, runs: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        start = time.perf_counter()
        page.goto(base + "/throughput")
        page.wait_for_selector("body[data-ready=true]")
        first_load_ms = (time.perf_counter() - start) * 1e3
        for i in range(5):  # warm-up
            page.evaluate(ROUND_TRIP_JS, 60 + i)
        times = []
        for i in range(runs):
            params_b = 10 + i
            result = page.evaluate(ROUND_TRIP_JS, params_b)
            expected = 3350e9 / (params_b * 2e9)  # the ceiling at 16 bits: bandwidth / weight bytes
            if abs(float(result["shown"]) / expected - 1) > 1e-9:
                raise SystemExit(f"page showed {result['shown']} for {params_b}B, expected {expected}")
            times.append(result["ms"])
        browser.close()
    return {"round_trip": summary(times), "first_load_ms": first_load_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: run scripts/ci/browser.sh")
    with tempfile.TemporaryDirectory() as home:
        proc, base = start_server(home)
        try:
            api = api_latency(base, args.runs * 4)
            page = browser_round_trip(base, args.runs)
        finally:
            stop(proc)
    rt = page["round_trip"]
    print(f"bare API, POST /api/estimate: median {api['estimate']['median']:.2f} ms, p95 {api['estimate']['p95']:.2f} ms over {api['estimate']['n']} calls")
    print(f"bare API, POST /api/panorama (every catalog device): median {api['panorama']['median']:.1f} ms over {api['panorama']['n']} calls")
    print(f"first page load to result: {page['first_load_ms']:.0f} ms")
    print(f"calculator round trip (input -> request -> painted number): median {rt['median']:.1f} ms, p95 {rt['p95']:.1f} ms, max {rt['max']:.1f} ms over {rt['n']} runs")
    print(f"target {TARGET_MS:.0f} ms: {'within' if rt['median'] < TARGET_MS else 'OVER'}")
    out = Path(__file__).resolve().parents[1] / "artifacts" / "web_roundtrip.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"api_ms": api, "browser": page, "target_ms": TARGET_MS}, indent=2))
    print(f"roundtrip_ms={rt['median']:.1f}")


if __name__ == "__main__":
    main()
