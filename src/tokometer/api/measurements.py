"""`tokometer.validate` (score predictions on measured rows) and `tokometer.calibrate` (fit them)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokometer.api.result import JsonResult
from tokometer.errors import InputError


@dataclass(frozen=True)
class ValidateResult(JsonResult):
    """Prediction errors per metric (and per scenario for serving rows), with every row's outcome."""

    report: Mapping[str, Any]
    serving: bool
    file: Path
    rows: tuple[Mapping[str, Any], ...] = ()  # serving rows; single-stream rows are `report["rows"]`
    show_rows: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer validate --json` shape (serving rows only with `rows=True`, as `--rows`)."""
        data = dict(self.report)
        if self.serving and self.show_rows:
            data["results"] = list(self.rows)
        return data


def _cases(cases: str | Path | None, serving: bool) -> Path:
    from tokometer.calibration_data import MEASUREMENTS_CSV
    from tokometer.fitting.serving_runs import default_data_path

    if serving and cases is not None:
        raise InputError("give a CASES file or --serving, not both", field="serving")
    return default_data_path() if serving else Path(cases) if cases is not None else Path(MEASUREMENTS_CSV)


def evidence_file(cases: str | Path | None, serving: bool) -> tuple[Path, bool]:
    """The file `validate`/`calibrate` read for these arguments, and whether it holds serving rows
    (the CLI picks its rendering from it without importing the fitting package itself)."""
    from tokometer.fitting.serving_runs import is_serving_file

    path = _cases(cases, serving)
    return path, is_serving_file(path)


def validate(
    cases: str | Path | None = None,
    *,
    serving: bool = False,
    baseline: str | None = None,
    loho: bool = False,
    lso: bool = False,
    rows: bool = False,
    time_limit_s: float | None = None,
    progress: bool = False,
    only: Sequence[str] = (),
    family: str | None = None,
) -> ValidateResult:
    """Predict every row of a measurements CSV and score the error per metric (`tokometer validate`).

    `cases` defaults to the shipped measurements.csv (`serving=True`: the shipped serving.csv); a file
    with serving columns goes through the serving simulator. `baseline` scores a peer formula,
    `loho`/`lso` hold out each device or each source. Without `cases` the single-stream rows are the
    shipped evidence: measurements.csv and every published/*.csv (never outside.csv). A simulated run
    past `time_limit_s` leaves its rows unscored with that reason; `progress=True` draws a bar on a terminal.
    `only` (publications' `source_id`) and `family` (a hardware family) restrict the rows predicted
    and reported; a hold-out still fits on every other row, so `lso=True, only=["X"]` is X's
    held-out error at the cost of one fit. For serving rows (`serving=True`) `only` also names the
    compiled 2025-26 publications (`calibration_data/serving_published/`, held out by construction) and
    `family` is serving-family words ("MoE", "MoE Hopper", "FP8": `fitting.serving_select`).
    """
    from tokometer.fitting.serving_runs import is_serving_file
    from tokometer.report.progress import wrapper

    if time_limit_s is not None and not (time_limit_s > 0 and math.isfinite(time_limit_s)):
        raise InputError(f"--time-limit must be a positive number of seconds, got {time_limit_s!r}", field="time_limit_s")
    shipped = cases is None and not serving
    path = _cases(cases, serving)
    if is_serving_file(path):
        from tokometer.fitting.serving_fit import validate_serving

        if baseline or loho:
            raise InputError(
                f"{'--baseline' if baseline else '--loho'} applies to single-stream rows; {path.name} has serving columns "
                "(its report carries the naive one-step predictor as naive_median_ape; --lso leaves each source out)"
            )
        if only or family:
            from tokometer.fitting.serving_select import validate_selected

            rep = validate_selected(only, family, fit_file=None if serving or cases is None else path, lso=lso, time_limit_s=time_limit_s,
                                    progress=lambda label: wrapper(label, as_json=not progress))
            return ValidateResult(rep, True, path, tuple(rep.pop("results")), rows)
        rep = validate_serving(path, loso=lso, time_limit_s=time_limit_s, progress=lambda label: wrapper(label, as_json=not progress))
        rep["mode"] = {"serving": True, "baseline": None, "loho": False, "lso": lso, "held_out": "source" if lso else None, "file": str(path),
                       "time_limit_s": time_limit_s}
        results = rep.pop("results")
        return ValidateResult(rep, True, path, tuple(results), rows)
    from tokometer.fitting.evidence import read_evidence
    from tokometer.fitting.families import (
        family_report,
        per_publication,
        select_cases,
        source_report,
    )
    from tokometer.fitting.features import case_source
    from tokometer.fitting.model import leave_one_hardware_out, leave_one_source_out
    from tokometer.fitting.rows import read_cases
    from tokometer.fitting.validation import report
    from tokometer.fitting.validation import validate as run

    if baseline and (loho or lso):
        raise InputError("--baseline does not combine with --loho or --lso: a peer formula has nothing to fit")
    if loho and lso:
        raise InputError("--loho and --lso are two different hold-outs: choose one")
    measured = read_evidence() if shipped else read_cases(path)
    chosen = select_cases(measured, only, family) if only or family else None
    if chosen is not None and not chosen:
        raise InputError(f"no rows of {', '.join(only) or 'any publication'} on {family or 'any'} hardware")
    if loho:
        results = leave_one_hardware_out(measured, only=chosen)
    elif lso:
        results = leave_one_source_out(measured, only=chosen)
    else:
        results = run(chosen if chosen is not None else measured, baseline=baseline, time_limit_s=time_limit_s,
                      progress=wrapper("validating rows", as_json=not progress))
    rep = report(results)
    rep["families"] = family_report(results)
    rep["sources"] = source_report(results)
    single = [r for r in results if r.case.n_devices == 1]
    rep["per_publication"] = {m: per_publication(single, m) for m in ("tg", "pp")}  # single device, each publication once
    held_out = "hardware" if loho else ("source" if lso else None)
    rep["mode"] = {"baseline": baseline, "loho": loho, "lso": lso, "held_out": held_out, "file": str(path),
                   "only": sorted({case_source(c) for c in chosen}) if chosen is not None and only else None, "family": family}
    return ValidateResult(rep, False, path, show_rows=rows)


@dataclass(frozen=True)
class CalibrateResult(JsonResult):
    """A fitted efficiency table and where it was written (or, with `reset`, which fit applies now)."""

    data: Mapping[str, Any]
    written: Path | None = None
    serving: bool = False
    table: Mapping[str, Any] = field(default_factory=dict)  # single-stream fits: group -> Efficiency
    counts: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer calibrate --json` shape."""
        return dict(self.data)


def calibrate(
    cases: str | Path | None = None,
    *,
    serving: bool = False,
    out: str | Path | None = None,
    reset: bool = False,
    progress: bool = False,
) -> CalibrateResult:
    """Fit engine efficiency on measured rows and write it (`tokometer calibrate`).

    The fit goes to the tokometer home (or `out`) and every later prediction uses it, until
    `reset=True` removes it. A file with serving columns (or `serving=True`) fits the serving simulator.
    Without `cases` the single-stream fit reads the shipped evidence (measurements.csv and published/*.csv).
    """
    from tokometer.catalog.efficiency import clear_fitted_table
    from tokometer.catalog.serving import clear_serving_efficiency_table
    from tokometer.report.progress import wrapper

    if reset:
        from tokometer.catalog.efficiency import EFFICIENCY_FILE, user_efficiency_file
        from tokometer.catalog.serving import SERVING_EFFICIENCY_FILE, user_serving_efficiency_file

        if cases is not None or out is not None:
            raise InputError("--reset takes no CASES file and no --out")
        user, shipped = (user_serving_efficiency_file(), SERVING_EFFICIENCY_FILE) if serving else (user_efficiency_file(), EFFICIENCY_FILE)
        removed = user.is_file()
        if removed:
            user.unlink()
        clear_fitted_table()
        clear_serving_efficiency_table()
        return CalibrateResult({"removed": str(user) if removed else None, "active": str(shipped), "user_file": str(user)},
                               serving=serving)
    from tokometer.fitting.serving_runs import is_serving_file

    from_evidence = cases is None and not serving
    path = _cases(cases, serving)
    if is_serving_file(path):
        from tokometer.catalog.serving import user_serving_efficiency_file
        from tokometer.fitting.serving_fit import calibrate_serving

        target = Path(out) if out is not None else user_serving_efficiency_file()
        target.parent.mkdir(parents=True, exist_ok=True)
        data = calibrate_serving(path, target, progress=wrapper("recording runs", as_json=not progress))
        clear_serving_efficiency_table()
        return CalibrateResult({"written": str(target), **data}, target, serving=True)
    from tokometer.catalog.efficiency import user_efficiency_file
    from tokometer.fitting.evidence import evidence_label, read_evidence
    from tokometer.fitting.model import calibrate as run_fit
    from tokometer.fitting.rows import read_cases
    from tokometer.fitting.tablefile import write_table

    measured = read_evidence() if from_evidence else read_cases(path)
    table, meta, counts = run_fit(
        measured, data_label=evidence_label() if from_evidence else path.name, progress=wrapper("reading rows", as_json=not progress)
    )
    target = Path(out) if out is not None else user_efficiency_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    write_table(target, table, meta, counts)
    clear_fitted_table()
    data = {"written": str(target), "meta": meta, "entries": {k: v.to_dict() for k, v in table.items()}}
    return CalibrateResult(data, target, table=table, counts=counts)
