"""One rule places a measured speed against the prediction; utilisation, grading and the web agree."""

from __future__ import annotations

import pytest

from tokometer.bench.grading import grade
from tokometer.bench.metrics import stats
from tokometer.costmodel.utilisation import placement

CEILING, ESTIMATE, LOW, HIGH = 200.0, 120.0, 100.0, 140.0


@pytest.mark.parametrize(
    ("measured", "expected"),
    [(250.0, "above-ceiling"), (160.0, "above-band"), (120.0, "in-band"), (100.0, "in-band"), (80.0, "below-band"), (50.0, "far-below")],
)
def test_placement_codes(measured: float, expected: str) -> None:
    got = placement(measured, ceiling_tok_s=CEILING, estimate_tok_s=ESTIMATE, band_low_tok_s=LOW, band_high_tok_s=HIGH)
    assert got == expected


def test_near_cpu_speed_is_far_below_even_inside_half_the_estimate() -> None:
    args = {"ceiling_tok_s": CEILING, "estimate_tok_s": ESTIMATE, "band_low_tok_s": LOW, "band_high_tok_s": HIGH}
    assert placement(90.0, **args) == "below-band"
    assert placement(90.0, **args, cpu_only_tok_s=50.0) == "far-below"


@pytest.mark.parametrize(("measured", "code"), [(250.0, "above-ceiling"), (50.0, "far-below"), (80.0, "below-range")])
def test_grading_flags_follow_the_placement(measured: float, code: str) -> None:
    prediction = {
        "decode": {"ceiling_tok_s": CEILING, "estimate_tok_s": ESTIMATE, "interval_tok_s": {"low": LOW, "high": HIGH}},
        "hardware": {},
    }
    result = grade({"decode_tps": stats([measured])}, prediction)
    assert result["flags"][0]["code"] == code


@pytest.mark.parametrize("measured", [250.0, 160.0, 120.0, 80.0, 20.0])
def test_the_web_verdict_is_the_placement(measured: float) -> None:
    from tokometer.web.compute import utilisation

    setup = {"model": "llama-3.1-8b", "hw": "rtx-4090", "quant": "q4-k-m"}
    answer = utilisation(setup, measured_decode_tok_s=measured)
    dec = answer["estimate"]["decode"]
    expected = placement(
        measured,
        ceiling_tok_s=dec["ceiling_tok_s"],
        estimate_tok_s=dec["estimate_tok_s"],
        band_low_tok_s=dec["interval_tok_s"]["low"],
        band_high_tok_s=dec["interval_tok_s"]["high"],
    )
    assert answer["utilisation"]["verdict_code"] == ("below-band" if expected == "far-below" else expected)
