"""`tokometer.simulate` (a served workload, step by step) and `tokometer.plan` (the cheapest setup
meeting p99 objectives), with the CLI's option names and units.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokometer.api.result import JsonResult
from tokometer.errors import InputError

if TYPE_CHECKING:
    from tokometer.costmodel.serving import Workload
    from tokometer.costmodel.serving.disagg import Disagg
    from tokometer.usecases.launch import Launch
    from tokometer.usecases.plan import Plan
    from tokometer.usecases.simulate import CurvePoint, Deployment


@dataclass(frozen=True)
class SimulateResult(JsonResult):
    """A simulated serving run (`result`), or a latency-throughput curve over rates (`points`, `knee`)."""

    deployment: Deployment
    workload: Workload
    result: Any = None  # costmodel.serving.SimResult for one run
    points: tuple[CurvePoint, ...] = ()
    knee: CurvePoint | None = None
    disagg: Disagg | None = None
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer simulate --json` shape."""
        if self.points:
            from tokometer.report.serving import curve_dict

            return {"deployment": self.deployment.to_dict(), **curve_dict(list(self.points), self.knee)}
        assert self.result is not None
        return (
            {"deployment": self.deployment.to_dict(), "workload": self.workload.to_dict() | {"trace": len(self.workload.trace)},
             "result": self.result.to_dict(), "binding": self.result.binding}
            | ({"disagg": self.disagg.to_dict()} if self.disagg is not None else {})
        )


LONG_RUN_REQUESTS = 20_000  # a run of this many requests or more shows a progress bar on a terminal
# Gamma arrivals of shape 1,000 space requests within about 3 % of the mean gap: constant arrivals
# in all but name (--constant-rate). Far larger shapes only stall Python's gamma sampler (1e308 hung).
MAX_BURSTINESS = 1000.0


def parse_rates(text: str) -> list[float]:
    """`--rate`: one rate or a comma-separated list, requests per second."""
    rates = []
    for part in text.split(","):
        try:
            value = float(part.strip())
        except ValueError:
            raise InputError(f"--rate must be a positive number of requests per second (or a list like 1,2,4), got {part.strip()!r}") from None
        if not (value > 0 and math.isfinite(value)):
            raise InputError(f"--rate must be a positive number of requests per second, got {part.strip()!r}")
        rates.append(value)
    return rates


def _ms(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"{name} must be a positive number of milliseconds, got {value!r}")
    return value / 1e3


def simulate(
    model: str,
    hw: str,
    *,
    quant: str | None = None,
    engine: str = "vllm",
    kv_dtype: str | None = None,
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    dp: int = 1,
    nodes: int = 1,
    inter_link: str | None = None,
    overlap: bool = False,
    ep_imbalance: float = 1.0,
    replicas: int = 1,
    disagg: str | None = None,
    kv_link: str | None = None,
    router: str = "round-robin",
    rate: str | float | Sequence[float] | None = None,
    sweep_rate: bool = False,
    burstiness: float = 1.0,
    constant_rate: bool = False,
    concurrency: int | None = None,
    think_s: float = 0.0,
    offline: int | None = None,
    trace: str | None = None,
    prompt: str | int = "1000",
    output: str | int = "200",
    lengths: str | None = None,
    num_requests: int = 1000,
    slo_ttft: float | None = None,
    slo_tpot: float | None = None,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    memory_fraction: float | None = None,
    prefix_cache_hit: float | None = None,
    scheduler_steps: int | None = None,
    spec_method: str | None = None,
    spec_tokens: int | None = None,
    spec_acceptance: float | None = None,
    draft_model: str | None = None,
    seed: int = 0,
    progress: bool = False,
) -> SimulateResult:
    """Simulate `model` served on `hw` by an engine's scheduler, step by step (`tokometer simulate`).

    `ep`/`dp`/`nodes`/`inter_link`/`overlap`/`ep_imbalance` lay out a MoE replica as clusters do (expert
    parallel, attention data parallel, nodes over a network, two-batch overlap).
    One workload: `rate` (req/s; a list or "1,2,4" draws the curve), `sweep_rate=True`, `concurrency`,
    `offline` or `trace` (a JSONL/CSV path). `prompt`/`output` are token counts or distributions
    ("lognormal:800:0.6"); `slo_ttft`/`slo_tpot` are milliseconds, as on the command line.
    `spec_method` (draft, mtp, eagle3, ngram), `spec_tokens`, `spec_acceptance`, `draft_model`:
    speculative decoding in the scheduler (defaults per method, with sources: `costmodel.serving.speculation`).
    `progress=True` draws a bar on stderr for rate sweeps and long runs when stderr is a terminal.
    """
    from dataclasses import replace

    from tokometer.costmodel.serving import Workload
    from tokometer.report.progress import Counter, wrapper
    from tokometer.usecases.serving_curve import MAX_REPLICAS
    from tokometer.usecases.simulate import (
        auto_rates,
        deploy,
        disaggregation,
        knee,
        parse_lengths,
        read_trace,
        run,
        sweep_rates,
    )

    chosen = [n for n, v in (("--rate", rate), ("--sweep-rate", sweep_rate or None), ("--concurrency", concurrency),
                             ("--offline", offline), ("--trace", trace)) if v is not None]
    if len(chosen) != 1:
        raise InputError("give exactly one workload: --rate R, --sweep-rate, --concurrency N, --offline N or --trace FILE"
                         + (f" (got {', '.join(chosen)})" if chosen else ""))
    slo = (_ms("--slo-ttft", slo_ttft), _ms("--slo-tpot", slo_tpot))
    prompt, output = str(prompt), str(output)
    if lengths:
        parts = lengths.split(",")
        if len(parts) != 2:
            raise InputError("--lengths takes PROMPT_DIST,OUTPUT_DIST, e.g. lognormal:800:0.6,uniform:50:400")
        prompt, output = parts
    p_dist, o_dist = parse_lengths(prompt), parse_lengths(output)
    n = offline if offline is not None else num_requests
    if isinstance(n, int) and n < 1:
        raise InputError(f"the number of requests must be at least 1, got {n}")
    for name, value in (("--tp", tp), ("--pp", pp), ("--ep", ep), ("--dp", dp), ("--nodes", nodes)):
        if value < 1:
            raise InputError(f"{name} must be a whole number of devices, 1 or more, got {value}")
    dep = deploy(model, hw, quant=quant, engine=engine, tp=tp, pp=pp, ep=ep, dp=dp, nodes=nodes, inter_link=inter_link,
                 overlap=overlap, ep_imbalance=ep_imbalance, kv_dtype=kv_dtype, max_num_seqs=max_num_seqs,
                 max_num_batched_tokens=max_num_batched_tokens, memory_fraction=memory_fraction,
                 prefix_cache_hit_fraction=prefix_cache_hit, scheduler_steps=scheduler_steps, spec_method=spec_method,
                 spec_tokens=spec_tokens, spec_acceptance=spec_acceptance, draft_model=draft_model)
    kwargs: dict[str, Any] = {"replicas": replicas, "router": router, "seed": seed, "slo_ttft_s": slo[0], "slo_tpot_s": slo[1]}
    if disagg is not None:
        if dep.speculation is not None:
            from tokometer.costmodel.serving.speculation import DISAGG_REFUSED

            raise InputError(DISAGG_REFUSED, field="spec_method")
        if replicas != 1:
            raise InputError("--disagg P:D sets the replicas of each pool; leave out --replicas")
        kwargs["disagg"] = disaggregation(dep, disagg, kv_link)
    elif kv_link is not None:
        raise InputError("--kv-link only applies with --disagg P:D")
    if not 1 <= replicas <= MAX_REPLICAS:  # the simulator steps every replica: the web's bound, not a hang
        raise InputError(f"--replicas must be from 1 to {MAX_REPLICAS}, got {replicas}")
    if not (0 < burstiness <= MAX_BURSTINESS):
        raise InputError(f"--burstiness must be above 0 and at most {MAX_BURSTINESS:g}, got {burstiness:g}")
    arrival = "constant" if constant_rate else ("gamma" if burstiness != 1.0 else "poisson")
    base = Workload("offline", n, p_dist, o_dist)
    pools = kwargs.get("disagg")
    if rate is not None or sweep_rate:
        if rate is None:
            rates = auto_rates(dep, base, **kwargs)
        elif isinstance(rate, str):
            rates = parse_rates(rate)
        elif isinstance(rate, int | float):
            rates = parse_rates(str(rate))
        else:
            rates = parse_rates(",".join(str(r) for r in rate))
        base = replace(base, arrival=arrival, rate_per_s=rates[0], burstiness=burstiness)
        Workload(arrival, n, p_dist, o_dist, rate_per_s=rates[0], burstiness=burstiness)  # checks the inputs
        if len(rates) > 1:
            points = sweep_rates(dep, base, rates, progress=wrapper("request rates", as_json=not progress, unit="rate"), **kwargs)
            return SimulateResult(dep, base, points=tuple(points), knee=knee(points), disagg=pools, slo_ttft_s=slo[0], slo_tpot_s=slo[1])
        workload = base
    elif concurrency is not None:
        workload = Workload("closed", n, p_dist, o_dist, concurrency=concurrency, think_s=think_s)
    elif trace is not None:
        workload = Workload("trace", prompt=p_dist, output=o_dist, trace=read_trace(trace))
    else:
        workload = base
    if workload.total_requests >= LONG_RUN_REQUESTS and pools is None:
        with Counter("simulating", workload.total_requests, as_json=not progress, unit="req") as bar:
            result = run(dep, workload, check=bar.tick if bar.enabled else None, **kwargs)
    else:
        result = run(dep, workload, **kwargs)
    return SimulateResult(dep, workload, result=result, disagg=pools, slo_ttft_s=slo[0], slo_tpot_s=slo[1])


@dataclass(frozen=True)
class PlanResult(JsonResult):
    """The cheapest deployments that meet the objectives (`plan.rows`), what was considered and pruned."""

    plan: Plan
    rate: float
    prompt: int
    output: int
    slo_ttft_p99: float
    slo_tpot_p99: float
    disagg: bool
    emit: str | None = None  # an engine whose launch commands each row carries (`plan --emit`)

    def launches(self) -> list[Launch]:
        """The launch command of each row for `emit`'s engine (flags pinned per engine version), cheapest first."""
        if self.emit is None:
            return []
        from tokometer.usecases.launch import launch

        return [launch(r.candidate.deployment, r.candidate.quant, self.emit, replicas=r.candidate.replicas, pools=r.candidate.pools)
                for r in self.plan.rows]

    def configs(self) -> list[dict[str, Any]]:
        """One dict per configuration, cheapest first (with its `launch` when `emit` names an engine)."""
        dicts = [r.to_dict(self.rate, self.output) for r in self.plan.rows]
        for d, lau in zip(dicts, self.launches(), strict=False):
            d["launch"] = lau.to_dict()
        return dicts

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer plan --json` shape."""
        return {"configs": self.configs(), "considered": self.plan.considered, "pruned": self.plan.pruned}


def parse_prices(values: Sequence[str] | Mapping[str, float]) -> dict[str, float]:
    """`--price HW=USD_PER_HOUR` (repeatable), or a mapping of hardware name to dollars per device-hour."""
    from tokometer.catalog import hardware_catalog

    texts = [f"{k}={v}" for k, v in values.items()] if isinstance(values, Mapping) else list(values)
    out: dict[str, float] = {}
    for text in texts:
        name, sep, price = text.partition("=")
        try:
            value = float(price.strip().lstrip("$"))
        except ValueError:
            value = math.nan
        if not sep or not (value > 0 and math.isfinite(value)):
            raise InputError(f"--price takes HW=USD_PER_HOUR, e.g. h100-sxm=2.5, got {text!r}")
        out[hardware_catalog().get(name.strip()).id] = value
    return out


def names(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else [p for v in value for p in v.split(",")]
    return tuple(i.strip() for i in items if i.strip()) or None


def plan(
    model: str,
    *,
    rate: float,
    slo_ttft_p99: float,
    slo_tpot_p99: float,
    prompt: int = 1000,
    output: int = 200,
    hw: str | Sequence[str] | None = None,
    quant: str | Sequence[str] | None = None,
    engine: str = "vllm",
    price: Sequence[str] | Mapping[str, float] = (),
    disagg: bool = True,
    top: int = 5,
    seed: int = 0,
    progress: bool = False,
    emit: str | None = None,
) -> PlanResult:
    """The cheapest deployments of `model` serving `rate` req/s within the p99 objectives (`tokometer plan`).

    `slo_ttft_p99`/`slo_tpot_p99` are milliseconds; `hw`/`quant` a comma-separated string or a list
    (default: the priced datacenter GPUs, bf16/fp8/awq-int4); `price` overrides dollars per
    device-hour. No configuration meeting the objectives is an `InputError` naming the best achievable.
    `progress=True` draws a bar on stderr over the simulated finalists when stderr is a terminal;
    `emit` (vllm, sglang, tensorrt-llm, llama-cpp) adds each row's launch command.
    """
    from tokometer.report.progress import wrapper
    from tokometer.usecases.plan import DEFAULT_HARDWARE, DEFAULT_QUANTS
    from tokometer.usecases.plan import plan as make_plan

    result = make_plan(
        model, rate=rate, prompt=prompt, output=output, slo_ttft_s=slo_ttft_p99 / 1e3, slo_tpot_s=slo_tpot_p99 / 1e3,
        hardware=names(hw) or DEFAULT_HARDWARE, quants=names(quant) or DEFAULT_QUANTS, engine=engine,
        prices=parse_prices(price), seed=seed, top=top, disagg=disagg,
        progress=wrapper("simulating finalists", as_json=not progress),
    )
    if not result.rows:
        best = ", ".join(
            f"{name} {value * 1e3:,.0f} ms" for name, value in (("p99 TTFT", result.best_ttft_p99_s), ("p99 TPOT", result.best_tpot_p99_s))
            if value is not None
        )
        raise InputError(
            f"no configuration among {result.considered} meets p99 TTFT <= {slo_ttft_p99:g} ms and p99 TPOT <= "
            f"{slo_tpot_p99:g} ms at {rate:g} req/s" + (f"; the best achievable is {best}" if best else "")
        )
    return PlanResult(result, rate, prompt, output, slo_ttft_p99, slo_tpot_p99, disagg, emit)
