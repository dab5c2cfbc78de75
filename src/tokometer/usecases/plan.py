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
        return text + (f", {lay.nodes} nodes" if lay.nodes > 1 else "")

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
    moe_layouts: bool = True,
) -> tuple[list[Candidate], dict[str, int], float | None, float | None]:
    """Every (hardware, quant, TP) that fits and can meet the objectives alone, with its analytic replica count,
    and (`disagg`) its disaggregated P:D split where that split can meet them too. A MoE model (`moe_layouts`)
    also tries `MOE_LAYOUTS`: attention DP with expert parallel, up to two nodes."""
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
                try:
                    dep = deploy(model, hw, quant=fmt.id, engine=engine, tp=tp, dp=dp, ep=ep, nodes=nodes,
                                 inter_link=INTER_LINK if nodes > 1 else None)
                except TokometerError:
                    prune("does not fit")
                    continue
                if not moe_added and moe_layouts and dep.setup.model.is_moe:
                    layouts += [lay for lay in MOE_LAYOUTS if lay[2] <= dep.setup.model.n_experts]
                    moe_added = True
                if not quant_runs(checkpoint_twin(dep.serving.engine, fmt) or fmt, hw, dep.serving.engine):
                    prune("format not supported on this hardware/engine")
                    break
                if dep.kv_capacity_tokens < prompt + output:
                    prune("KV cache cannot hold one request")
                    continue
                cost = dep.cost
                ttft_floor = cost.time_s(prompt, 0.0, prompt * prompt / 2.0, prefill_tokens=prompt)
                tpot_floor = cost.time_s(1, prompt + output / 2.0, prompt + output / 2.0)
                best_ttft, best_tpot = min(best_ttft, ttft_floor), min(best_tpot, tpot_floor)
                if ttft_floor > slo_ttft_s or tpot_floor > slo_tpot_s:
                    prune("one request alone misses the objectives")
                    continue
                b = int(min(dep.policy.max_num_seqs, dep.kv_capacity_tokens // (prompt + output)))
                depth = prompt + output / 2.0
                step = cost.time_s(b, b * depth, b * depth, b)
                while b > 1 and step > slo_tpot_s:  # at full batch the TPOT objective binds: shrink the batch
                    b //= 2
                    step = cost.time_s(b, b * depth, b * depth, b)
                prefill_per_req = ttft_floor - cost.overhead_s - cost.comm_fixed_s  # the prompt's step, less its fixed costs
                saturation = b / (output * step + b * max(prefill_per_req, 0.0))
                replicas = max(1, math.ceil(rate / (HEADROOM * saturation)))
                if disagg:
                    pools = _split(dep, rate, prompt, slo_ttft_s, ttft_floor, decode_req_per_s=b / (output * step),
                                   prefill_s=prefill_per_req)
                    if pools is None:
                        prune("split: TTFT with the KV transfer misses the objective")
                    elif sum(pools) > MAX_REPLICAS:
                        prune(f"split: needs more than {MAX_REPLICAS} replicas")
                    else:
                        out.append(Candidate(hw.id, fmt.id, tp, sum(pools), price, saturation, ttft_floor, tpot_floor, dep, pools))
                if replicas > MAX_REPLICAS:
                    prune(f"needs more than {MAX_REPLICAS} replicas")
                    continue
                out.append(Candidate(hw.id, fmt.id, tp, replicas, price, saturation, ttft_floor, tpot_floor, dep))
    return out, pruned, (best_ttft if best_ttft < math.inf else None), (best_tpot if best_tpot < math.inf else None)


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
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
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
        hardware=hardware, quants=quants, engine=engine, prices=prices or {}, disagg=disagg,
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
