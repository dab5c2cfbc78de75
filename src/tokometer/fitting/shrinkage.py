"""Partial pooling: how far a group (an engine, a backend, a hardware class) may stray from its parent.

The named estimator is the normal-normal hierarchical model with its level variance estimated from
the data (empirical Bayes, method of moments as in DerSimonian & Laird 1986): a group g's true log
efficiency offset from its parent is u_g ~ N(0, tau^2), its rows measure it with noise sigma^2 each,
so the posterior mean of u_g is its rows' mean log error shrunk by n tau^2 / (n tau^2 + sigma^2).
tau^2 (one per level) comes from the spread of the groups' mean errors beyond what their noise
explains; sigma^2 from the spread inside groups.

In the linear time fits of `calibration` (relative errors, ~ log errors) the same posterior is a
ridge toward the parent's coefficients with weight sigma^2 / tau^2 per relative unit of deviation:
`LevelPrior.ridge`. A thin group (n << sigma^2 / tau^2 rows) keeps its parent's values; a
thick one keeps its own. A group with no rows is its parent, and `LevelPrior.tau` is how much wider
its band must be: the spread of an unseen group around its parent.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# bounds on the pooling weight (in rows of relative error): never a free fit (below), never frozen (above)
MIN_RIDGE = 0.05
MAX_RIDGE = 200.0
MIN_TAU2 = 1e-4  # (1 %)^2: a level whose groups agree to better than this is treated as agreeing to 1 %


@dataclass(frozen=True)
class LevelPrior:
    """One level's prior: between-group variance tau2 and within-group variance sigma2 of log errors."""

    tau2: float
    sigma2: float
    n_groups: int

    @property
    def tau(self) -> float:
        """sd of an unseen group's log efficiency around its parent's: the widening its band gets."""
        return math.sqrt(self.tau2)

    @property
    def ridge(self) -> float:
        """Rows' worth of pull toward the parent: sigma^2 / tau^2, within [MIN_RIDGE, MAX_RIDGE]."""
        return min(MAX_RIDGE, max(MIN_RIDGE, self.sigma2 / max(self.tau2, MIN_TAU2)))

    def weight(self, n_rows: int) -> float:
        """Share of a group's own mean kept after pooling: n tau^2 / (n tau^2 + sigma^2)."""
        if n_rows <= 0:
            return 0.0
        return n_rows / (n_rows + self.ridge)

    def pooled_mean(self, log_errors: Sequence[float]) -> float:
        """Posterior mean of a group's offset from its parent (0 = the parent's value)."""
        if not log_errors:
            return 0.0
        return self.weight(len(log_errors)) * statistics.fmean(log_errors)


# Where the data cannot estimate a level's spread (fewer than MIN_GROUPS informative groups), a weak
# prior: groups differ by about 30 % (tau = 0.3), the size of the gaps between memory systems that
# Little's law and realised-bandwidth studies show (HBM vs GDDR vs unified memory, docs/PHYSICS.md section 4)
DEFAULT_TAU = 0.3
MIN_GROUPS = 3
DEFAULT_PRIOR = LevelPrior(tau2=DEFAULT_TAU**2, sigma2=0.1**2, n_groups=0)


def level_prior(errors_by_group: Mapping[str, Sequence[float]], fallback: LevelPrior = DEFAULT_PRIOR) -> LevelPrior:
    """Method-of-moments tau^2 and sigma^2 from each group's log errors under its parent.

    sigma^2: pooled variance inside groups (groups of 2+ rows). tau^2: the mean squared group mean
    (the parent is fitted on these very rows, so the means centre near 0) minus the part of it
    noise explains (sigma^2 / n per group), at least `MIN_TAU2`; the mean square is scaled by
    k / (k - 1), since the parent, fitted on the same rows, centred the k group means. No group with
    two rows estimates nothing (`fallback`); fewer than `MIN_GROUPS` groups estimate sigma^2 only
    (tau^2 from `fallback`).
    """
    groups = [list(v) for v in errors_by_group.values() if v]
    within = [(len(g) - 1, statistics.variance(g)) for g in groups if len(g) >= 2]
    dof = sum(d for d, _ in within)
    if dof == 0:
        return fallback
    sigma2 = sum(d * v for d, v in within) / dof
    if len(groups) < MIN_GROUPS:
        return LevelPrior(tau2=fallback.tau2, sigma2=sigma2, n_groups=len(groups))
    k = len(groups)  # the parent was fitted on these rows: its mean took one of k degrees of freedom
    tau2 = k / (k - 1) * statistics.fmean(statistics.fmean(g) ** 2 for g in groups) - statistics.fmean(sigma2 / len(g) for g in groups)
    return LevelPrior(tau2=max(MIN_TAU2, tau2), sigma2=sigma2, n_groups=len(groups))
