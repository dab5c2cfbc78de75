"""Metric formulas of benchmarkers.md (b) as pure functions of timestamps."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokometer.bench.metrics import (
    Trace,
    aggregate_output_tps,
    meets_slo,
    percentile,
    request_metrics,
    spread_fraction,
    stats,
    steady_state_tps,
)


def test_definitions_on_a_hand_worked_request() -> None:
    # sent at 10.0, first token at 10.5, then 100 more tokens one per 10 ms
    times = tuple(10.5 + 0.01 * i for i in range(101))
    m = request_metrics(Trace(10.0, times, output_tokens=101, prompt_tokens=1000, cached_tokens=200))
    assert m.ttft_ms == pytest.approx(500.0)
    assert m.decode_tps == pytest.approx(100.0)  # (N-1) / (tN - t1)
    assert m.tpot_ms == pytest.approx(10.0)
    assert m.e2el_ms == pytest.approx(1500.0)
    assert m.output_tps == pytest.approx(101 / 1.5)
    assert m.prefill_tps == pytest.approx(800 / 0.5)  # new prompt tokens / TTFT
    assert len(m.itl_ms) == 100 and m.itl_ms[0] == pytest.approx(10.0)


def test_server_count_not_events_sets_n() -> None:
    # 11 events but the server says 21 tokens (two per chunk): rate uses 21
    times = tuple(1.0 + 0.1 * i for i in range(11))
    assert request_metrics(Trace(0.0, times, output_tokens=21)).decode_tps == pytest.approx(20.0)
    assert request_metrics(Trace(0.0, times)).decode_tps == pytest.approx(10.0)


def test_degenerate_requests_have_no_decode_rate() -> None:
    assert request_metrics(Trace(0.0, ())).ttft_ms is None
    one = request_metrics(Trace(0.0, (0.2,), output_tokens=1))
    assert one.ttft_ms == pytest.approx(200.0) and one.decode_tps is None and one.tpot_ms is None
    bundled = request_metrics(Trace(0.0, (0.2,), output_tokens=5))
    assert bundled.decode_tps is None


def test_stats_and_percentiles() -> None:
    s = stats([3.0, 1.0, 2.0, None, 4.0])
    assert s["n"] == 4 and s["median"] == 2.5 and s["min"] == 1.0 and s["max"] == 4.0
    assert s["std"] == pytest.approx(1.2909944)
    assert percentile([0.0, 10.0], 90) == pytest.approx(9.0)
    assert stats([])["median"] is None
    assert stats([5.0])["std"] == 0.0
    assert spread_fraction(stats([90.0, 100.0, 110.0])) == pytest.approx(0.2)
    assert math.isnan(percentile([], 50))


def test_steady_state_window_counts_only_overlap() -> None:
    a = Trace(0.0, tuple(1.0 + 0.1 * i for i in range(21)))  # 1.0 .. 3.0 at 10 tok/s
    b = Trace(0.0, tuple(2.0 + 0.1 * i for i in range(21)))  # 2.0 .. 4.0
    assert steady_state_tps([a, b]) == pytest.approx(20.0)  # window 2.0..3.0, both streams
    assert steady_state_tps([a, Trace(0.0, tuple(5.0 + 0.1 * i for i in range(5)))]) is None
    assert aggregate_output_tps([a, b]) == pytest.approx(42 / 4.0)


def test_slo_checks_every_configured_metric() -> None:
    m = request_metrics(Trace(0.0, tuple(0.1 + 0.02 * i for i in range(11))))
    assert meets_slo(m, 150.0, 25.0)
    assert not meets_slo(m, 50.0, None)
    assert not meets_slo(m, None, 10.0)
    assert meets_slo(m, None, None)


@given(
    st.floats(min_value=0.001, max_value=10.0),
    st.floats(min_value=1e-4, max_value=1.0),
    st.integers(min_value=2, max_value=500),
    st.floats(min_value=0.5, max_value=100.0),
)
def test_uniform_streams_recover_their_rate_and_scale_with_time(ttft: float, gap: float, n: int, scale: float) -> None:
    times = tuple(ttft + gap * i for i in range(n))
    m = request_metrics(Trace(0.0, times))
    assert m.decode_tps == pytest.approx(1.0 / gap, rel=1e-6)
    assert m.ttft_ms == pytest.approx(1000 * ttft, rel=1e-6)
    slower = request_metrics(Trace(0.0, tuple(t * scale for t in times)))
    assert slower.decode_tps == pytest.approx(m.decode_tps / scale, rel=1e-6)  # type: ignore[operator]
    assert m.tpot_ms * m.decode_tps == pytest.approx(1000.0, rel=1e-6)  # type: ignore[operator]


def _record(seq: int, group: int, times: tuple[float, ...], *, tokens: int = 30, server_tps: float | None = None, label: str = "concurrency=2"):
    from tokometer.bench.client import RequestRecord

    return RequestRecord(seq=seq, phase="concurrency", label=label, ok=True, t0=0.0, group=group, event_times=times,
                         output_tokens=tokens, server_decode_tps=server_tps, max_tokens=tokens)  # fmt: skip


def test_a_stream_seen_at_one_instant_keeps_a_decode_rate_and_does_not_stand_in_for_the_round() -> None:
    """Issue 28: against llama.cpp at concurrency 2, 3 of 6 requests had no decode rate and the
    aggregate column equalled the decode column (90.4 = 90.4): the one stream with two token
    instants set the round's "aggregate"."""
    from tokometer.bench.summary import summarize_levels

    streaming = tuple(0.1 + i / 100.0 for i in range(30))  # 100 tok/s
    records = []
    for group in range(3):
        records.append(_record(2 * group, group, streaming))
        records.append(_record(2 * group + 1, group, (0.5,), server_tps=95.0))  # all 30 tokens in one read
    (level,) = summarize_levels(records)
    summary = level["summary"]
    assert summary["decode_tps"]["n"] == 6  # every request of >= 2 tokens has a rate
    assert summary["decode_tps"]["median"] == pytest.approx(97.5)
    # the round: 58 tokens after the first ones, from the first first token (0.1 s) to the last token (0.5 s)
    assert summary["aggregate_tps"]["median"] == pytest.approx(58 / 0.4)
    assert summary["aggregate_tps"]["median"] != pytest.approx(summary["decode_tps"]["median"], rel=0.1)


def test_levels_are_summarised_from_their_own_requests() -> None:
    from tokometer.bench.summary import summarize_levels

    fast = tuple(0.1 + i / 200.0 for i in range(30))
    slow = tuple(0.1 + i / 50.0 for i in range(30))
    records = [_record(0, 0, fast, label="concurrency=1")] + [_record(1 + i, 0, slow) for i in range(2)]
    one, two = summarize_levels(records)
    assert one["summary"]["decode_tps"]["median"] == pytest.approx(200.0)
    assert two["summary"]["decode_tps"]["median"] == pytest.approx(50.0)
    assert two["summary"]["aggregate_tps"]["median"] == pytest.approx(100.0, rel=0.05)
