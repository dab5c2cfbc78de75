"""The Little's-law bandwidth limit of the decode stream: min(BW, N_units * b_unit) (docs/PHYSICS.md
section 4), the catalog's compute-unit counts it reads, and that the fit finds b_unit."""

from __future__ import annotations

import random
import statistics
from dataclasses import replace

import pytest

from tokometer.calibration_data import MEASUREMENTS_CSV
from tokometer.catalog import hardware_catalog, make_efficiency, model_catalog
from tokometer.catalog.efficiency import fitted_table
from tokometer.costmodel.layout import IDEAL
from tokometer.costmodel.roofline import Peak, decode_step
from tokometer.domain.specs import HardwareSpec
from tokometer.errors import CatalogError
from tokometer.fitting.calibration import UNIT_BANDWIDTH_GRID, fit_decode
from tokometer.fitting.features import Features, features, predicted_time, stream_scale
from tokometer.fitting.rows import read_cases
from tokometer.fitting.validation import case_request, resolve_case_hardware
from tokometer.usecases.estimate import EstimateRequest, estimate

LLAMA_8B = model_catalog().get("llama-3-8b").spec
BASE = replace(IDEAL, bandwidth_fraction=0.8, quantized_bandwidth_fraction=0.7, kv_bandwidth_fraction=0.6, decode_score_bytes=200.0)


def _device(units: int | None, bandwidth_gb_per_s: float = 400.0) -> HardwareSpec:
    """A 400 GB/s GPU whose units count as they are (no clock read back from its peak: not Apple)."""
    return replace(hardware_catalog().get("rtx-4090"), compute_units=units, memory_bandwidth_gb_per_s=bandwidth_gb_per_s)


def test_share_is_units_times_unit_bandwidth_over_the_datasheet_capped_at_one() -> None:
    eff = replace(BASE, unit_bandwidth_gb_per_s=10.0)
    assert eff.stream_share(_device(32)) == pytest.approx(320.0 / 400.0)
    assert eff.stream_share(_device(76, 800.0)) == pytest.approx(760.0 / 800.0)
    assert eff.stream_share(_device(64)) == 1.0  # 640 GB/s of requests in flight: the bus is the limit
    assert eff.stream_share(_device(None)) == 1.0  # no unit count in the catalog: no limit
    assert BASE.stream_share(_device(32)) == 1.0  # no fitted b_unit: no limit


def test_for_hardware_scales_every_stream_term_once() -> None:
    eff = replace(BASE, unit_bandwidth_gb_per_s=10.0)
    hw = _device(32)
    on = eff.for_hardware(hw)
    assert on.bandwidth_fraction == pytest.approx(0.8 * 0.8)
    assert on.quantized_bandwidth_fraction == pytest.approx(0.7 * 0.8)
    assert on.kv_bandwidth_fraction == pytest.approx(0.6 * 0.8)
    assert on.decode_score_bytes == pytest.approx(200.0 / 0.8)
    assert on.unit_bandwidth_gb_per_s is None
    assert on.for_hardware(hw) == on  # applying it twice changes nothing
    assert on.layer_overhead_us == eff.layer_overhead_us and on.step_overhead_us == eff.step_overhead_us


def test_decode_step_streams_at_the_limited_bandwidth_but_the_ceiling_keeps_the_datasheet() -> None:
    hw = _device(32)
    free = decode_step(LLAMA_8B, LLAMA_8B.params, hw, BASE, depth_tokens=1024.0, peak=Peak(None, None))
    limited = decode_step(
        LLAMA_8B, LLAMA_8B.params, hw, replace(BASE, unit_bandwidth_gb_per_s=10.0).for_hardware(hw), depth_tokens=1024.0, peak=Peak(None, None)
    )
    assert limited.memory_time_s == pytest.approx(free.memory_time_s / 0.8)
    assert limited.ceiling_time_s == free.ceiling_time_s


def test_apple_cores_count_at_their_clock_read_back_from_the_derived_peak() -> None:
    """Apple: N x clock / 1.278 GHz, the clock = ALU peak / (cores x 128 x 2); other vendors: N."""
    cat = hardware_catalog()
    m1, m4, m5 = cat.get("m1-max-32c"), cat.get("m4"), cat.get("m5-10c")
    assert m1.unit_clock_ghz == pytest.approx(10.4e3 / (32 * 256))  # the M1 Max's 10.4 TFLOPS fp32
    assert m4.unit_clock_ghz == pytest.approx(1.47, rel=1e-3)
    assert m5.unit_clock_ghz == pytest.approx(m4.unit_clock_ghz)  # its fp32 ALUs, not the Neural Accelerators' fp16
    assert m4.stream_units == pytest.approx(10 * 1.47 / 1.278, rel=1e-3)
    eff = replace(BASE, unit_bandwidth_gb_per_s=9.0)
    assert eff.stream_share(m4) == pytest.approx(10 * 9.0 * 1.47 / 1.278 / 120.0, rel=1e-3)
    for hw in cat:  # every Apple GPU reads back a clock of a shipping part
        if hw.vendor == "apple" and hw.compute_units:
            assert hw.unit_clock_ghz is not None and 1.2 < hw.unit_clock_ghz < 1.7, hw.id
    assert cat.get("rtx-4090").unit_clock_ghz is None and cat.get("rtx-4090").stream_units == 128


def test_estimate_applies_the_limit_of_the_efficiency_it_is_given() -> None:
    request = EstimateRequest(model="llama-3-8b", hw="m1-max-32c", quant="q4_k_m", engine="llama-cpp", efficiency=BASE)
    free = estimate(request)
    limited = estimate(replace(request, efficiency=replace(BASE, unit_bandwidth_gb_per_s=10.0)))
    share = hardware_catalog().get("m1-max-32c").stream_units * 10.0 / 400.0  # type: ignore[operator]
    assert share == pytest.approx(0.795, abs=1e-3)
    assert limited.step.memory_time_s == pytest.approx(free.step.memory_time_s / share)
    assert limited.ceiling_tok_s == free.ceiling_tok_s


def test_fit_recovers_a_known_unit_bandwidth_from_synthetic_devices() -> None:
    truth = replace(BASE, layer_overhead_us=30.0, step_overhead_us=400.0, unit_bandwidth_gb_per_s=9.0)
    rng = random.Random(3)
    rows = []
    for i in range(12):  # devices of 16..76 units on 200..800 GB/s: some limited, some not
        units, bw = rng.choice([16, 24, 32, 40, 60, 76]), rng.choice([200.0, 400.0, 800.0])
        for weights_gb in (4.6, 16.0, 40.0):
            f = Features(
                case=type("C", (), {"metric": "tg"})(),  # type: ignore[arg-type]
                group="llama-cpp/metal/apple",
                engine_id="llama-cpp",
                backend="metal",
                hardware_id=f"d{i}",
                prior=BASE,
                t_measured_s=1.0,
                memory_s=weights_gb / bw,
                kv_s=0.02 / bw,
                quantized=weights_gb < 20,
                n_layers=32 if weights_gb < 20 else 80,
                bandwidth_gb_per_s=bw,
                stream_units=units,
            )
            rows.append(replace(f, t_measured_s=predicted_time(f, truth)))
    fitted = fit_decode(rows, replace(BASE, layer_overhead_us=25.0, step_overhead_us=300.0))
    assert fitted["unit_bandwidth_gb_per_s"] == pytest.approx(9.0, rel=0.1)
    assert fitted["bandwidth_fraction"] == pytest.approx(0.8, rel=0.05)
    # a device without a unit count is never limited
    assert stream_scale(replace(rows[0], stream_units=None), 9.0) == 1.0


def test_the_fit_finds_no_limit_where_no_device_is_short_of_units() -> None:
    rows = [
        Features(
            case=type("C", (), {"metric": "tg"})(),  # type: ignore[arg-type]
            group="g/b/c", engine_id="llama-cpp", backend="cuda", hardware_id=f"d{i}", prior=BASE,
            t_measured_s=w / bw / 0.8 + 32 * 30e-6 + 400e-6, memory_s=w / bw, n_layers=32,
            bandwidth_gb_per_s=bw, stream_units=128,
        )
        for i, (w, bw) in enumerate([(4.0, 300.0), (8.0, 500.0), (16.0, 700.0), (4.0, 900.0), (8.0, 400.0), (16.0, 600.0)])
    ]
    assert fit_decode(rows, replace(BASE, layer_overhead_us=25.0, step_overhead_us=300.0))["unit_bandwidth_gb_per_s"] is None


def test_every_gpu_and_apple_soc_has_a_sourced_unit_count() -> None:
    unknown = {"gaudi2", "gaudi3", "m2-ultra"}  # Gaudi has no SM-like units; "M2 Ultra" without a core count
    for hw in hardware_catalog():
        if hw.kind == "cpu" or hw.id in unknown:
            continue
        assert hw.compute_units and hw.compute_units > 0, hw.id
        assert hw.compute_units_source and str(hw.compute_units) in hw.compute_units_source, hw.id
    cat = hardware_catalog()
    assert (cat.get("h100-pcie").compute_units, cat.get("h100-sxm").compute_units, cat.get("rtx-4090").compute_units) == (114, 132, 128)
    assert (cat.get("m1-max-32c").compute_units, cat.get("m3-max-40c-64gb").compute_units, cat.get("m2-ultra-76c").compute_units) == (32, 40, 76)


def test_catalog_rejects_a_unit_count_without_source_or_a_bad_unit_bandwidth(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tokometer.catalog import _make_hardware

    raw = {
        "name": "X", "vendor": "nvidia", "kind": "gpu", "segment": "desktop", "memory_gb": 8.0,
        "memory_bandwidth_gb_per_s": 400.0, "launch_year": 2024, "source": "s", "compute_units": 40,
    }
    with pytest.raises(CatalogError, match="compute_units_source"):
        _make_hardware("x", raw, "test")
    with pytest.raises(CatalogError, match="positive"):
        _make_hardware("x", {**raw, "compute_units": 0, "compute_units_source": "s"}, "test")
    assert _make_hardware("x", {**raw, "compute_units_source": "s"}, "test").compute_units == 40
    eff = {"bandwidth_fraction": 0.8, "layer_overhead_us": 10.0, "step_overhead_us": 100.0, "prefill_efficiency_max": 0.5, "prefill_half_tokens": 100.0}
    with pytest.raises(CatalogError, match="unit_bandwidth_gb_per_s"):
        make_efficiency({**eff, "unit_bandwidth_gb_per_s": 0.0}, "test", "x")


def test_a_cores_limit_explains_the_m1_max_rows() -> None:
    """M1 Max (32 cores) and M3 Max (40 cores) share a 400 GB/s bus; measured decode follows the cores.

    Fitted on the Apple decode rows of measurements.csv (one harness, one build), the profile over
    b_unit keeps a limit, and with it the M1 Max 8B/70B Q4_K_M rows read within 15 %. (The shipped
    fit, on every publication's Apple rows under Huber weights, may keep none: the M-series chips of
    2025-26 harnesses do not follow it as one class; the mechanism stays, the data decide.)"""
    rows = [
        f
        for f in map(features, read_cases(MEASUREMENTS_CSV))
        if f is not None and f.case.metric == "tg" and f.group == "llama-cpp/metal/apple"
    ]
    assert len(rows) >= 30
    fitted = fit_decode(rows, rows[0].prior)
    assert fitted["unit_bandwidth_gb_per_s"] is not None
    eff = replace(rows[0].prior, **fitted)  # type: ignore[arg-type]
    m1 = [f for f in rows if f.hardware_id == "m1-max-32c"]
    assert len(m1) >= 8
    limited = statistics.median(abs(f.t_measured_s / predicted_time(f, eff) - 1) for f in m1)
    unlimited = replace(rows[0].prior, **fit_decode(rows, rows[0].prior, units=(None,)))  # type: ignore[arg-type]
    free = statistics.median(abs(f.t_measured_s / predicted_time(f, unlimited) - 1) for f in m1)
    assert limited < 0.15 and limited < free


def test_the_explanation_names_the_limit_only_where_it_applies() -> None:
    from tokometer.report.json import explanation

    limit = replace(fitted_table().entries["llama-cpp/metal/apple"], unit_bandwidth_gb_per_s=8.0)
    limited = estimate(EstimateRequest(model="llama-3-8b", hw="m1-max-32c", engine="llama-cpp", efficiency=limit))
    assert 0.0 < limited.efficiency.applied_stream_share < 1.0
    line = next(t for t in explanation(limited) if "compute units" in t)
    assert "32 compute units" in line and f"{limited.efficiency.applied_stream_share * 400:,.0f} GB/s" in line
    free = estimate(EstimateRequest(model="llama-3-8b", hw="rtx-4090", engine="llama-cpp"))
    assert free.efficiency.applied_stream_share == 1.0
    assert not any("compute units" in t for t in explanation(free))


def test_fallback_entries_serve_other_classes_without_a_limit() -> None:
    """`llama-cpp/*/*` serves CPUs, ROCm and Vulkan devices: b_unit (one memory system's) stays off it,
    so its other terms (k_alu for the CPU's dot products) keep their fit."""
    entries = fitted_table().entries
    wild = [key for key in entries if key.endswith("/*")]
    assert wild and all(entries[key].unit_bandwidth_gb_per_s is None for key in wild)
    assert entries["llama-cpp/*/*"].decode_alu_flops_per_weight > 0
    assert any(entries[key].unit_bandwidth_gb_per_s for key in entries if not key.endswith("/*"))


@pytest.mark.parametrize("hardware_id", ["m1-max-32c", "m3-max-40c-64gb", "h100-pcie", "a100-80gb-sxm", "rtx-4090"])
def test_the_fit_stretches_each_row_by_the_inverse_of_the_share_prediction_applies(hardware_id: str) -> None:
    """One formula on both sides: a measured row's stretch in the fit (`stream_scale` over its
    `Features`) is 1 / the share the estimate of that same row folds into its eta's, exactly."""
    case = next(
        c for c in read_cases(MEASUREMENTS_CSV)
        if c.metric == "tg" and features(c) is not None and resolve_case_hardware(c).id == hardware_id
    )
    row, hw = features(case), resolve_case_hardware(case)
    assert row is not None and row.stream_units == hw.stream_units
    shipped = fitted_table().entries[row.group]
    predicted = estimate(case_request(case, hw)).efficiency.applied_stream_share
    assert stream_scale(row, shipped.unit_bandwidth_gb_per_s) == 1.0 / predicted
    for unit in UNIT_BANDWIDTH_GRID:  # and at every b_unit the fit tries
        assert stream_scale(row, unit) == 1.0 / replace(shipped, unit_bandwidth_gb_per_s=unit).stream_share(hw)
    # the 4090 (128 SMs on 1 TB/s) is never held below its datasheet bandwidth by the fitted limit
    if hardware_id == "rtx-4090":
        assert predicted == 1.0
