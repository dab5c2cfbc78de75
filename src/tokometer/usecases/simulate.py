"""`tokometer simulate`: a model on hardware under an engine, served to a workload, step by step.

Resolves names into a `Deployment` (the cost model's `Setup` through `api.estimate`, the engine's
scheduler policy with overrides, the fitted serving efficiency, the KV capacity), refuses a
deployment whose KV cache cannot hold one request (naming the smallest TP that would), runs the
pure simulator, and sweeps request rates to draw the latency-throughput curve and find its knee.
Reading trace and length files happens here, at the edge.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any

from tokometer.bench.trace import MAX_TOKENS_PER_REQUEST, read_trace_text
from tokometer.catalog.serving import ServingEngine, serving_efficiency, serving_engine
from tokometer.costmodel.layout import OVERLAP_POLICIES, Setup
from tokometer.costmodel.links import parse_link
from tokometer.costmodel.serving import (
    LengthDist,
    SchedulerPolicy,
    ServingEfficiency,
    ServingResult,
    StepCost,
    Workload,
    kv_capacity_tokens,
    simulate,
    step_cost,
)
from tokometer.costmodel.serving.cost import kv_token_bytes_total
from tokometer.costmodel.serving.disagg import Disagg, Pool, parse_disagg, simulate_disagg
from tokometer.costmodel.serving.speculation import (
    METHODS,
    Speculation,
    check_speculation,
    head_cost,
    head_weight_bytes,
    kv_capacity_with_draft,
)
from tokometer.domain.units import US
from tokometer.errors import InputError
from tokometer.guard import check_nesting

TP_CHOICES = (1, 2, 4, 8)


@dataclass(frozen=True)
class Deployment:
    """One replica's model, hardware, engine and what the simulator needs from them."""

    setup: Setup
    serving: ServingEngine
    efficiency: ServingEfficiency
    cost: StepCost
    kv_capacity_tokens: float
    max_context_tokens: int | None
    label: str
    speculation: Speculation | None = None

    @property
    def policy(self) -> SchedulerPolicy:
        return self.serving.policy

    @property
    def devices(self) -> int:
        return self.setup.layout.devices

    def to_dict(self) -> dict[str, Any]:
        s = self.setup
        return {
            "model": s.model.name,
            "hardware": s.hardware.id,
            "engine": self.serving.id,
            "tp": s.layout.tp,
            "pp": s.layout.pp,
            **({"ep": s.layout.ep, "dp": s.layout.dp, "nodes": s.layout.nodes,
                "inter_link": s.layout.inter_link.name if s.layout.inter_link else None,
                "overlap": s.layout.overlap, "ep_imbalance": s.layout.ep_imbalance}
               if s.layout.devices > s.layout.tp * s.layout.pp or s.layout.ep > 1 or s.layout.nodes > 1 else {}),
            "weights_gb": s.weights.total / 1e9,
            "kv_capacity_tokens": self.kv_capacity_tokens,
            "policy": self.policy.to_dict(),
            "serving_efficiency": self.efficiency.to_dict(),
            **({"speculation": self.speculation.summary()} if self.speculation is not None else {}),
            # MoE under TP: prompt tokens' routed GEMMs run on expert slices (`roofline.expert_slice_scale`)
            **({"expert_slice_scale": self.cost.expert_slice_scale} if self.cost.expert_slice_scale > 1.0 else {}),
        }


DEPLOY, SCHEDULER, WORKLOAD = "deploy", "scheduler", "workload"  # which part of a simulation a field sets


def _part(part: str, default: Any) -> Any:
    return field(default=default, metadata={"part": part})


@dataclass(frozen=True)
class SimulateRequest:
    """`tokometer simulate`'s inputs, named and in the units of its options: the one list of them, read by
    the CLI, `tokometer.simulate` and `deploy` (each field's `part`: the replica, its scheduler, the load).

    `slo_ttft`/`slo_tpot` are milliseconds; `prompt`/`output` token counts or distributions
    ("lognormal:800:0.6"); one workload among `rate` (req/s, or a list), `sweep_rate`, `concurrency`,
    `offline` (a count) and `trace` (a JSONL/CSV path).
    """

    model: str
    hw: str
    quant: str | None = _part(DEPLOY, None)
    engine: str = _part(DEPLOY, "vllm")
    kv_dtype: str | None = _part(DEPLOY, None)
    tp: int = _part(DEPLOY, 1)
    pp: int = _part(DEPLOY, 1)
    ep: int = _part(DEPLOY, 1)
    dp: int = _part(DEPLOY, 1)
    nodes: int = _part(DEPLOY, 1)
    inter_link: str | None = _part(DEPLOY, None)
    overlap: bool = _part(DEPLOY, False)
    ep_imbalance: float = _part(DEPLOY, 1.0)
    max_num_seqs: int | None = _part(SCHEDULER, None)
    max_num_batched_tokens: int | None = _part(SCHEDULER, None)
    memory_fraction: float | None = _part(SCHEDULER, None)
    prefix_cache_hit: float | None = _part(SCHEDULER, None)  # the policy's prefix_cache_hit_fraction
    scheduler_steps: int | None = _part(SCHEDULER, None)
    spec_method: str | None = _part(SCHEDULER, None)  # speculative decoding: draft, mtp, eagle3, ngram
    spec_tokens: int | None = _part(SCHEDULER, None)  # tokens drafted per pass
    spec_acceptance: float | None = _part(SCHEDULER, None)  # per-token acceptance (default per method)
    draft_model: str | None = _part(SCHEDULER, None)  # the draft model of spec_method "draft"
    replicas: int = _part(WORKLOAD, 1)
    disagg: str | None = _part(WORKLOAD, None)
    kv_link: str | None = _part(WORKLOAD, None)
    router: str = _part(WORKLOAD, "round-robin")
    rate: str | float | tuple[float, ...] | None = _part(WORKLOAD, None)
    sweep_rate: bool = _part(WORKLOAD, False)
    burstiness: float = _part(WORKLOAD, 1.0)
    constant_rate: bool = _part(WORKLOAD, False)
    concurrency: int | None = _part(WORKLOAD, None)
    think_s: float = _part(WORKLOAD, 0.0)
    offline: int | None = _part(WORKLOAD, None)
    trace: str | None = _part(WORKLOAD, None)
    prompt: str | int = _part(WORKLOAD, "1000")
    output: str | int = _part(WORKLOAD, "200")
    lengths: str | None = _part(WORKLOAD, None)
    num_requests: int = _part(WORKLOAD, 1000)
    slo_ttft: float | None = _part(WORKLOAD, None)
    slo_tpot: float | None = _part(WORKLOAD, None)
    system_prompt: int | None = _part(WORKLOAD, None)  # tokens of the shared system prompt(s)
    system_prompt_share: float | None = _part(WORKLOAD, None)  # share of requests that start with one (default 1)
    system_prompts: int = _part(WORKLOAD, 1)  # distinct shared system prompts
    turns: int = _part(WORKLOAD, 1)  # turns per conversation, each prompt carrying the history
    seed: int = _part(WORKLOAD, 0)

    def deployment(self) -> Deployment:
        """The replica this request describes: `deploy` with its layout and scheduler fields."""
        layout = {f.name: getattr(self, f.name) for f in fields(self) if f.metadata.get("part") == DEPLOY}
        knobs = {f.name: getattr(self, f.name) for f in fields(self) if f.metadata.get("part") == SCHEDULER}
        knobs["prefix_cache_hit_fraction"] = knobs.pop("prefix_cache_hit")
        return deploy(self.model, self.hw, **layout, **knobs)


def deploy(
    model: Any,
    hw: Any,
    *,
    quant: str | None = None,
    engine: str = "vllm",
    tp: int = 1,
    pp: int = 1,
    kv_dtype: str | None = None,
    efficiency: ServingEfficiency | None = None,
    check_fit: bool = True,
    ep: int = 1,
    dp: int = 1,
    nodes: int = 1,
    inter_link: str | None = None,
    overlap: bool = False,
    ep_imbalance: float = 1.0,
    spec_method: str | None = None,
    spec_tokens: int | None = None,
    spec_acceptance: float | None = None,
    draft_model: str | None = None,
    **overrides: Any,
) -> Deployment:
    """Resolve a deployment; `overrides` are scheduler knobs (`max_num_seqs=...`); None keeps defaults.

    `ep`/`dp`/`nodes`/`inter_link`: expert and attention-data parallelism over nodes (`costmodel.layout.Layout`);
    `overlap`: the engine's two-batch overlap of the expert all-to-all (`OVERLAP_POLICIES`); `ep_imbalance`:
    the busiest EP rank's tokens over the mean. `spec_method` (draft, mtp, eagle3, ngram) turns on
    speculative decoding with `spec_tokens` drafts per pass, each accepted with `spec_acceptance`
    (defaults per method, with sources: `speculation.METHODS`); `draft_model` names the draft model. Each of the `dp` attention ranks runs its own scheduler
    (vLLM starts one engine core per DP rank), so its per-rank limits (`max_num_seqs`, the token budget)
    count `dp` times for the replica, whose ranks step together (the all-to-all synchronises them).
    """
    from tokometer.usecases.estimate import estimate

    serving = serving_engine(engine, **overrides)
    est = estimate(model, hw, quant=quant, engine=serving.engine.id, kv_dtype=kv_dtype, tp=tp, pp=pp, advise=False,
                   ep=ep, dp=dp, nodes=nodes, inter_link=inter_link)
    eff = efficiency or serving_efficiency(serving.id)
    setup = est.setup
    assert setup is not None
    if overlap or ep_imbalance != 1.0:
        if not (isinstance(ep_imbalance, int | float) and math.isfinite(ep_imbalance) and ep_imbalance >= 1.0):
            raise InputError(f"--ep-imbalance must be 1 or more (the busiest EP rank's tokens over the mean), got {ep_imbalance!r}")
        if overlap and not (setup.model.is_moe and setup.layout.moe_devices > 1):
            raise InputError("--overlap hides the expert all-to-all: it needs a MoE model over --ep or --dp GPUs")
        if overlap and serving.engine.id not in OVERLAP_POLICIES:
            raise InputError(
                f"--overlap: {serving.engine.name} has no two-batch overlap of the expert all-to-all that tokometer knows "
                f"(engines with one: {', '.join(OVERLAP_POLICIES)})"
            )
        setup = replace(setup, layout=replace(setup.layout, overlap=overlap, ep_imbalance=float(ep_imbalance)))
    if dp > 1:
        pol0 = serving.policy
        serving = replace(serving, policy=replace(
            pol0, max_num_seqs=pol0.max_num_seqs * dp,
            max_num_batched_tokens=pol0.max_num_batched_tokens * dp if pol0.max_num_batched_tokens else pol0.max_num_batched_tokens,
        ))
    pol = serving.policy
    cap = kv_capacity_tokens(
        setup, memory_fraction=pol.memory_fraction, memory_of=pol.memory_of,
        runtime_overhead_gb=serving.engine.runtime_overhead_gb,
    )
    cost = step_cost(setup, eff, eager_prefill_layer_us=pol.eager_prefill_layer_us, fp8_gemm_fraction=pol.fp8_gemm_fraction,
                     graphed_step_tokens=pol.graphed_step_tokens)
    spec = None
    if spec_method is not None or spec_tokens is not None or spec_acceptance is not None or draft_model is not None:
        if spec_method is None:
            raise InputError("--spec-tokens, --spec-acceptance and --draft-model go with --spec-method", field="spec_method")
        spec, cap = _speculation(setup, serving, eff, cost, cap, spec_method, spec_tokens, spec_acceptance, draft_model,
                                 quant=quant, kv_dtype=kv_dtype)
    if pol.contiguous_context_tokens is not None:
        cap = min(cap, float(pol.contiguous_context_tokens * pol.max_num_seqs))
    dep = Deployment(
        setup=setup,
        serving=serving,
        efficiency=eff,
        cost=cost,
        kv_capacity_tokens=cap,
        speculation=spec,
        max_context_tokens=setup.model.max_context_tokens,
        label=f"{setup.model.name} on {setup.layout.devices} x {setup.hardware.name} ({serving.id}, tp={tp}"
        + (f", pp={pp}" if pp > 1 else "") + (f", dp={dp}" if dp > 1 else "") + (f", ep={ep}" if ep > 1 else "")
        + (f", {nodes} nodes over {setup.layout.inter_link.name}" if nodes > 1 and setup.layout.inter_link else "")
        + (", two-batch overlap" if overlap else "")
        + (f", {spec.method} k={spec.draft_tokens} a={spec.acceptance:g}" if spec is not None else "") + ")",
    )
    if check_fit and cap < 1024:
        raise InputError(_does_not_fit(dep, model, hw, quant, engine, kv_dtype))
    return dep


def _speculation(
    setup: Setup, serving: ServingEngine, eff: ServingEfficiency, cost: StepCost, cap: float, method: str,
    draft_tokens: int | None, acceptance: float | None, draft_model: str | None, *, quant: str | None, kv_dtype: str | None,
) -> tuple[Speculation, float]:
    """The replica's speculative decoding and its KV capacity once the drafter holds its weights and KV."""
    from tokometer.usecases.estimate import estimate

    known = METHODS.get(method)
    k = draft_tokens if draft_tokens is not None else (known.draft_tokens if known else 1)
    a = acceptance if acceptance is not None else (known.acceptance if known else 0.0)
    check_speculation(serving.id, method, k, a, setup.model.id, draft_model, static=serving.policy.static,
                      scheduler_steps=serving.policy.scheduler_steps, mtp_layers=setup.model.mtp_layers)
    assert known is not None
    source = known.source if acceptance is None else "given (--spec-acceptance)"
    per_token = kv_token_bytes_total(setup)
    if known.drafter == "model":
        lay = setup.layout
        draft = estimate(draft_model, setup.hardware.id, quant=quant, engine=serving.engine.id, kv_dtype=kv_dtype, tp=lay.tp,
                         advise=False).setup
        assert draft is not None
        if draft.model.vocab_size != setup.model.vocab_size:
            raise InputError(f"--draft-model {draft.model.name} has a vocabulary of {draft.model.vocab_size:,} tokens, "
                             f"{setup.model.name} {setup.model.vocab_size:,}: a draft model needs the target's tokenizer",
                             field="draft_model")
        spec = Speculation(method, k, float(a), step_cost(draft, eff), draft.model.name, source)
        cap = kv_capacity_with_draft(cap, per_token, kv_token_bytes_total(draft), draft.weights.total * lay.dp)
    elif known.drafter == "head":
        spec = Speculation(method, k, float(a), head_cost(cost, setup), None, source)
        cap = kv_capacity_with_draft(cap, per_token, per_token / max(1, setup.model.n_layers), head_weight_bytes(setup))
    else:
        spec = Speculation(method, k, float(a), None, None, source)
    return spec, cap


def _does_not_fit(dep: Deployment, model: Any, hw: Any, quant: str | None, engine: str, kv_dtype: str | None) -> str:
    s = dep.setup
    head = (
        f"{s.model.name} ({s.weights.total / 1e9:.1f} GB of weights) leaves room for "
        f"{max(0, int(dep.kv_capacity_tokens)):,} tokens of KV cache on {dep.devices} x {s.hardware.name}"
    )
    for tp in TP_CHOICES:
        if tp <= s.layout.tp:
            continue
        try:
            bigger = deploy(model, hw, quant=quant, engine=engine, tp=tp, kv_dtype=kv_dtype, check_fit=False)
        except InputError:
            continue
        if bigger.kv_capacity_tokens >= 1024:
            return f"{head}; the smallest setup that fits is --tp {tp} ({bigger.kv_capacity_tokens:,.0f} tokens of KV)"
    return f"{head}; it does not fit at any TP up to 8 on this hardware (try a smaller -q or bigger hardware)"


def run(
    dep: Deployment,
    workload: Workload,
    *,
    replicas: int = 1,
    router: str = "round-robin",
    seed: int = 0,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    disagg: Disagg | None = None,
    check: Callable[[int], None] | None = None,
) -> ServingResult:
    """Simulate `workload` on `replicas` copies of `dep`, or on disaggregated pools when `disagg` is given.
    `check(requests routed)` is called now and then from the event loop (a progress bar, a time limit)."""
    if disagg is not None:  # the decode pool speculates (a prefill worker emits one token, nothing to draft)
        return simulate_disagg(
            dep.cost, dep.policy, dep.kv_capacity_tokens, workload, disagg, router=router, seed=seed,
            slo_ttft_s=slo_ttft_s, slo_tpot_s=slo_tpot_s, max_context_tokens=dep.max_context_tokens,
            decode_pool=Pool(dep.cost, dep.policy, dep.kv_capacity_tokens, dep.speculation) if dep.speculation else None,
            check=check,
        )
    return simulate(
        dep.cost, dep.policy, dep.kv_capacity_tokens, workload,
        replicas=replicas, router=router, seed=seed,
        slo_ttft_s=slo_ttft_s, slo_tpot_s=slo_tpot_s, max_context_tokens=dep.max_context_tokens, check=check,
        spec=dep.speculation,
    )


def disaggregation(dep: Deployment, pools: str, link: str | None = None) -> Disagg:
    """`--disagg P:D` over `link` (`parse_link`: NVLink when the device has it, else its PCIe; or GB/s)."""
    p, d = parse_disagg(pools)
    chosen = parse_link(link, dep.setup.hardware)
    return Disagg(
        prefill_replicas=p,
        decode_replicas=d,
        kv_bytes_per_token=kv_token_bytes_total(dep.setup),
        link_bytes_per_s=chosen.effective_bytes_per_s,
        link_latency_s=chosen.hop_latency_us * US,
    )


# ---------------------------------------------------------------- rate sweeps


@dataclass(frozen=True)
class CurvePoint:
    rate_per_s: float
    result: ServingResult


def sweep_rates(
    dep: Deployment, base: Workload, rates: Sequence[float], *,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None, **kwargs: Any,
) -> list[CurvePoint]:
    """The same workload at each request rate (Poisson unless `base` says otherwise); `progress`
    wraps the loop over rates (a bar)."""
    arrival = base.arrival if base.arrival in ("poisson", "constant", "gamma") else "poisson"
    return [CurvePoint(r, run(dep, replace(base, arrival=arrival, rate_per_s=r), **kwargs))
            for r in (progress(rates) if progress else rates)]


def auto_rates(dep: Deployment, base: Workload, points: int = 8, **kwargs: Any) -> list[float]:
    """Rates from 10 % to 120 % of the saturation throughput (an offline run of the same lengths)."""
    offline = run(dep, replace(base, arrival="offline", num_requests=min(base.num_requests, 2000)), **kwargs)
    top = offline.req_per_s
    if top <= 0:
        raise InputError("the deployment completed no request offline; nothing to sweep")
    # two significant figures: rates a person types (2.3, 17, 28 req/s), not 2.333 or 16.999
    return sorted({float(f"{top * f:.2g}") for f in _fractions(points)})


def _fractions(points: int) -> list[float]:
    return [0.1 + (1.2 - 0.1) * i / (points - 1) for i in range(points)]


def knee(points: Sequence[CurvePoint]) -> CurvePoint | None:
    """Highest rate still served: completed >= 90 % of offered (a finite run ends with a drain), p99 TTFT within 3x the lightest load's."""
    if not points:
        return None
    ordered = sorted(points, key=lambda p: p.rate_per_s)
    base = ordered[0].result.ttft_s.p99 or 0.0
    best = None
    for p in ordered:
        served = p.result.req_per_s >= 0.9 * p.rate_per_s
        p99 = p.result.ttft_s.p99
        if served and p99 is not None and p99 <= 3.0 * max(base, 1e-3):
            best = p
    return best


# ---------------------------------------------------------------- files at the edge


def parse_lengths(text: str) -> LengthDist:
    """`N`, `fixed:N`, `uniform:LO:HI`, `normal:MEAN:SD`, `lognormal:MEDIAN:SIGMA` or `file:PATH`."""
    parts = text.strip().split(":")
    kind = parts[0].lower()
    if len(parts) == 1 and kind.replace(".", "", 1).isdigit():
        parts, kind = ["fixed", kind], "fixed"
    if kind == "file":
        return LengthDist("empirical", values=read_lengths(":".join(parts[1:])))
    need = {"fixed": 1, "uniform": 2, "normal": 2, "lognormal": 2}.get(kind)
    if need is None or len(parts) - 1 != need:
        raise InputError(
            f"bad length distribution {text!r}: use N, fixed:N, uniform:LO:HI, normal:MEAN:SD, "
            "lognormal:MEDIAN:SIGMA or file:PATH"
        )
    try:
        numbers = [float(p) for p in parts[1:]]
    except ValueError:
        raise InputError(f"bad length distribution {text!r}: parameters must be numbers") from None
    limits = (MAX_TOKENS_PER_REQUEST, MAX_LOGNORMAL_SIGMA if kind == "lognormal" else MAX_TOKENS_PER_REQUEST)
    for value, limit, what in zip(numbers, limits, _PARAMETER_NAMES[kind], strict=False):
        if not (math.isfinite(value) and abs(value) <= limit):
            raise InputError(
                f"bad length distribution {text[:60]!r}: {what} {value:g} is out of range (at most {limit:,g})",
                door="length distribution", expected=f"{what} of at most {limit:,g}",
            )
    return LengthDist(kind, numbers[0], numbers[1] if len(numbers) > 1 else 0.0)


# A lognormal's sigma multiplies lengths by e^sigma per standard deviation: measured chat and code
# length distributions have sigma of 0.5 to 1.5; at sigma 5 one request in 40 is 10^4 times the
# median, and a larger sigma (`lognormal:100:1000`) only overflows a float.
MAX_LOGNORMAL_SIGMA = 5.0
_PARAMETER_NAMES = {
    "fixed": ("length",), "uniform": ("low", "high"), "normal": ("mean", "standard deviation"), "lognormal": ("median", "sigma"),
}


def read_lengths(path: str) -> tuple[int, ...]:
    """One length per line (a CSV's first column; a header line is skipped)."""
    values: list[int] = []
    for i, line in enumerate(_read(path).splitlines(), start=1):
        cell = line.split(",")[0].strip()
        if not cell:
            continue
        try:
            value = float(cell)
        except ValueError:
            if i == 1:
                continue
            raise InputError(f"{path}, line {i}: {cell!r} is not a number of tokens") from None
        if not math.isfinite(value) or not 1 <= value <= MAX_TOKENS_PER_REQUEST:
            raise InputError(f"{path}, line {i}: a length must be from 1 to {MAX_TOKENS_PER_REQUEST:,} tokens, got {cell[:40]}")
        values.append(int(value))
    if not values:
        raise InputError(f"{path}: no lengths found")
    return tuple(values)


def _read(path: str) -> str:
    """A trace or a length file, through the guarded door (size bound, regular file, UTF-8)."""
    return read_trace_text(path)


TIME_KEYS = ("arrival_s", "arrival_time", "timestamp", "time", "t")
PROMPT_KEYS = ("prompt_tokens", "input_tokens", "contexttokens", "prompt_len", "input_len")
OUTPUT_KEYS = ("output_tokens", "gen_tokens", "generatedtokens", "completion_tokens", "output_len")


def read_trace(path: str) -> tuple[tuple[float, int, int], ...]:
    """A JSONL or CSV trace: arrival time (s, or datetimes as in the Azure LLM trace), prompt, output.

    Columns are matched case-insensitively (`TIMESTAMP,ContextTokens,GeneratedTokens` works, as does
    `arrival_s,prompt_tokens,output_tokens`). Times become seconds after the first request.
    """
    return read_trace_ids(path)[0]


PREFIX_ID_KEYS = ("prefix_id", "system_prompt_id")
PREFIX_TOKENS_KEYS = ("prefix_tokens", "prefix_len", "system_prompt_tokens")
CONVERSATION_KEYS = ("conversation_id", "session_id", "chat_id")


def read_trace_ids(path: str) -> tuple[tuple[tuple[float, int, int], ...], tuple[tuple[str, int, str], ...]]:
    """`read_trace`, and each row's (prefix id, prefix tokens, conversation id) for the prefix cache
    when the trace has a `prefix_id` or `conversation_id` column (else an empty tuple): rows with the
    same prefix id share their first `prefix_tokens` (0 or absent: `--system-prompt`'s length), and a
    row continues the previous row of its conversation (its prompt holds that row's prompt and answer).
    """
    text = _read(path)
    rows: list[dict[str, Any]]
    if path.endswith((".jsonl", ".ndjson")) or text.lstrip().startswith("{"):
        rows = []
        for i, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                check_nesting(line, f"{path}, line {i}", door="trace")
                try:
                    obj = json.loads(line)
                except (ValueError, RecursionError):
                    raise InputError(f"{path}, line {i}: not valid JSON") from None
                if not isinstance(obj, dict):
                    raise InputError(f"{path}, line {i}: expected a JSON object")
                rows.append(obj)
    else:
        reader = csv.DictReader(text.splitlines())
        try:
            rows = list(reader)
        except csv.Error as exc:  # a field over csv's 128 KiB limit, a NUL byte...
            raise InputError(f"{path}, line {reader.line_num}: not CSV ({exc})", door="trace") from None
    if not rows:
        raise InputError(f"{path}: the trace has no requests")
    keys = {k.lower().strip(): k for k in rows[0] if k}
    tk, pk, ok = (_key(keys, c, path, what) for c, what in ((TIME_KEYS, "arrival time"), (PROMPT_KEYS, "prompt tokens"), (OUTPUT_KEYS, "output tokens")))
    out: list[tuple[float, int, int]] = []
    t0: float | None = None
    last = -math.inf
    for i, row in enumerate(rows, start=2 if not text.lstrip().startswith("{") else 1):
        t = _time(row.get(tk), path, i)
        p = _count(row.get(pk), path, i, pk)
        o = _count(row.get(ok), path, i, ok)
        if t < last:
            raise InputError(f"{path}, line {i}: arrival time {row.get(tk)!r} is before the previous request's")
        last = t
        t0 = t if t0 is None else t0
        out.append((t - t0, p, o))
    from tokometer.costmodel.serving.workload import check_trace

    check_trace(out)
    pid_key, ptok_key, cid_key = (next((keys[c] for c in cands if c in keys), None)
                                  for cands in (PREFIX_ID_KEYS, PREFIX_TOKENS_KEYS, CONVERSATION_KEYS))
    if pid_key is None and cid_key is None:
        return tuple(out), ()
    ids = tuple(
        (_ident(row.get(pid_key) if pid_key else None), _count(row.get(ptok_key) or 0, path, i, ptok_key) if ptok_key else 0,
         _ident(row.get(cid_key) if cid_key else None))
        for i, row in enumerate(rows, start=2 if not text.lstrip().startswith("{") else 1)
    )
    return tuple(out), ids


def _ident(value: Any) -> str:
    """A prefix or conversation id as text ("" for none), at most 200 characters."""
    return "" if value is None else str(value).strip()[:200]


def _key(keys: dict[str, str], candidates: Sequence[str], path: str, what: str) -> str:
    for c in candidates:
        if c in keys:
            return keys[c]
    raise InputError(f"{path}: no {what} column (looked for {', '.join(candidates)})")


def _time(value: Any, path: str, line: int) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    else:
        text = str(value or "").strip()
        try:
            number = float(text)
        except ValueError:
            try:
                number = datetime.fromisoformat(text[:26]).timestamp()
            except ValueError:
                raise InputError(f"{path}, line {line}: arrival time {text!r} is neither seconds nor a date-time") from None
    if not math.isfinite(number) or number < 0:
        raise InputError(f"{path}, line {line}: arrival time must be zero or more, got {value!r}")
    return number


def _count(value: Any, path: str, line: int, column: str) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{path}, line {line}: {column} {value!r} is not a number of tokens") from None
    if not math.isfinite(number) or not 0 <= number <= MAX_TOKENS_PER_REQUEST or number != int(number):
        raise InputError(f"{path}, line {line}: {column} must be a whole number of tokens from 0 to {MAX_TOKENS_PER_REQUEST:,}, got {str(value)[:40]}")
    return int(number)
