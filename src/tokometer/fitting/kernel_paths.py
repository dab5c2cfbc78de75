"""Decode matrix-vector kernels a row's llama.cpp build did not have yet (docs/PHYSICS.md section 4).

A llama.cpp backend runs a batch-1 matmul through a dedicated matrix-vector kernel only for the weight
types it has one for; a type without one falls through to the backend's generic matrix-multiply path,
which converts the weights to FP32 in a scratch buffer and then runs a GEMM over that copy, so each
stored weight byte costs several bytes of memory traffic per decode step. That is a property of the
build, read from the row (its backend, its weight format, the build it states), not of its publication.
An estimate for a user runs today's build, which has the kernel; a row without a stated build is read
the same way (`decode_weight_traffic` 1).

Known cases (`GEMM_FALLBACKS`, each with its source):

- **SYCL, BF16 weights, before llama.cpp PR #21580** ("SYCL: add BF16 to DMMV kernel path (~4x tg
  speedup on Intel Arc)", github.com/ggml-org/llama.cpp/pull/21580, opened 2026-04-07): "BF16 falls
  through to the generic `ggml_sycl_op_mul_mat_sycl` GEMM path, which dequantizes to FP32 and runs a
  full matrix multiply". Per BF16 weight the step reads 2 bytes, writes 4 (the FP32 copy) and the GEMM
  reads those 4 again: 10 bytes where a matrix-vector kernel reads 2, a factor of 5. The PR landed
  between builds b9275 and b9299: the llama.cpp submodule log of nyo16/llama_cpp_ex (CHANGELOG.md,
  v0.8.13: 52fb93a2b -> b22ff4b7b, 25 commits, listing #21580; v0.8.14-v0.8.16 count 52 + 51 + 40
  commits on to tag b9442, so b22ff4b7b is b9299 and 52fb93a2b b9274). Builds before b9275 are read
  as without it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tokometer.domain.specs import Efficiency


@dataclass(frozen=True, slots=True)
class GemmFallback:
    """Weights of one format on one backend that a build before `first_build` decoded through the GEMM path."""

    backend: str  # domain.specs BACKENDS id
    weights: str  # quant catalog id of the stored weights
    first_build: int  # the first llama.cpp build that may have the matrix-vector kernel
    traffic_per_weight_byte: float  # bytes the fallback moves per stored weight byte (the kernel: 1)
    source: str


GEMM_FALLBACKS = (
    GemmFallback(
        backend="sycl", weights="bf16", first_build=9275, traffic_per_weight_byte=(2 + 4 + 4) / 2,
        source="llama.cpp PR #21580 (BF16 had no SYCL DMMV kernel: BF16 -> FP32 copy, then GEMM)",
    ),
)


LLAMA_CPP = "llama-cpp"  # the fit's engine id for llama.cpp and the engines pooled with it (llama-server, LM Studio)


def decode_weight_traffic(build: int | None, engine_id: str, backend: str, weights: str | None) -> float:
    """How many times its stored weight bytes a row's decode step streamed: the fallback's factor when its
    stated llama.cpp build (`validation.engine_build`; None: not stated, read as today's) routed these
    weights through the generic GEMM, else 1. `engine_id`: the fit's engine id
    (`catalog.efficiency.fit_engine_id`); `weights`: the row's quant catalog id."""
    if build is None or weights is None or engine_id != LLAMA_CPP:
        return 1.0
    for rule in GEMM_FALLBACKS:
        if rule.backend == backend.lower() and rule.weights == weights and build < rule.first_build:
            return rule.traffic_per_weight_byte
    return 1.0


def as_built(efficiency: Efficiency, traffic_per_weight_byte: float) -> Efficiency:
    """`efficiency` for a row whose decode moved `traffic_per_weight_byte` bytes per stored weight byte: the
    weights' shares of the bandwidth divided by it (the KV cache, the fixed costs and prefill unchanged)."""
    if traffic_per_weight_byte == 1.0:
        return efficiency
    quantized = efficiency.quantized_bandwidth_fraction
    return replace(
        efficiency,
        bandwidth_fraction=efficiency.bandwidth_fraction / traffic_per_weight_byte,
        quantized_bandwidth_fraction=None if quantized is None else quantized / traffic_per_weight_byte,
    )
