"""How accurate is tokometer's client? Measure a synthetic server whose rate and TTFT are known.

The synthetic server (`tokometer.bench.synthetic`, in its own process) writes token i at
`t_recv + ttft + i / rate` on an absolute schedule, so the true decode rate and TTFT are exact.
The client (the same `Runner` that `tokometer bench` uses) measures them; the error is the
client's. Targets (issue #12), on a 2-core machine with the server on the same machine:

- one stream at 200 tok/s, TTFT 250 ms: decode and TTFT within 1 %;
- 256 concurrent streams of 50 tok/s each, TTFT 250 ms: TTFT within 3 %, decode within 2 %.

It also prints the client's own CPU time per stream (user + system seconds of this process over
the timed rounds, per stream per second of wall time), and `--client httpx` measures the httpx
path (used for proxies and injected transports) instead of the wire client.

    python benchmarks/client_accuracy.py            # both checks
    python benchmarks/client_accuracy.py --streams 64 --tokens 100 --client httpx

Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx

from tokometer.bench.runner import BenchConfig, Runner

CLIENT = "wire"


def runner(config: BenchConfig) -> Runner:
    unlimited = httpx.Limits(max_connections=None, max_keepalive_connections=None)  # never a pool limit below the streams
    options: dict[str, Any] = {"transport": httpx.AsyncHTTPTransport(limits=unlimited)} if CLIENT == "httpx" else {}
    return Runner(config, **options)


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@contextlib.contextmanager
def server(tok_s: float, ttft_ms: float) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tokometer.bench.synthetic", "--tok-s", str(tok_s), "--ttft-ms", str(ttft_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("listening on "):
            raise RuntimeError(f"synthetic server did not start: {line!r}")
        yield line.split()[-1]
    finally:
        process.terminate()
        process.wait(10)


def error(measured: float | None, true: float) -> float:
    return float("inf") if measured is None else measured / true - 1.0


def single_stream(rate: float, ttft_ms: float, tokens: int, runs: int) -> tuple[float, float]:
    with server(rate, ttft_ms) as url:
        result = runner(BenchConfig(url, max_tokens=tokens, prompt_tokens=0, runs=runs)).run()
    s = result.summary()
    decode_err = error(s["decode_tps"]["median"], rate)
    ttft_err = error(s["ttft_ms"]["median"], ttft_ms)
    print(f"1 stream at {rate:g} tok/s, TTFT {ttft_ms:g} ms, {tokens} tokens x {runs} runs:")
    print(f"  decode  measured {s['decode_tps']['median']:.3f} tok/s (min {s['decode_tps']['min']:.3f}, max {s['decode_tps']['max']:.3f})  error {decode_err:+.3%}")
    print(f"  TTFT    measured {s['ttft_ms']['median']:.2f} ms (min {s['ttft_ms']['min']:.2f}, max {s['ttft_ms']['max']:.2f})  error {ttft_err:+.3%}")
    return decode_err, ttft_err


def many_streams(streams: int, rate: float, ttft_ms: float, tokens: int, rounds: int) -> tuple[float, float, float]:
    with server(rate, ttft_ms) as url:
        cpu0, wall0 = cpu_s(), time.perf_counter()
        result = runner(BenchConfig(url, max_tokens=tokens, concurrency=(streams,), runs=rounds)).run()
        cpu, wall = cpu_s() - cpu0, time.perf_counter() - wall0
    level = result.levels()[0]["summary"]
    decode = level["decode_tps"]
    median_err = error(decode["median"], rate)
    worst_err = max(abs(error(decode["min"], rate)), abs(error(decode["max"], rate)))
    aggregate = level["aggregate_tps"]["median"]
    aggregate_err = error(aggregate, streams * rate)
    print(f"{streams} streams at {rate:g} tok/s each, {tokens} tokens x {rounds} round(s): {level['requests_ok']} ok, {level['requests_failed']} failed")
    print(f"  per-stream decode  median {decode['median']:.3f} tok/s  error {median_err:+.3%}  (worst stream {worst_err:.3%})")
    print(f"  aggregate (all streams decoding)  {aggregate:.1f} tok/s of {streams * rate:g}  error {aggregate_err:+.3%}")
    ttft_err = error(level["ttft_ms"]["median"], ttft_ms)
    timed = [r for r in result.records if r.phase == "concurrency" and r.ok and r.t_headers is not None and r.event_times]
    to_headers = statistics.median((r.t_headers - r.t0) * 1e3 for r in timed if r.t_headers is not None)
    to_token = statistics.median((r.event_times[0] - r.t_headers) * 1e3 for r in timed if r.t_headers is not None)
    print(f"  TTFT = request -> response headers {to_headers:.1f} ms (the server reading a {streams}-request burst) + headers -> first token {to_token:.1f} ms")
    print(f"  TTFT median {level['ttft_ms']['median']:.1f} ms of {ttft_ms:g} ms  error {ttft_err:+.3%}  (p90 {level['ttft_ms'].get('p90') or float('nan'):.1f} ms)")
    print(f"  client CPU {cpu:.2f} s over {wall:.1f} s (whole run, warm-up included): {100 * cpu / wall / streams:.3f} % of a core per stream")
    return median_err, ttft_err, aggregate_err


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200.0, help="single-stream rate, tok/s")
    parser.add_argument("--ttft-ms", type=float, default=250.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--streams", type=int, default=256)
    parser.add_argument("--stream-rate", type=float, default=50.0)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--client", choices=("wire", "httpx"), default="wire")
    parser.add_argument("--skip-single", action="store_true")
    args = parser.parse_args(argv)
    global CLIENT
    CLIENT = args.client
    checks = []
    if not args.skip_single:
        decode_err, ttft_err = single_stream(args.rate, args.ttft_ms, args.tokens, args.runs)
        checks += [("single-stream decode within 1 %", abs(decode_err) <= 0.01), ("single-stream TTFT within 1 %", abs(ttft_err) <= 0.01)]
    median_err, many_ttft_err, _ = many_streams(args.streams, args.stream_rate, args.ttft_ms, args.tokens, args.rounds)
    checks += [
        (f"{args.streams}-stream per-stream decode within 2 %", abs(median_err) <= 0.02),
        (f"{args.streams}-stream TTFT within 3 %", abs(many_ttft_err) <= 0.03),
    ]
    print()
    for name, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
