"""The architecture-family level of the fit (docs/PHYSICS.md section 4, "Architecture families"): one offset per GPU
family (`domain.families`) and metric, learnt from the residuals of the engine/backend/class table on its own rows.

Each publication that measured devices of a family gives one observation, the median of u = log(predicted /
measured time) over its rows of that family (a publication, not a row, is the unit: what a family shares is what
holds from one harness and build to the next); the family's offset is their mean shrunk toward 0 by the
empirical-Bayes weight of `shrinkage.level_prior` across families, so a family seen by one publication moves
little and one that several agree on moves to where they agree. A family with fewer than `MIN_FAMILY_ROWS` rows
of a metric gets no offset for it. Decode offsets come first; prefill's are read
with the decode offsets in place (a prompt's fixed costs are decode's). Rows run on a CPU backend have no family
(`Features.family`, `domain.families.gpu_family`).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable

from tokometer.domain.families import family_scaled
from tokometer.domain.specs import Efficiency
from tokometer.fitting.features import Features, predicted_time
from tokometer.fitting.shrinkage import level_prior

FamilyOffsets = dict[str, dict[str, float]]  # metric ("tg", "pp") -> family -> u
# rows of one family and metric the training data must hold for the family to get an offset: fewer are a
# measurement's noise (a single MI300X row moved the whole CDNA 3 family by 1.9x), not what the family shares
MIN_FAMILY_ROWS = 6


def family_offsets(
    feats: list[Features], lookup: Callable[[str], Efficiency | None], source_of: Callable[[Features], str],
) -> FamilyOffsets:
    """Each family's shrunk offset per metric, from `feats` predicted by the table `lookup` reads."""
    offsets: FamilyOffsets = {}
    for metric in ("tg", "pp"):
        by_family: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for f in feats:
            if not f.family or f.case.metric != metric or (eff := lookup(f.group)) is None:
                continue
            eff = family_scaled(eff, offsets, f.family)  # prefill: with decode's offsets in place
            by_family[f.family][source_of(f)].append(math.log(predicted_time(f, eff) / f.t_measured_s))
        groups = {family: [statistics.median(v) for v in by.values()] for family, by in by_family.items()
                  if sum(map(len, by.values())) >= MIN_FAMILY_ROWS}
        prior = level_prior(groups)
        offsets[metric] = {family: round(prior.pooled_mean(obs), 6) for family, obs in sorted(groups.items())}
    return offsets
