"""Leave-one-source-out check of a device level below the hardware class (docs/PHYSICS.md section 4, "A device
level below the hardware class"): in every fold the fold's own table predicts its training rows, each device's
offset is its training publications' median log errors shrunk toward 0 (`shrinkage.level_prior` across the
fold's devices), and each held-out row is read with and without its device's offset. The folds are
`fitting.model.held_out_fits`'s, the ones `tokometer validate --lso` scores.

    PYTHONPATH=src python scripts/device_level_check.py [folds.json]

Prints decode and prefill median / p90 / band with and without the offset, and the publications it moves by a
point or more. `folds.json` (optional) keeps every fold's held-out rows and training residuals for reuse.
About 10 minutes on two cores.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from typing import Any

from lso_compare import figures

from tokometer.fitting.evidence import read_evidence
from tokometer.fitting.features import case_source, features
from tokometer.fitting.model import held_out_fits
from tokometer.fitting.shrinkage import level_prior

NOT_FITTED = {"LOCALSCORE"}  # scored, never fitted (suite averages): no evidence of a device's share


def folds() -> list[dict[str, Any]]:
    """Every source's fold from `fitting.model.held_out_fits` (the splitter and fitter `validate --lso` runs): its
    held-out single-device rows, and its training publications' median log errors per device under its own table."""
    cases = read_evidence()
    single = [c for c in cases if c.n_devices == 1 and features(c) is not None]  # the rows a fold fits on
    wanted = [c for c in cases if c.n_devices == 1 and c.metric in ("tg", "pp") and not c.flag]  # suites' too
    result: list[dict[str, Any]] = []
    for model, pairs in held_out_fits(cases, case_source, only=wanted):
        group = case_source(pairs[0][0])
        held = [dict(metric=r.case.metric, measured=r.case.value, predicted=r.predicted, low=r.low, high=r.high,
                     hw=r.hardware_id, scored=r.scored) for _, r in pairs]
        errors: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for r in model.predict([c for c in single if case_source(c) != group]):
            if r.scored and r.predicted:
                errors[f"{r.hardware_id}|{r.case.metric}"][case_source(r.case) or ""].append(math.log(r.predicted / r.case.value))
        medians = {k: {s: statistics.median(v) for s, v in by.items()} for k, by in errors.items()}
        result.append(dict(fold=group, test=held, train=medians))
    return result


def report(all_folds: list[dict[str, Any]]) -> None:
    for metric in ("tg", "pp"):
        base: list[dict[str, Any]] = []
        dev: list[dict[str, Any]] = []
        moved: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
        for fold in all_folds:
            groups = {key.split("|")[0]: [m for s, m in by.items() if s not in NOT_FITTED]
                      for key, by in fold["train"].items() if key.endswith(f"|{metric}")}
            groups = {hw: obs for hw, obs in groups.items() if obs}
            prior = level_prior(groups)
            for t in fold["test"]:
                if t["metric"] != metric or not t["scored"] or not t["predicted"]:
                    continue
                u = prior.pooled_mean(groups.get(t["hw"], []))
                interval = [t["low"], t["high"]] if t["low"] else None
                base.append(dict(measured=t["measured"], predicted=t["predicted"], interval=interval))
                scaled = [v * math.exp(-u) for v in interval] if interval else None
                dev.append(dict(measured=t["measured"], predicted=t["predicted"] * math.exp(-u), interval=scaled))
                moved[fold["fold"]][0].append(abs(base[-1]["predicted"] / t["measured"] - 1))
                moved[fold["fold"]][1].append(abs(dev[-1]["predicted"] / t["measured"] - 1))
        print(metric, "class level only ", figures(base))
        print(metric, "with device level", figures(dev))
        for source, (a, b) in sorted(moved.items(), key=lambda kv: -len(kv[1][0])):
            if abs(statistics.median(a) - statistics.median(b)) >= 0.01:
                print(f"   {source:22s} {len(a):4d} rows {statistics.median(a):6.1%} -> {statistics.median(b):6.1%}")


if __name__ == "__main__":
    result = folds()
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as fh:
            json.dump(result, fh)
    report(result)
