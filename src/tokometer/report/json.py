"""The one JSON shape of an estimate, and the plain-words explanation that rides in it.

`estimate_dict(e, curves)` is what `tokometer estimate --json`, the web API and a bench run's stored
prediction print. It only reads: the estimate and its curves (`usecases.curves.estimate_curves`)
are computed before, so serialising never runs the model.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from tokometer.costmodel.curves import experts_touched
from tokometer.costmodel.layout import LeverStep, kv_shards, moe_comm_s
from tokometer.costmodel.links import (
    ALLREDUCE_LAUNCH_US,
    LINK_EFFICIENCY,
    LINK_SOURCES,
    activation_bytes,
    allreduce_protocol,
    allreduce_time_s,
)
from tokometer.costmodel.memory import kv_bytes_per_token, kv_cache_bytes
from tokometer.costmodel.roofline import Prefill, Step, alu_peak_tflops
from tokometer.domain.specs import Efficiency
from tokometer.domain.units import BILLION, GB
from tokometer.report.notices import notice_text
from tokometer.usecases.advice import QuantAdvice
from tokometer.usecases.curves import EstimateCurves, estimate_curves
from tokometer.usecases.estimate import Estimate
from tokometer.usecases.reading import reading_verdict

if TYPE_CHECKING:
    from tokometer.usecases.remedies import Remedy
    from tokometer.usecases.utilization import UtilizationReport


def estimate_json(e: Estimate) -> dict[str, Any]:
    """`estimate_dict` with the default curves: what `--json` prints."""
    return estimate_dict(e, estimate_curves(e))


def advice_text(a: QuantAdvice) -> str:
    """The quant advice in words."""
    current = (
        f"the experts of {a.expert_layers}/{a.n_layers} layers in system RAM"
        if a.expert_layers
        else f"{a.gpu_layers}/{a.n_layers} layers on the GPU"
    )
    if a.kind == "no-offload-needed":
        return (
            f"no need to offload: the model fits in {a.hardware_name} entirely; all {a.n_layers} layers on the "
            f"GPU decode at about {a.advised_tok_s:.3g} tok/s, against {a.current_tok_s:.3g} tok/s with "
            + (current if a.expert_layers else f"{a.gpu_layers}")
        )
    now = (
        f"{a.current_tok_s:.3g} tok/s with {current}"
        if a.gpu_layers is not None or a.expert_layers
        else "the current quant, which does not fit"
    )
    return (
        f"drop a quant step rather than offload: {a.quant_name} ({a.weights_gb:.1f} GB) fits in "
        f"{a.hardware_name} entirely and decodes at about {a.advised_tok_s:.3g} tok/s, against {now}"
    )


def remedy_text(r: Remedy, hardware_name: str) -> str:
    """One setup that fits, in words, with the flags that ask for it."""
    speed = f"{r.estimate_tok_s:.3g} tok/s, {r.memory_gb:.1f} of {r.available_gb:.1f} GB"
    if r.kind == "quant":
        return f"{r.quant_name} weights ({r.weights_gb:.1f} GB): {speed} (--quant {(r.quant or '').replace('-', '_')})"
    if r.kind == "offload":
        return (
            f"offload: {r.gpu_layers} of {r.n_layers} layers on the GPU, the rest on {r.cpu_hw}: {speed} on the GPU "
            f"(--gpu-layers {r.gpu_layers})"
        )
    split = f"--pp {r.pp}" if (r.pp or 1) > 1 else f"--tp {r.tp}"
    how = "layers split" if (r.pp or 1) > 1 else "tensor parallel"
    return f"{r.devices} x {hardware_name} ({how}): {speed} ({split})"


def fit_headline(e: Estimate) -> str | None:
    """The first thing to say about a setup that does not fit its memory (None when it fits)."""
    m = e.memory
    if m.fits or not math.isfinite(m.available_gb):
        return None
    devices = e.layout_setup.layout.devices
    where = f"{devices} x {e.hardware.name}" if devices > 1 else e.hardware.name
    return (
        f"does not fit: needs {m.total_gb:.1f} GB, {where} offers {m.available_gb:.1f} GB to {e.engine.name}; "
        + ("nearest setups that fit:" if e.remedies else "nothing near it fits")
    )


def _fit_dict(e: Estimate) -> dict[str, Any]:
    """`fit`: whether the setup fits; when not, its speeds are 'if it fit', and the nearest setups that do."""
    return {
        "fits": e.fits,
        "speeds_if_it_fit": not e.fits,
        "headline": fit_headline(e),
        "remedies": [{**r.__dict__, "text": remedy_text(r, e.hardware.name)} for r in e.remedies],
    }


def estimate_warnings(e: Estimate) -> list[str]:
    """The estimate's warnings, then its advice (when it has one) in words."""
    return [*map(notice_text, e.warnings), *([advice_text(e.advice)] if e.advice else [])]


def _cache_words(e: Estimate) -> str:
    """What the step's cache traffic is: the KV cache, and a recurrent model's state with the passes it costs."""
    if not e.model.recurrent_layers:
        return "KV cache"
    b_state = e.efficiency.recurrent_state_bytes
    passes = f", {b_state:g} bytes per element a token" if b_state else ""
    return f"KV cache and recurrent state ({e.model.recurrent_layers} of {e.model.n_layers} layers{passes})"


def explanation(e: Estimate) -> list[str]:
    """Plain lines on why: which bound and where the bytes go."""
    s = e.step
    per = s.batch
    lines = []
    w = s.weight_bytes / GB
    kv = (s.kv_read_bytes + s.kv_write_bytes) / GB
    what = "active " if e.model.is_moe else ""
    lines.append(
        f"decode is {_decode_bound_words(s)}: each step reads {w:.2f} GB of {what}weights"
        + (f" + {kv:.2f} GB of {_cache_words(e)} at {s.depth_tokens:,.0f} tokens" if kv > 0.0005 else "")
        + (f" for {per} streams" if per > 1 else "")
        + f" from {e.hardware.memory_bandwidth_gb_per_s:,.0f} GB/s"
        + (f" on each of {e.layout_setup.layout.tp} devices" if e.layout_setup.layout.tp > 1 else "")
    )
    realised = e.estimate_tok_s / e.ceiling_tok_s if e.ceiling_tok_s else float("nan")
    lines.append(
        f"estimate = {realised:.0%} of the ceiling: {e.efficiency.bandwidth_fraction_for(e.quantized):.0%} of datasheet bandwidth "
        + _arithmetic_words(e)
        + f"+ {s.overhead_time_s * 1e3:.2f} ms/token of {e.engine.name} overhead"
        + (f" ({e.efficiency.source})" if e.efficiency.source else "")
    )
    share = e.efficiency.applied_stream_share
    if share < 1.0 and e.hardware.compute_units:
        lines.append(
            f"its {e.hardware.compute_units} compute units keep at most {share * e.hardware.memory_bandwidth_gb_per_s:,.0f} GB/s "
            f"of loads in flight ({share:.0%} of the bus, Little's law), so the stream runs below the datasheet"
        )
    if e.model.is_moe:
        lines.append(
            f"MoE: {e.model.n_experts_per_token} of {e.model.n_experts} experts per token: reads "
            f"{e.model.active_params() / BILLION:.1f} B of {e.model.total_params / BILLION:.1f} B parameters, "
            f"but memory holds them all"
        )
    if e.prefill is not None:
        lines.append(prefill_line(e, e.prefill))
    if e.stack is not None:
        lines.append(stack_line(e))
    if on_cpu_cores(e):
        hw = e.hardware
        lines.append(
            f"CPU backend on an APU: read against its {hw.cpu_cores} CPU cores' peaks ({hw.fp16_tflops:g} TFLOPS fp16/bf16, "
            f"{hw.fp32_tflops:g} fp32; derived, at the maximum clock) and the CPU efficiency, "
            "not its integrated GPU's; bandwidth is the shared bus's datasheet figure (no CPU-side figure is sourced)"
        )
    lines += _lever_lines(e)
    return lines


def on_cpu_cores(e: Estimate) -> bool:
    """An APU predicted on its CPU cores (`usecases.resolve.cpu_view`: class cpu, its `cpu_*` peaks)."""
    return e.hardware.kind == "cpu" and e.hardware.cpu_fp32_tflops is not None


def _decode_bound_words(s: Step) -> str:
    """The decode bound in words. The unhidden matvec arithmetic (`Step.alu_time_s`) rides inside the
    memory side of the roofline; when it takes longer than the stream itself (a CPU without dot-product
    instructions, few threads) the step waits on arithmetic, and the words say so."""
    stream = s.memory_time_s - s.alu_time_s
    if s.bound == "memory" and s.alu_time_s > stream:
        return "compute-bound (the matvec arithmetic takes longer than streaming the weights)"
    return f"{s.bound}-bound"


def _arithmetic_words(e: Estimate) -> str:
    """The unhidden matvec arithmetic as a named term of the estimate (k_alu ops per weight at the
    device's matvec peak: a CPU's dot-product peak, a GPU's fp32 shader peak), so the terms add up."""
    alu = e.step.alu_time_s
    peak = alu_peak_tflops(e.hardware)
    if alu <= 0.0 or not peak:
        return ""
    kind = "dot-product" if e.hardware.kind == "cpu" else "fp32 shader"
    return (
        f"+ {alu * 1e3:.2f} ms/token of matvec arithmetic ({e.efficiency.decode_alu_flops_per_weight:.1f} ops per weight "
        f"at the {peak:g} TFLOPS {kind} peak: compute, not memory) "
    )


PREFILL_BOUND_WORDS = {"compute": "compute", "memory": "memory", "transfer": "PCIe", "communication": "communication", "overhead": "overhead"}


def prefill_line(e: Estimate, pre: Prefill) -> str:
    """Why prefill takes its time, worded from the term that takes most of it (`Prefill.binding`):
    the compute side quotes FLOPs against the peak; any other bound names its own time first
    (reads, the PCIe copies of offloaded weights, all-reduces and hops, fixed per-chunk costs) and
    the compute time after it."""
    lay = e.layout_setup.layout
    devices = f", split over {lay.tp} devices" if lay.tp > 1 else ""
    cores = " of its CPU cores" if on_cpu_cores(e) else ""
    compute = f"{pre.flops / 1e12:.1f} TFLOP at {pre.efficiency:.0%} of the {e.peak.tflops:g} TFLOPS {e.peak.dtype} peak{cores}{devices}"
    binding = pre.binding
    head = f"prefill of {pre.prompt_tokens:,} tokens is {PREFILL_BOUND_WORDS[binding]}-bound: "
    if binding == "compute":
        return head + compute
    if binding == "memory":
        what, ms = "reading the weights and KV cache", pre.memory_time_s - pre.transfer_time_s
    elif binding == "transfer":
        link = lay.offload.link if lay.offload is not None else None
        moved = pre.transfer_time_s / pre.n_chunks * (link.effective_bytes_per_s if link else 0.0) / GB
        chunk = math.ceil(pre.prompt_tokens / pre.n_chunks)
        what = f"copying {moved:.1f} GB of offloaded weights over {link.name if link else 'PCIe'} per chunk of {chunk:,} tokens"
        ms = pre.transfer_time_s
    elif binding == "communication":
        what, ms = f"all-reduces and hops over {lay.link.name if lay.link else 'the link'}", pre.comm_time_s
    else:
        what, ms = "fixed per-chunk costs", pre.overhead_time_s - pre.comm_time_s
    return head + f"{ms * 1e3:,.1f} ms {what}, {pre.compute_time_s * 1e3:,.1f} ms computing ({compute})"


def stack_line(e: Estimate) -> str:
    """What the serving engine adds to a lone request's TTFT outside the prefill roofline (`ServingStack`)."""
    st = e.stack
    assert st is not None
    parts = []
    if st.floor_s > st.prefill_s:
        parts.append(
            f"{e.engine.name} launches this MoE prefill without CUDA graphs, so it takes at least {st.floor_s * 1e3:,.0f} ms "
            f"of host time ({e.model.n_layers} layers) where the GPU needs {st.prefill_s * 1e3:,.1f} ms"
        )
    if st.lag_s > 0:
        parts.append(f"{st.lag_s * 1e3:,.0f} ms of {e.engine.name}'s serving stack per request (HTTP, tokenizer, first response)")
    return f"time to first token adds {st.added_s * 1e3:,.0f} ms to the roofline: " + "; ".join(parts) + " (serving_engines.toml: sourced priors the simulator shares)"


def _lever_lines(e: Estimate) -> list[str]:
    lines = []
    lay = e.layout_setup.layout
    ls = e.lever_step
    if ls is not None and lay.devices > 1 and lay.link is not None:
        speedup = ls.single.time_s / ls.step.time_s
        if lay.tp > 1:
            lines.append(
                f"tensor parallel over {lay.tp}: each device reads 1/{lay.tp} of the weights, then "
                f"{2 * e.model.n_layers} all-reduces over {lay.link.name} cost {ls.allreduce_time_s * 1e3:.2f} ms; "
                f"{speedup:.2f}x one device, never {lay.tp}x, since per-layer launches "
                f"({(e.step.overhead_time_s - ls.comm_time_s) * 1e3:.2f} ms) do not shrink"
            )
        if lay.pp > 1:
            lines.append(
                f"pipeline over {lay.pp} stages: a token passes the stages one after another "
                f"(+{ls.hop_time_s * 1e6:.0f} us of hops), so it adds memory, not speed"
                + (f" ({speedup:.2f}x one device)" if lay.tp == 1 else "")
            )
    if e.offload is not None and ls is not None and e.offload.offload.expert_layers:
        off = e.offload.offload
        lines.append(
            f"routed experts of {off.expert_layers} of {e.offload.n_layers} layers in system RAM, computed on the CPU: "
            f"GPU part {ls.gpu_time_s * 1e3:.1f} ms, CPU part {ls.cpu_time_s * 1e3:.1f} ms, "
            f"{2 * off.expert_layers} host round trips {ls.transfer_time_s * 1e3:.1f} ms per token; the times add "
            f"({e.offload.gpu_only_tok_s:.3g} tok/s with every expert on the GPU)"
        )
    elif e.offload is not None and ls is not None:
        off = e.offload.offload
        where = "system RAM" if off.mode == "cpu" else f"PCIe ({off.link.name})"
        lines.append(
            f"{off.gpu_layers} of {e.offload.n_layers} layers on the GPU: GPU part {ls.gpu_time_s * 1e3:.1f} ms, "
            f"{where} part {max(ls.cpu_time_s, ls.transfer_time_s) * 1e3:.1f} ms per token; the times add, so the "
            f"slow part dominates ({e.offload.gpu_only_tok_s:.3g} tok/s all on GPU, "
            f"{e.offload.cpu_only_tok_s:.3g} tok/s with none)"
        )
    if e.draft is not None:
        sp = e.draft.speculation
        lines.append(
            f"speculative decoding with {e.draft.model.name}: {sp.tokens_per_pass:.2f} tokens per target pass "
            f"at acceptance {sp.acceptance:g}, k={sp.draft_tokens}; a pass costs {sp.pass_time_s * 1e3:.1f} ms "
            f"({sp.draft_tokens} draft steps + one verification) -> {sp.speedup:.2f}x"
        )
    return lines


def estimate_sections(e: Estimate) -> dict[str, Any]:
    """The sections of the JSON that need no curves: model to memory (what a web curve point shows)."""
    s = e.step
    batch = max(1, s.batch)
    m = e.memory
    return {
        "model": {
            "name": e.model.name,
            "id": e.model.id,
            "architecture": e.model.architecture,
            "total_params": e.model.total_params,
            "active_params": e.model.active_params(1.0),
            "weight_bytes": e.weights.total,
            "bits_per_weight": e.bits_per_weight,
            "quant": e.quant.id if e.quant else "file",
            "n_layers": e.model.n_layers,
            "is_moe": e.model.is_moe,
            "source": e.model.source,
        },
        "hardware": {
            "id": e.hardware.id,
            "name": e.hardware.name,
            "kind": e.hardware.kind,
            "memory_bandwidth_gb_per_s": e.hardware.memory_bandwidth_gb_per_s,
            "memory_gb": e.hardware.memory_gb if math.isfinite(e.hardware.memory_gb) else None,
            "peak_tflops": e.peak.tflops,
            "peak_dtype": e.peak.dtype,
            "source": e.hardware.source,
        },
        "engine": {"id": e.engine.id, "name": e.engine.name, "efficiency": _efficiency_dict(e.efficiency)},
        "workload": e.workload.to_dict(),
        "decode": {
            "ceiling_tok_s": e.ceiling_tok_s,
            "estimate_tok_s": e.estimate_tok_s,
            "interval_tok_s": e.estimate_interval.to_dict(),
            "realised_fraction": e.estimate_tok_s / e.ceiling_tok_s,
            "aggregate_tok_s": e.estimate_tok_s * batch,
            "aggregate_ceiling_tok_s": e.ceiling_tok_s * batch,
            # what the aggregate is; the steady state of B streams is `tokometer simulate`
            "aggregate_basis": "one decode step of the batch at the prompt depth; prefill not charged, KV not grown",
            "batch": batch,
            "depth_tokens": s.depth_tokens,
            "bytes_per_token": s.bytes / batch,
            "weight_bytes_per_token": s.weight_bytes / batch,
            "kv_bytes_per_token": s.kv_read_bytes / batch,
            "kv_write_bytes_per_token": s.kv_write_bytes / batch,
            "bytes_per_step": s.bytes,
            "flops_per_token": s.flops / batch,
            "step_time_s": s.time_s,
            "bound": s.bound,
            "times_s": {"memory": s.memory_time_s, "compute": s.compute_time_s, "overhead": s.overhead_time_s},
            "ridge_batch": e.ridge_batch,
        },
        "kv_cache": {
            "dtype": e.kv_dtype.id,
            "bytes_per_token": kv_bytes_per_token(e.model, e.kv_dtype.bytes_per_weight),
            "bytes_per_token_long_context": kv_bytes_per_token(
                e.model, e.kv_dtype.bytes_per_weight, math.inf
            ),
            "bytes_at_context": kv_cache_bytes(
                e.model, s.depth_tokens, e.kv_dtype.bytes_per_weight
            ),
        },
        "prefill": {
            "prompt_tokens": e.workload.prompt_tokens,
            "tok_s": e.prefill.tok_s if e.prefill else None,
            # the prompt at the datasheet peak and bandwidth, and the 80 % band `tokometer validate` scores
            "ceiling_tok_s": e.prefill_ceiling_tok_s,
            "interval_tok_s": e.prefill_interval.to_dict() if e.prefill_interval else None,
            "time_s": e.prefill.time_s if e.prefill else None,
            "ttft_s": e.ttft_s,
            "flops": e.prefill.flops if e.prefill else None,
            "bound": e.prefill.bound if e.prefill else None,
            "efficiency": e.prefill.efficiency if e.prefill else None,
        },
        "latency": {
            "ttft_s": e.ttft_s,
            "ttft_interval_s": e.ttft_interval.to_dict() if e.ttft_interval else None,
            "tpot_s": e.tpot_s,
            "e2e_s": e.e2e_s,
            "output_tokens": e.workload.output_tokens,
            "verdict": reading_verdict(e.stream_tok_s),  # with a draft, the speculative rate, as TPOT and e2e
            # what a serving engine adds to TTFT outside the prefill roofline (`usecases.estimate.serving_stack`)
            "serving_stack": None if e.stack is None else {
                "engine": e.stack.engine,
                "eager_prefill_floor_s": e.stack.floor_s,
                "request_latency_s": e.stack.lag_s,
                "added_to_ttft_s": e.stack.added_s,
            },
        },
        "memory": {
            "total_gb": m.total_gb,
            "weights_gb": m.weights_gb,
            "kv_cache_gb": m.kv_cache_gb,
            "runtime_overhead_gb": m.runtime_overhead_gb,
            "available_gb": m.available_gb if math.isfinite(m.available_gb) else None,
            "device_memory_gb": m.device_memory_gb if math.isfinite(m.device_memory_gb) else None,
            "fits": m.fits,
            "context_tokens": m.context_tokens,
            "sessions": m.sessions,
            "max_context_tokens": m.max_context_tokens,
            "max_context_memory_tokens": m.max_context_memory_tokens,
            "max_sessions": m.max_sessions,
        },
    }


def estimate_dict(e: Estimate, curves: EstimateCurves) -> dict[str, Any]:
    """The one JSON shape of an estimate (`--json`, the web API, a bench run's prediction)."""
    return {
        **estimate_sections(e),
        "fit": _fit_dict(e),
        "speculative": _speculative_dict(e),
        "parallel": _parallel_dict(e),
        "offload": _offload_dict(e, curves),
        "batching": _batching_dict(e, curves),
        "context": _context_dict(e, curves),
        "explanation": explanation(e),
        "warnings": estimate_warnings(e),
    }

def _speculative_dict(e: Estimate) -> dict[str, Any]:
    d = e.draft
    sp = d.speculation if d else None
    tpot = e.tpot_s if sp else None  # the estimate's TPOT is the speculative one (usecases/estimate.py)
    return {
        "active": d is not None,
        "draft": (d.model.id or d.model.name) if d else None,
        "draft_quant": (d.quant.id if d.quant else "file") if d else None,
        "draft_tokenizer": d.model.tokenizer if d else None,
        "draft_weights_gb": d.weights.total / GB if d else None,
        "acceptance": sp.acceptance if sp else None,
        "draft_tokens": sp.draft_tokens if sp else None,
        "tokens_per_pass": sp.tokens_per_pass if sp else None,
        "draft_step_time_s": sp.draft_step_time_s if sp else None,
        "verify_time_s": sp.verify_time_s if sp else None,
        "pass_time_s": sp.pass_time_s if sp else None,
        "tok_s": sp.tok_s if sp else None,
        "ceiling_tok_s": sp.ceiling_tok_s if sp else None,
        "baseline_tok_s": sp.baseline_tok_s if sp else None,
        "speedup": sp.speedup if sp else None,
        "break_even_acceptance": sp.break_even_acceptance if sp else None,
        "tpot_s": tpot,
        "e2e_s": e.e2e_s if sp else None,
    }

def _parallel_dict(e: Estimate) -> dict[str, Any]:
    lay = e.layout_setup.layout
    ls = e.lever_step or LeverStep(step=e.step, single=e.step)
    link = lay.link
    sharded = lay.tp > 1 and link is not None
    payload = activation_bytes(e.model, e.step.batch)
    usable = e.memory.available_gb / lay.devices
    per_device = e.memory.total_gb / lay.devices
    return {
        "tp": lay.tp,
        "pp": lay.pp,
        "devices": lay.devices,
        "link": link.name if link else None,
        "link_kind": link.kind if link else None,
        "link_gb_per_s": link.bandwidth_gb_per_s if link else None,
        "link_efficiency": LINK_EFFICIENCY,
        "link_hop_latency_us": link.hop_latency_us if link else None,
        "allreduce_launch_us": ALLREDUCE_LAUNCH_US,
        "allreduces_per_step": 2 * e.model.n_layers if sharded else 0,
        "allreduce_bytes": payload if sharded else 0.0,
        "allreduce_each_s": allreduce_time_s(payload, lay.tp, link) if sharded and link else 0.0,
        "allreduce_protocol": allreduce_protocol(payload, lay.tp, link) if sharded and link else None,
        "allreduce_time_s": ls.allreduce_time_s,
        "pipeline_hops": lay.pp - 1,
        "pipeline_hop_time_s": ls.hop_time_s,
        "comm_time_s": ls.allreduce_time_s + ls.hop_time_s,
        "kv_shards": kv_shards(e.model, lay.tp),
        "single_device_tok_s": 1.0 / ls.single.time_s,
        "speedup": ls.single.time_s / ls.step.time_s if e.offload is None else None,
        "memory_per_device_gb": per_device,
        "usable_per_device_gb": usable if math.isfinite(usable) else None,
        "fits_per_device": per_device <= usable,
        "sources": list(LINK_SOURCES) if link else [],
    } | _cluster_dict(e)


def _cluster_dict(e: Estimate) -> dict[str, Any]:
    """EP / attention-DP / multi-node keys, present only for such a layout (older outputs keep their shape)."""
    lay = e.layout_setup.layout
    if lay.ep == 1 and lay.dp == 1 and lay.nodes == 1 and lay.inter_link is None:
        return {}
    between = lay.inter_link
    return {
        "ep": lay.ep, "dp": lay.dp, "nodes": lay.nodes, "gpus_per_node": lay.gpus_per_node,
        "inter_link": between.name if between else None,
        "inter_link_gb_per_s": between.bandwidth_gb_per_s if between else None,
        "inter_link_source": between.source if between else None,
        "moe_comm_time_s": moe_comm_s(e.model, lay, e.step.batch * 1.0),
    }

def _offload_dict(e: Estimate, curves: EstimateCurves) -> dict[str, Any]:
    plan = e.offload
    ls = e.lever_step
    keys = (
        "gpu_layers n_layers cpu_layers mode cpu_hw cpu_bandwidth_gb_per_s link link_gb_per_s "
        "gpu_bytes_per_token cpu_bytes_per_token gpu_time_s cpu_time_s transfer_time_s gpu_only_tok_s "
        "cpu_only_tok_s gpu_weights_gb cpu_weights_gb gpu_kv_gb cpu_kv_gb cpu_memory_gb cpu_available_gb "
        "fits_cpu advice"
    ).split()
    if plan is None or ls is None:
        out: dict[str, Any] = {"active": False, **dict.fromkeys(keys)}
        out["gpu_layers"] = out["n_layers"] = e.model.n_layers
        out["cpu_layers"] = 0
        out["curve"] = []
        return out
    off = plan.offload
    batch = max(1, e.step.batch)
    experts: dict[str, Any] = {}  # only when experts are offloaded, so other setups' JSON keeps its shape
    if off.expert_layers:
        experts = {"expert_layers": off.expert_layers, "experts_curve": [p.to_dict() for p in curves.experts]}
    return {
        "active": True,
        "gpu_layers": off.gpu_layers,
        "n_layers": plan.n_layers,
        "cpu_layers": plan.n_layers - off.gpu_layers,
        "mode": off.mode,
        "cpu_hw": off.cpu.id,
        "cpu_bandwidth_gb_per_s": off.cpu.memory_bandwidth_gb_per_s,
        "link": off.link.name,
        "link_gb_per_s": off.link.bandwidth_gb_per_s,
        "gpu_bytes_per_token": ls.gpu_bytes / batch,
        "cpu_bytes_per_token": ls.cpu_bytes / batch,
        "gpu_time_s": ls.gpu_time_s,
        "cpu_time_s": ls.cpu_time_s,
        "transfer_time_s": ls.transfer_time_s,
        "gpu_only_tok_s": plan.gpu_only_tok_s,
        "cpu_only_tok_s": plan.cpu_only_tok_s,
        "gpu_weights_gb": plan.gpu_weights_gb,
        "cpu_weights_gb": plan.cpu_weights_gb,
        "gpu_kv_gb": plan.gpu_kv_gb,
        "cpu_kv_gb": plan.cpu_kv_gb,
        "cpu_memory_gb": plan.cpu_memory_gb,
        "cpu_available_gb": plan.cpu_available_gb,
        "fits_cpu": plan.fits_cpu,
        "advice": advice_text(plan.advice) if plan.advice else None,
        "curve": [p.to_dict() for p in curves.offload],
        **experts,
    }

def _batching_dict(e: Estimate, curves: EstimateCurves) -> dict[str, Any]:
    s = e.step
    points = curves.batch
    return {
        "batch": s.batch,
        "per_stream_tok_s": e.estimate_tok_s,
        "aggregate_tok_s": e.estimate_tok_s * s.batch,
        "ridge_batch": e.ridge_batch,
        "compute_bound_batch": curves.compute_bound_batch,
        "max_batch": e.memory.max_sessions,
        "n_experts": e.model.n_experts if e.model.is_moe else None,
        "experts_per_token": e.model.n_experts_per_token if e.model.is_moe else None,
        "experts_touched": experts_touched(e.model, s.batch),
        "kv_bytes_per_step": s.kv_read_bytes + s.kv_write_bytes,
        "curve": [p.to_dict() for p in points],
    }

def _context_dict(e: Estimate, curves: EstimateCurves) -> dict[str, Any]:
    s = e.step
    empty = curves.empty_step
    return {
        "depth_tokens": s.depth_tokens,
        "kv_dtype": e.kv_dtype.id,
        "kv_bytes_per_token": kv_bytes_per_token(e.model, e.kv_dtype.bytes_per_weight),
        "empty_tok_s": 1.0 / empty.time_s,
        "at_depth_tok_s": e.estimate_tok_s,
        "relative_speed": empty.time_s / s.time_s,
        "max_context_tokens": e.memory.max_context_tokens,
        "curve": [p.to_dict() for p in curves.context],
    }


def utilization_dict(report: UtilizationReport) -> dict[str, Any]:
    """`tokometer utilization --json`: the measured run against the parts of the estimate it is graded on."""
    e = estimate_json(report.estimate)
    keys = ("model", "hardware", "engine", "workload", "decode", "prefill", "memory", "parallel", "offload")
    return {
        "utilization": {**report.utilisation.to_dict(), "cpu_only_tok_s": report.cpu_only_tok_s},
        **{k: e[k] for k in keys},
        "warnings": e["warnings"],
    }


def _efficiency_dict(eff: Efficiency) -> dict[str, Any]:
    """The efficiency an estimate used, without the fit's bookkeeping of which engines trained it and the KV
    stream cap, which `Efficiency.for_hardware` has already folded into kv_bandwidth_fraction."""
    out = eff.to_dict()
    out.pop("engines_seen", None)
    out.pop("kv_stream_gb_per_s", None)
    return out
