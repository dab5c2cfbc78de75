"""`tokometer plan`: the cheapest deployments that serve a request rate within latency objectives.

Search hardware x weight format x TP (1, 2, 4, 8) x replicas. Each (hardware, format, TP) is first
bounded analytically from the cost model, without simulating:

- its KV cache must hold one request, and one request alone must meet the objectives:
  TTFT >= the prompt's prefill step, TPOT >= one decode step at batch 1 (both lower bounds);
- its saturation rate per replica is at most `B / (out * t_step(B) + B * t_prefill_tokens)` where B is
  the largest batch the scheduler and the KV cache allow and `t_step(B)` the decode step at the mean
  depth (an upper bound on what a replica can serve);
- replicas = ceil(rate / (headroom * saturation)), cost = replicas x TP x price per device-hour.

Disaggregated prefill/decode pools (`disagg`, on by default) add, per (hardware, format, TP), the
P:D split the same kind of bound gives (DistServe; costmodel/serving/disagg.py):

- one request alone: TTFT >= prefill + KV transfer over the link + one decode step;
- a prefill replica serves at most `1 / t_prefill_tokens` requests/s (its steps hold only prompts);
- a decode replica at most `B / (out * t_step(B))`, B as above, its steps carrying no prefill chunks;
- P = ceil(rate / (headroom * prefill bound)), D likewise; cost = (P + D) x TP x price.

They win where prefill chunks in the decode steps break a tight TPOT objective (long prompts).

Speculative decoding (`PlanSpec`: a method, its drafts per pass and acceptance) deploys each candidate
with the drafter's weights and KV and bounds its decode by the verify pass over `B * (k + 1)` tokens
plus `k` drafter forwards, per the `E(a, k)` tokens a pass keeps (`costmodel/serving/speculation.py`);
`auto` deploys each layout both ways and keeps the one the bounds make cheaper (fewer replicas; at a
tie the lower TPOT floor), so speculation is chosen where a tight TPOT needs it and left out where a
high rate fills the batch (its verify pass then costs up to k + 1 plain steps). Split (P:D) candidates
do not speculate: the simulator does not model speculation with disaggregation (`auto` splits the plain one).

The cheapest candidates are then confirmed with the simulator at the asked rate (Poisson, seeded);
a candidate that misses an objective gets one more replica (a split: in the pool whose objective it
missed) and is simulated again. What is printed has been simulated: p99 TTFT and p99 TPOT within the
objectives.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tokometer.costmodel.serving import ServingResult, Workload, fixed
from tokometer.costmodel.serving.speculation import draft_time_s
from tokometer.errors import InputError, TokometerError
from tokometer.usecases.simulate import Deployment, deploy, disaggregation, run

DEFAULT_HARDWARE = ("h100-sxm", "h200", "a100-80gb-sxm", "a100-40gb-sxm", "l40s", "l4", "a10g", "mi300x", "b200")
DEFAULT_QUANTS = ("bf16", "fp8", "awq-int4")
TP_CHOICES = (1, 2, 4, 8)
# MoE models also try attention data parallel with expert parallel over the same GPUs ("DEP", vLLM's
# --data-parallel-size N --enable-expert-parallel), one node of 8 and two nodes of 8 over InfiniBand NDR,
# and TP 8 x DP 2 with EP 16: (tp, dp, ep)
MOE_LAYOUTS = ((1, 2, 2), (1, 4, 4), (1, 8, 8), (1, 16, 16), (8, 2, 16))
GPUS_PER_NODE = 8
INTER_LINK = "ib-ndr"
HEADROOM = 0.8  # plan replicas for 80 % of the bound: queues grow steeply near saturation
FINALISTS = 6
DISAGG_FINALISTS = 3  # split candidates simulated besides the colocated finalists
MAX_REPLICAS = 512


@dataclass(frozen=True)
class PlanSpec:
    """Speculative decoding for `plan`: `method` (draft, mtp, eagle3, ngram) with `tokens` drafts per pass,
    `acceptance` per drafted token (None: the method's defaults) and `draft_model` for `draft`; `auto`
    also tries each layout without it and keeps the better."""

    method: str
    tokens: int | None = None
    acceptance: float | None = None
    draft_model: str | None = None
    auto: bool = False

    def kwargs(self) -> dict[str, Any]:
        return {"spec_method": self.method, "spec_tokens": self.tokens, "spec_acceptance": self.acceptance,
                "draft_model": self.draft_model}


@dataclass(frozen=True)
class Bounds:
    """What the analytic bounds say of one replica: its floors, the batch it runs and its saturation rate."""

    ttft_floor_s: float
    tpot_floor_s: float
    batch: int
    step_s: float  # seconds per output token of each of `batch` sequences
    prefill_s: float
    saturation_req_per_s: float


def decode_token_s(dep: Deployment, batch: int, depth: float) -> float:
    """Seconds per output token of `batch` sequences at `depth`: one decode step, or with speculation the
    verify pass over `batch * (k + 1)` tokens and `k` drafter forwards, over the `E(a, k)` tokens a pass keeps."""
    cost, spec = dep.cost, dep.speculation
    if spec is None:
        return cost.time_s(batch, batch * depth, batch * depth, batch)
    wide = batch * (spec.draft_tokens + 1)
    verify = cost.time_s(wide, batch * depth, wide * depth, batch)
    return (verify + draft_time_s(spec, batch, batch * depth, 0.0, 0.0, 0.0)[1]) / spec.tokens_per_pass


def bounds(dep: Deployment, prompt: int, output: int, slo_tpot_s: float) -> Bounds:
    """The floors of one request alone, the largest batch meeting the TPOT objective and the saturation rate."""
    cost = dep.cost
    ttft_floor = cost.time_s(prompt, 0.0, prompt * prompt / 2.0, prefill_tokens=prompt)
    depth = prompt + output / 2.0
    tpot_floor = decode_token_s(dep, 1, depth)
    b = max(1, int(min(dep.policy.max_num_seqs, dep.kv_capacity_tokens // (prompt + output))))
    step = decode_token_s(dep, b, depth)
    while b > 1 and step > slo_tpot_s:  # at full batch the TPOT objective binds: shrink the batch
        b //= 2
        step = decode_token_s(dep, b, depth)
    # the prompt's step, less its fixed costs and the eager-prefill host floor, which prompts batched in one step share
    alone = ttft_floor if not cost.eager_prefill_s else \
        replace(cost, eager_prefill_s=0.0).time_s(prompt, 0.0, prompt * prompt / 2.0, prefill_tokens=prompt)
    prefill_per_req = alone - cost.overhead_s - cost.comm_fixed_s
    saturation = b / (output * step + b * max(prefill_per_req, 0.0))
    return Bounds(ttft_floor, tpot_floor, b, step, prefill_per_req, saturation)


@dataclass(frozen=True)
class Candidate:
    hardware: str
    quant: str
    tp: int
    replicas: int
    price_per_device_hour_usd: float
    saturation_req_per_s: float
    ttft_floor_s: float
    tpot_floor_s: float
    deployment: Deployment
    pools: tuple[int, int] | None = None  # disaggregated (prefill, decode) replicas; `replicas` is their sum

    @property
    def devices(self) -> int:
        return self.replicas * self.deployment.devices

    @property
    def layout(self) -> str:
        """`tp8`, or `tp1 dp8 ep8` (`, 2 nodes`) for an expert/data-parallel replica."""
        lay = self.deployment.setup.layout
        text = f"tp{lay.tp}" + (f" dp{lay.dp}" if lay.dp > 1 else "") + (f" ep{lay.ep}" if lay.ep > 1 else "")
        spec = self.deployment.speculation
        return text + (f", {lay.nodes} nodes" if lay.nodes > 1 else "") + (f", {spec.method} k{spec.draft_tokens}" if spec else "")

    @property
    def split(self) -> str | None:
        """`2P:6D` for disaggregated pools, None when colocated."""
        return f"{self.pools[0]}P:{self.pools[1]}D" if self.pools else None

    def grown(self, ttft_missed: bool, tpot_missed: bool) -> Candidate:
        """One replica more: colocated, anywhere; split, in the pool of each missed objective (prefill: TTFT)."""
        if self.pools is None:
            return replace(self, replicas=self.replicas + 1)
        p, d = self.pools[0] + ttft_missed, self.pools[1] + (tpot_missed or not ttft_missed)
        return replace(self, replicas=p + d, pools=(p, d))

    @property
    def usd_per_hour(self) -> float:
        return self.devices * self.price_per_device_hour_usd


@dataclass(frozen=True)
class PlanRow:
    candidate: Candidate
    result: ServingResult
    binding: str

    def to_dict(self, rate: float, output_tokens: int) -> dict[str, Any]:
        c = self.candidate
        tokens_per_hour = rate * output_tokens * 3600.0
        return {
            "hardware": c.hardware, "quant": c.quant, "tp": c.tp, "replicas": c.replicas, "gpus": c.devices,
            "dp": c.deployment.setup.layout.dp, "ep": c.deployment.setup.layout.ep, "nodes": c.deployment.setup.layout.nodes,
            "layout": c.layout,
            "disagg": c.split, "prefill_replicas": c.pools[0] if c.pools else None,
            "decode_replicas": c.pools[1] if c.pools else None,
            "usd_per_hour": c.usd_per_hour, "usd_per_million_output_tokens": c.usd_per_hour / tokens_per_hour * 1e6,
            "ttft_p99_s": self.result.ttft_s.p99, "tpot_p99_s": self.result.tpot_s.p99,
            "req_per_s": self.result.req_per_s, "binding": self.binding,
            **({"spec": {k: v for k, v in spec.summary().items() if k != "source"}}
               if (spec := c.deployment.speculation) is not None else {}),
        }


@dataclass(frozen=True)
class Plan:
    rows: tuple[PlanRow, ...]
    considered: int
    pruned: dict[str, int]
    best_ttft_p99_s: float | None
    best_tpot_p99_s: float | None


def candidates(
    model: Any, *, rate: float, prompt: int, output: int, slo_ttft_s: float, slo_tpot_s: float,
    hardware: Sequence[str], quants: Sequence[str], engine: str, prices: dict[str, float], disagg: bool = True,
    moe_layouts: bool = True, spec: PlanSpec | None = None,
) -> tuple[list[Candidate], dict[str, int], float | None, float | None]:
    """Every (hardware, quant, TP) that fits and can meet the objectives alone, with its analytic replica count,
    and (`disagg`) its disaggregated P:D split where that split can meet them too. A MoE model (`moe_layouts`)
    also tries `MOE_LAYOUTS`: attention DP with expert parallel, up to two nodes. `spec` deploys each with
    speculative decoding (`auto`: with and without, the better kept)."""
    from tokometer.catalog import hardware_catalog, quant_catalog
    from tokometer.usecases.formats import checkpoint_twin
    from tokometer.usecases.policy import quant_runs

    out: list[Candidate] = []
    pruned: dict[str, int] = {}
    best_ttft = best_tpot = math.inf

    def prune(why: str) -> None:
        pruned[why] = pruned.get(why, 0) + 1

    for hw_name in hardware:
        hw = hardware_catalog().get(hw_name)
        price = prices.get(hw.id, hw.price_per_hour_usd)
        if price is None:
            prune("no price (give --price HW=USD)")
            continue
        for q in quants:
            fmt = quant_catalog().get(q)
            layouts: list[tuple[int, int, int]] = [(tp, 1, 1) for tp in TP_CHOICES]
            moe_added = False
            i = 0
            while i < len(layouts):
                tp, dp, ep = layouts[i]
                i += 1
                devices = tp * dp
                nodes = max(1, devices // GPUS_PER_NODE)
                layout: dict[str, Any] = {"quant": fmt.id, "engine": engine, "tp": tp, "dp": dp, "ep": ep, "nodes": nodes,
                          "inter_link": INTER_LINK if nodes > 1 else None}
                try:
                    dep = deploy(model, hw, **layout)
                except TokometerError:
                    prune("does not fit")
                    continue
                plain = dep
                if spec is not None:
                    try:
                        fast = deploy(model, hw, **layout, **spec.kwargs())
                    except TokometerError as exc:
                        if getattr(exc, "field", None) in ("spec_method", "draft_model", "spec_tokens", "spec_acceptance"):
                            raise  # the method itself is refused (this model, engine or value): say so, once
                        prune("does not fit with the drafter" if not spec.auto else "speculation does not fit (kept without)")
                        if not spec.auto:
                            continue
                    else:
                        dep = fast if not spec.auto else _better(dep, fast, rate, prompt, output, slo_tpot_s)
                if not moe_added and moe_layouts and dep.setup.model.is_moe:
                    layouts += [lay for lay in MOE_LAYOUTS if lay[2] <= dep.setup.model.n_experts]
                    moe_added = True
                if not quant_runs(checkpoint_twin(dep.serving.engine, fmt) or fmt, hw, dep.serving.engine):
                    prune("format not supported on this hardware/engine")
                    break
                if dep.kv_capacity_tokens < prompt + output:
                    prune("KV cache cannot hold one request")
                    continue
                bound = bounds(dep, prompt, output, slo_tpot_s)
                ttft_floor, tpot_floor, saturation = bound.ttft_floor_s, bound.tpot_floor_s, bound.saturation_req_per_s
                best_ttft, best_tpot = min(best_ttft, ttft_floor), min(best_tpot, tpot_floor)
                if ttft_floor > slo_ttft_s or tpot_floor > slo_tpot_s:
                    prune("one request alone misses the objectives")
                    continue
                replicas = max(1, math.ceil(rate / (HEADROOM * saturation)))
                # a split never speculates (not modelled): `--spec auto` splits the plain deployment
                whole = dep if dep.speculation is None else (plain if spec is not None and spec.auto else None)
                sb = bound if whole is dep else bounds(whole, prompt, output, slo_tpot_s) if whole is not None else None
                if disagg and (whole is None or sb is None):
                    prune("split: speculative decoding with disaggregation is not modelled")
                elif disagg and whole is not None and sb is not None:
                    pools = None if sb.tpot_floor_s > slo_tpot_s else _split(
                        whole, rate, prompt, slo_ttft_s, sb.ttft_floor_s, decode_req_per_s=sb.batch / (output * sb.step_s),
                        prefill_s=sb.prefill_s)
                    if pools is None:
                        prune("split: TTFT with the KV transfer misses the objective" if sb.tpot_floor_s <= slo_tpot_s
                              else "split: one request alone misses the objectives")
                    elif sum(pools) > MAX_REPLICAS:
                        prune(f"split: needs more than {MAX_REPLICAS} replicas")
                    else:
                        out.append(Candidate(hw.id, fmt.id, tp, sum(pools), price, sb.saturation_req_per_s, sb.ttft_floor_s,
                                             sb.tpot_floor_s, whole, pools))
                if replicas > MAX_REPLICAS:
                    prune(f"needs more than {MAX_REPLICAS} replicas")
                    continue
                out.append(Candidate(hw.id, fmt.id, tp, replicas, price, saturation, ttft_floor, tpot_floor, dep))
    return out, pruned, (best_ttft if best_ttft < math.inf else None), (best_tpot if best_tpot < math.inf else None)


def _better(plain: Deployment, fast: Deployment, rate: float, prompt: int, output: int, slo_tpot_s: float) -> Deployment:
    """`plan --spec auto`: the deployment the bounds make cheaper (fewer replicas for `rate`), at a tie the
    one with the lower TPOT floor; one whose lone request misses the TPOT objective loses."""
    a, b = bounds(plain, prompt, output, slo_tpot_s), bounds(fast, prompt, output, slo_tpot_s)
    if (a.tpot_floor_s > slo_tpot_s) != (b.tpot_floor_s > slo_tpot_s):
        return plain if b.tpot_floor_s > slo_tpot_s else fast
    ra, rb = (math.ceil(rate / (HEADROOM * x.saturation_req_per_s)) for x in (a, b))
    if ra != rb:
        return fast if rb < ra else plain
    return fast if b.tpot_floor_s < a.tpot_floor_s else plain


def _split(
    dep: Deployment, rate: float, prompt: int, slo_ttft_s: float, ttft_floor_s: float, *,
    decode_req_per_s: float, prefill_s: float,
) -> tuple[int, int] | None:
    """The fewest (prefill, decode) replicas the disaggregated bounds allow, or None when one request alone
    misses TTFT: prefill + transfer (`Disagg.transfer_s`) + one decode step (in `ttft_floor_s`) > objective.
    P = ceil(rate * t_prefill / headroom), D = ceil(rate / (headroom * decode bound)), each at least 1."""
    if ttft_floor_s + disaggregation(dep, "1:1").transfer_s(prompt) > slo_ttft_s:
        return None
    p = max(1, math.ceil(rate * max(prefill_s, 0.0) / HEADROOM))
    d = max(1, math.ceil(rate / (HEADROOM * decode_req_per_s)))
    return p, d


def plan(
    model: Any, *, rate: float, prompt: int, output: int, slo_ttft_s: float, slo_tpot_s: float,
    hardware: Sequence[str] = DEFAULT_HARDWARE, quants: Sequence[str] = DEFAULT_QUANTS, engine: str = "vllm",
    prices: dict[str, float] | None = None, num_requests: int = 1500, seed: int = 0, top: int = 5, disagg: bool = True,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None, spec: PlanSpec | None = None,
) -> Plan:
    """The cheapest simulated deployments meeting both p99 objectives, colocated and (`disagg`) split;
    `progress` wraps the loop over the simulated finalists (a bar)."""
    for name, value in (("--rate", rate), ("--slo-ttft-p99", slo_ttft_s), ("--slo-tpot-p99", slo_tpot_s)):
        if not (value > 0 and math.isfinite(value)):
            raise InputError(f"{name} must be a positive number, got {value!r}")
    if prompt < 1 or output < 1:
        raise InputError("--prompt and --output must be at least 1 token")
    found, pruned, best_ttft, best_tpot = candidates(
        model, rate=rate, prompt=prompt, output=output, slo_ttft_s=slo_ttft_s, slo_tpot_s=slo_tpot_s,
        hardware=hardware, quants=quants, engine=engine, prices=prices or {}, disagg=disagg, spec=spec,
    )
    considered = len(found) + sum(pruned.values())
    found.sort(key=lambda c: (c.usd_per_hour, c.devices))
    colocated = [c for c in found if c.pools is None][: max(FINALISTS, top * 2)]
    split = [c for c in found if c.pools is not None][:DISAGG_FINALISTS]
    finalists = sorted(colocated + split, key=lambda c: (c.usd_per_hour, c.devices))
    workload = Workload("poisson", num_requests, fixed(prompt), fixed(output), rate_per_s=rate)
    rows: list[PlanRow] = []
    sim_best_ttft = sim_best_tpot = math.inf
    for cand in (progress(finalists) if progress else finalists):
        c = cand
        for _ in (0, 1):
            pools = disaggregation(c.deployment, f"{c.pools[0]}:{c.pools[1]}") if c.pools else None
            res = run(c.deployment, workload, replicas=c.replicas, router="least-outstanding", seed=seed, disagg=pools)
            ttft, tpot = res.ttft_s.p99 or math.inf, res.tpot_s.p99 or math.inf
            sim_best_ttft, sim_best_tpot = min(sim_best_ttft, ttft), min(sim_best_tpot, tpot)
            if ttft <= slo_ttft_s and tpot <= slo_tpot_s and res.completed == res.requests:
                binding = "TTFT" if ttft / slo_ttft_s >= tpot / slo_tpot_s else "TPOT"
                rows.append(PlanRow(c, res, f"{binding} p99 at {max(ttft / slo_ttft_s, tpot / slo_tpot_s):.0%} of objective; steps {res.binding}-bound"))
                break
            c = c.grown(ttft > slo_ttft_s, tpot > slo_tpot_s or res.completed < res.requests)
        if len(rows) >= top:
            break
    rows.sort(key=lambda r: (r.candidate.usd_per_hour, r.candidate.devices))
    return Plan(
        rows=tuple(rows[:top]), considered=considered, pruned=pruned,
        best_ttft_p99_s=min(sim_best_ttft, best_ttft or math.inf) if (sim_best_ttft < math.inf or best_ttft) else None,
        best_tpot_p99_s=min(sim_best_tpot, best_tpot or math.inf) if (sim_best_tpot < math.inf or best_tpot) else None,
    )
