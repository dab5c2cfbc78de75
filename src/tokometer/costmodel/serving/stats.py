"""Streaming statistics for the serving simulator: bounded memory whatever the number of requests.

`StreamStat` keeps count, sum, min and max exactly and a log-spaced histogram for percentiles:
bucket `i` holds values in `[r**i, r**(i+1))` with `r = 1.01`, so a percentile is exact to within
1 % relative error and the memory is a few hundred buckets per decade of range. Samples may carry a
weight (one engine step's time counts once per sequence that emitted a token in it: the ITL).

`Trace` keeps a downsampled time series (batch size, KV use over time) of at most `max_points`
points: when full it drops every other point and keeps one point in twice as many from then on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tokometer.domain.specs import _Plain

RATIO = 1.01
_LOG_RATIO = math.log(RATIO)
_log = math.log
_FLOOR = 1e-9  # values below this (seconds) share one bucket


@dataclass(frozen=True, slots=True)
class Summary(_Plain):
    """Mean and percentiles of one latency, in seconds (None when nothing was observed)."""

    n: int
    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    min: float | None
    max: float | None


class StreamStat:
    """Count, sum, extremes and a 1 %-resolution log histogram of a stream of positive values."""

    __slots__ = ("buckets", "count", "max", "min", "total")

    def __init__(self) -> None:
        self.count = 0.0
        self.total = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.buckets: dict[int, float] = {}

    def add(self, value: float, weight: float = 1.0) -> None:
        self.count += weight
        self.total += value * weight
        if value < self.min:
            self.min = value
        if value > self.max:
            self.max = value
        key = int(_log(value if value > _FLOOR else _FLOOR) / _LOG_RATIO)
        buckets = self.buckets
        if key in buckets:  # the simulator adds ~5 values per request: a hit costs no method call
            buckets[key] += weight
        else:
            buckets[key] = 0.0 + weight

    def merge(self, other: StreamStat) -> None:
        self.count += other.count
        self.total += other.total
        self.min = min(self.min, other.min)
        self.max = max(self.max, other.max)
        for key, weight in other.buckets.items():
            self.buckets[key] = self.buckets.get(key, 0.0) + weight

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def quantile(self, q: float) -> float | None:
        """The q-quantile (0..1): geometric middle of the bucket that holds it, clamped to [min, max]."""
        if not self.count:
            return None
        target = q * self.count
        seen = 0.0
        for key in sorted(self.buckets):
            seen += self.buckets[key]
            if seen >= target:
                value = math.exp((key + 0.5) * _LOG_RATIO)
                return min(max(value, self.min), self.max)
        return self.max

    def summary(self) -> Summary:
        if not self.count:
            return Summary(0, None, None, None, None, None, None)
        return Summary(
            n=int(round(self.count)),
            mean=self.mean,
            p50=self.quantile(0.5),
            p90=self.quantile(0.9),
            p99=self.quantile(0.99),
            min=self.min,
            max=self.max,
        )

    def share_at_most(self, limit: float) -> float:
        """Share of the weight at or below `limit` (to bucket resolution)."""
        if not self.count:
            return 0.0
        edge = math.log(limit if limit > _FLOOR else _FLOOR) / _LOG_RATIO
        below = sum(w for k, w in self.buckets.items() if k + 1 <= edge)
        return below / self.count


class Trace:
    """A time series downsampled to at most `max_points`: (time_s, value) pairs."""

    __slots__ = ("max_points", "points", "seen", "stride")

    def __init__(self, max_points: int = 256) -> None:
        self.max_points = max_points
        self.points: list[tuple[float, float]] = []
        self.stride = 1
        self.seen = 0

    def add(self, time_s: float, value: float) -> None:
        if self.seen % self.stride == 0:
            self.points.append((time_s, value))
            if len(self.points) >= self.max_points:
                self.points = self.points[::2]
                self.stride *= 2
        self.seen += 1
