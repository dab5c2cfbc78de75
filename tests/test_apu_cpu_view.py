"""An APU under `--backend cpu` is predicted on its CPU cores (issue #25): the catalog's `cpu_*` peaks
replace the integrated GPU's, the class is `cpu`, and the fit and validate see such rows the same way.
Before, `estimate llama-3.1-8b --hw ryzen-ai-9-hx-370-lpddr5x-7500 --backend cpu` read prefill against
the Radeon 890M's 23.76 TFLOPS and said ~319 tok/s where EW-IGPU measured 45.85 (docs/notes/notes_apucpu.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokometer.catalog import clear_caches, hardware_catalog
from tokometer.catalog.efficiency import group_key
from tokometer.errors import CatalogError
from tokometer.report.json import explanation
from tokometer.usecases.estimate import estimate
from tokometer.usecases.resolve import backend_view, cpu_view

HX370 = "ryzen-ai-9-hx-370-lpddr5x-7500"
EW_IGPU_PP512_LLAMA_8B = 45.85  # tok/s, llama-bench pp512, Q4_K_M, CPU backend, 12 threads (EW-IGPU-0005)


def test_the_cpu_view_replaces_the_peaks_and_the_class() -> None:
    apu = hardware_catalog().get(HX370)
    view = cpu_view(apu)
    assert apu.kind == "apu" and apu.hardware_class == "apu"
    assert view.kind == "cpu" and view.hardware_class == "cpu" and view.backend == "cpu"
    # 4 Zen 5 at 5.15 GHz + 8 Zen 5c at 3.3 GHz, 32 FP32 FLOPs per cycle (two FMA pipes, 256-bit datapath)
    assert view.fp32_tflops == apu.cpu_fp32_tflops == pytest.approx((4 * 5.15 + 8 * 3.3) * 32 / 1e3, rel=1e-3)
    assert view.fp16_tflops == apu.cpu_fp16_tflops and view.fp16_tflops != apu.fp16_tflops
    assert view.int8_tops == apu.cpu_int8_tops
    assert view.fp8_tflops is None and view.fp4_tflops is None
    assert view.compute_peak_derived and view.compute_source == apu.cpu_compute_source
    assert view.compute_units is None  # the iGPU's CUs are not the CPU's memory-request issuers
    # the memory system is the entry's (no CPU-side figure is sourced)
    assert view.memory_bandwidth_gb_per_s == apu.memory_bandwidth_gb_per_s and view.memory_gb == apu.memory_gb
    assert cpu_view(view) is view  # applying it twice changes nothing


def test_only_an_apu_under_the_cpu_backend_gets_the_view() -> None:
    apu = hardware_catalog().get(HX370)
    assert backend_view(apu, "vulkan") == (apu, None)
    assert backend_view(apu, None) == (apu, None)
    gpu = hardware_catalog().get("rtx-4090")
    assert cpu_view(gpu) is gpu and backend_view(gpu, "cpu") == (gpu, None)
    assert backend_view(apu, "cpu")[0].kind == "cpu"


def test_hx_370_cpu_prefill_names_the_cpu_peak_and_lands_near_the_measurement() -> None:
    e = estimate("llama-3.1-8b", HX370, backend="cpu", quant="q4_k_m", prompt_tokens=512)
    assert e.hardware.kind == "cpu"
    assert e.peak.tflops == pytest.approx(hardware_catalog().get(HX370).cpu_fp16_tflops)
    assert e.peak.derived
    assert group_key(e.engine, e.hardware, "cpu") == "llama-cpp/cpu/cpu"
    why = explanation(e)
    prefill = next(line for line in why if line.startswith("prefill of 512 tokens"))
    assert f"{e.peak.tflops:g} TFLOPS" in prefill and "of its CPU cores" in prefill
    assert any(line.startswith("CPU backend on an APU") for line in why)
    assert e.prefill is not None
    # the iGPU reading was ~7x too fast; the CPU cores' reading is within 3x of the measured row
    assert EW_IGPU_PP512_LLAMA_8B / 3 < e.prefill.tok_s < EW_IGPU_PP512_LLAMA_8B * 3


def test_an_apu_without_cpu_figures_says_prefill_is_read_against_the_igpu() -> None:
    spark = hardware_catalog().get("dgx-spark")
    assert spark.kind == "apu" and spark.cpu_fp32_tflops is None  # its X925 FMA pipes are not sourced
    e = estimate("llama-3.1-8b", "dgx-spark", backend="cpu")
    assert e.hardware.kind == "apu" and e.peak.tflops == spark.fp16_tflops  # today's behaviour, kept
    notes = [str(w) for w in e.warnings]
    assert any("no CPU-core compute figure" in n and "integrated GPU" in n for n in notes)
    assert not any("no CPU-core compute figure" in str(w) for w in estimate("llama-3.1-8b", "dgx-spark").warnings)


def test_cli_json_carries_the_note() -> None:
    from tests.helpers import run_cli

    r = run_cli("estimate", "llama-3.1-8b", "--hw", "dgx-spark", "--backend", "cpu", "--json")
    assert r.code == 0, r.err
    assert any("no CPU-core compute figure" in w for w in r.json()["warnings"])


def test_a_cpu_backend_row_on_an_apu_is_fitted_and_predicted_as_a_cpu_row() -> None:
    from tokometer.calibration_data import PUBLISHED_DIR
    from tokometer.fitting.features import case_group
    from tokometer.fitting.rows import read_cases
    from tokometer.fitting.validation import resolve_case_hardware

    path = PUBLISHED_DIR / "EW-IGPU.csv"
    cpu_rows = [c for c in read_cases(path) if c.text("backend").lower() == "cpu"]
    assert cpu_rows
    for case in cpu_rows:
        hw = resolve_case_hardware(case)
        assert hw.id == HX370 and hw.kind == "cpu"
        assert case_group(case) == "llama-cpp/cpu/cpu"


_APU = (
    '[my-apu]\nname = "My APU"\nvendor = "amd"\nkind = "{kind}"\nsegment = "laptop"\nmemory_gb = 32\n'
    'memory_bandwidth_gb_per_s = 100\nfp16_tflops = 10\nlaunch_year = 2025\nsource = "s"\n'
)


@pytest.mark.parametrize(
    ("kind", "extra", "message"),
    [
        ("gpu", 'cpu_cores = 8\ncpu_fp32_tflops = 0.5\ncpu_compute_source = "derived: 8 x 2 x 32"\n', "belong to kind"),
        ("apu", 'cpu_cores = 8\ncpu_fp32_tflops = 0.5\ncpu_compute_source = "vendor page"\n', "say \"derived\""),
        ("apu", 'cpu_fp32_tflops = 0.5\ncpu_compute_source = "derived: 8 x 2 x 32"\n', "need cpu_cores"),
        ("apu", 'cpu_cores = 8\ncpu_fp32_tflops = 5000.0\ncpu_compute_source = "derived"\n', "implausible"),
    ],
)
def test_cpu_fields_are_checked(isolated_home: Path, kind: str, extra: str, message: str) -> None:
    (isolated_home / "hardware.toml").write_text(_APU.format(kind=kind) + extra, encoding="utf-8")
    clear_caches()
    with pytest.raises(CatalogError, match=message):
        hardware_catalog()


def test_a_user_apu_with_cpu_fields_gets_the_view(isolated_home: Path) -> None:
    extra = 'cpu_cores = 8\ncpu_fp32_tflops = 0.5\ncpu_compute_source = "derived: 8 x 2.0 GHz x 32"\n'
    (isolated_home / "hardware.toml").write_text(_APU.format(kind="apu") + extra, encoding="utf-8")
    clear_caches()
    view = cpu_view(hardware_catalog().get("my-apu"))
    assert view.kind == "cpu" and view.fp32_tflops == 0.5 and view.fp16_tflops == 0.5  # fp16 falls back to fp32
