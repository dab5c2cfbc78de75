"""One measured row as the physics sees it at 100 % efficiency (`Features`), and a row's time
predicted back from an efficiency (`predicted_time`): the terms every fit in this package is linear in.

The decode and prefill equations are in `calibration` (docs/PHYSICS.md section 4); this module turns a
`Case` into their columns once, so fits, splits and bands share them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

from tokometer.costmodel.layout import IDEAL
from tokometer.costmodel.roofline import (
    VECTOR_DTYPE,
    alu_peak_tflops,
    decode_layers,
    decode_score_elements,
    expert_dispatch_time_s,
    expert_token_share,
    int32_bound_tflops,
    int32_rate_tflops,
    prefill_matmul_time,
    prefill_score_elements,
    routed_matmul_share,
)
from tokometer.domain.families import gpu_family
from tokometer.domain.specs import Efficiency, stream_bandwidth_share
from tokometer.domain.units import GB
from tokometer.errors import TokometerError
from tokometer.fitting.kernel_paths import decode_weight_traffic
from tokometer.fitting.rows import Case
from tokometer.fitting.suites import suite_of
from tokometer.fitting.validation import (
    above_ceiling,
    case_request,
    engine_build,
    pages_past_working_set,
    resolve_case_hardware,
    unfused_decode_attention,
    unsupported_setup,
)


@dataclass(frozen=True)
class Features:
    case: Case
    group: str
    engine_id: str
    backend: str
    hardware_id: str
    prior: Efficiency
    t_measured_s: float
    memory_s: float = 0.0  # weight bytes / datasheet bandwidth
    kv_s: float = 0.0  # KV-cache bytes read and written / datasheet bandwidth
    alu_s: float = 0.0  # weights multiplied / fp32 shader peak: seconds per ALU op per weight
    decode_score_s: float = 0.0  # decode attention scores / datasheet bandwidth: seconds per byte per score
    ecc_s: float = 0.0  # (weight + KV bytes) / datasheet bandwidth on a card with inline ECC, else 0
    expert_s: float = 0.0  # routed experts a decode step (prefill: one chunk) runs, over MoE layers, x 1 us: s per us of tau_expert
    quantized: bool = False
    n_layers: float = 0.0  # layers paying tau_layer (a recurrent layer's extra kernels counted in, decode only)
    matmul_s: float = 0.0  # matmul FLOPs / datasheet peak
    attention_s: float = 0.0
    score_s: float = 0.0  # attention scores / datasheet bandwidth: seconds per byte moved per score
    prompt_tokens: int = 0
    n_chunks: int = 1
    bandwidth_gb_per_s: float = 0.0  # datasheet
    stream_units: float | None = None  # `HardwareSpec.stream_units`: SMs / CUs / GPU cores (Apple's at their clock), the N of N * b_unit
    family: str | None = None  # `domain.families.gpu_family`: the GPU family whose offset the row takes (None on a CPU)
    routed_share: float = 0.0  # share of the matmul FLOPs in routed experts (`roofline.routed_matmul_share`)
    expert_token_share: float = 1.0  # k / E: the share of a chunk's tokens one routed expert sees
    row_engine: str = ""  # the engine the row names (engines.toml id), which `engine_id` may pool with its parent
    peak_tflops: float = 0.0  # the prefill peak matmul_s and attention_s are priced at (no INT32 bound)
    # `roofline.int32_rate_tflops` where the engine's GEMMs run through mma.sync (no wgmma), else 0: the rate
    # K x which bounds the peak (`int32_limited`)
    int32_tflops: float = 0.0

    @property
    def chunk_tokens(self) -> float:
        """Tokens one prefill matmul sees: the prompt, or the engine's chunk of it."""
        return self.prompt_tokens / max(1, self.n_chunks)

    @cached_property  # read by every pass of every prefill fit: computed once per row
    def half_tokens_column(self) -> float:
        """What T_half / eta_max multiplies (`roofline.prefill_matmul_time` at matmul = matmul_s):
        matmul_s / c for a dense model, its routed share over the c k / E tokens an expert sees."""
        from tokometer.costmodel.roofline import prefill_matmul_time

        return prefill_matmul_time(self.matmul_s, self.routed_share, self.expert_token_share, self.chunk_tokens, 1.0, 1.0) - self.matmul_s


def _unit(prior: Efficiency) -> Efficiency:
    """eta = 1 and no fixed costs, with the engine's prefill chunking and recurrent state traffic: the physics alone."""
    return replace(IDEAL, prefill_chunk_tokens=prior.prefill_chunk_tokens, recurrent_state_bytes=prior.recurrent_state_bytes)


def features(case: Case) -> Features | None:
    """Physics at 100 % efficiency for one usable row (single device, unflagged, tg or pp)."""
    from tokometer.catalog import engine_catalog
    from tokometer.catalog.efficiency import efficiency_for, fit_engine_id, group_key
    from tokometer.usecases.estimate import estimate

    if case.flag or case.n_devices != 1 or case.batch != 1 or case.metric not in ("tg", "pp"):
        return None
    if suite_of(case) is not None:
        return None  # a suite's aggregate (LocalScore): scored as held-out evidence, never fitted (fitting/suites.py)
    if case.metric == "pp" and case.prompt_tokens <= 0:
        return None  # a prompt rate without its prompt length: nothing to fit
    if case.metric == "tg" and not case.text("prompt_tokens") and not case.text("gen_tokens"):
        return None  # decode at an unstated depth (a suite's aggregate): scored, not fitted
    if unsupported_setup(case):  # a row validate cannot score is not fitted either (fitting/aliases.py)
        return None
    try:
        hardware = resolve_case_hardware(case)
        request = case_request(case, hardware)
        engine = engine_catalog().get(request.engine or "llama-cpp")
        backend = request.backend or hardware.backend
        prior = default_efficiency(engine.id)
        own = efficiency_for(engine, hardware, backend)
        est = estimate(request, efficiency=_unit(own))
    except TokometerError:
        return None
    base = dict(
        case=case,
        group=group_key(engine, hardware, backend),
        engine_id=fit_engine_id(engine),
        row_engine=engine.id,
        backend=backend,
        hardware_id=hardware.id,
        family=gpu_family(hardware.family, backend),
        prior=prior,
        quantized=est.quantized,
        # decode pays a recurrent layer's extra kernels (`roofline.decode_step`), prefill's long kernels do not
        n_layers=decode_layers(est.model, own) if case.metric == "tg" else est.model.n_layers,
        bandwidth_gb_per_s=hardware.memory_bandwidth_gb_per_s,
        stream_units=hardware.stream_units,
    )
    if above_ceiling(case, est):
        return None  # far above the device's physical ceiling: nothing the physics can fit
    if pages_past_working_set(est):
        return None  # weights past macOS's default GPU working set: the speed of paging, not of the engine
    if case.metric == "tg":
        bw = hardware.memory_bandwidth_gb_per_s * GB
        alu_peak = alu_peak_tflops(hardware)
        traffic = decode_weight_traffic(engine_build(case), fit_engine_id(engine), backend, request.quant)  # GEMM fallback
        return Features(
            t_measured_s=1.0 / case.value,
            memory_s=traffic * est.step.weight_bytes / bw,
            kv_s=(est.step.kv_read_bytes + est.step.kv_write_bytes) / bw,
            alu_s=est.model.matmul_params_per_token() / (alu_peak * 1e12) if alu_peak else 0.0,
            decode_score_s=decode_score_elements(est.model, est.step.depth_tokens) / bw if unfused_decode_attention(case) else 0.0,
            ecc_s=(est.step.weight_bytes + est.step.kv_read_bytes + est.step.kv_write_bytes) / bw if hardware.inline_ecc else 0.0,
            expert_s=est.model.expert_slots(1.0) * 1e-6,
            **base,  # type: ignore[arg-type]
        )
    if est.prefill is None or not est.peak.tflops or (est.peak.note and not est.peak.derived):
        return None  # a fallback peak (fp32 for a tensor-core GPU) would bias the fit; a derived one is a peak
    peak = est.peak.tflops * 1e12
    int32 = 0.0 if engine.tensor_wgmma else int32_rate_tflops(hardware, est.peak)
    # weights dequantized to FP32 for a vector-ALU GEMM run the plain GEMM kernel (`roofline.prefill`)
    base["quantized"] = est.quantized and est.peak.dtype != VECTOR_DTYPE
    return Features(
        routed_share=routed_matmul_share(est.model),
        expert_token_share=expert_token_share(est.model),
        t_measured_s=case.prompt_tokens / case.value,
        matmul_s=est.prefill.matmul_flops / peak,
        attention_s=est.prefill.attention_flops / peak,
        score_s=(
            prefill_score_elements(est.model, case.prompt_tokens) / (hardware.memory_bandwidth_gb_per_s * GB)
            if unfused_decode_attention(case) else 0.0  # flash attention keeps the scores on chip
        ),
        prompt_tokens=case.prompt_tokens,
        n_chunks=est.prefill.n_chunks,
        peak_tflops=est.peak.tflops,
        int32_tflops=int32,
        # s per us of tau_expert: the experts `roofline.expert_dispatch_time_s` charges one chunk (one token's
        # per MoE layer on a grouped MoE kernel, every touched one otherwise)
        expert_s=expert_dispatch_time_s(
            est.model, replace(IDEAL, expert_overhead_us=1.0, grouped_experts=engine.grouped_moe_kernel),
            math.ceil(case.prompt_tokens / max(1, est.prefill.n_chunks))),
        **base,  # type: ignore[arg-type]
    )


def default_efficiency(engine_id: str) -> Efficiency:
    from tokometer.catalog import engine_catalog

    return engine_catalog().get(engine_id).efficiency



def stream_scale(f: Features, unit_bandwidth_gb_per_s: float | None) -> float:
    """1 / `stream_bandwidth_share`: how much longer the row's stream takes than at the datasheet bandwidth.

    The inverse of the share prediction folds into its eta's (`Efficiency.for_hardware`), from the
    same function, so the fitted b_unit means the same on both sides.
    """
    return 1.0 / stream_bandwidth_share(f.stream_units, f.bandwidth_gb_per_s, unit_bandwidth_gb_per_s)


def limited(f: Features, unit_bandwidth_gb_per_s: float | None) -> Features:
    """The row's stream features (weights, KV, scores) at the Little's-law bandwidth N * b_unit."""
    scale = stream_scale(f, unit_bandwidth_gb_per_s)
    if scale == 1.0:
        return f
    return replace(f, memory_s=f.memory_s * scale, kv_s=f.kv_s * scale, decode_score_s=f.decode_score_s * scale)




def int32_scale(f: Features, flop_per_op: float | None) -> float:
    """peak / min(peak, K x INT32 rate): how much longer the row's prefill FLOPs take under the INT32 bound
    K = `flop_per_op` (`roofline.int32_cap`, the function prediction uses; 1 without a bound)."""
    bound = int32_bound_tflops(f.peak_tflops, f.int32_tflops, flop_per_op)
    return f.peak_tflops / bound if bound < f.peak_tflops else 1.0


def int32_limited(f: Features, flop_per_op: float | None) -> Features:
    """The row's prefill FLOP terms (matmuls, attention) at the peak the INT32 bound K leaves."""
    scale = int32_scale(f, flop_per_op)
    if scale == 1.0:
        return f
    return replace(f, matmul_s=f.matmul_s * scale, attention_s=f.attention_s * scale, peak_tflops=f.peak_tflops / scale)


def kv_cap_time_s(f: Features, kv_stream_gb_per_s: float | None) -> float:
    """The row's KV bytes at the engine's KV stream cap C_kv on an Apple GPU (`Efficiency.for_hardware`), 0 without one."""
    if not kv_stream_gb_per_s or f.backend != "metal" or f.kv_s <= 0:
        return 0.0
    return f.kv_s * f.bandwidth_gb_per_s / kv_stream_gb_per_s


def predicted_time(f: Features, eff: Efficiency) -> float:
    if f.case.metric == "tg":
        kv_capped = kv_cap_time_s(f, eff.kv_stream_gb_per_s)
        f = limited(f, eff.unit_bandwidth_gb_per_s)
        return (
            f.memory_s / eff.bandwidth_fraction_for(f.quantized)
            + max(f.kv_s / eff.kv_fraction_for(f.quantized), kv_capped)
            + f.alu_s * eff.decode_alu_flops_per_weight
            + f.decode_score_s * eff.decode_score_bytes
            + f.ecc_s * eff.inline_ecc_overhead
            + f.expert_s * eff.expert_overhead_us
            + (f.n_layers * eff.layer_overhead_us + eff.step_overhead_us) * 1e-6
        )
    f = int32_limited(f, eff.int32_flop_per_op)
    matmul = prefill_matmul_time(
        f.matmul_s, f.routed_share, f.expert_token_share, f.chunk_tokens, eff.prefill_max_for(f.quantized), eff.prefill_half_tokens
    )
    eta_att = eff.prefill_attention_fraction or eff.prefill_efficiency_max
    score = f.score_s * eff.attention_score_bytes
    fixed = (f.n_layers * eff.layer_overhead_us + eff.step_overhead_us) * 1e-6 + f.expert_s * eff.expert_overhead_us
    return matmul + f.attention_s / eta_att + score + f.n_chunks * fixed



def case_group(case: Case) -> str | None:
    """The efficiency group (engine/backend/hardware class) a row is predicted with, any device count."""
    from tokometer.catalog import engine_catalog
    from tokometer.catalog.efficiency import group_key

    try:
        hardware = resolve_case_hardware(case)
        request = case_request(case, hardware)
        engine = engine_catalog().get(request.engine or "llama-cpp")
    except TokometerError:
        return None
    return group_key(engine, hardware, request.backend or hardware.backend)


def case_source(case: Case) -> str:
    """The publication a row comes from (`source_id`), the unit leave-one-source-out holds out."""
    return case.text("source_id") or "(no source_id)"


def case_hardware_id(case: Case) -> str | None:
    try:
        return resolve_case_hardware(case).id
    except TokometerError:
        return None

