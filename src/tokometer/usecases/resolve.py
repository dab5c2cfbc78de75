"""Names and numbers to specs: a model, hardware and weight format from the catalogs, a file, a Hub
id or bare numbers, and the compute peak and setup a format gets on a device.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from tokometer.catalog import (
    HARDWARE_LIMITS,
    hardware_catalog,
    model_catalog,
    normalise,
    quant_catalog,
)
from tokometer.costmodel.layout import Layout, Setup
from tokometer.costmodel.roofline import VECTOR_DTYPE, Peak, compute_peak
from tokometer.domain.specs import EngineSpec, HardwareSpec, ModelSpec, ParamGroups, QuantFormat
from tokometer.errors import InputError, require_positive
from tokometer.usecases.policy import DEFAULT_HARDWARE, FAMILY_VARIANTS


def resolve_model(name: str) -> ModelSpec:
    """A catalog name, else a file/folder/Hub id through `tokometer.ingest` (when installed)."""
    preset = model_catalog().find(name)
    if preset is not None:
        return preset.spec
    looks_external = _exists(name) or name.endswith((".gguf", ".json", ".safetensors")) or "/" in name
    if looks_external:
        from tokometer.ingest import load_model

        spec: ModelSpec = load_model(name)
        return spec
    # `find` missed it, so `get` raises: an unknown name, or several names where one is taken
    return model_catalog().get(name).spec


def _exists(name: str) -> bool:
    """Whether `name` is a path that exists; a name no file system takes (too long, a NUL) is not."""
    try:
        return Path(name).exists()
    except (OSError, ValueError):
        return False


LOCAL_PROFILE = "local"  # the entry `tokometer probe` writes for this machine


def require_local_profile(name: str | None) -> None:
    """`local` before `tokometer probe` has measured this machine: say what to do, not "unknown hardware"."""
    if name and normalise(name) == LOCAL_PROFILE and hardware_catalog().find(LOCAL_PROFILE) is None:
        raise InputError(
            "no `local` hardware profile yet: run `tokometer probe` first (it measures this machine)", field="hw"
        )


def resolve_hardware(
    name: str | None,
    *,
    bandwidth_gb_per_s: float | None = None,
    memory_gb: float | None = None,
    tflops: float | None = None,
) -> HardwareSpec:
    """A catalog entry (numbers given alongside override it) or a custom device from bare numbers.

    Every number given takes effect: with a name, or with none of the three (the default device), they
    override the entry; `bandwidth_gb_per_s` without a name makes a custom device. `tflops` is the dense
    fp16 peak: it replaces the fp16-accumulate figure too (else llama.cpp's prefill would keep the
    datasheet's), and the fp8/int8/fp4 peaks scale with it, keeping the datasheet's ratios.
    """
    require_positive("bandwidth_gb_per_s", bandwidth_gb_per_s)
    require_positive("memory_gb", memory_gb)
    require_positive("tflops", tflops)
    # a custom device's numbers get the catalog's own plausibility limits (one place: HARDWARE_LIMITS)
    for field, key, value in (("bandwidth_gb_per_s", "memory_bandwidth_gb_per_s", bandwidth_gb_per_s), ("memory_gb", "memory_gb", memory_gb), ("tflops", "fp16_tflops", tflops)):
        limit, why = HARDWARE_LIMITS[key]
        if value is not None and value > limit:
            raise InputError(f"{{{field}}} = {value:g} is implausible (at most {limit:,g}: {why})", field=field)
    require_local_profile(name)
    if name or bandwidth_gb_per_s is None:
        base = family_variant(hardware_catalog().get(name or DEFAULT_HARDWARE))
        changes: dict[str, Any] = {}
        if bandwidth_gb_per_s:
            changes["memory_bandwidth_gb_per_s"] = bandwidth_gb_per_s
        if memory_gb:
            # on Apple silicon the number that matters is what the GPU may wire (iogpu.wired_limit_mb)
            changes["gpu_memory_limit_gb" if base.vendor == "apple" else "memory_gb"] = memory_gb
        if tflops:
            changes.update(_scaled_peaks(base, tflops))
        if changes:
            changes["name"] = base.name + " (custom numbers)"
            changes["source"] = "user-supplied numbers over " + base.source
        return replace(base, **changes) if changes else base
    return HardwareSpec(
        id="custom",
        name="custom device",
        vendor="custom",
        kind="gpu",
        segment="datacenter",
        memory_gb=memory_gb or math.inf,
        memory_bandwidth_gb_per_s=bandwidth_gb_per_s,
        fp16_tflops=tflops,
        launch_year=None,
        source="user-supplied numbers",
    )


def family_variant(found: HardwareSpec) -> HardwareSpec:
    """The variant a bare family name means (`policy.FAMILY_VARIANTS`): `M2 Ultra` is the base 64 GB Mac
    Studio, not the catch-all entry that calibration sources without a core count use."""
    chosen = FAMILY_VARIANTS.get(found.id)
    return hardware_catalog().get(chosen) if chosen else found


# words that make a different product, not a variant of the same one (rtx-4090 vs rtx-4090-laptop, or
# the aftermarket rtx-4090-48gb-modified: nobody typing "rtx-4090" means that card)
OTHER_PRODUCT_WORDS = ("laptop", "ti", "super", "mobile", "xt", "pro", "max", "ultra", "plus", "modified", "d")  # "d": the China-market cut (RTX 4090 D)


def hardware_variants(name: str, chosen: HardwareSpec) -> tuple[HardwareSpec, ...]:
    """The other catalog devices a name could mean: `H100` is the SXM5 card, but also the PCIe and NVL ones.

    A variant is an entry whose id extends the typed name (`h100` -> `h100-pcie`), leading vendor words
    dropped; another product (`-laptop`, `-ti`...) is not a variant.
    """
    catalog = hardware_catalog()
    words = normalise(name).split("-")
    for start in range(len(words)):
        key = "-".join(words[start:])
        found = [
            hw for hw in catalog
            if hw.id != chosen.id and hw.id.startswith(key + "-") and hw.id not in FAMILY_VARIANTS
            and not any(part in OTHER_PRODUCT_WORDS for part in hw.id[len(key) + 1 :].replace("max-q", "maxq").split("-"))
        ]
        if found or key in catalog.ids:
            return tuple(found)
    return ()


def variant_note(name: str, chosen: HardwareSpec) -> str | None:
    """A visible note when a typed hardware name is ambiguous: what was assumed and what else it could be."""
    others = hardware_variants(name, chosen)
    if not others:
        return None

    return (
        f"{name} names several devices: {chosen.name} ({chosen.memory_gb:g} GB, "
        f"{chosen.memory_bandwidth_gb_per_s:g} GB/s) assumed; the others: {', '.join(hw.id for hw in others)}"
    )


def _scaled_peaks(base: HardwareSpec, fp16_tflops: float) -> dict[str, Any]:
    """The peaks of `base` with its dense fp16 figure set to `fp16_tflops`: the fp16-accumulate rate goes
    (it is the datasheet's, not the user's), the narrower types keep their ratio to fp16 (none without it)."""
    ratio = fp16_tflops / base.fp16_tflops if base.fp16_tflops else None
    changes: dict[str, Any] = {
        "fp16_tflops": fp16_tflops, "fp16_acc16_tflops": None, "fp16_mma_sync_tflops": None, "int32_tops": None,
        "compute_peak_derived": False
    }
    for key in ("fp8_tflops", "int8_tops", "fp4_tflops"):
        value = getattr(base, key)
        changes[key] = value * ratio if value is not None and ratio is not None else None
    return changes


def resolve_quant(name: str | None, bits: float | None, model: ModelSpec) -> QuantFormat | None:
    """`--bits` wins; then `--quant`; then the model's published dtype; None means 'exact file bytes'."""
    require_positive("bits", bits)
    if bits is not None:
        if bits > 64:
            raise InputError(f"{{bits}} must be at most 64, got {bits:g}", field="bits")
        return QuantFormat(
            id=f"{bits:g}bit",
            name=f"{bits:g} bits/weight",
            bits_per_weight=bits,
            usage="weights",
            compute_dtype="fp8" if bits == 8 else "fp16",
            source="user-supplied bits per weight",
            kind="user-bits",
        )
    if name:
        return quant_catalog().get(name)
    if model.exact_weight_bytes is not None:
        return None
    return quant_catalog().get(model.default_quant or "bf16")


def is_quantized(fmt: QuantFormat | None, weights: ParamGroups, model: ModelSpec) -> bool:
    """Whether weights go through block-dequantizing kernels (Q4_K, GPTQ, MLC q4...) rather than plain floats."""
    if fmt is not None and fmt.kind not in ("user-bits", "file-size"):
        return fmt.kind in ("block", "mix", "group")
    return model.total_params > 0 and weights.total * 8.0 / model.total_params < 12.0


def format_peak(
    hardware: HardwareSpec, fmt: QuantFormat | None, engine: EngineSpec, int32_flop_per_op: float | None = None
) -> Peak:
    """The compute peak a weight format runs at on this hardware under this engine.

    An engine whose block FP4 kernels do not reach the FP4 tensor rate (`fp4_block_tensor_rate = false`:
    llama.cpp multiplies GGUF's 4-bit float blocks through the same tiled kernels as its other block
    types; its native MXFP4 path, PR #17906, read 1.27x its previous one on an RTX PRO 6000, where the FP4
    datasheet rate is 4x the FP16 one; docs/PHYSICS.md section 5) runs such a format at the fp16 peak.
    `int32_flop_per_op`: the engine's fitted INT32 bound (`Efficiency.int32_flop_per_op`; `roofline.int32_cap`).
    """
    if not hardware.matrix_gemm or bf16_on_vector_alus(hardware, fmt, engine):
        return vector_peak(hardware)
    dtype = fmt.compute_dtype if fmt else "fp16"
    if dtype == "fp4" and not engine.fp4_block_tensor_rate and fmt is not None and fmt.kind == "block" and hardware.fp4_tflops:
        dtype = "fp16"
    return compute_peak(
        hardware, dtype, fp16_accumulate=engine.fp16_accumulate, wgmma=engine.tensor_wgmma, int32_flop_per_op=int32_flop_per_op
    )


def bf16_on_vector_alus(hardware: HardwareSpec, fmt: QuantFormat | None, engine: EngineSpec) -> bool:
    """BF16 weights under llama.cpp on an Intel GPU: no BF16 matrix (XMX) path in its SYCL or Vulkan backend.

    SYCL's generic `ggml_sycl_op_mul_mat_sycl` takes its FP16 (XMX) branch only for F16 and block-quantized
    weights; BF16 is converted to FP32 and multiplied in FP32 (llama.cpp PR #21580,
    https://github.com/ggml-org/llama.cpp/pull/21580), and FP32 has no XMX rate. Measured: an Arc Pro B70
    prefills 8-14B BF16 models at 460-910 tok/s (KYUZ0-B70, SYCL and Vulkan), 11-15 TFLOPS, half of its
    23 TFLOPS vector rate and 6-8 % of its 183 TFLOPS FP16 XMX figure (docs/PHYSICS.md section 5).
    """
    family = {engine.id, engine.based_on or ""}
    return (
        fmt is not None and fmt.id == "bf16" and hardware.vendor == "intel" and hardware.kind == "gpu"
        and "llama-cpp" in family and bool(hardware.fp32_tflops)
    )


def vector_peak(hardware: HardwareSpec) -> Peak:
    """The FP32 vector (shader) rate, for matmuls that run without the matrix engines."""
    return Peak(hardware.fp32_tflops, VECTOR_DTYPE, derived=hardware.compute_peak_derived)


def without_matrix_engines(hardware: HardwareSpec) -> HardwareSpec:
    """The device as a build without a matrix-engine GEMM path sees it: every GEMM at its FP32 vector rate.

    llama.cpp's SYCL backend multiplies F16 and block-quantized weights in FP16 (on Intel's XMX engines,
    through oneDNN/oneMKL) only when built with `GGML_SYCL_F16`; without it, its default (examples/sycl/
    build.sh: "#for FP32", the FP16 line commented "faster for long-prompt inference"; the SYCL Dockerfile's
    `ARG GGML_SYCL_F16=OFF`), `ggml_sycl_op_mul_mat_sycl` dequantizes to FP32 and runs an FP32 GEMM, which
    Arc's XMX engines do not execute (docs/PHYSICS.md section 5). Which rows ran such a build is a reading
    of their source (RESOLVE.toml `[[fp32_gemm_build]]`, `fitting.aliases.fp32_gemm_build_for`).
    """
    return replace(hardware, matrix_gemm=False) if hardware.fp32_tflops else hardware


IGPU_PEAK_NOTE = (
    "{name} is an APU and its catalog entry gives no CPU-core compute figure: a --backend cpu prefill is "
    "read against the integrated GPU's {peak:g} TFLOPS fp16 peak, likely several times too fast "
    "(the entry has no cpu_fp32_tflops; docs/PHYSICS.md section 5, 'The CPU view of an APU')"
)


def cpu_view(hardware: HardwareSpec) -> HardwareSpec:
    """An APU as a run on its CPU cores sees it (llama.cpp `--backend cpu`): the cores' peaks, the class `cpu`.

    A `kind = "apu"` entry's peaks are its integrated GPU's; a CPU-backend run multiplies on the CPU cores,
    several times slower (EW-IGPU's HX 370 prefills llama 8B Q4_K_M at 45.85 tok/s where the 890M's peak
    would read about 300). The entry's `cpu_*` fields (catalog/cpu_side.py: cores x clock x FLOPs per
    cycle, derived) replace the peaks, and `kind = "cpu"` makes the hardware class `cpu`, so the fit's
    CPU efficiency (`llama-cpp/cpu/cpu`) applies, for prediction and for fitting such rows alike.
    Memory: the entry's bandwidth is kept; no source gives what the CPU cluster alone reaches of the
    shared bus (often less than the GPU's share). Its unit count is dropped: the iGPU's CUs are not the
    CPU's memory-request issuers, and the CPU b_unit is fitted on server cores. Unchanged without
    `cpu_*` fields, or on any other kind.
    """
    if hardware.kind != "apu" or not hardware.cpu_fp32_tflops:
        return hardware
    return replace(
        hardware,
        name=f"{hardware.name}, CPU cores",
        kind="cpu",
        backend="cpu",
        fp32_tflops=hardware.cpu_fp32_tflops,
        fp16_tflops=hardware.cpu_fp16_tflops or hardware.cpu_fp32_tflops,
        fp16_acc16_tflops=None,
        fp16_mma_sync_tflops=None,
        int32_tops=None,
        fp8_tflops=None,
        int8_tops=hardware.cpu_int8_tops,
        fp4_tflops=None,
        compute_source=hardware.cpu_compute_source,
        compute_peak_derived=True,
        compute_units=None,
        compute_units_source=None,
        architecture=None,
        architecture_source=None,
        matrix_gemm=True,
    )


def backend_view(hardware: HardwareSpec, backend: str | None) -> tuple[HardwareSpec, str | None]:
    """The device as a run on `backend` sees it, and a note when that reading is doubtful: an APU under
    the CPU backend is its `cpu_view`; one without CPU figures keeps its iGPU peaks, with a note saying so."""
    if backend != "cpu" or hardware.kind != "apu":
        return hardware, None
    view = cpu_view(hardware)
    if view is not hardware:
        return view, None
    return hardware, IGPU_PEAK_NOTE.format(name=hardware.name, peak=hardware.fp16_tflops or 0.0)


def setup_for_format(
    spec: ModelSpec, fmt: QuantFormat | None, weights: ParamGroups, base: Setup, engine: EngineSpec, layout: Layout | None = None
) -> Setup:
    """Another model or weight format on `base`'s hardware, efficiency and KV dtype (draft, smaller quant)."""
    return Setup(
        spec,
        weights,
        base.hardware,
        base.efficiency,
        format_peak(base.hardware, fmt, engine, base.efficiency.int32_flop_per_op),
        base.kv_bytes_per_element,
        is_quantized(fmt, weights, spec),
        layout if layout is not None else Layout(),
    )
