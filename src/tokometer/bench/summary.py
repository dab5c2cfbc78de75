"""Turn request records into the run summary: medians and spread, failures, per-level tables.

Pure: the same function summarises a run as it ends and re-summarises one read back from the
database, so stored timestamps always give the same numbers.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tokometer.bench.client import RequestRecord
from tokometer.bench.metrics import (
    aggregate_output_tps,
    meets_slo,
    round_tps,
    spread_fraction,
    stats,
)

MEASURED_PHASES = ("decode", "ttft", "depth", "concurrency", "rate", "trace")


def _median(values: Sequence[float | int | None]) -> float | None:
    clean = [v for v in values if v is not None]
    return float(statistics.median(clean)) if clean else None


def _level_value(text: str) -> int | float | str:
    """A level's number from its label (`concurrency=4`, `rate=2.5`); `rate=inf` stays the word."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return text
    return value if value == value and abs(value) != float("inf") else text


def summarize_records(
    records: Sequence[RequestRecord],
    *,
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
) -> dict[str, Any]:
    """The summary of one set of measured requests (cold runs excluded by the caller or here)."""
    measured = [r for r in records if r.phase != "cold"]
    ok = [r for r in measured if r.ok]
    failed = [r for r in measured if not r.ok]
    metrics = {r.seq: r.metrics() for r in ok}
    decode_set = [r for r in ok if r.phase != "ttft"]
    ttft_set = [r for r in ok if r.phase == "ttft"] or decode_set
    decode = stats(metrics[r.seq].decode_tps for r in decode_set)
    sources = Counter(r.output_tokens_source for r in ok)
    server = [r.server_decode_tps for r in decode_set]
    gaps = [
        metrics[r.seq].decode_tps / r.server_decode_tps - 1.0  # type: ignore[operator]
        for r in decode_set
        if r.server_decode_tps and metrics[r.seq].decode_tps
    ]
    cold = [r for r in records if r.phase == "cold" and r.ok]
    summary: dict[str, Any] = {
        "requests_ok": len(ok),
        "requests_failed": len(failed),
        "requests_total": len(measured),
        "cold_requests": sum(1 for r in records if r.phase == "cold"),
        "decode_tps": decode,
        "decode_spread_fraction": spread_fraction(decode),
        "ttft_ms": stats(metrics[r.seq].ttft_ms for r in ttft_set),
        "ttft_prompt_tokens": _median([r.prompt_tokens for r in ttft_set]),
        "prefill_tps": stats(metrics[r.seq].prefill_tps for r in ttft_set),
        "tpot_ms": stats(metrics[r.seq].tpot_ms for r in decode_set),
        "itl_ms": stats(x for r in decode_set for x in metrics[r.seq].itl_ms),
        "e2el_ms": stats(metrics[r.seq].e2el_ms for r in decode_set),
        "output_tps": stats(metrics[r.seq].output_tps for r in decode_set),
        "output_tokens": stats(r.output_tokens for r in decode_set),
        "prompt_tokens": _median([r.prompt_tokens for r in decode_set]),
        "cached_tokens_max": max((r.cached_tokens or 0 for r in ok), default=0),
        "output_tokens_source": sources.most_common(1)[0][0] if sources else None,
        "server_decode_tps": stats(server),
        "server_reported_decode_tps": stats(r.server_reported_decode_tps for r in decode_set),
        "server_prefill_ms": stats(r.server_prefill_ms for r in ttft_set),
        "client_server_gap_fraction": _median(gaps),
        "cold_ttft_ms": cold[0].metrics().ttft_ms if cold else None,
        "ended_early": sum(1 for r in ok if r.ended_early),
        "finish_reasons": dict(Counter(str(r.finish_reason) for r in ok)),
        "errors": dict(Counter(r.error_kind or "error" for r in failed)),
        "first_error": failed[0].error if failed else None,
    }
    traces = [r.trace() for r in ok]
    if traces:
        start = min(r.t0 for r in measured)
        end = max((r.t_end or r.t0) for r in measured)
        duration = end - start
        summary["duration_s"] = duration
        summary["output_throughput_tps"] = aggregate_output_tps(traces)
        summary["request_throughput_rps"] = len(ok) / duration if duration > 0 else None
        if slo_ttft_ms is not None or slo_tpot_ms is not None:
            good = sum(1 for r in ok if meets_slo(metrics[r.seq], slo_ttft_ms, slo_tpot_ms))
            summary["goodput_rps"] = good / duration if duration > 0 else None
            summary["good_requests"] = good
            summary["slo"] = {"ttft_ms": slo_ttft_ms, "tpot_ms": slo_tpot_ms}
    return summary


def _round_aggregates(group: Sequence[RequestRecord], streams: int | float | str) -> list[float | None]:
    """The aggregate decode rate of each whole round of a concurrency level, from that round's own
    requests: a round that sent fewer than the level's streams (the remainder of `--requests N`) is
    left out, a round where one stream succeeded counts with that stream's rate."""
    sent: dict[int, int] = {}
    rounds: dict[int, list[RequestRecord]] = {}
    for r in group:
        sent[r.group] = sent.get(r.group, 0) + 1
        if r.ok:
            rounds.setdefault(r.group, []).append(r)
    whole = streams if isinstance(streams, int) else 0
    out: list[float | None] = []
    for index, rs in rounds.items():
        if sent[index] < whole:
            continue
        out.append(round_tps([r.trace() for r in rs]) if len(rs) > 1 else rs[0].metrics().decode_tps)
    return out


def summarize_levels(
    records: Sequence[RequestRecord],
    *,
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
) -> list[dict[str, Any]]:
    """One summary per level label (depth=..., concurrency=..., rate=...), in first-seen order."""
    labels: list[str] = []
    for r in records:
        if r.phase in ("depth", "concurrency", "rate") and r.label not in labels:
            labels.append(r.label)
    levels = []
    for label in labels:
        group = [r for r in records if r.label == label and r.phase != "cold"]
        summary = summarize_records(group, slo_ttft_ms=slo_ttft_ms, slo_tpot_ms=slo_tpot_ms)
        key, _, value = label.partition("=")
        level: dict[str, Any] = {"label": label, key: _level_value(value), "summary": summary}
        if key == "concurrency":
            summary["aggregate_tps"] = stats(_round_aggregates(group, level[key]))
        levels.append(level)
    return levels
