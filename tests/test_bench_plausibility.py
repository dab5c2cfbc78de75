"""Plausibility checks on one request: counts against bytes and max_tokens, timings in order."""

from __future__ import annotations

from typing import Any

import pytest

from tokometer.bench.plausibility import MAX_STREAM_TOK_S, implausible, implausible_speed

GOOD: dict[str, Any] = {
    "t0_s": 10.0,
    "t_headers_s": 10.1,
    "event_times_s": [10.2, 10.3, 10.4],
    "event_tokens": None,
    "output_tokens": 3,
    "output_tokens_source": "usage",
    "text_chars": 12,
    "max_tokens": 3,
}


def test_a_consistent_request_passes() -> None:
    assert implausible(**GOOD) is None


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"t_headers_s": 9.0}, "before the request was sent"),
        ({"event_times_s": [9.9, 10.3]}, "a token arrived before"),
        ({"event_times_s": [10.3, 10.2, 10.4]}, "out of order"),
        ({"event_tokens": [1, 2, -1]}, "went down"),
        ({"output_tokens": 10**6}, "1,000,000 output tokens but only 12 characters"),
        ({"output_tokens": 30, "text_chars": 400}, "max_tokens=3"),
    ],
)
def test_each_impossibility_is_named(change: dict[str, Any], words: str) -> None:
    why = implausible(**{**GOOD, **change})
    assert why is not None and words in why


def test_counts_from_events_cannot_disagree_with_themselves() -> None:
    assert implausible(**{**GOOD, "output_tokens": 10**6, "output_tokens_source": "events"}) is None


def test_a_speed_no_hardware_reaches_is_named() -> None:
    assert implausible_speed(MAX_STREAM_TOK_S * 0.5) is None and implausible_speed(None) is None
    assert "beyond any hardware" in (implausible_speed(2.6e13) or "")
