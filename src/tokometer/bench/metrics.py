"""Benchmark metrics as pure functions over recorded timestamps (benchmarkers.md, section (b)).

Notation, all on the client clock, seconds: `t0` the request was written, `t1` the first event
carrying a generated token arrived, `tN` the last one did; `N` output tokens (the server's
count when it gave one). Usage-only, role-only and `[DONE]` events never move `t1` or `tN`.

| field          | definition                  | ecosystem name                               |
|----------------|-----------------------------|----------------------------------------------|
| `ttft_ms`      | 1000 (t1 - t0)              | TTFT everywhere                              |
| `decode_tps`   | (N - 1) / (tN - t1)         | 1/TPOT (vLLM), output_token_throughput_per_user (AIPerf) |
| `tpot_ms`      | 1000 (tN - t1) / (N - 1)    | vLLM TPOT, AIPerf inter_token_latency        |
| `itl_ms`       | per-event gaps after t1     | vLLM ITL, AIPerf inter-chunk latency         |
| `e2el_ms`      | 1000 (tN - t0)              | vLLM E2EL                                    |
| `output_tps`   | N / (tN - t0)               | per-request throughput including TTFT        |
| `prefill_tps`  | (N_in - cached) / (t1 - t0) | AIPerf prefill_throughput                    |

Stored runs keep the timestamps, so every number here can be recomputed from the database.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

DEFINITIONS: dict[str, str] = {
    "ttft_ms": "1000 * (t1 - t0): request written -> first event carrying a generated token",
    "decode_tps": "(N - 1) / (tN - t1): tokens after the first / seconds after the first",
    "tpot_ms": "1000 * (tN - t1) / (N - 1)",
    "itl_ms": "gaps between consecutive token-carrying events after the first",
    "e2el_ms": "1000 * (tN - t0)",
    "output_tps": "N / (tN - t0), includes the time to first token",
    "prefill_tps": "(prompt tokens - cached tokens) / (t1 - t0)",
    "server_decode_tps": "the server's own decode time, reconciled to (N - 1) / decode seconds",
    "aggregate_tps": "tokens of all streams inside the window where every stream was decoding / window",
    "goodput_rps": "requests meeting every SLO / run duration",
}


@dataclass(frozen=True, slots=True)
class Trace:
    """The timestamps and counts one request left behind (relative to t0 = 0 or absolute)."""

    t0_s: float
    event_times_s: tuple[float, ...]  # arrival of each token-carrying event
    output_tokens: int | None = None  # server count; None -> number of events
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    event_tokens: tuple[int, ...] | None = None  # tokens per event when the server says

    @property
    def n_out(self) -> int:
        return self.output_tokens if self.output_tokens is not None else len(self.event_times_s)


@dataclass(frozen=True, slots=True)
class RequestMetrics:
    ttft_ms: float | None
    decode_tps: float | None
    tpot_ms: float | None
    e2el_ms: float | None
    output_tps: float | None
    prefill_tps: float | None
    output_tokens: int
    itl_ms: tuple[float, ...]

    def to_dict(self, *, with_itl: bool = False) -> dict[str, Any]:
        data = asdict(self)
        if not with_itl:
            data.pop("itl_ms")
        return data


def request_metrics(trace: Trace) -> RequestMetrics:
    """All per-request figures of section (b) from one trace."""
    times = trace.event_times_s
    n = trace.n_out
    if not times:
        return RequestMetrics(None, None, None, None, None, None, n, ())
    t0, t1, tn = trace.t0_s, times[0], times[-1]
    ttft_s = t1 - t0
    decode_s = tn - t1
    decode_tps = (n - 1) / decode_s if n > 1 and decode_s > 0 else None
    tpot_ms = 1000.0 * decode_s / (n - 1) if n > 1 and decode_s > 0 else None
    prefill = None
    if trace.prompt_tokens is not None and ttft_s > 0:
        new = trace.prompt_tokens - (trace.cached_tokens or 0)
        prefill = new / ttft_s if new > 0 else None
    e2e_s = tn - t0
    return RequestMetrics(
        ttft_ms=1000.0 * ttft_s,
        decode_tps=decode_tps,
        tpot_ms=tpot_ms,
        e2el_ms=1000.0 * e2e_s,
        output_tps=n / e2e_s if e2e_s > 0 else None,
        prefill_tps=prefill,
        output_tokens=n,
        itl_ms=tuple(1000.0 * (b - a) for a, b in zip(times, times[1:], strict=False)),
    )


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def stats(values: Iterable[float | None]) -> dict[str, float | int | None]:
    """Median first, then mean, sample std, min, max, p90, p99 and n (None values skipped)."""
    clean = sorted(v for v in values if v is not None and math.isfinite(v))
    if not clean:
        return {"n": 0, "median": None, "mean": None, "std": None, "min": None, "max": None, "p90": None, "p99": None}
    return {
        "n": len(clean),
        "median": statistics.median(clean),
        "mean": statistics.fmean(clean),
        "std": statistics.stdev(clean) if len(clean) > 1 else 0.0,
        "min": clean[0],
        "max": clean[-1],
        "p90": percentile(clean, 90),
        "p99": percentile(clean, 99),
    }


def spread_fraction(summary: dict[str, Any]) -> float | None:
    """(max - min) / median: how much repeated runs disagree."""
    median = summary.get("median")
    if not median or summary.get("min") is None or summary.get("max") is None:
        return None
    return float((summary["max"] - summary["min"]) / median)


def token_times(trace: Trace) -> list[tuple[float, float]]:
    """(time, tokens) per event; without per-event counts the server total is spread evenly."""
    times = trace.event_times_s
    if not times:
        return []
    if trace.event_tokens is not None and len(trace.event_tokens) == len(times):
        return [(t, float(k)) for t, k in zip(times, trace.event_tokens, strict=True)]
    share = trace.n_out / len(times)
    return [(t, share) for t in times]


def steady_state_tps(traces: Sequence[Trace]) -> float | None:
    """Aggregate decode rate while every stream was decoding: window [max t1, min tN].

    Tokens whose events land inside the window, divided by its length (SGLang's one-batch
    steady state). None when the streams never all overlapped.
    """
    live = [t for t in traces if len(set(t.event_times_s)) >= 2]  # tokens seen at two instants at least
    if not live:
        return None
    start = max(t.event_times_s[0] for t in live)
    end = min(t.event_times_s[-1] for t in live)
    if end <= start:
        return None
    tokens = 0.0
    for trace in live:
        per_event = token_times(trace)
        # the first event inside the window only opens it: count what arrives strictly after start
        tokens += sum(k for time, k in per_event if start < time <= end)
    return tokens / (end - start)


def round_tps(traces: Sequence[Trace]) -> float | None:
    """Aggregate decode rate of one round of simultaneous streams.

    When every stream shows its tokens at two instants or more and all of them overlap, the
    steady state (`steady_state_tps`). Otherwise (a server that queues the streams, or a stream whose
    tokens arrived in one read) no window holds every stream, and the rate is the round's tokens
    after each first one over the span from the first first token to the last token, never one
    stream's own rate standing in for the round's.
    """
    timed = [t for t in traces if t.event_times_s]
    if not timed:
        return None
    if all(len(set(t.event_times_s)) >= 2 for t in timed):
        steady = steady_state_tps(timed)
        if steady is not None:
            return steady
    start = min(t.event_times_s[0] for t in timed)
    end = max(t.event_times_s[-1] for t in timed)
    tokens = sum(max(0, t.n_out - 1) for t in timed)
    return tokens / (end - start) if end > start and tokens else None


def aggregate_output_tps(traces: Sequence[Trace]) -> float | None:
    """All output tokens / (last token anywhere - first request written): vLLM's output_throughput."""
    live = [t for t in traces if t.event_times_s]
    if not live:
        return None
    start = min(t.t0_s for t in live)
    end = max(t.event_times_s[-1] for t in live)
    return sum(t.n_out for t in live) / (end - start) if end > start else None


def meets_slo(m: RequestMetrics, slo_ttft_ms: float | None, slo_tpot_ms: float | None) -> bool:
    """DistServe goodput: a request is good when every configured metric is within its SLO."""
    if slo_ttft_ms is not None and (m.ttft_ms is None or m.ttft_ms > slo_ttft_ms):
        return False
    if slo_tpot_ms is not None and (m.tpot_ms is None or m.tpot_ms > slo_tpot_ms):
        return False
    return True
