"""Vendor precision words read with the device and engine in mind, into the quant catalog's formats."""

from __future__ import annotations

import pytest

from tokometer.catalog import hardware_catalog, quant_catalog
from tokometer.errors import InputError
from tokometer.fitting.quant_words import read_precision, weights_format

B200 = hardware_catalog().get("b200")
H100 = hardware_catalog().get("h100-sxm")
MI355X = hardware_catalog().get("mi355x")


@pytest.mark.parametrize("word, hardware, expected", [
    ("FP4", B200, "nvfp4"),
    ("NVFP4", B200, "nvfp4"),
    ("FP4", MI355X, "mxfp4"),
    ("MXFP4", B200, "mxfp4"),
    ("FP8", H100, "fp8"),
    ("FP8 (E4M3)", B200, "fp8"),
    ("W4A16", H100, "awq-int4"),
    ("INT4", H100, "awq-int4"),
    ("AWQ", H100, "awq-int4"),
    ("INT4 AWQ", H100, "awq-int4"),
    ("GPTQ", H100, "gptq-int4"),
    ("W8A8", H100, "w8a8-int8"),
    ("SmoothQuant", H100, "w8a8-int8"),
    ("INT8", H100, "int8"),
    ("FP16", H100, "fp16"),
    ("", H100, "bf16"),
    ("Q4_K_M", H100, "q4-k-m"),
])
def test_words_name_catalog_formats(word: str, hardware: object, expected: str) -> None:
    fmt = weights_format(word, hardware)
    assert fmt == expected
    assert quant_catalog().find(fmt) is not None


def test_nvfp4_and_mxfp4_carry_their_block_scales() -> None:
    # NVFP4: 16 values share an FP8 scale (4 + 8/16 bits); MXFP4: 32 share an E8M0 scale (4 + 8/32)
    assert quant_catalog().get("nvfp4").bits_per_weight == pytest.approx(4.5)
    assert quant_catalog().get("mxfp4").bits_per_weight == pytest.approx(4.25)


@pytest.mark.parametrize("word", ["W4A8", "W4A8 AWQ", "banana-quant"])
def test_words_without_a_format_are_input_errors(word: str) -> None:
    with pytest.raises(InputError) as info:
        weights_format(word, H100)
    assert repr(word) in str(info.value)


def test_kv_cache_follows_the_cell_then_the_engine() -> None:
    assert read_precision("FP8", H100, "tensorrt-llm").kv_dtype == "fp8"  # trtllm-bench --quantization FP8
    assert read_precision("FP8", H100, "vllm").kv_dtype is None  # vLLM keeps the activations' dtype
    assert read_precision("FP8", H100, "tensorrt-llm", "FP16").kv_dtype == "fp16"
    assert read_precision("FP16", H100, "vllm", "FP8").kv_dtype == "fp8"
    with pytest.raises(InputError):
        read_precision("FP8", H100, "vllm", "FP4")
