"""Jetson AGX Orin rows are read on the module and power mode they ran in (issue 25).

The 32 GB developer kit (module P3701-0000) carries the 64GB module's GPU, not the 32GB production
module's; nvpmodel's MODE_30W (the mode the module boots in) powers half the SMs at 612 MHz with the
memory bus unchanged. These tests keep the catalog entries consistent with NVIDIA's power-mode file
and check that the published rows reach them and that the physics sees the difference.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokometer.calibration_data import PUBLISHED_DIR
from tokometer.catalog import hardware_catalog
from tokometer.fitting import rows, validation

MAXN_SMS, MAXN_GPU_GHZ = 16, 1.3  # nvpmodel_p3701_0000.conf MAXN: TPC_PG_MASK 0, GPU at its 1.3 GHz maximum
MODE_30W_SMS, MODE_30W_GPU_GHZ = 8, 0.612  # MODE_30W: TPC_PG_MASK 240 (4 of 8 TPCs), GPU MAX_FREQ 612000000


def test_mode_30w_scales_the_maxn_peaks_by_nvpmodels_sms_and_clock() -> None:
    maxn = hardware_catalog().get("jetson-agx-orin-64gb")
    mode = hardware_catalog().get("jetson-agx-orin-64gb-30w")
    scale = (MODE_30W_SMS / MAXN_SMS) * (MODE_30W_GPU_GHZ / MAXN_GPU_GHZ)
    assert mode.compute_units == MODE_30W_SMS and maxn.compute_units == MAXN_SMS
    assert mode.memory_bandwidth_gb_per_s == maxn.memory_bandwidth_gb_per_s  # EMC uncapped in MODE_30W
    assert mode.memory_gb == maxn.memory_gb
    for dtype in ("fp16", "int8"):
        full, reduced = maxn.peak_tflops(dtype), mode.peak_tflops(dtype)
        assert full is not None and reduced == pytest.approx(full * scale, rel=0.01)
    assert mode.fp32_tflops == pytest.approx(MODE_30W_SMS * 128 * 2 * MODE_30W_GPU_GHZ / 1e3, rel=0.01)
    assert mode.compute_peak_derived


def test_the_32gb_developer_kit_has_the_64gb_modules_gpu_and_its_own_memory() -> None:
    kit = hardware_catalog().get("jetson-agx-orin-devkit-32gb")
    full = hardware_catalog().get("jetson-agx-orin-64gb")
    production = hardware_catalog().get("jetson-agx-orin-32gb")
    assert kit.memory_gb == production.memory_gb == 32.0
    assert (kit.compute_units, kit.fp16_tflops, kit.fp32_tflops) == (full.compute_units, full.fp16_tflops, full.fp32_tflops)
    assert (kit.compute_units or 0) > (production.compute_units or 0)
    assert hardware_catalog().get("AGX Orin 32GB").id == "jetson-agx-orin-32gb"  # the bare name stays the production module


def _cases(name: str) -> list[rows.Case]:
    return rows.read_cases(PUBLISHED_DIR / name)


@pytest.mark.skipif(not (PUBLISHED_DIR / "KEVINHE-ORIN.csv").is_file(), reason="published evidence not shipped")
def test_kevinhe_rows_are_read_on_the_developer_kit_with_the_reason() -> None:
    """The source's pages name the developer kit (16 SMs at 1.3 GHz); its prefill rows, which held that reading
    back, are explained by llama.cpp's INT32 bound (docs/PHYSICS.md section 4): the RESOLVE entry says both."""
    from tokometer.fitting.aliases import normalise, resolve_table

    case = next(c for c in _cases("KEVINHE-ORIN.csv") if c.metric == "tg")
    result = validation.predict_case(case)
    assert result.scored, result.reason
    assert result.hardware_id == "jetson-agx-orin-devkit-32gb"
    entry = resolve_table().entries[("hardware", "KEVINHE-ORIN", normalise(case.text("hardware_as_stated")))]
    assert "Developer Kit" in entry.reason and "INT32" in entry.reason


@pytest.mark.skipif(not (PUBLISHED_DIR / "AGXORIN-DEVKIT.csv").is_file(), reason="published evidence not shipped")
@pytest.mark.parametrize("name", ["AGXORIN-DEVKIT.csv", "AGXORIN-XFW.csv"])
def test_the_agxorin_rows_are_read_in_mode_30w(name: str) -> None:
    cases = _cases(name)
    for text in {c.text("hardware_as_stated") for c in cases}:
        case = next(c for c in cases if c.text("hardware_as_stated") == text)
        assert validation.resolve_case_hardware(case).id == "jetson-agx-orin-64gb-30w"


@pytest.mark.skipif(not (PUBLISHED_DIR / "AGXORIN-DEVKIT.csv").is_file(), reason="published evidence not shipped")
@pytest.mark.parametrize("metric", ["tg", "pp"])
def test_mode_30w_is_predicted_slower_than_maxn_on_the_same_row(metric: str) -> None:
    """Half the SMs at 47 % of the clock: fewer bytes in flight and less ALU for decode, a lower matrix peak
    for prefill; the same row read as MAXN must come out faster."""
    case = next(
        c for c in _cases("AGXORIN-DEVKIT.csv") if c.metric == metric and "llama.cpp" in c.text("engine") and not c.flag
    )
    as_maxn = replace(case, raw={**case.raw, "hardware_as_stated": "Jetson AGX Orin 64GB"})
    slow, fast = validation.predict_case(case), validation.predict_case(as_maxn)
    assert slow.hardware_id == "jetson-agx-orin-64gb-30w" and fast.hardware_id == "jetson-agx-orin-64gb"
    assert slow.predicted is not None and fast.predicted is not None
    assert slow.predicted < fast.predicted
