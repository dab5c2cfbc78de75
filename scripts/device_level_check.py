"""Leave-one-source-out check of a device level below the hardware class (docs/PHYSICS.md section 4, "A device
level below the hardware class"): in every fold the fold's own table predicts its training rows, each device's
offset is its training publications' median log errors shrunk toward 0 (`shrinkage.level_prior` across the
fold's devices), and each held-out row is read with and without its device's offset.

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

from tokometer.fitting.calibration import fit_with_bands
from tokometer.fitting.evidence import read_evidence
from tokometer.fitting.features import Features, case_group, case_source, features
from tokometer.fitting.model import Model
from tokometer.fitting.rows import Case
from tokometer.fitting.shrinkage import level_prior
from tokometer.fitting.splits import leave_one_group_out
from tokometer.fitting.workers import fork_map

NOT_FITTED = {"LOCALSCORE"}  # scored, never fitted (suite averages): no evidence of a device's share


def folds() -> list[dict[str, Any]]:
    cases = read_evidence()
    feats = [(c, f) for c in cases if (f := features(c)) is not None]
    tasks: list[tuple[str, list[Features], list[Case]]] = []
    for fold in leave_one_group_out(cases, case_source):
        test = [c for c in fold.test if case_group(c) is not None and c.n_devices == 1 and c.metric in ("tg", "pp") and not c.flag]
        if test:
            train_ids = {id(c) for c in fold.train}
            tasks.append((fold.group, [f for c, f in feats if id(c) in train_ids], test))

    def one(i: int) -> dict[str, Any]:
        group, train, test = tasks[i]
        spreads: dict[str, float] = {}
        model = Model(fit_with_bands(train, source=f"fit without {group}", spreads=spreads), meta=dict(spreads))
        held = [dict(metric=r.case.metric, measured=r.case.value, predicted=r.predicted, low=r.low, high=r.high,
                     hw=r.hardware_id, scored=r.scored) for r in model.predict(test)]
        errors: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for r in model.predict([f.case for f in train if f.case.n_devices == 1]):
            if r.scored and r.predicted:
                errors[f"{r.hardware_id}|{r.case.metric}"][case_source(r.case)].append(math.log(r.predicted / r.case.value))
        medians = {k: {s: statistics.median(v) for s, v in by.items()} for k, by in errors.items()}
        return dict(fold=group, test=held, train=medians)

    return fork_map(one, len(tasks))


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
