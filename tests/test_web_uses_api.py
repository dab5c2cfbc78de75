"""The web's endpoints answer exactly what the public API returns for the same inputs: the page JSON is
each API result's `to_dict()` (tests/test_layering.py checks the handlers import nothing else that
computes)."""

from __future__ import annotations

from dataclasses import is_dataclass
from typing import Any

import pytest
from starlette.testclient import TestClient

import tokometer
from tokometer.api import charts
from tokometer.api.serving_curve import ServingQuery, serving_curve
from tokometer.web.app import create_app

SETUP = {"model": "llama-3.1-8b", "hw": "rtx-4090", "quant": "q4_k_m"}


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def test_curve_roofline_and_latency_are_the_api_results(client: TestClient) -> None:
    curve = charts.decode_curve("batch", [1, 8, 64], **SETUP)
    assert client.post("/api/curve", json={**SETUP, "axis": "batch", "values": [64, 1, 8]}).json() == curve.to_dict()
    speeds = [p["decode"]["estimate_tok_s"] for p in curve.to_dict()["points"]]
    assert curve.xs == (1, 8, 64) and speeds == sorted(speeds, reverse=True)  # more streams, less each
    roof = charts.roofline([1, 16], **SETUP)
    assert client.post("/api/roofline", json={**SETUP, "batches": [1, 16]}).json() == roof.to_dict()
    assert [p["batch"] for p in roof.to_dict()["decode"]] == [1, 16]
    latency = charts.latency_at_rate(200.0, 40.0, 101)
    assert client.post("/api/latency", json={"ttft_ms": 200, "tok_s": 40, "output_tokens": 101}).json() == latency.to_dict()
    assert latency.to_dict()["e2e_s"] == pytest.approx(0.2 + 100 / 40)
    for result in (curve, roof, latency):
        assert is_dataclass(result) and type(result).__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_utilisation_is_tokometer_utilization(client: TestClient) -> None:
    page = client.post("/api/utilisation", json={**SETUP, "measured_decode_tok_s": 150}).json()["utilisation"]
    report = tokometer.utilization(measured_decode_tok_s=150.0, **SETUP).report
    assert page["mbu"] == report.utilisation.mbu and page["decode_mfu"] == report.utilisation.mfu
    assert page["measured_over_ceiling"] == report.utilisation.ceiling_fraction
    assert page["verdict_code"] == ("below-band" if report.placement == "far-below" else report.placement)


def test_the_serving_sweep_and_plan_are_the_api_results(client: TestClient) -> None:
    body: dict[str, Any] = {"model": "llama-3.1-8b", "hw": "h100-sxm", "quant": "bf16", "prompt_tokens": 300,
                            "output_tokens": 50, "num_requests": 100, "rates_per_s": [2, 8]}
    sweep = serving_curve(ServingQuery(model="llama-3.1-8b", hw="h100-sxm", quant="bf16", prompt_tokens=300, output_tokens=50,
                                       num_requests=100, rates_per_s=(2.0, 8.0)))
    assert client.post("/api/simulate", json=body).json() == sweep.to_dict()
    with pytest.raises(tokometer.InputError) as caught:
        serving_curve(model="llama-3.1-8b", hw="h100-sxm", tp=0)
    assert caught.value.field == "tp"
    plan = tokometer.plan("llama-3.1-8b", rate=4, slo_ttft_p99=1, slo_tpot_p99=1, hw="h100-sxm", quant="bf16", strict=False)
    answer = client.post("/api/plan", json={"model": "llama-3.1-8b", "rate_per_s": 4, "slo_ttft_ms": 1, "slo_tpot_ms": 1,
                                            "hw": "h100-sxm", "quant": "bf16"}).json()
    assert answer == {**plan.to_dict(), "best_ttft_p99_s": plan.plan.best_ttft_p99_s, "best_tpot_p99_s": plan.plan.best_tpot_p99_s}
    assert answer["configs"] == [] and answer["best_ttft_p99_s"] > 0.001  # nobody meets 1 ms: an answer, not an error
    with pytest.raises(tokometer.InputError, match="no configuration"):
        tokometer.plan("llama-3.1-8b", rate=4, slo_ttft_p99=1, slo_tpot_p99=1, hw="h100-sxm", quant="bf16")


def test_feel_is_tokometer_feel(client: TestClient) -> None:
    page = client.post("/api/feel", json={"rates": [4, 40], "lang": "fr", "seconds": 3}).json()
    assert page == tokometer.feel([4, 40], lang="fr", seconds=3.0).with_tokens()
