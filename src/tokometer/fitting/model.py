"""Cross-validation and the sklearn-like face of the fit: `fit(rows) -> Model`, `Model.predict(rows)`,
`Model.score(rows)`, and `calibrate` (the table `tokometer calibrate` writes).

Every hold-out goes through the one splitter (`splits.leave_one_group_out`): a row is predicted by a
table fitted on the training fold of its group, which holds none of that group's rows, bands included.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

from tokometer.domain.specs import Efficiency
from tokometer.fitting.bands import band_sd
from tokometer.fitting.calibration import MIN_TG_ROWS, fit_with_bands, matches
from tokometer.fitting.features import case_group, case_hardware_id, case_source, features
from tokometer.fitting.rows import Case, CaseResult
from tokometer.fitting.splits import leave_one_group_out
from tokometer.fitting.validation import predict_case, report
from tokometer.fitting.workers import fork_map

Fitter = Callable[..., dict[str, Efficiency]]


@dataclass(frozen=True)
class Model:
    """A fitted efficiency table (engine/backend/hardware-class keys, with their fallbacks)."""

    table: dict[str, Efficiency]
    source: str = "fitted"
    n_rows: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    def predict(self, cases: list[Case]) -> list[CaseResult]:
        """Each row predicted with this table (its engine's default where no key covers it)."""
        from tokometer.errors import TokometerError
        from tokometer.fitting.validation import case_efficiency, resolve_case_hardware

        results = []
        for case in cases:
            eff: Efficiency | None = None
            try:  # as the shipped table is read (`efficiency_for`), with this table in its place
                eff = case_efficiency(case, resolve_case_hardware(case), entries=self.table, meta=self.meta)
            except TokometerError:
                pass  # predict_case records why the row cannot be predicted
            results.append(predict_case(case, efficiency=eff, strict=True))
        return results

    def score(self, cases: list[Case]) -> dict[str, Any]:
        """`validation.report` of `predict`: error per metric and per subset."""
        return report(self.predict(cases))


def fit(cases: list[Case], source: str = "fitted") -> Model:
    """Fit a table on every usable row (single device, unflagged tg/pp), bands from grouped hold-outs."""
    feats = [f for f in (features(c) for c in cases) if f is not None]
    meta: dict[str, Any] = {}
    table = fit_with_bands(feats, source=source, meta=meta)
    return Model(table, source=source, n_rows=len(feats), meta=meta)


def held_out_fits(
    cases: list[Case],
    fold_of: Callable[[Case], str | None],
    fit: Fitter = fit_with_bands,
    only: list[Case] | None = None,
) -> Iterator[tuple[Model, list[tuple[Case, CaseResult]]]]:
    """Each fold's table fitted without any row of the fold, with its wanted rows (`only`, else all) that have
    a group, each predicted by it: the one loop behind `cross_validate` and the diagnosis scripts.

    The folds are independent, so they are fitted side by side (`workers.fork_map`: one process per core,
    `TOKOMETER_FIT_WORKERS=1` keeps them in this one); each fold's table and predictions are the same
    either way, and come back in the folds' order.
    """
    wanted = cases if only is None else only
    wanted_ids = {id(c) for c in wanted}
    feats = [(id(c), f) for c in cases if (f := features(c)) is not None]
    position = {key: i for i, (key, _) in enumerate(feats)}
    tasks: list[tuple[str, list[int], list[Case]]] = []
    for fold in leave_one_group_out(list({id(c): c for c in [*cases, *wanted]}.values()), fold_of):
        test = [c for c in fold.test if id(c) in wanted_ids and case_group(c) is not None]
        if test:
            tasks.append((fold.group, [position[id(c)] for c in fold.train if id(c) in position], test))
    rows = [f for _, f in feats]

    def one(index: int) -> tuple[Model, list[CaseResult]]:
        group, train_index, test = tasks[index]
        meta: dict[str, Any] = {}
        model = Model(fit([rows[i] for i in train_index], source=f"fit without {group}", meta=meta), meta=meta)
        return model, model.predict(test)

    for (_, _, test), (model, results) in zip(tasks, fork_map(one, len(tasks)), strict=True):
        # a worker's rows are copies: each result is handed back on the caller's own row
        yield model, [(case, result if result.case is case else replace(result, case=case))
                      for case, result in zip(test, results, strict=True)]


def cross_validate(
    cases: list[Case],
    fold_of: Callable[[Case], str | None],
    fit: Fitter = fit_with_bands,
    only: list[Case] | None = None,
) -> list[CaseResult]:
    """Each row is predicted by a table fitted without any row of its fold (bands included).

    `fold_of` names what is held out (a device, a source); every row is predicted that way,
    single- and multi-device alike, so no figure is in-sample. `only`: predict just these cases
    (the fits still use every usable row of `cases`). A row without a fold or a group gets the
    shipped table (there is nothing to hold out).
    """
    predicted = {id(case): result for _, pairs in held_out_fits(cases, fold_of, fit, only) for case, result in pairs}
    return [predicted.get(id(c)) or predict_case(c) for c in (cases if only is None else only)]


def leave_one_hardware_out(
    cases: list[Case], fit: Fitter = fit_with_bands, only: list[Case] | None = None
) -> list[CaseResult]:
    """Each device is predicted by a table fitted without any of its rows (multi-device rows too)."""
    return cross_validate(cases, case_hardware_id, fit=fit, only=only)


def leave_one_source_out(
    cases: list[Case], fit: Fitter = fit_with_bands, only: list[Case] | None = None
) -> list[CaseResult]:
    """Each publication is predicted by a table fitted on the others only."""
    return cross_validate(cases, case_source, fit=fit, only=only)


def calibrate(
    cases: list[Case], data_label: str, progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None
) -> tuple[dict[str, Efficiency], dict[str, Any], dict[str, tuple[int, int, list[str]]]]:
    """Fit on every usable row; interval widths come from leave-one-hardware-out and
    leave-one-source-out residuals, with the spread of unseen groups per level in the meta.
    `progress` wraps the loop that reads the rows' features (a bar)."""
    feats = [f for f in (features(c) for c in (progress(cases) if progress else cases)) if f is not None]
    fitted_meta: dict[str, Any] = {}
    table = fit_with_bands(feats, source=f"fitted {date.today().isoformat()} on {data_label}", meta=fitted_meta)
    counts: dict[str, tuple[int, int, list[str]]] = {}
    for key in table:
        rows = [f for f in feats if matches(f.group, key)]
        counts[key] = (
            sum(f.case.metric == "tg" for f in rows),
            sum(f.case.metric == "pp" for f in rows),
            sorted({f.hardware_id for f in rows}),
        )
    meta: dict[str, Any] = {
        "fitted_on": date.today().isoformat(),
        "data": data_label,
        "method": "weighted least squares on relative time error, each level (engine, backend, hardware class) "
        "ridged toward its parent with an empirical-Bayes weight sigma^2/tau^2; 80 % bands from the 80th "
        "percentile of |log error| on hardware and on sources left out of the fit (the wider); unseen_*: "
        "tau per level, widening a borrowed entry's band",
        **fitted_meta,
    }
    spreads_multi = multi_device_spreads(cases)
    if (multi := spreads_multi["tg"]) is not None:
        meta["multi_device_residual_log_sd"] = round(multi, 6)
    if (multi_pp := spreads_multi["pp"]) is not None:
        meta["multi_device_prefill_residual_log_sd"] = round(multi_pp, 6)
    return table, meta, counts


def multi_device_spreads(cases: list[Case]) -> dict[str, float | None]:
    """Band for multi-device decode (`tg`) and prefill (`pp`): errors of the parallelism model on
    hardware left out of the fit.

    Several devices add what one device's fit cannot see (link latency, split imbalance, how far a
    pipeline overlaps), so their band is sized on their own out-of-sample errors, not borrowed from
    single-device rows. One fit per device serves both metrics (a fold's table depends only on the
    rows it holds out); a metric with fewer than `MIN_TG_ROWS` rows or scored errors has no band (None).
    """
    multi = {metric: [c for c in cases if c.metric == metric and c.n_devices > 1 and not c.flag] for metric in ("tg", "pp")}
    wanted = [c for metric in ("tg", "pp") if len(multi[metric]) >= MIN_TG_ROWS for c in multi[metric]]
    results = leave_one_hardware_out(cases, only=wanted) if wanted else []
    out: dict[str, float | None] = {}
    for metric in ("tg", "pp"):
        errors = [math.log(r.predicted / r.case.value) for r in results
                  if r.case.metric == metric and r.scored and r.predicted]
        out[metric] = max(0.05, band_sd(errors)) if len(errors) >= MIN_TG_ROWS else None
    return out


def write_shipped_table(target: Path | None = None) -> tuple[Path, dict[str, Efficiency], dict[str, Any]]:
    """Fit the shipped evidence (measurements.csv + published/*.csv) and write the table to `target`
    (default: the shipped `efficiency.toml`). `scripts/calibrate_shipped.py` runs it."""
    from tokometer.catalog.efficiency import EFFICIENCY_FILE, clear_fitted_table
    from tokometer.fitting.evidence import evidence_label, read_evidence
    from tokometer.fitting.tablefile import write_table

    path = target or EFFICIENCY_FILE
    table, meta, counts = calibrate(read_evidence(), data_label=evidence_label())
    write_table(path, table, meta, counts)
    clear_fitted_table()
    return path, table, meta
