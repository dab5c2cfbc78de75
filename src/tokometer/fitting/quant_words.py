"""Vendor quantization words, read as the engine and the device mean them, into catalog formats.

Serving tables name precisions loosely: NVIDIA's tables print "FP4" for NVFP4 on B200/GB200
(16-value blocks with an FP8 scale: 4.5 bits per weight, the catalog's `nvfp4`), AMD's print "FP4"
for MXFP4 on MI355X (32-value blocks with an E8M0 scale: `mxfp4`); "FP8" on Hopper and Blackwell
is E4M3 with per-tensor scales (`fp8`); TensorRT-LLM's, vLLM's and LMDeploy's "W4A16" / "INT4" /
"AWQ" are 4-bit weights in groups of 128 with fp16 activations (`awq-int4`), "GPTQ" the same
layout from GPTQ (`gptq-int4`); "W8A8" / "SmoothQuant" is int8 weights and activations
(`w8a8-int8`), "INT8" / "W8A16" int8 weight-only (`int8`). A blank cell is the checkpoint's own
BF16. TensorRT-LLM's `--quantization FP8` also makes the KV cache FP8 (its perf docs say so); a
`kv_cache_dtype` cell overrides that either way. A word without a catalog format (W4A8, an FP4 KV
cache) raises `InputError`: the row is unscored with that reason, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tokometer.errors import InputError

_WORDS = {
    "": "bf16", "bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16", "half": "fp16",
    "fp8": "fp8", "fp8e4m3": "fp8", "e4m3": "fp8", "w8a8fp8": "fp8", "fp8w8a8": "fp8", "fp8pertensor": "fp8",
    "nvfp4": "nvfp4", "fp4nvfp4": "nvfp4", "nvfp4fp4": "nvfp4", "modeloptfp4": "nvfp4",
    "mxfp4": "mxfp4", "fp4mxfp4": "mxfp4",
    "w4a16": "awq-int4", "int4": "awq-int4", "awq": "awq-int4", "int4awq": "awq-int4", "w4a16awq": "awq-int4",
    "awqint4": "awq-int4", "4bit": "awq-int4", "int4weightonly": "awq-int4",
    "gptq": "gptq-int4", "int4gptq": "gptq-int4", "w4a16gptq": "gptq-int4", "gptqint4": "gptq-int4",
    "int8": "int8", "w8a16": "int8", "int8weightonly": "int8",
    "w8a8": "w8a8-int8", "smoothquant": "w8a8-int8", "int8sq": "w8a8-int8", "w8a8int8": "w8a8-int8", "int8w8a8": "w8a8-int8",
}
_NO_FORMAT = {"w4a8": "W4A8 (4-bit weights, FP8 activations)", "w4a8awq": "W4A8 AWQ (4-bit weights, FP8 activations)",
              "int4fp8": "W4A8 (4-bit weights, FP8 activations)", "fp8block": "FP8 with 128x128 block scales"}
_KV_WORDS = {"": None, "auto": None, "default": None, "fp8": "fp8", "fp8e4m3": "fp8", "e4m3": "fp8",
             "fp16": "fp16", "bf16": "bf16", "float16": "fp16", "bfloat16": "bf16", "int8": "int8"}


@dataclass(frozen=True, slots=True)
class Precision:
    """A row's weights format and KV cache format (None: the engine's default, the activations' dtype)."""

    quant: str
    kv_dtype: str | None = None


def _key(word: str) -> str:
    return re.sub(r"[^a-z0-9]", "", word.lower())


def weights_format(word: str, hardware: Any) -> str:
    """The catalog format a vendor's weight-precision word names on `hardware` (a HardwareSpec)."""
    from tokometer.catalog import quant_catalog

    key = _key(word)
    if key in ("fp4", "w4a4", "fp4w4a4", "w4a4fp4"):
        vendor = (getattr(hardware, "vendor", "") or "").lower()
        if vendor == "nvidia":
            return "nvfp4"  # NVIDIA's FP4 is NVFP4 (Blackwell tensor cores; Hopper runs it weight-only)
        if vendor == "amd":
            return "mxfp4"  # AMD's FP4 (MI355X) is the OCP MXFP4
        raise InputError(f"quantization {word!r} on {getattr(hardware, 'name', hardware)}: which FP4 (NVFP4 or MXFP4) is not known")
    if key in _NO_FORMAT:
        raise InputError(f"quantization {word!r}: {_NO_FORMAT[key]} has no format in the quant catalog")
    if key in _WORDS:
        return _WORDS[key]
    found = quant_catalog().find(word)
    if found is None:
        raise InputError(f"unknown quantization {word!r} (see `tokometer quants list`)")
    return found.id


def read_precision(word: str, hardware: Any, engine: str, kv_cell: str = "") -> Precision:
    """Weights and KV formats of a serving row: its `quant` cell on `hardware` under `engine`
    (a serving engine id), with its `kv_cache_dtype` cell when it has one."""
    quant = weights_format(word, hardware)
    kv_key = _key(kv_cell)
    if kv_key:
        if kv_key not in _KV_WORDS:
            raise InputError(f"KV cache dtype {kv_cell!r} has no KV format in the quant catalog")
        return Precision(quant, _KV_WORDS[kv_key])
    if engine == "tensorrt-llm" and quant in ("fp8", "nvfp4"):
        return Precision(quant, "fp8")  # trtllm-bench --quantization FP8/NVFP4 quantizes the KV cache to FP8
    return Precision(quant, None)
