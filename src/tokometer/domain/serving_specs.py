"""The knobs of an engine's scheduler, as one parameterised policy (not one copy per engine).

Every engine the simulator knows is a `SchedulerPolicy`: how many sequences may run at once, how
many tokens one engine step may carry, whether long prompts are split into chunks, whether prefill
and decode share a step, whether the batch is static, and how the KV cache memory is sized. The
defaults per engine, with their sources, live in `catalog/data/serving_engines.toml`.

`ServingEfficiency` is what the fit on published serving data adjusts: how batched GEMMs approach
the compute peak as a step carries more tokens, and a fixed cost per engine step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tokometer.domain.specs import _Plain

if TYPE_CHECKING:
    from tokometer.domain.specs import ModelSpec

MEMORY_OF = ("total", "free")  # fraction of device memory, or of what is free after weights


@dataclass(frozen=True, slots=True)
class SchedulerPolicy(_Plain):
    """One engine's scheduler.

    - `max_num_seqs`: sequences running at once (vLLM `max_num_seqs`, TensorRT-LLM `max_batch_size`,
      SGLang `max_running_requests`, llama.cpp `--parallel` slots).
    - `max_num_batched_tokens`: tokens one step may carry, decode + prefill (vLLM
      `max_num_batched_tokens`, TensorRT-LLM `max_num_tokens`, SGLang `chunked_prefill_size`).
    - `chunked_prefill`: a prompt longer than the remaining budget is split over steps; without it
      a prompt waits until it fits whole (one longer than the whole budget runs alone).
    - `mixed_batches`: decode and prefill tokens share a step; without it (SGLang's default) a
      prefill step pauses every running decode.
    - `static`: a new batch is admitted only when the previous one has finished.
    - `memory_fraction` of `memory_of` ("total": of device memory, vLLM `gpu_memory_utilization`;
      "free": of what is left after weights and runtime, TensorRT-LLM
      `kv_cache_free_gpu_mem_fraction`, LMDeploy `cache_max_entry_count`).
    - `contiguous_context_tokens`: llama.cpp reserves this many tokens per slot up front (no paging).
    - `prefix_cache_hit_fraction`: share of each prompt served from the prefix cache (0 = off).
    - `scheduler_steps`: vLLM 0.6 `--num-scheduler-steps`: the scheduler runs (and admits) once
      every k decode steps, and tokens reach the client in bursts of k.
    - `request_latency_ms`: wall time a request spends in the serving stack outside the forward
      passes before its first token reaches the client (HTTP, chat template and tokenizer, the
      hops between the API server, scheduler and detokenizer processes, the first streamed chunk),
      charged once per request: the client sends it that long before the scheduler can have it.
    - `eager_prefill_layer_us`: host (Python and kernel-launch) time per layer of a MoE model of one
      forward that carries prompt tokens, for engines that run prefill without CUDA graphs (SGLang by
      default): such a step takes at least `n_layers * eager_prefill_layer_us`, however few its
      tokens (the launches are asynchronous, so the GPU's own work hides under it, or it under the
      GPU's). 0 for engines that capture prefill, or where no measurement separates it.
    - `graphed_step_tokens`: the largest step (tokens) the engine replays from a captured CUDA graph,
      prompt tokens included (vLLM V1's piecewise graphs: its largest capture size); a step with
      prompt tokens and more tokens than this runs eagerly and pays `eager_prefill_layer_us`, one with
      fewer does not. 0 (the default): every step with prompt tokens runs eagerly (SGLang).
    - `fp8_gemm_fraction`: the share of the FP8 tensor peak the engine's FP8 (W8A8) GEMMs realise,
      relative to the share its BF16 GEMMs realise of the BF16 peak; below 1 where every linear layer
      first quantises its activations in a separate memory-bound kernel (dynamic per-token or
      per-token-group scales). 1: FP8 GEMMs at twice the BF16 rate, as the datasheets say.
    - `recv_interval_steps`: SGLang `--scheduler-recv-interval N` (default 1): while it decodes, the
      scheduler reads newly arrived requests only every N decode steps (at once when idle), so a
      request arriving mid-decode waits for the next multiple before its prefill can be scheduled.
      Unlike `scheduler_steps`, tokens still stream every step.
    - `adp_balance_ranks`, `adp_balance_timeout_steps`: TensorRT-LLM's attention-DP context balance
      (`attention_dp_config: {enable_balance: true, timeout_iters: N}`, PyExecutor
      `_balance_adp_requests`): while every one of the `adp_balance_ranks` attention-DP ranks decodes,
      new prompts are held until there is one for every rank, or until they have been held N
      iterations in a row; at once when some rank has nothing to decode. 0 steps: off.
    """

    engine: str
    max_num_seqs: int
    max_num_batched_tokens: int
    chunked_prefill: bool = True
    mixed_batches: bool = True
    static: bool = False
    block_size_tokens: int = 16
    memory_fraction: float = 0.9
    memory_of: str = "total"
    contiguous_context_tokens: int | None = None
    prefix_cache_hit_fraction: float = 0.0
    scheduler_steps: int = 1
    request_latency_ms: float = 0.0
    eager_prefill_layer_us: float = 0.0
    graphed_step_tokens: int = 0
    fp8_gemm_fraction: float = 1.0
    recv_interval_steps: int = 1
    adp_balance_ranks: int = 1
    adp_balance_timeout_steps: int = 0
    source: str = ""


def eager_prefill_floor_s(model: ModelSpec, eager_prefill_layer_us: float) -> float:
    """The least time (s) one prefill forward launched without CUDA graphs takes: `n_layers x
    eager_prefill_layer_us` for a MoE model, whose layers launch many more kernels than a dense one's;
    0 for a dense model (docs/PHYSICS.md, "Eager-prefill host floor"). The serving step (`StepCost`) and
    `estimate`'s TTFT (`usecases.estimate.serving_stack`) both read it."""
    return model.n_layers * eager_prefill_layer_us * 1e-6 if model.is_moe else 0.0


@dataclass(frozen=True, slots=True)
class ServingEfficiency(_Plain):
    """Fitted per engine: batched-compute efficiency curve and the fixed costs of one engine step.

        eta_c(T) = compute_fraction_max * T / (T + compute_half_tokens)

    where T is the number of tokens the step carries (MFU grows with tokens per step: small GEMMs
    leave tensor cores idle). `layer_step_overhead_us` is the engine's fixed cost of one step per
    layer the device runs (launches, synchronisation and the runtime's per-layer work, which a deeper
    model pays more of), on top of the single-stream per-layer overhead; `sequence_overhead_us` is
    the cost of each sequence that emits a token in a step (sampling, stop checks, detokenisation
    and the runtime's per-request bookkeeping), which grows with the batch, not with the step count.

    Prompt (prefill) tokens have their own plateau, `prefill_fraction_max`: engines run the context
    phase through their own kernels and GEMM shapes (TurboMind's context decoder, TensorRT-LLM's
    context phase), so a step's prompt tokens realise their own share of the peak. None (the pooled
    entry, and any engine without rows of its own) takes the single-stream prefill physics
    (`Efficiency.prefill_max_for`, with its `prefill_half_tokens`), so an engine held out of the fit
    falls back to what its single-stream prefill says, not to another engine's serving fit.
    """

    compute_fraction_max: float = 0.6
    compute_half_tokens: float = 64.0
    layer_step_overhead_us: float = 60.0
    sequence_overhead_us: float = 0.0
    prefill_fraction_max: float | None = None
    source: str = "default (not fitted)"
