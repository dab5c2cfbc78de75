"""Grading: share of the ceiling, MBU, MFU and the flags of PHYSICS.md section 8."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokometer.bench.grading import grade, prediction_headline, validity_flags
from tokometer.bench.metrics import stats


def prediction(ceiling: float = 200.0, estimate: float = 120.0) -> dict[str, Any]:
    return {
        "decode": {
            "ceiling_tok_s": ceiling,
            "estimate_tok_s": estimate,
            "interval_tok_s": {"low": estimate * 0.9, "high": estimate * 1.1, "coverage": 0.8},
            "bytes_per_token": 5e9,
            "batch": 1,
            "depth_tokens": 300.0,
        },
        "prefill": {"prompt_tokens": 1000, "flops": 1.6e13, "tok_s": 5000.0, "ttft_s": 0.2},
        "hardware": {"id": "gpu-x", "name": "GPU X", "memory_bandwidth_gb_per_s": 1000.0, "peak_tflops": 100.0},
        "model": {"name": "Model 8B", "quant": "q4-k-m"},
        "engine": {"id": "llama-cpp"},
    }


def summary(decode: float, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"decode_tps": stats([decode]), "requests_ok": 3, "requests_failed": 0, "requests_total": 3}
    base.update(extra)
    return base


def codes(result: dict[str, Any]) -> list[str]:
    return [f["code"] for f in result["flags"]]


def test_inside_the_range_with_mbu_and_mfu() -> None:
    result = grade(summary(120.0, prefill_tps=stats([4000.0])), prediction())
    assert result["realised_fraction"] == pytest.approx(0.6)
    assert result["within_interval"] and codes(result) == []
    assert result["achieved_bandwidth_gb_per_s"] == pytest.approx(600.0)  # 120 tok/s * 5 GB
    assert result["mbu"] == pytest.approx(0.6)
    assert result["achieved_prefill_tflops"] == pytest.approx(64.0)  # 4000 tok/s * 16 GFLOP
    assert result["mfu_prefill"] == pytest.approx(0.64)
    assert "60% of the physical ceiling" in result["verdict"] and "inside" in result["verdict"]


def test_above_the_ceiling_is_a_finding() -> None:
    result = grade(summary(260.0), prediction())
    assert codes(result)[0] == "above-ceiling"
    assert "speculative decoding" in result["flags"][0]["message"]


def test_far_below_points_at_offload() -> None:
    result = grade(summary(30.0), prediction())
    assert codes(result)[0] == "far-below" and "offloaded" in result["flags"][0]["message"]
    assert codes(grade(summary(100.0), prediction())) == ["below-range"]


def test_far_below_on_a_cpu_does_not_point_at_offload() -> None:
    """Issue #14, item 11: when the device is the CPU there are no layers to offload."""
    on_cpu = prediction()
    on_cpu["hardware"] = {**on_cpu["hardware"], "kind": "cpu"}
    message = grade(summary(30.0), on_cpu)["flags"][0]["message"]
    assert "offloaded" not in message and "threads" in message


def test_batched_levels_use_the_aggregate_for_mbu() -> None:
    result = grade(summary(100.0, aggregate_tps=stats([400.0])), prediction(), batch=4)
    assert result["measured_aggregate_tps"] == 400.0
    assert result["mbu"] == pytest.approx(2.0)  # 400 tok/s x 5 GB per token over 1000 GB/s


def test_validity_flags_without_a_prediction() -> None:
    s = summary(
        100.0,
        requests_failed=2,
        requests_total=5,
        errors={"dropped": 2},
        first_error="connection dropped",
        client_server_gap_fraction=-0.2,
        server_decode_tps=stats([125.0]),
        cached_tokens_max=512,
        ended_early=1,
        finish_reasons={"stop": 1, "length": 2},
        output_tokens_source="events",
        decode_spread_fraction=0.5,
    )
    result = grade(s, None)
    assert codes(result) == ["failures", "client-server-gap", "cache-hit", "ended-early", "counted-events", "high-spread"]
    assert result["verdict"] == "no prediction to grade against"
    assert "125.0" in result["flags"][1]["message"]
    assert validity_flags(summary(100.0)) == []


def test_no_measurement_no_grade() -> None:
    assert grade({"decode_tps": stats([])}, prediction())["verdict"] == "no successful measurement"


def test_headline_keeps_what_the_store_lists() -> None:
    head = prediction_headline(prediction())
    assert head["ceiling_tok_s"] == 200.0 and head["estimate_tok_s"] == 120.0
    assert head["hardware"] == "gpu-x" and head["memory_bandwidth_gb_per_s"] == 1000.0


@given(st.floats(min_value=0.1, max_value=1e4), st.floats(min_value=1.0, max_value=1e4))
def test_flag_above_ceiling_exactly_when_faster_than_it(measured: float, ceiling: float) -> None:
    result = grade(summary(measured), prediction(ceiling=ceiling, estimate=ceiling * 0.6))
    assert ("above-ceiling" in codes(result)) == (measured > ceiling)
    assert result["realised_fraction"] == pytest.approx(measured / ceiling)


@given(
    decode=st.floats(1.0, 1000.0),
    bytes_per_token=st.floats(1e6, 1e11),
    bandwidth=st.floats(10.0, 10_000.0),
    prefill=st.floats(10.0, 1e5),
)
def test_mbu_and_mfu_are_the_cost_model_rules(decode: float, bytes_per_token: float, bandwidth: float, prefill: float) -> None:
    """Grading, `tokometer utilization` and the web compute MBU and MFU with the same two functions."""
    from tokometer.costmodel.utilisation import mbu, mfu

    pred = prediction()
    pred["decode"]["bytes_per_token"] = bytes_per_token
    pred["hardware"]["memory_bandwidth_gb_per_s"] = bandwidth
    result = grade(summary(decode, prefill_tps=stats([prefill])), pred)
    assert result["mbu"] == mbu(decode * bytes_per_token, bandwidth)
    assert result["mfu_prefill"] == mfu(prefill * 1.6e13 / 1000, 100.0)


def with_prefill_band(pred: dict[str, Any]) -> dict[str, Any]:
    pred["prefill"].update(ceiling_tok_s=12000.0, interval_tok_s={"low": 3500.0, "high": 7000.0, "coverage": 0.8})
    return pred


def test_prefill_above_its_roofline_is_a_finding() -> None:
    """Repeated prompts through a prefix cache read faster than the datasheet peak allows (the kind of
    TTFT tenstorrent/tt-inference-server's GPU sweeps print): flagged, not praised."""
    result = grade(summary(120.0, prefill_tps=stats([15000.0])), with_prefill_band(prediction()))
    assert codes(result)[0] == "prefill-above-ceiling"
    assert "125% of the prompt's roofline" in result["flags"][0]["message"]
    assert result["prefill_within_interval"] is False and result["prefill_ceiling_tok_s"] == 12000.0


@pytest.mark.parametrize(("measured", "expected"), [(5000.0, []), (2000.0, ["prefill-below-range"]), (9000.0, [])])
def test_prefill_inside_or_below_its_band(measured: float, expected: list[str]) -> None:
    result = grade(summary(120.0, prefill_tps=stats([measured])), with_prefill_band(prediction()))
    assert codes(result) == expected
    assert result["prefill_within_interval"] is (3500.0 <= measured <= 7000.0)


def test_a_prediction_stored_before_prefill_bands_grades_as_before() -> None:
    result = grade(summary(120.0, prefill_tps=stats([15000.0])), prediction())
    assert codes(result) == [] and "prefill_within_interval" not in result and "prefill_ceiling_tok_s" not in result


def test_the_estimate_json_carries_what_prefill_grading_reads() -> None:
    from tokometer.report.json import estimate_json
    from tokometer.usecases.estimate import estimate

    pre = estimate_json(estimate("llama-3.1-8b", "rtx-4090", prompt_tokens=1000))["prefill"]
    result = grade(summary(120.0, prefill_tps=stats([pre["ceiling_tok_s"] * 1.01])), {**prediction(), "prefill": pre})
    assert "prefill-above-ceiling" in codes(result)
    inside = grade(summary(120.0, prefill_tps=stats([pre["tok_s"]])), {**prediction(), "prefill": pre})
    assert inside["prefill_within_interval"] is True


def test_at_several_requests_in_flight_only_the_roofline_is_checked() -> None:
    """A prompt that queues behind others reads slower than a lone one: no band verdict at batch 4, but a
    prefill faster than the roofline is still impossible."""
    slow = grade(summary(120.0, prefill_tps=stats([1000.0]), aggregate_tps=stats([400.0])), with_prefill_band(prediction()), batch=4)
    assert "prefill-below-range" not in codes(slow) and "prefill_within_interval" not in slow
    fast = grade(summary(120.0, prefill_tps=stats([20000.0]), aggregate_tps=stats([400.0])), with_prefill_band(prediction()), batch=4)
    assert "prefill-above-ceiling" in codes(fast)

