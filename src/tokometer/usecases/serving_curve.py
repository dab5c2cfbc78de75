"""One served workload at a chosen request rate, and the latency-throughput curve around it.

What the web's Serving page and the runs overlay ask for in one typed request: a deployment (model,
hardware, format, engine, TP, replicas), fixed prompt/output lengths, a rate sweep (given, or 10 % to
120 % of saturation as `tokometer simulate --sweep-rate`) with its knee, and one chosen point (a
Poisson rate, or a closed loop of N users as `bench --concurrency` runs). Each point is exactly what
`tokometer simulate --rate R --json` (or `--concurrency N`) computes for the same inputs: the same
deployment, workload, seed and router. Work is bounded per call (`MAX_REQUESTS`, `MAX_RATES`) so a
server answering this stays responsive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from tokometer.costmodel.serving import ServingResult, Workload, fixed
from tokometer.errors import InputError
from tokometer.usecases.simulate import (
    CurvePoint,
    Deployment,
    auto_rates,
    deploy,
    knee,
    run,
    sweep_rates,
)

MAX_REQUESTS = 2000  # per simulated point: ~0.05 s of simulation for an 8B model on one H100
MAX_RATES = 16
MAX_REPLICAS = 64
MAX_TOKENS = 1_000_000
MAX_SPEC_TOKENS = 16  # drafted tokens per pass: engines' examples use 1 to 8
MAX_SYSTEM_PROMPTS = 1000
MAX_TURNS = 64  # turns per conversation: each turn's prompt carries the history, so the work grows with T^2


@dataclass(frozen=True)
class ServingQuery:
    """The inputs, in the units the names say; `rate_per_s` None picks the knee of the sweep."""

    model: str
    hw: str
    quant: str | None = None
    engine: str = "vllm"
    tp: int = 1
    replicas: int = 1
    prompt_tokens: int = 1000
    output_tokens: int = 200
    num_requests: int = 1000
    rate_per_s: float | None = None
    concurrency: int | None = None
    concurrency_levels: tuple[int, ...] = field(default=())  # closed loops beside the curve (a bench run's levels)
    rates_per_s: tuple[float, ...] = field(default=())
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None
    seed: int = 0
    # speculative decoding and shared prefixes, with `tokometer simulate`'s names (`SimulateRequest`)
    spec_method: str | None = None
    spec_tokens: int | None = None
    spec_acceptance: float | None = None
    draft_model: str | None = None
    system_prompt: int | None = None
    system_prompt_share: float | None = None
    system_prompts: int = 1
    turns: int = 1

    def check(self) -> None:
        """Refuse out-of-range values with the field at fault (the web form marks it)."""
        for name, value, low, high in (
            ("tp", self.tp, 1, 64), ("replicas", self.replicas, 1, MAX_REPLICAS),
            ("prompt_tokens", self.prompt_tokens, 1, MAX_TOKENS), ("output_tokens", self.output_tokens, 1, MAX_TOKENS),
            ("num_requests", self.num_requests, 1, MAX_REQUESTS),
        ):
            if not low <= value <= high:
                raise InputError(f"{name} must be between {low:,} and {high:,}, got {value:,}", field=name)
        for n in (self.concurrency, *self.concurrency_levels):
            if n is not None and not 1 <= n <= MAX_REQUESTS:
                raise InputError(f"concurrency must be between 1 and {MAX_REQUESTS:,}, got {n:,}", field="concurrency")
        if len(self.concurrency_levels) > MAX_RATES:
            raise InputError(f"at most {MAX_RATES} concurrency levels, got {len(self.concurrency_levels)}", field="concurrency")
        if len(self.rates_per_s) > MAX_RATES:
            raise InputError(f"rates_per_s holds {len(self.rates_per_s)} rates, at most {MAX_RATES}", field="rates_per_s")
        for name, values in (("rate_per_s", (self.rate_per_s,)), ("rates_per_s", self.rates_per_s),
                             ("slo_ttft_ms", (self.slo_ttft_s,)), ("slo_tpot_ms", (self.slo_tpot_s,))):
            for given in values:
                if given is not None and not (given > 0 and math.isfinite(given)):
                    raise InputError(f"{name} must be a positive number, got {given!r}", field=name)
        for name, count, low, high in (("spec_tokens", self.spec_tokens, 1, MAX_SPEC_TOKENS),
                                       ("system_prompt", self.system_prompt, 0, MAX_TOKENS),
                                       ("system_prompts", self.system_prompts, 1, MAX_SYSTEM_PROMPTS),
                                       ("turns", self.turns, 1, MAX_TURNS)):
            if count is not None and not low <= count <= high:
                raise InputError(f"{name} must be between {low:,} and {high:,}, got {count:,}", field=name)
        for name, share in (("spec_acceptance", self.spec_acceptance), ("system_prompt_share", self.system_prompt_share)):
            if share is not None and not (0.0 <= share <= 1.0):
                raise InputError(f"{name} must be a share from 0 to 1, got {share!r}", field=name)
        if self.system_prompt_share is not None and self.system_prompt is None:
            raise InputError("system_prompt_share needs system_prompt (the shared prompt's length in tokens)",
                             field="system_prompt_share")
        if self.spec_method is None and any(v is not None for v in (self.spec_tokens, self.spec_acceptance, self.draft_model)):
            raise InputError("spec_tokens, spec_acceptance and draft_model go with spec_method", field="spec_method")


@dataclass(frozen=True)
class ServingCurve:
    """The sweep (its knee marked) and the chosen point, on one deployment."""

    query: ServingQuery
    deployment: Deployment
    points: tuple[CurvePoint, ...]
    knee: CurvePoint | None
    chosen: ServingResult
    chosen_rate_per_s: float | None  # None for a closed loop
    closed_loops: tuple[tuple[int, ServingResult], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON for each result, less the over-time series (the page draws none of them)."""
        q = self.query
        return {
            "deployment": self.deployment.to_dict() | {"label": self.deployment.label},
            "workload": {"prompt_tokens": q.prompt_tokens, "output_tokens": q.output_tokens, "num_requests": q.num_requests,
                         "replicas": q.replicas, "seed": q.seed, "slo_ttft_s": q.slo_ttft_s, "slo_tpot_s": q.slo_tpot_s,
                         **({"system_prompt": q.system_prompt, "system_prompt_share": q.system_prompt_share,
                             "system_prompts": q.system_prompts, "turns": q.turns}
                            if q.system_prompt or q.turns > 1 else {})},
            "points": [{"rate_per_s": p.rate_per_s, **_brief(p.result)} for p in self.points],
            "knee_rate_per_s": self.knee.rate_per_s if self.knee else None,
            "chosen": {"rate_per_s": self.chosen_rate_per_s, "concurrency": q.concurrency, **_brief(self.chosen),
                       "binding": self.chosen.binding, "time_shares": time_shares(self.chosen)},
            "closed_loops": [{"concurrency": n, **_brief(r)} for n, r in self.closed_loops],
        }


def _brief(result: ServingResult) -> dict[str, Any]:
    data = result.to_dict()
    data.pop("batch_over_time", None)
    data.pop("kv_over_time", None)
    return data


def time_shares(result: ServingResult) -> dict[str, float]:
    """Where busy step time went: share of prefill vs decode tokens, and what bound the steps."""
    busy = result.time_prefill_s + result.time_decode_s
    if busy <= 0:
        return {}
    shares = {"prefill": result.time_prefill_s / busy, "decode": result.time_decode_s / busy}
    return shares | {f"bound_{k}": v / busy for k, v in result.bound_s.items() if v > 0}


def shared_prefixes(q: ServingQuery) -> dict[str, Any]:
    """The workload's shared system prompts and turns, read as `tokometer simulate` reads them."""
    return {
        "system_prompt_tokens": q.system_prompt or 0, "system_prompts": q.system_prompts, "turns": q.turns,
        "system_prompt_share": (1.0 if q.system_prompt_share is None else q.system_prompt_share) if q.system_prompt else 0.0,
    }


def serving_curve(q: ServingQuery) -> ServingCurve:
    """Deploy, sweep the rates, mark the knee, simulate the chosen point (the knee when none is given)."""
    q.check()
    dep = deploy(q.model, q.hw, quant=q.quant, engine=q.engine, tp=q.tp, spec_method=q.spec_method,
                 spec_tokens=q.spec_tokens, spec_acceptance=q.spec_acceptance, draft_model=q.draft_model)
    kwargs: dict[str, Any] = {"replicas": q.replicas, "router": "round-robin", "seed": q.seed,
                              "slo_ttft_s": q.slo_ttft_s, "slo_tpot_s": q.slo_tpot_s}
    base = Workload("offline", q.num_requests, fixed(q.prompt_tokens), fixed(q.output_tokens), **shared_prefixes(q))
    rates = list(q.rates_per_s) or auto_rates(dep, base, **kwargs)
    poisson = replace(base, arrival="poisson", rate_per_s=rates[0])
    points = sweep_rates(dep, poisson, rates, **kwargs)
    k = knee(points)

    def closed(n: int) -> ServingResult:
        return run(dep, Workload("closed", q.num_requests, base.prompt, base.output, concurrency=n), **kwargs)

    loops = tuple((n, closed(n)) for n in q.concurrency_levels)
    if q.concurrency is not None:
        return ServingCurve(q, dep, tuple(points), k, closed(q.concurrency), None, loops)
    rate = q.rate_per_s or (k or points[0]).rate_per_s
    same = next((p for p in points if p.rate_per_s == rate), None)
    chosen = same.result if same else run(dep, replace(poisson, rate_per_s=rate), **kwargs)
    return ServingCurve(q, dep, tuple(points), k, chosen, rate, loops)
