"""Transcribed rows that tokometer could not read before issue #25's coverage pass: new devices, presets and
quant words resolve from each row's as-stated text, and a device whose variant its source does not decide
stays unscored with that reason (RESOLVE.toml `[[undecided_hardware]]`).

The as-stated strings are read from the published CSVs themselves, so a test fails if a transcription or
a RESOLVE.toml entry drifts from the other.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tokometer.calibration_data import PUBLISHED_DIR
from tokometer.fitting import aliases, rows, validation


def _rows(name: str) -> list[validation.Case]:
    return rows.read_cases(PUBLISHED_DIR / name)


def _first(name: str, metric: str, contains: str = "") -> validation.Case:
    return next(c for c in _rows(name) if c.metric == metric and contains in c.text("hardware_as_stated"))


@pytest.mark.parametrize(
    ("file", "metric", "contains", "device"),
    [
        ("SENSURA-RPI4.csv", "tg", "Raspberry Pi 4b", "raspberry-pi-4b"),
        ("EW-IGPU.csv", "tg", "GPD Pocket 4", "ryzen-ai-9-hx-370-lpddr5x-7500"),
        ("CRYPDICK-M2U.csv", "tg", "Mac14,14", "m2-ultra"),
        ("LCPP-D15396.csv", "pp", "Radeon 660M", "ryzen-5-6600h-ddr5-4800"),
        ("LCPP-D15396.csv", "pp", "5600H", "ryzen-5-5600h-ddr4-3200"),
        ("EPYC9655-CPU.csv", "tg", "EPYC 9655", "epyc-9655-ddr5-5600"),
    ],
)
def test_a_new_device_resolves_from_the_rows_as_stated_text(file: str, metric: str, contains: str, device: str) -> None:
    if not (PUBLISHED_DIR / file).is_file():
        pytest.skip("published evidence not shipped")
    cases = [c for c in _rows(file) if c.metric == metric and contains in c.text("hardware_as_stated")]
    assert cases
    results = [validation.predict_case(c) for c in cases]
    # every row names the device the same way; at least one of them is now scored on it
    assert {validation.resolve_case_hardware(c).id for c in cases} == {device}
    assert any(r.scored and r.hardware_id == device for r in results), [r.reason for r in results[:3]]


@pytest.mark.skipif(not (PUBLISHED_DIR / "G4090-OLLAMA.csv").is_file(), reason="published evidence not shipped")
def test_the_48gb_4090_resolves_but_its_unstated_ollama_quant_keeps_the_rows_unscored() -> None:
    case = _first("G4090-OLLAMA.csv", "tg", "modified to 48 GB")
    assert validation.resolve_case_hardware(case).id == "rtx-4090-48gb-modified"
    result = validation.predict_case(case)
    assert not result.scored and "Ollama default tag (not stated)" in (result.reason or "")


@pytest.mark.parametrize(
    ("file", "contains", "why"),
    [
        ("NEOZ-SYCLCI.csv", "UHD Graphics 730", "DDR4-3200"),
        ("NEOZ-SYCLCI.csv", "Iris(R) Xe", "LPDDR5-5200"),
        ("KHUNG-LBENCH.csv", "RTX 3080", "10 GB"),
        ("AZ-LLAMABENCHER.csv", "M4 Max", "32-core"),
        ("KRIS-EDGE.csv", "i5-1235U", "i5-1235U"),
        ("KRIS-EDGE.csv", "Mac M4 (MacBook Air", "16-core GPU"),
        ("LCPP-D15396.csv", "HX 370", "LPDDR5X-7500"),
    ],
)
def test_an_undecided_device_variant_stays_unscored_with_its_reason(file: str, contains: str, why: str) -> None:
    if not (PUBLISHED_DIR / file).is_file():
        pytest.skip("published evidence not shipped")
    result = validation.predict_case(next(c for c in _rows(file) if contains in c.text("hardware_as_stated")))
    assert not result.scored
    assert (result.reason or "").startswith("device variant not stated") and why in (result.reason or "")


@pytest.mark.skipif(not (PUBLISHED_DIR / "NEOZ-SYCLCI.csv").is_file(), reason="published evidence not shipped")
def test_the_undecided_rule_is_per_device_not_per_source() -> None:
    # the same CI's Arc A770 rows (its memory is on the card) are still read
    result = validation.predict_case(_first("NEOZ-SYCLCI.csv", "tg", "A770"))
    assert result.scored and result.hardware_id == "arc-a770-16gb"


def test_an_undecided_hardware_entry_needs_its_fields(tmp_path: Path) -> None:
    from tokometer.errors import CatalogError

    bad = tmp_path / "RESOLVE.toml"
    bad.write_text('[[undecided_hardware]]\nsource = "X"\nas_stated = "a device"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match=r"\[\[undecided_hardware\]\] #1: missing reason"):
        aliases.resolve_table.__wrapped__(bad)


def test_new_devices_bandwidth_is_bus_width_times_data_rate() -> None:
    from tokometer.catalog import hardware_catalog

    catalog = hardware_catalog()
    # LPDDR4-3200 on one 32-bit channel; LPDDR5X-7500 on a 128-bit bus
    assert catalog.get("raspberry-pi-4b").memory_bandwidth_gb_per_s == pytest.approx(3200e6 * 4 / 1e9)
    assert catalog.get("ryzen-ai-9-hx-370-lpddr5x-7500").memory_bandwidth_gb_per_s == pytest.approx(7500e6 * 16 / 1e9)
    assert catalog.get("ryzen-5-5600h-ddr4-3200").memory_bandwidth_gb_per_s == pytest.approx(3200e6 * 16 / 1e9)
    assert catalog.get("ryzen-5-6600h-ddr5-4800").memory_bandwidth_gb_per_s == pytest.approx(4800e6 * 16 / 1e9)
    assert catalog.get("epyc-9655-ddr5-5600").memory_bandwidth_gb_per_s == pytest.approx(12 * 5600e6 * 8 / 1e9)
    # the 48 GB modification keeps the RTX 4090's GPU and bus: only the memory size differs
    modified, stock = catalog.get("rtx-4090-48gb-modified"), catalog.get("rtx-4090")
    assert modified.memory_bandwidth_gb_per_s == stock.memory_bandwidth_gb_per_s and modified.fp16_tflops == stock.fp16_tflops
    assert modified.memory_gb == pytest.approx(49140 * 2**20 / 1e9, rel=1e-3)
    for device in ("raspberry-pi-4b", "ryzen-ai-9-hx-370-lpddr5x-7500", "ryzen-5-5600h-ddr4-3200", "epyc-9655-ddr5-5600"):
        spec = catalog.get(device)
        assert spec.source.startswith("https://") and spec.compute_peak_derived


def test_mlx_nvfp4_is_mlxs_layout_not_ggmls() -> None:
    from tokometer.catalog import quant_catalog

    mlx = quant_catalog().find("MLX nvfp4")
    assert mlx is not None and mlx.id == "mlx-nvfp4"
    assert mlx.bits_per_weight == pytest.approx(4 + 8 / 16)  # E2M1 values, one E4M3 scale per 16
    # the bare word stays unread everywhere but on a source whose every row ran on Apple silicon
    assert aliases.quant_from_text("NVFP4 nvfp4") is None
    found = aliases.quant_from_text("NVFP4 nvfp4", "ASLB-M3MAX")
    assert found is not None and found.target == "mlx-nvfp4"


@pytest.mark.skipif(not (PUBLISHED_DIR / "ASLB-M3MAX.csv").is_file(), reason="published evidence not shipped")
def test_an_mlx_lm_nvfp4_row_is_scored_with_mlx_nvfp4() -> None:
    case = next(
        c for c in _rows("ASLB-M3MAX.csv") if c.metric == "tg" and c.text("quant") == "NVFP4 nvfp4" and "mlx-lm" in c.text("engine")
    )
    result = validation.predict_case(case)
    assert result.scored, result.reason


# model cards' 0.49 / 1.54 B; Qwen3.5-0.8B: llama-bench's printed 752M (GHOST91-FITBENCH params column)
@pytest.mark.parametrize(("preset", "params_b"), [("qwen2.5-0.5b", 0.49), ("qwen2.5-1.5b", 1.54), ("qwen3.5-0.8b", 0.752)])
def test_new_qwen25_presets_count_the_model_cards_parameters(preset: str, params_b: float) -> None:
    from tokometer.catalog import model_catalog

    assert model_catalog().get(preset).spec.total_params / 1e9 == pytest.approx(params_b, rel=0.01)


@pytest.mark.parametrize(
    ("as_stated", "expected"),
    [
        ("Qwen2.5-1.5B-Instruct-Q4_K_M", "qwen2.5-1.5b"),
        ("Qwen 2.5 0.5B Q4_K_M (GGUF) (Qwen2.5-0.5B-Instruct-Q4_K_M.gguf)", "qwen2.5-0.5b"),
        ("qwen2.5-coder:32b", "qwen2.5-32b"),
        ("Qwen2.5-Coder 7B Q6_K", "qwen2.5-7b"),
        ("deepseek-r1:70b", "llama-3.3-70b"),
        ("qwen3-coder:latest", "qwen3-30b-a3b"),
        ("Qwen3.5-0.8B (unsloth GGUF)", "qwen3.5-0.8b"),
    ],
)
def test_published_qwen25_names_resolve(as_stated: str, expected: str) -> None:
    found = aliases.resolve_model(as_stated)
    assert found is not None and found[0].id == expected
