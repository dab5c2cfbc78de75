"""What each web endpoint answers, as plain JSON-ready dicts, from the public API (`tokometer.api`).

No HTTP here (that is `app.py`): these functions take checked arguments (see `inputs.py`) and
return data, so tests call them directly. The figures come from the same API functions a notebook
or the CLI calls (`estimate`, `utilization`, `list_catalog`, `show_hardware`, `list_runs`, `show_run`, and the
charts in `api/charts.py`); this module only shapes them for the pages.
"""

from __future__ import annotations

import math
import re
from typing import Any

from tokometer import __version__
from tokometer.api.catalogs import list_catalog, show_hardware
from tokometer.api.charts import (
    BROKEN_STREAM_TOK_S,
    DEFAULT_HARDWARE,
    DEFAULT_MODEL,
    DEFAULT_QUANT,
    READING_SPEED_TOK_S,
    decode_curve,
)
from tokometer.api.predict import estimate, utilization
from tokometer.api.runs import list_runs, show_run
from tokometer.errors import TokometerError

__all__ = ["catalog_rows", "curve", "estimate_dict", "hardware_entry", "meta", "run_detail", "runs", "utilisation"]


def meta(bench_urls: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "version": __version__,
        "reading_speed_tok_s": list(READING_SPEED_TOK_S),
        "broken_stream_tok_s": BROKEN_STREAM_TOK_S,
        "defaults": {"model": DEFAULT_MODEL, "hw": DEFAULT_HARDWARE, "quant": DEFAULT_QUANT},
        "bench_urls": list(bench_urls),
    }


def catalog_rows(kind: str) -> list[dict[str, Any]]:
    """`tokometer <kind> list --json` for hardware, models, quants or engines."""
    rows: list[dict[str, Any]] = list_catalog(kind).to_dict()[kind]
    return rows


def hardware_entry(name: str) -> dict[str, Any]:
    """`tokometer hardware show NAME --json`."""
    return show_hardware(name).to_dict()


def estimate_dict(kwargs: dict[str, Any]) -> dict[str, Any]:
    return estimate(**kwargs).to_dict()


def curve(kwargs: dict[str, Any], axis: str, values: list[Any] | None = None) -> dict[str, Any]:
    """Decode speed along one axis, `context` or `batch` (`api.charts.decode_curve`)."""
    return decode_curve(axis, values, **kwargs).to_dict()


def utilisation(
    kwargs: dict[str, Any], measured_decode_tok_s: float, measured_prefill_tok_s: float | None = None
) -> dict[str, Any]:
    """MBU and MFU of a measured run (docs/PHYSICS.md section 8), next to the prediction for it: the
    figures of `tokometer utilization` (`api.utilization`), in the page's shape.

    `measured_decode_tok_s` is per stream, as benchmarks report it; a step serves `batch` streams:
    MBU = measured tok/s x bytes read per step / datasheet bandwidth;
    MFU = measured tok/s x FLOPs per step / datasheet peak (prefill: FLOPs per prompt token).
    """
    report = utilization(measured_decode_tok_s=measured_decode_tok_s, measured_prefill_tok_s=measured_prefill_tok_s,
                         **kwargs).report
    u = report.utilisation
    d = estimate_dict(kwargs)  # the page shows the estimate as `/api/estimate` answers it, advice included
    code = "below-band" if report.placement == "far-below" else report.placement  # the page words both alike
    notes = []
    if code == "above-ceiling":
        notes.append(
            "above the ceiling: a finding, not a success - a wrong spec, a cache hit, speculative "
            "decoding or mis-counted tokens"
        )
    elif code == "below-band":
        notes.append(
            "below the 80 % band: look for partial CPU offload, a busy or throttled device, "
            "a deep context or an engine setting"
        )
    if u.peak_tflops is None:
        notes.append(f"{d['hardware']['name']} has no published compute peak: MFU cannot be computed")
    return {
        "utilisation": {
            "measured_decode_tok_s": measured_decode_tok_s,
            "measured_prefill_tok_s": measured_prefill_tok_s,
            "mbu": u.mbu,
            "decode_mfu": u.mfu,
            "prefill_mfu": u.prefill_mfu,
            "measured_over_ceiling": u.ceiling_fraction,
            "measured_over_estimate": u.estimate_fraction,
            "verdict_code": code,
            "notes": notes,
        },
        "estimate": d,
    }


def _ratio(a: Any, b: Any) -> float | None:
    if isinstance(a, int | float) and isinstance(b, int | float) and b and math.isfinite(a / b):
        return float(a / b)
    return None


def runs(limit: int = 50) -> dict[str, Any]:
    """Stored benchmark runs, newest first, each with measured / predicted ratios (`api.list_runs`)."""
    try:
        listed = list_runs(limit=limit).runs
    except ImportError:  # no run store installed
        return {"available": False, "runs": []}
    rows = []
    for run in listed:
        prediction = run.prediction or {}
        measured = run.summary.decode_tps.median if run.summary is not None else None
        rows.append(
            {
                **run.to_dict(),
                "measured_over_estimate": _ratio(measured, prediction.get("estimate_tok_s")),
                "measured_over_ceiling": _ratio(measured, prediction.get("ceiling_tok_s")),
            }
        )
    return {"available": True, "runs": rows}


RUN_ID = re.compile(r"[1-9][0-9]{0,17}")  # what a stored run's id looks like (ASCII digits, fits SQLite)


def run_detail(run_id: str, *, requests_limit: int = 200, requests_offset: int = 0) -> dict[str, Any] | None:
    """One stored run with one page of its requests (`api.show_run`), or None when there is no store or
    no such run.

    A large imported run can hold 10^5 requests; the page keeps the answer small, and
    `requests_total` says how many there are.
    """
    if not RUN_ID.fullmatch(run_id):
        return None
    try:
        shown = show_run(int(run_id), requests_limit=requests_limit, requests_offset=requests_offset)
    except (ImportError, LookupError, TokometerError):
        return None
    return {**shown.run.to_dict(stored=True), "requests_total": shown.requests_total, "requests_offset": requests_offset,
            "requests_limit": requests_limit}
