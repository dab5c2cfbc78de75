"""Static-batch aggregates of a single-stream measurements file, through the serving simulator.

A `tg_agg`, `pp_agg` or `tput_out` row at batch B > 1 (llama-batched-bench, gpt-fast's batched
runs, a vendor's static-batch table in the measurements schema) measured B prompts admitted
together: held until the longest finished by a static engine (`STATIC_ENGINES`), run under its own
scheduler by a continuous-batching one. One decode step of B streams at the prompt depth
(`estimate --batch B`) leaves out the batch's prefill and its KV growing with every token, and a
batch bigger than the KV cache holds; the simulator does neither: the row's engine runs a static
batch of B fixed-length requests under its memory rule (as many run at once as its KV cache
holds, the rest in later waves). A `batch_size` reading "max" (every request queued at once, the
engine choosing the batch) runs offline with the engine's own batch limit.

What each metric reads from the run: `tg_agg` the decode tokens over the time decode steps took
(llama-batched-bench's S_TG), `pp_agg` the prompt tokens over the prefill time (S_PP), `tput_out`
all output tokens over the whole run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tokometer.errors import InputError, TokometerError
from tokometer.fitting.time_limit import TimeLimitError, time_limit

if TYPE_CHECKING:
    from tokometer.domain.specs import HardwareSpec

# Engines whose static-batch benchmark holds the batch until its longest request ends, the whole
# batch's prompts in one context phase: TensorRT-LLM's gptSessionBenchmark (static batching, before
# in-flight batching's trtllm-bench), llama.cpp's llama-batched-bench, and the plain static
# scheduler. The continuous-batching engines (vLLM, SGLang, LMDeploy's TurboMind) run a "batch of B"
# as B requests queued at once under their own scheduler: when the KV cache cannot hold all B, the
# next ones start as soon as memory frees, not when the whole batch has ended (LMDeploy 0.1's
# 2048/2048 batches of 32-64 on one A100: measured TTFT max 108 s against 105 s continuous and 177 s
# held; throughput 390 tok/s against 322 and 298).
STATIC_ENGINES = ("tensorrt-llm", "llama-cpp", "static")
MAX_WAVES = 4  # a "max" batch: this many full batches of requests, the steady state
MIN_REQUESTS = 64


def _serving_engine(engine: str | None) -> str:
    """The serving scheduler of the row's engine; engines without one run the plain static scheduler."""
    from tokometer.catalog.serving import serving_engine

    if engine:
        try:
            return serving_engine(engine).id
        except TokometerError:
            pass
    return "static"


def simulate_static(
    metric: str, batch: int | None, prompt: int, gen: int, kw: dict[str, Any], hardware: HardwareSpec, *,
    time_limit_s: float | None = None,
) -> float:
    """A row's aggregate (tok/s) from a simulated static batch of `batch` requests (None: a "max"
    batch), each `prompt` + `gen` tokens, with the row's `EstimateRequest` fields `kw`; `InputError`
    when it cannot be simulated."""
    from tokometer.catalog.serving import serving_efficiency
    from tokometer.costmodel.serving import Workload, fixed, simulate
    from tokometer.usecases.simulate import deploy

    if "model" not in kw:
        raise InputError("a batch is simulated for catalog models only (this row gives bare parameter counts)")
    if "quant" not in kw and ("bits" in kw or "weights_gb" in kw):
        raise InputError("a batch is simulated for catalog weight formats only (this row gives bits or a file size)")
    engine = _serving_engine(kw.get("engine"))
    overrides: dict[str, Any] = {"static": True} if engine in STATIC_ENGINES else {}
    if engine == "llama-cpp":  # llama-batched-bench sizes its context for the whole batch, not per server slot
        overrides["contiguous_context_tokens"] = prompt + gen + 1
    if batch is not None:
        overrides["max_num_seqs"] = batch
    dep = deploy(kw["model"], hardware, quant=kw.get("quant"), engine=engine, tp=kw.get("tp", 1), pp=kw.get("pp", 1),
                 efficiency=serving_efficiency(engine), check_fit=False, **overrides)
    if batch is None:
        wave = max(1.0, min(dep.policy.max_num_seqs, dep.kv_capacity_tokens / (prompt + gen + dep.policy.block_size_tokens)))
        requests = int(max(MIN_REQUESTS, MAX_WAVES * wave))
    else:
        requests = batch
    workload = Workload("offline", requests, fixed(prompt), fixed(gen))
    try:
        result = simulate(dep.cost, dep.policy, dep.kv_capacity_tokens, workload,
                          max_context_tokens=dep.max_context_tokens, check=time_limit(time_limit_s))
    except TimeLimitError as exc:
        raise InputError(str(exc)) from None
    if not result.completed:
        raise InputError(f"no request of the batch fits the KV cache ({dep.kv_capacity_tokens:,.0f} tokens)")
    if metric == "tg_agg":
        decoded = result.tput_out_tok_s * result.duration_s - result.completed  # first tokens come from prefill
        if result.time_decode_s <= 0 or decoded <= 0:
            raise InputError("the simulated batch decoded no token")
        return decoded / result.time_decode_s
    if metric == "pp_agg":
        if result.time_prefill_s <= 0:
            raise InputError("the simulated batch ran no prefill")
        return result.tput_in_tok_s * result.duration_s / result.time_prefill_s
    return result.tput_out_tok_s
