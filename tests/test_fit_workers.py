"""Hold-out fits side by side in processes give the rows the same predictions as one process.

`model.held_out_fits` fits the folds of a cross-validation in `fit_workers` processes; each fold's
table depends only on its training rows, so the spread must change nothing but the wall time.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tokometer.domain.specs import Efficiency
from tokometer.fitting.calibration import fit_table
from tokometer.fitting.evidence import read_evidence
from tokometer.fitting.features import case_source
from tokometer.fitting.model import cross_validate
from tokometer.fitting.rows import Case
from tokometer.fitting.workers import FIT_WORKERS_ENV, fit_workers, fork_map


def quick_fit(feats: list[Any], source: str = "fitted", meta: dict[str, Any] | None = None) -> dict[str, Efficiency]:
    """The table without its bands: the fold loop is under test, not the bands."""
    return fit_table(feats, source=source)


def _few_sources() -> tuple[list[Case], list[Case]]:
    cases = read_evidence()
    counts = Counter(case_source(c) for c in cases)
    # three of the smaller publications: three folds, each trained on everything else
    small = sorted((n, s) for s, n in counts.items() if n >= 20)[:3]
    chosen = {s for _, s in small}
    return cases, [c for c in cases if case_source(c) in chosen]


def test_folds_in_two_processes_predict_what_one_process_does(monkeypatch: pytest.MonkeyPatch) -> None:
    cases, only = _few_sources()
    monkeypatch.setenv(FIT_WORKERS_ENV, "1")
    serial = cross_validate(cases, case_source, fit=quick_fit, only=only)
    monkeypatch.setenv(FIT_WORKERS_ENV, "2")
    assert fit_workers(3) == 2
    spread = cross_validate(cases, case_source, fit=quick_fit, only=only)
    assert [r.case for r in spread] == [r.case for r in serial]
    assert all(a.case is b.case for a, b in zip(spread, serial, strict=True))  # the caller's own rows come back
    assert [(r.predicted, r.low, r.high, r.reason, r.group) for r in spread] == [
        (r.predicted, r.low, r.high, r.reason, r.group) for r in serial
    ]
    assert sum(r.scored for r in serial) >= 10


def test_fit_workers_reads_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FIT_WORKERS_ENV, "4")
    assert fit_workers(10) == 4
    assert fit_workers(2) == 2  # never more processes than tasks
    assert fit_workers(1) == 1
    monkeypatch.setenv(FIT_WORKERS_ENV, "1")
    assert fit_workers(10) == 1
    monkeypatch.setenv(FIT_WORKERS_ENV, "many")
    assert fit_workers(10) == 1  # an unreadable setting: one process, never an error


def test_fork_map_keeps_order_reads_closures_and_never_nests(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import sys

    monkeypatch.setenv(FIT_WORKERS_ENV, "2")
    table = {i: i * i for i in range(7)}  # read through a closure: inherited by the workers, not pickled

    def task(i: int) -> tuple[int, int, int]:
        return table[i], os.getpid(), fit_workers(5)

    out = fork_map(task, 7)
    assert [square for square, _, _ in out] == [i * i for i in range(7)]
    if sys.platform.startswith("linux"):
        assert os.getpid() not in {pid for _, pid, _ in out}  # the work ran in the workers
        assert {inner for _, _, inner in out} == {1}  # a worker runs its own hold-outs in itself
