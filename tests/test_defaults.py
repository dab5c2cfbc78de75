"""The defaults a user meets (issue #14, item 7): one precision rule with or without a model name, quant
names that mean the files people download, ambiguous hardware names that say what they assumed, and
Apple GPUs limited to macOS's default working set."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tokometer.catalog import hardware_catalog, quant_catalog
from tokometer.cli import cli
from tokometer.domain.units import GB
from tokometer.report.json import estimate_warnings
from tokometer.usecases.estimate import estimate
from tokometer.usecases.policy import (
    APPLE_WORKING_SET_LARGE,
    APPLE_WORKING_SET_SMALL,
    gpu_memory_gb,
)


@pytest.mark.parametrize("hw", ["rtx-4090", "h100-sxm", "m2-ultra-76c", "ddr5-dual-channel", "rtx-3060-12gb"])
def test_a_model_name_does_not_change_the_default_precision(hw: str) -> None:
    bare, named = estimate(hw=hw), estimate("llama-3.1-8b", hw)
    assert bare.model.id == named.model.id == "llama-3.1-8b"
    assert (bare.quant.id, bare.engine.id) == (named.quant.id, named.engine.id)  # type: ignore[union-attr]


def test_the_engine_picks_the_format_and_naming_that_format_keeps_the_engine() -> None:
    consumer = estimate("llama-3.1-8b", "rtx-4090")
    assert (consumer.quant.id, consumer.engine.id) == ("q4-k-m", "llama-cpp")  # type: ignore[union-attr]
    datacenter = estimate("llama-3.1-8b", "h100-sxm")
    assert (datacenter.quant.id, datacenter.engine.id) == ("bf16", "vllm")  # type: ignore[union-attr]
    assert estimate("llama-3.1-8b", "h100-sxm", quant="bf16").engine.id == "vllm"
    assert estimate("llama-3.1-8b", "rtx-4090", engine="vllm").quant.id == "bf16"  # type: ignore[union-attr]


def test_the_rule_is_stated_in_the_help() -> None:
    out = CliRunner().invoke(cli, ["estimate", "--help"]).output
    assert "Q4_K_M under llama.cpp-family engines" in " ".join(out.split())


def test_q2_k_is_the_file_people_download() -> None:
    e = estimate("llama-3.1-8b", quant="q2_k")
    assert e.weights.total / GB == pytest.approx(3.18, abs=0.05)  # bartowski's Q2_K file: 3.18 GB
    assert quant_catalog().get("Q2_K").bits_per_weight > quant_catalog().get("ggml-q2-k").bits_per_weight
    assert quant_catalog().get("q4_k").id == "q4-k-m"  # llama-quantize's Q4_K is Q4_K_M
    assert quant_catalog().get("q2-k-file").id == "q2-k"  # the old id still resolves


@pytest.mark.parametrize(("typed", "assumed", "others"), [
    ("H100", "h100-sxm", {"h100-pcie", "h100-nvl"}),
    ("M2 Ultra", "m2-ultra-60c", {"m2-ultra-76c"}),  # the base Mac Studio, not the 192 GB catch-all
    ("nvidia h100", "h100-sxm", {"h100-pcie"}),
])
def test_an_ambiguous_hardware_name_says_what_it_assumed(typed: str, assumed: str, others: set[str]) -> None:
    e = estimate("llama-3.1-8b", typed)
    assert e.hardware.id == assumed
    notes = [w for w in estimate_warnings(e) if "names several devices" in w]
    assert len(notes) == 1 and all(o in notes[0] for o in others), estimate_warnings(e)


@pytest.mark.parametrize("typed", ["rtx-4090", "h100-sxm", "m2-ultra-76c", "rtx-3060"])
def test_an_exact_or_unambiguous_name_has_no_note(typed: str) -> None:
    assert not any("names several devices" in w for w in estimate_warnings(estimate("llama-3.1-8b", typed)))


def test_apple_gpus_get_the_macos_working_set() -> None:
    mac48 = hardware_catalog().get("m3-max-40c-48gb")
    small = next(h for h in hardware_catalog() if h.vendor == "apple" and h.kind != "cpu" and h.memory_gb <= 36)
    assert gpu_memory_gb(mac48) == pytest.approx(48 * APPLE_WORKING_SET_LARGE)
    assert gpu_memory_gb(small) == pytest.approx(small.memory_gb * APPLE_WORKING_SET_SMALL)
    assert gpu_memory_gb(hardware_catalog().get("rtx-4090")) == 24
    e = estimate("llama-3.1-8b", "m3-max-40c-48gb")
    assert e.memory.device_memory_gb == pytest.approx(36.0)
    assert e.memory.available_gb < 36.0 < 46.6  # was 46.6 GB of the whole 48
    assert any("working-set limit" in w for w in estimate_warnings(e))


def test_memory_gb_overrides_the_apple_working_set() -> None:
    e = estimate("llama-3.1-8b", "m3-max-40c-48gb", memory_gb=44)
    assert e.memory.device_memory_gb == 44 and e.hardware.memory_gb == 48  # RAM stays, the GPU limit moves
    assert not any("working-set limit" in w for w in estimate_warnings(e))
