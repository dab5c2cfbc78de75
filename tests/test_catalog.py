"""Catalogs: every entry loads, validates and round-trips; names resolve; bad files are refused clearly."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import gguf
import pytest

from tokometer.calibration_data import HARDWARE_CSV
from tokometer.catalog import (
    clear_caches,
    engine_catalog,
    hardware_catalog,
    model_catalog,
    quant_catalog,
)
from tokometer.domain.specs import HardwareSpec
from tokometer.errors import CatalogError, UnknownEntryError


def test_hardware_catalog_is_large_and_sourced() -> None:
    items = list(hardware_catalog())
    assert len(items) >= 80
    for hw in items:
        assert hw.source.startswith("http"), hw.id
        assert hw.memory_bandwidth_gb_per_s > 0 and hw.memory_gb > 0


@pytest.mark.parametrize("hw", list(hardware_catalog()), ids=lambda h: h.id)
def test_hardware_entry_round_trips(hw: HardwareSpec) -> None:
    data = hw.to_dict()
    rebuilt = HardwareSpec(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})
    assert rebuilt == hw
    assert hardware_catalog().get(hw.id) == hw
    for alias in hw.aliases:
        assert hardware_catalog().get(alias).id == hw.id


def test_every_calibration_hardware_row_is_in_the_catalog() -> None:
    path = HARDWARE_CSV
    index = {cid: hw for hw in hardware_catalog() for cid in hw.calibration_ids}
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            hw = index.get(row["hardware_id"])
            assert hw is not None, row["hardware_id"]
            if row["mem_bandwidth_gbps"]:
                assert hw.memory_bandwidth_gb_per_s == float(row["mem_bandwidth_gbps"])
            if row["fp16_dense_tflops"]:
                assert hw.fp16_tflops == float(row["fp16_dense_tflops"])


@pytest.mark.parametrize(("spelling", "expected"), [("4090", "rtx-4090"), ("RTX 4090", "rtx-4090"), ("H100 SXM5", "h100-sxm"), ("rtx-5060-ti-16gb", "rtx-5060-ti-16gb"), ("m2-ultra-76c", "m2-ultra-76c"), ("h200", "h200")])
def test_common_spellings_resolve(spelling: str, expected: str) -> None:
    assert hardware_catalog().get(spelling).id == expected


def test_near_miss_suggests() -> None:
    with pytest.raises(UnknownEntryError, match="did you mean.*rtx-4090"):
        hardware_catalog().get("rtx-4009")


def test_several_names_where_one_is_taken_point_to_sweep() -> None:
    """`--hw "DGX Spark,M4 Max"`: each part is an entry, so the message names them and the command that compares."""
    with pytest.raises(UnknownEntryError) as err:
        hardware_catalog().get("DGX Spark, M4 Max")
    assert err.value.suggestions == ["dgx-spark", "m4-max-40c"]
    assert "`tokometer sweep --hw dgx-spark,m4-max-40c`" in str(err.value)
    with pytest.raises(UnknownEntryError, match="did you mean"):  # one part unknown: the usual near miss
        hardware_catalog().get("DGX Spark,foo")


def test_several_models_on_the_command_line_exit_2_with_the_sweep_command(capsys: pytest.CaptureFixture[str]) -> None:
    from tokometer.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["estimate", "llama-3.1-8b,qwen3-8b"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "Traceback" not in err
    assert "tokometer sweep --model llama-3.1-8b,qwen3-8b" in err


def test_ggml_types_match_the_gguf_package_exactly() -> None:
    seen = 0
    for q in quant_catalog():
        if q.ggml_type:
            block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[q.ggml_type]]
            assert (q.block_size, q.type_size_bytes) == (block, size)
            assert q.bits_per_weight == pytest.approx(size * 8 / block)
            seen += 1
    assert seen == len(gguf.GGML_QUANT_SIZES)


def test_k_quant_mix_is_above_its_block_type() -> None:
    assert quant_catalog().get("Q4_K_M").bits_per_weight > quant_catalog().get("ggml-q4-k").bits_per_weight


@pytest.mark.parametrize("preset", list(model_catalog()), ids=lambda p: p.id)
def test_model_preset_accounts_close_to_its_published_count(preset) -> None:
    spec = preset.spec
    assert spec.total_params > 0 and spec.n_layers > 0
    if preset.params_b:
        # published Gemma 3 multimodal totals include the 0.42 B SigLIP vision tower + projector
        vision_b = 0.42 if "text_config" in preset.config else 0.0
        assert spec.total_params / 1e9 + vision_b == pytest.approx(preset.params_b, rel=0.01)


def test_required_presets_exist() -> None:
    for name in [
        "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "llama-3.1-8b", "llama-3.1-70b",
        "llama-3.2-1b", "llama-3.2-3b", "mistral-7b-v0.1", "mixtral-8x7b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b",
        "qwen2.5-72b", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "gemma-2-9b", "gemma-2-27b",
        "gemma-3-4b", "gemma-3-12b", "gemma-3-27b", "gemma-4-12b", "deepseek-v3", "gpt-oss-20b", "gpt-oss-120b", "phi-4",
    ]:
        assert name in model_catalog(), name


def test_engines_have_documented_efficiency() -> None:
    ids = {e.id for e in engine_catalog()}
    assert {"llama-cpp", "ollama", "lm-studio", "vllm", "sglang", "tensorrt-llm", "mlx", "exllamav2", "mlc-llm", "gpt-fast", "transformers"} <= ids
    for e in engine_catalog():
        assert 0 < e.efficiency.bandwidth_fraction <= 1
        assert dataclasses.asdict(e.efficiency)


def _write(home: Path, name: str, text: str) -> None:
    (home / name).write_text(text, encoding="utf-8")
    clear_caches()


def test_user_catalog_adds_an_entry(isolated_home: Path) -> None:
    _write(isolated_home, "hardware.toml", '[my-card]\nname = "My card"\nvendor = "nvidia"\nkind = "gpu"\nsegment = "desktop"\nmemory_gb = 12\nmemory_bandwidth_gb_per_s = 500\nlaunch_year = 2024\nsource = "https://example.org/my-card"\n')
    assert hardware_catalog().get("my-card").memory_bandwidth_gb_per_s == 500


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[x]\nname = "X"\nvendor = "nvidia"\nkind = "gpu"\nsegment = "desktop"\nmemory_gb = 12\nmemory_bandwidth = 500\nlaunch_year = 2024\nsource = "s"\n', "'memory_bandwidth' has no unit"),
        ('[x]\nname = "X"\nvendor = "nvidia"\nkind = "gpu"\nsegment = "desktop"\nmemory_gb = 12\nmemory_bandwidth_gb_per_s = 500\nlaunch_year = 2024\ncolour = "red"\nsource = "s"\n', "unknown key 'colour'"),
        ('[x]\nname = "X"\nvendor = "nvidia"\nkind = "gpu"\nsegment = "desktop"\nmemory_gb = 12\nmemory_bandwidth_gb_per_s = 500\nlaunch_year = 2024\n', "missing required key 'source'"),
        ("[x\nname = ", "not valid TOML"),
        ('[x]\nname = "X"\nvendor = "nvidia"\nkind = "gpu"\nsegment = "desktop"\nmemory_gb = -12\nmemory_bandwidth_gb_per_s = 500\nlaunch_year = 2024\nsource = "s"\n', "must not be negative"),
        ('[x]\nname = "X"\nvendor = "intel"\nkind = "gpu"\nsegment = "desktop"\nmemory_gb = 12\nmemory_bandwidth_gb_per_s = 456\nlaunch_year = 2024\narchitecture = "xe2"\nsource = "s"\n', "architecture needs architecture_source"),
        ('[x]\nname = "X"\nvendor = "intel"\nkind = "gpu"\nsegment = "desktop"\nmemory_gb = 12\nmemory_bandwidth_gb_per_s = 456\nlaunch_year = 2024\narchitecture = "xe3"\narchitecture_source = "s"\nsource = "s"\n', "architecture 'xe3' is not one of"),
    ],
)
def test_broken_user_catalog_names_file_and_key(isolated_home: Path, text: str, message: str) -> None:
    _write(isolated_home, "hardware.toml", text)
    with pytest.raises(CatalogError, match=message) as info:
        hardware_catalog()
    assert "hardware.toml" in str(info.value)


@pytest.mark.parametrize(
    "spelling",
    ["nvidia_h100_pcie", "H100 PCIe", "h100-pcie", "NVIDIA H100 PCIe", "nvidia-h100-pcie"],
)
def test_vendor_prefixed_and_spaced_ids_name_the_same_device(spelling: str) -> None:
    assert hardware_catalog().get(spelling).id == "h100-pcie"


def test_vendor_and_brand_words_are_optional_but_never_enough_alone() -> None:
    assert hardware_catalog().get("NVIDIA GeForce RTX 4090").id == "rtx-4090"
    assert hardware_catalog().get("amd_radeon_rx_7900_xtx").id == "rx-7900-xtx"
    assert hardware_catalog().find("nvidia") is None
    assert hardware_catalog().find("nvidia_rtx_9999") is None


def test_hardware_show_resolves_a_calibration_style_id() -> None:
    from tests.helpers import run_cli

    r = run_cli("hardware", "show", "nvidia_h100_pcie", "--json")
    assert r.code == 0, r.err
    assert r.json()["id"] == "h100-pcie"


@pytest.mark.parametrize("hw", list(hardware_catalog()), ids=lambda h: h.id)
def test_every_device_predicts_prefill(hw: HardwareSpec) -> None:
    from tokometer.costmodel.roofline import compute_peak
    from tokometer.usecases.estimate import estimate

    peak = compute_peak(hw, "fp16")
    assert peak.tflops and peak.tflops > 0, hw.id
    assert peak.derived == hw.compute_peak_derived
    e = estimate("llama-3.1-8b", hw.id, quant="q4_k_m", prompt_tokens=1024, memory_gb=max(hw.memory_gb, 64.0))
    assert e.prefill is not None and e.prefill.tok_s > 0, hw.id


def test_computed_peaks_are_sourced_and_apple_and_cpu_peaks_are_flagged_derived() -> None:
    for hw in hardware_catalog():
        if hw.compute_source is not None:
            assert hw.compute_source.startswith("http"), hw.id
        if hw.vendor == "apple" or hw.kind == "cpu":
            assert hw.compute_peak_derived and hw.compute_source, hw.id
        if hw.segment == "laptop" and hw.compute_source:
            assert hw.compute_peak_derived, hw.id


def test_geforce_peaks_keep_the_fp32_accumulate_rate_at_half_the_fp16_accumulate_rate() -> None:
    for hw in hardware_catalog():
        if hw.fp16_acc16_tflops is not None and "GeForce" in hw.name:
            assert hw.fp16_tflops == pytest.approx(hw.fp16_acc16_tflops / 2, rel=0.01), hw.id
        elif hw.fp16_acc16_tflops is not None:  # TITAN RTX, RTX 6000 Ada: full rate with either accumulator
            assert hw.fp16_tflops == hw.fp16_acc16_tflops, hw.id
    assert hardware_catalog().get("rtx-5090").fp16_tflops == pytest.approx(209.5)


_PEAK_FIELDS = ("fp16_tflops", "fp16_acc16_tflops", "fp8_tflops", "int8_tops", "fp4_tflops")


def test_every_tensor_peak_names_the_document_it_comes_from() -> None:
    """Issue 13: no peak without a source; each compute_source opens with the URL of what it quotes."""
    for hw in hardware_catalog():
        assert any(getattr(hw, f) for f in _PEAK_FIELDS) or hw.fp32_tflops, hw.id  # Pascal: fp32 only
        assert hw.compute_source and hw.compute_source.startswith("http"), hw.id
        assert "(" in hw.compute_source, hw.id  # the URL is followed by what the document says


def test_unverified_and_derived_peaks_carry_the_wider_prefill_band() -> None:
    """A peak not checked against a vendor document is flagged like a derived one and widens the prefill band."""
    import math

    from tokometer.costmodel.roofline import DERIVED_PEAK_LOG_SD, compute_peak, prefill_log_sd
    from tokometer.usecases.estimate import estimate

    unverified = [hw for hw in hardware_catalog() if "not verified" in (hw.compute_source or "").lower()]
    assert unverified  # the catalog says which peaks could not be checked
    for hw in unverified:
        assert hw.compute_peak_derived, hw.id
    eff = estimate("llama-3.1-8b", "rtx-4090", quant="q4_k_m").efficiency
    for hw in hardware_catalog():
        peak = compute_peak(hw, "fp16")
        band = prefill_log_sd(eff, peak)
        if hw.compute_peak_derived:  # the peak's own doubt added in quadrature to the fit's spread
            assert band > eff.prefill_residual_log_sd, hw.id
            assert band == math.hypot(eff.prefill_residual_log_sd, DERIVED_PEAK_LOG_SD), hw.id
        else:
            assert band == eff.prefill_residual_log_sd, hw.id


def test_the_peak_warning_says_whether_the_peak_is_derived_or_unverified() -> None:
    """Issue 13: an unchecked peak is not called "derived from units x clock"; a derived one is not called unchecked."""
    from tokometer.costmodel.roofline import compute_peak

    kinds = set()
    for hw in hardware_catalog():
        note = compute_peak(hw, "fp16").note or ""
        if hw.compute_peak_unverified:
            kinds.add("unverified")
            assert "not verified against a vendor datasheet" in note and "units x clock" not in note, hw.id
        elif hw.compute_peak_derived:
            kinds.add("derived")
            assert "derived from units x clock" in note and "not verified" not in note, hw.id
        else:
            assert "compute peak" not in note, hw.id
    assert kinds == {"unverified", "derived"}


def test_geforce_fp8_peak_is_the_fp32_accumulate_rate() -> None:
    """Ada/Blackwell GeForce halve FP8 with FP32 accumulate as they halve FP16 (Ada whitepaper v2.02 footnote 4:
    RTX 4090 330.3 dense); FP8 GEMMs in vLLM/TensorRT-LLM accumulate in FP32, so fp8 = 2 x fp16, not 4 x."""
    checked = 0
    for hw in hardware_catalog():
        if hw.fp8_tflops and hw.fp16_acc16_tflops and hw.fp16_acc16_tflops > hw.fp16_tflops * 1.5:
            assert hw.fp8_tflops == pytest.approx(2 * hw.fp16_tflops, rel=0.01), hw.id
            assert hw.int8_tops == pytest.approx(4 * hw.fp16_tflops, rel=0.01), hw.id
            checked += 1
    assert checked >= 20
    assert hardware_catalog().get("rtx-4090").fp8_tflops == pytest.approx(330.3)
    assert hardware_catalog().get("rtx-5090").fp8_tflops == pytest.approx(419.0)


def test_datacenter_peaks_are_the_dense_halves_of_the_sparse_datasheet_figures() -> None:
    """NVIDIA prints H100/H200 tensor figures with sparsity; the catalog holds the dense half."""
    sparse_fp16 = {"h100-sxm": 1979, "h100-pcie": 1513, "h100-nvl": 1671, "h200": 1979, "h200-nvl": 1671, "l4": 242}
    for hw_id, sparse in sparse_fp16.items():
        assert hardware_catalog().get(hw_id).fp16_tflops == pytest.approx(sparse / 2, rel=0.001), hw_id


def test_a_derived_peak_says_so_in_the_estimate() -> None:
    from tokometer.report.json import estimate_warnings
    from tokometer.usecases.estimate import estimate

    derived = estimate("llama-3.1-8b", "m4-max-40c", quant="q4_k_m")
    assert any("derived" in w for w in estimate_warnings(derived))
    datasheet = estimate("llama-3.1-8b", "rtx-5090", quant="q4_k_m")
    assert not any("derived" in w for w in estimate_warnings(datasheet))


@pytest.mark.parametrize(
    ("name", "stated_b"),
    [
        ("mistral-small-3.2-24b", 23.6),
        ("qwen3-next-80b-a3b", 80.0),
        ("jamba-v0.1", 52.0),
        ("gemma-4-12b", 11.9),
        ("qwen3.5-35b-a3b", 35.0),
        ("llama-4-maverick", 400.0),
    ],
)
def test_new_presets_count_their_published_parameter_totals(name: str, stated_b: float) -> None:
    preset = model_catalog().get(name)
    assert preset.source.startswith("http")
    assert preset.spec.total_params / 1e9 == pytest.approx(stated_b, rel=0.02)
    assert not preset.spec.warnings
