"""The JSON serialiser reads what was computed; only the curves use-case runs the model again."""

from __future__ import annotations

from typing import Any

import pytest

from tokometer.costmodel import layout, roofline
from tokometer.report.json import estimate_dict, estimate_sections
from tokometer.usecases.curves import estimate_curves
from tokometer.usecases.estimate import estimate


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count `decode_step` calls wherever the cost model binds it."""
    count = [0]
    original = roofline.decode_step

    def counted(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(roofline, "decode_step", counted)
    monkeypatch.setattr(layout, "decode_step", counted)
    return count


@pytest.mark.parametrize(
    "setup",
    [
        {},
        {"model": "llama-3.1-70b", "hw": "h100-sxm", "quant": "fp8", "tp": 2, "draft": "llama-3.2-1b"},
        {"model": "llama-3.1-70b", "hw": "rtx-4090", "gpu_layers": 40},
    ],
)
def test_serialising_never_runs_the_model(setup: dict[str, Any], steps: list[int]) -> None:
    result = estimate(**setup)
    assert steps[0] > 0  # the counter sees the model run
    curves = estimate_curves(result)
    before = steps[0]
    document = estimate_dict(result, curves)
    estimate_sections(result)
    assert steps[0] == before
    assert len(document["batching"]["curve"]) == len(curves.batch) > 1
