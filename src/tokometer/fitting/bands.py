"""The one band routine: how wide an 80 % band must be to hold 80 % of out-of-sample errors.

Single-stream (`calibration`) and serving fits size their bands here, from log errors of rows the fit
did not see (`splits`). A band is `value * exp(+-Z_80 * sd)` (`costmodel.roofline.interval`); its sd
comes from the 80th percentile of |log error| under each grouped hold-out (the widest wins: a user
brings a new source *and* a new device), widened in quadrature for how far a row is from the data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from tokometer.costmodel.roofline import BAND_COVERAGE, Z_80

MIN_BAND_LOG_SD = (
    0.05  # no band narrower than +-6.6 %: run-to-run noise of one harness on one device
)
MIN_BAND_ERRORS = 3  # fewer out-of-sample errors than this size no band: the parent's applies


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile `q` (0-1) of `values`; NaN when empty."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    k = (len(ordered) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def band_sd(log_errors: Sequence[float]) -> float:
    """The log-space spread whose +-Z_80 band (the named 80 % z value) holds 80 % of these errors.

    Errors are heavy-tailed (a few chips realise far less than their class), so the RMS would give
    a band that holds fewer than 80 % of them; the 80th percentile of |error| holds exactly 80 %.
    """
    return percentile([abs(v) for v in log_errors], BAND_COVERAGE) / Z_80


def grouped_band_sd(
    errors_by_split: Mapping[str, Sequence[float]], floor: float = MIN_BAND_LOG_SD
) -> float | None:
    """The widest `band_sd` over grouped hold-outs (e.g. {"source": [...], "hardware": [...]}).

    Each split's errors are out of sample for one kind of novelty; the band must hold for the novelty
    the user brings, which is not known, so the wider wins. None when no split has `MIN_BAND_ERRORS`.
    """
    sds = [band_sd(errors) for errors in errors_by_split.values() if len(errors) >= MIN_BAND_ERRORS]
    return max(floor, *sds) if sds else None


def widened(log_sd: float, *extra_log_sds: float) -> float:
    """A band's spread with independent extra uncertainties added in quadrature (distance from the data)."""
    return math.sqrt(log_sd**2 + sum(e**2 for e in extra_log_sds))


def coverage(rows: Iterable[tuple[float, float | None, float | None]]) -> float | None:
    """Share of (measured, low, high) triples whose band holds the measurement; None when none has a band."""
    banded = [(v, lo, hi) for v, lo, hi in rows if lo is not None and hi is not None]
    if not banded:
        return None
    return sum(lo <= v <= hi for v, lo, hi in banded) / len(banded)
