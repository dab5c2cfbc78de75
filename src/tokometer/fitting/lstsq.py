"""The fits' solver (`fitting.calibration`): ridge least squares toward a prior with lower bounds (active set),
and Huber's M-estimator around it by iteratively reweighted least squares, with the loss the profiles (b_unit, the
INT32 bound K) compare candidates by."""

from __future__ import annotations

import math
from typing import Any

RIDGE = 0.5  # weight of the prior: half of one row of relative error, whatever the row count


def active_set_lstsq(
    rows: Any,  # a list of rows or an array
    target: Any,
    prior: list[float],
    lower: list[float],
    scales: list[float | None] | None = None,
    ridge: float = RIDGE,
) -> list[float]:
    """min sum (A x - b)^2 + ridge * sum ((x - prior)/scale)^2, with x >= lower (active set).

    `scales`: how far each unknown may stray from its prior at the cost of one row (default |prior|).
    """
    import numpy as np

    a = np.asarray(rows, dtype=float)
    b = np.asarray(target, dtype=float)
    p = np.asarray(prior, dtype=float)
    scale = np.maximum(np.abs(p), 1e-9)
    for i, given in enumerate(scales or []):
        if given is not None:
            scale[i] = given
    fixed: dict[int, float] = {}
    for _ in range(len(prior) + 1):
        free = [i for i in range(len(prior)) if i not in fixed]
        rhs = b - (a[:, list(fixed)] @ np.array(list(fixed.values())) if fixed else 0.0)
        weight = math.sqrt(ridge)
        reg_a = np.diag(weight / scale[free])
        reg_b = weight * p[free] / scale[free]
        full_a = np.vstack([a[:, free], reg_a])
        full_b = np.concatenate([rhs, reg_b])
        sol, *_ = np.linalg.lstsq(full_a, full_b, rcond=None)
        x = np.array(p, copy=True)
        x[free] = sol
        for i, v in fixed.items():
            x[i] = v
        violated = [i for i in free if x[i] < lower[i]]
        if not violated:
            return [float(v) for v in x]
        for i in violated:
            fixed[i] = lower[i]
    return [float(max(v, lo)) for v, lo in zip(x, lower, strict=True)]


# Huber's M-estimator (Huber, Ann. Math. Statist. 35, 1964) by iteratively reweighted least squares:
# a row whose relative error exceeds HUBER_K robust standard deviations (1.4826 x the median absolute
# error) counts linearly, not squared, so one harness's odd rows (a cached prompt, a throttled laptop)
# move the fit as much as any other row, not a hundred times more
HUBER_K = 1.345  # 95 % efficiency at the normal
NOISE_FLOOR = 0.02  # the robust spread is never taken below 2 %, run-to-run noise of a benchmark
PROFILE_HUBER_CUT = 0.25  # the loss that compares b_unit candidates: rows more than 25 % off count linearly
IRLS_STEPS = 6


def robust_lstsq(
    rows: list[list[float]],
    target: list[float],
    prior: list[float],
    lower: list[float],
    scales: list[float | None] | None,
    ridge: float,
) -> tuple[list[float], float]:
    """Huber IRLS around `active_set_lstsq`; returns the fit and its Huber loss (the ridge left out)."""
    import numpy as np

    a = np.asarray(rows, dtype=float)
    b = np.asarray(target, dtype=float)
    w = np.ones(len(b))
    x: list[float] = list(prior)
    for _ in range(IRLS_STEPS):
        root = np.sqrt(w)
        x = active_set_lstsq(a * root[:, None], b * root, prior, lower, scales, ridge)  # arrays: no list round trip
        r = a @ np.asarray(x) - b
        spread = max(1.4826 * float(np.median(np.abs(r))), NOISE_FLOOR)
        cut = HUBER_K * spread
        new_w = np.minimum(1.0, cut / np.maximum(np.abs(r), 1e-12))
        if bool(np.all(np.abs(new_w - w) <= 1e-3 + 1e-5 * np.abs(w))):  # np.allclose(new_w, w, atol=1e-3), unwrapped
            break
        w = new_w
    r = np.abs(a @ np.asarray(x) - b)
    cut = PROFILE_HUBER_CUT  # one cut for every candidate, so profiles (b_unit) compare like with like
    loss = float(np.sum(np.where(r <= cut, r**2, 2 * cut * r - cut**2)))
    return x, loss
