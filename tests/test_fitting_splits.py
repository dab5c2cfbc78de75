"""The one splitter and the one band routine of `tokometer.fitting` (issue 25): held-out groups never
leak into their training fold, and bands hold the share of out-of-sample errors they claim."""

from __future__ import annotations

import math
import random

import pytest

from tokometer.calibration_data import MEASUREMENTS_CSV
from tokometer.costmodel.roofline import Z_80, interval
from tokometer.fitting.bands import band_sd, coverage, grouped_band_sd, widened
from tokometer.fitting.features import case_hardware_id, case_source
from tokometer.fitting.rows import read_cases
from tokometer.fitting.splits import k_fold, leave_one_group_out


@pytest.mark.parametrize("group_of", [case_source, case_hardware_id], ids=["source", "hardware"])
def test_held_out_group_never_in_its_training_fold(group_of) -> None:  # type: ignore[no-untyped-def]
    cases = read_cases(MEASUREMENTS_CSV)[::3]
    folds = list(leave_one_group_out(cases, group_of))
    assert len(folds) >= 2
    tested = 0
    for fold in folds:
        assert fold.test, fold.group
        assert all(str(group_of(c)) == fold.group for c in fold.test)
        assert not any(group_of(c) is not None and str(group_of(c)) == fold.group for c in fold.train)
        assert len(fold.train) + len(fold.test) == len(cases)
        tested += len(fold.test)
    assert tested == sum(group_of(c) is not None for c in cases)


def test_ungrouped_items_train_but_are_never_held_out() -> None:
    items = [("a", 1), ("b", 2), (None, 3), ("a", 4)]
    folds = list(leave_one_group_out(items, lambda x: x[0]))
    assert [f.group for f in folds] == ["a", "b"]
    assert all((None, 3) in f.train and (None, 3) not in f.test for f in folds)
    assert folds[0].test == (("a", 1), ("a", 4))


def test_k_fold_tests_every_item_once() -> None:
    items = list(range(23))
    folds = list(k_fold(items, 5))
    assert sorted(i for f in folds for i in f.test) == items
    for f in folds:
        assert not set(f.test) & set(f.train)
    with pytest.raises(ValueError):
        list(k_fold(items, 1))


def test_band_sized_on_errors_holds_eighty_percent_of_them() -> None:
    rng = random.Random(7)
    errors = [rng.gauss(0.0, 0.2) + (1.0 if rng.random() < 0.05 else 0.0) for _ in range(2000)]
    sd = band_sd(errors)
    held = coverage((math.exp(e), *astuple(interval(1.0, sd))) for e in errors)
    assert held is not None and abs(held - 0.8) < 0.01
    # heavy tail: the RMS band would be wider than the percentile band but hold a different share
    rms = math.sqrt(sum(e * e for e in errors) / len(errors))
    assert abs(rms - sd) > 0.01


def astuple(band):  # type: ignore[no-untyped-def]
    return band.low, band.high


def test_grouped_band_takes_the_widest_split_and_needs_errors() -> None:
    narrow = [0.01, -0.02, 0.03, 0.02]
    wide = [0.3, -0.4, 0.2, -0.25]
    assert grouped_band_sd({"source": wide, "hardware": narrow}) == pytest.approx(band_sd(wide))
    assert grouped_band_sd({"source": [0.0, 0.0, 0.0]}) == 0.05  # the floor
    assert grouped_band_sd({"source": [0.5, 0.5]}) is None  # too few errors to size a band
    assert widened(0.3, 0.4) == pytest.approx(0.5)
    assert band_sd([Z_80 * 0.1] * 5) == pytest.approx(0.1)


def test_hardware_families_split_devices_where_fits_miss_one_way() -> None:
    from tokometer.fitting.families import FAMILIES, family_report, hardware_family
    from tokometer.fitting.validation import validate

    assert hardware_family("m2-ultra-76c") == "Apple"
    assert hardware_family("h100-sxm") == "datacenter"
    assert hardware_family("mi300x") == "datacenter"
    assert hardware_family("rtx-4090") == "NVIDIA consumer"
    assert hardware_family("rx-7900-xtx") == "AMD and Intel GPUs"
    assert hardware_family("no-such-device") == "APUs and CPUs"
    results = validate(read_cases(MEASUREMENTS_CSV)[::5])
    report = family_report(results)
    assert set(report) <= set(FAMILIES) and {"Apple", "NVIDIA consumer", "datacenter"} <= set(report)
    single_tg = [r for r in results if r.case.n_devices == 1 and r.case.metric == "tg"]
    assert sum(m["tg"]["n"] for m in report.values()) == len(single_tg)


def test_group_k_fold_holds_out_whole_groups() -> None:
    from tokometer.fitting.splits import group_k_fold

    items = [(g, i) for i, g in enumerate("aabbbcddeeefg")] + [(None, 99)]
    folds = list(group_k_fold(items, lambda x: x[0], 3))
    assert len(folds) == 3
    seen = []
    for fold in folds:
        held = {g for g, _ in fold.test}
        assert not held & {g for g, _ in fold.train}  # no held-out group leaks into its training fold
        assert (None, 99) in fold.train
        seen += fold.test
    assert sorted(seen) == sorted(x for x in items if x[0] is not None)
    assert len(list(group_k_fold(items, lambda x: x[0], 50))) == 7  # one group per fold: leave-one-group-out


def test_per_publication_figures_weigh_each_publication_once() -> None:
    """A large publication read well and two small ones read badly: the row-weighted median is the large
    one's error, the per-publication median is the middle publication's, and the shares weigh 1/3 each."""
    from dataclasses import replace

    from tokometer.fitting.families import per_publication, weighted_quantile
    from tokometer.fitting.rows import CaseResult
    from tokometer.fitting.validation import summarise

    tg = [c for c in read_cases(MEASUREMENTS_CSV) if c.metric == "tg"][:12]
    plan = [("A", 0.10)] * 9 + [("B", 0.50)] + [("C", -0.40)] * 2  # (publication, signed error)
    results = [
        CaseResult(replace(c, raw={**c.raw, "source_id": src}), p, p / 1.2, p * 1.2, None, "g", "h100-sxm", {})
        for c, (src, err) in zip(tg, plan, strict=True)
        for p in (c.value * (1 + err),)
    ]
    rows = summarise(results, "tg")
    pubs = per_publication(results, "tg")
    assert rows["median_ape"] == pytest.approx(0.10)
    assert pubs["median_ape"] == pytest.approx(0.40) and pubs["p90_ape"] == pytest.approx(0.50)
    assert pubs["publications"] == 3 and pubs["scored"] == 12
    assert pubs["within_15"] == pytest.approx(1 / 3)
    assert pubs["interval_coverage"] == pytest.approx(1 / 3)  # bands of +-20 %: only A's rows fall inside theirs
    assert pubs["median_signed_error"] == pytest.approx(0.10)  # -0.40 (1/3), +0.10 (1/3), +0.50 (1/3)
    assert weighted_quantile([], [], 0.5) is None
    assert weighted_quantile([3.0, 1.0, 2.0], [1.0, 1.0, 1.0], 0.5) == 2.0
