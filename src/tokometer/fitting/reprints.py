"""Benchmark outputs a publication prints twice: one measurement, counted once (issue 29).

Documentation sites reuse a benchmark block across pages and sections. The SGLang cookbook's Kimi-K2.6 page
prints the Kimi-K2.5 page's ten `bench_serving` outputs digit for digit (and GLM-5's page two of GLM-5.1's);
GPUStack's performance lab prints eight GLM-4.5-Air outputs once under 4 x A100 and again under 4 x H100, and
reuses a baseline block in two sections of one page. Scored as printed, such a block weighs twice in the
medians, and under two devices it is at most one device's run.

A block is the rows one printed output gave (its row ids differ only by the metric suffix). Two blocks are
the same output when every (metric, value) of one equals the other's, over at least `MIN_METRICS` metrics
(a single rounded figure such as 0.25 req/s may recur by chance; a dozen figures to their last digit do
not). Then:

- within one run (the same setup, a block reprinted in another section), the later block's rows are dropped;
- across runs on the same device, the later run is not scored (`REPRINT`): the first copy stands for both;
- across runs on different devices, neither is scored (`TWO_DEVICES`): which device ran it is not known.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

MIN_METRICS = 4  # figures a block must share, all of them, to be read as the same printed output

REPRINT = "the source prints this run's benchmark output twice, digit for digit: counted once, as {other}"
TWO_DEVICES = ("the source prints the same benchmark output under two devices, digit for digit: "
               "which one ran it is not known ({a}; {b})")


class _Row(Protocol):
    @property
    def row_id(self) -> str: ...
    @property
    def metric(self) -> str: ...
    @property
    def value(self) -> float: ...
    def text(self, column: str) -> str: ...


class _Run(Protocol):
    @property
    def rows(self) -> Sequence[_Row]: ...

    reason: str | None
    deploy_kwargs: dict[str, Any]


R = TypeVar("R", bound=_Row)


def block_id(row: _Row) -> str:
    """The printed output a row came from: its row id without the `-metric` suffix (the row id itself when
    the source names rows otherwise)."""
    suffix = f"-{row.metric}"
    return row.row_id[: -len(suffix)] if row.row_id.endswith(suffix) else row.row_id


def _signature(rows: Iterable[_Row]) -> frozenset[tuple[str, float]] | None:
    sig = frozenset((r.metric, r.value) for r in rows)
    return sig if len(sig) >= MIN_METRICS else None


def drop_repeated_blocks(rows: Sequence[R]) -> list[R]:
    """`rows` (one run's) without the blocks that repeat an earlier block of theirs figure for figure."""
    blocks: dict[str, list[R]] = defaultdict(list)
    for r in rows:
        blocks[block_id(r)].append(r)
    seen: set[frozenset[tuple[str, float]]] = set()
    kept: list[R] = []
    for members in blocks.values():
        sig = _signature(members)
        if sig is not None and sig in seen:
            continue
        if sig is not None:
            seen.add(sig)
        kept.extend(members)
    return kept


def mark_reprinted_runs(runs: Sequence[_Run]) -> None:
    """Set the reason of each run whose whole output another run of the same source already printed."""
    first: dict[tuple[str, frozenset[tuple[str, float]]], _Run] = {}
    for run in runs:
        sig = _signature(run.rows)
        if sig is None:
            continue
        key = (run.rows[0].text("source_id"), sig)
        earlier = first.get(key)
        if earlier is None:
            first[key] = run
            continue
        here, there = _device(run), _device(earlier)
        if here == there:
            _unscored(run, REPRINT.format(other=block_id(earlier.rows[0])))
        else:
            for each in (earlier, run):
                _unscored(each, TWO_DEVICES.format(a=there, b=here))


def _unscored(run: _Run, reason: str) -> None:
    """A run with a reason has no deployment (`serving_runs.plan_run`'s rule): it is listed, not simulated."""
    run.reason = reason
    run.deploy_kwargs = {}


def _device(run: _Run) -> str:
    r = run.rows[0]
    return f"{r.text('n_devices') or '1'} x {r.text('hardware_id') or r.text('hardware_as_stated')}"
