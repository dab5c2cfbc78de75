"""A serving validation's report: per metric and per scenario, the median and p90 error of the rows
scored, the share within 15 %, and the naive one-step predictor's median beside it; every row listed
with its prediction or the reason it was not scored (`validate --serving`, the README serving table)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from tokometer.fitting.serving_runs import RowResult


def _summary(results: Sequence[RowResult]) -> dict[str, Any]:
    apes = [r.ape for r in results if r.ape is not None and r.reason is None]
    naive = [r.naive_ape for r in results if r.naive_ape is not None and r.reason is None]

    def pct(values: list[float], q: float) -> float | None:
        if not values:
            return None
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(math.ceil(q * len(ordered))) - 1)]

    return {
        "n": len(results),
        "scored": len(apes),
        "median_ape": statistics.median(apes) if apes else None,
        "p90_ape": pct(apes, 0.9),
        "within_15": sum(a <= 0.15 for a in apes) / len(apes) if apes else None,
        "naive_median_ape": statistics.median(naive) if naive else None,
    }


def report(results: Sequence[RowResult], **meta: Any) -> dict[str, Any]:
    by_metric: dict[str, list[RowResult]] = defaultdict(list)
    by_scenario: dict[str, dict[str, list[RowResult]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        by_metric[r.row.metric].append(r)
        by_scenario[r.row.scenario][r.row.metric].append(r)
    return {
        **meta,
        "rows": len(results),
        "scored": sum(1 for r in results if r.ape is not None and r.reason is None),
        "metrics": {m: _summary(v) for m, v in sorted(by_metric.items())},
        "scenarios": {s: {m: _summary(v) for m, v in sorted(d.items())} for s, d in sorted(by_scenario.items())},
        "unpredictable": [r.to_dict() for r in results if r.reason is not None],
        "results": [r.to_dict() for r in results],
    }
