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
    from tokometer.usecases.simulate import CurvePoint, Deployment, SimulateRequest


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
            {"deployment": self.deployment.to_dict(),
             "workload": self.workload.to_dict() | {"trace": len(self.workload.trace), "trace_content": len(self.workload.trace_content)},
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


def simulate(request: SimulateRequest | str, hw: str | None = None, /, *, progress: bool = False, **fields: Any) -> SimulateResult:
    """Simulate a model served on `hw` by an engine's scheduler, step by step (`tokometer simulate`).

    Takes a `SimulateRequest`, or the model, the hardware and its fields as keyword arguments with the
    command's names and units (`simulate("llama-3.1-8b", "h100-sxm", rate=[1, 4], prompt=200)`).
    `ep`/`dp`/`nodes`/`inter_link`/`overlap`/`ep_imbalance` lay out a MoE replica as clusters do (expert
    parallel, attention data parallel, nodes over a network, two-batch overlap).
    One workload: `rate` (req/s; a list or "1,2,4" draws the curve), `sweep_rate=True`, `concurrency`,
    `offline` or `trace` (a JSONL/CSV path). `prompt`/`output` are token counts or distributions
    ("lognormal:800:0.6"); `slo_ttft`/`slo_tpot` are milliseconds, as on the command line.
    `spec_method` (draft, mtp, eagle3, ngram), `spec_tokens`, `spec_acceptance`, `draft_model`:
    speculative decoding in the scheduler (defaults per method, with sources: `costmodel.serving.speculation`).
    `progress=True` draws a bar on stderr for rate sweeps and long runs when stderr is a terminal.

    Shared prefixes decide the prefix cache's hits (each engine's own cache, `policies.prefix_cache`):
    `system_prompt` tokens that a `system_prompt_share` of requests (default all) start with, one of
    `system_prompts`; `turns` per conversation, each turn's prompt the history plus new `prompt` text,
    `think_s` after the last answer; a trace's prefix_id/conversation_id columns. `prefix_cache_hit`
    (a fixed share of every prompt) wins over them when given.
    """
    from dataclasses import replace

    from tokometer.costmodel.serving import Workload
    from tokometer.report.progress import Counter, wrapper
    from tokometer.usecases.serving_curve import MAX_REPLICAS
    from tokometer.usecases.simulate import (
        SimulateRequest,
        auto_rates,
        disaggregation,
        knee,
        parse_lengths,
        read_trace_ids,
        run,
        sweep_rates,
    )

    r = request if isinstance(request, SimulateRequest) else _simulate_request(SimulateRequest, request, hw, fields)
    chosen = [n for n, v in (("--rate", r.rate), ("--sweep-rate", r.sweep_rate or None), ("--concurrency", r.concurrency),
                             ("--offline", r.offline), ("--trace", r.trace)) if v is not None]
    if len(chosen) != 1:
        raise InputError("give exactly one workload: --rate R, --sweep-rate, --concurrency N, --offline N or --trace FILE"
                         + (f" (got {', '.join(chosen)})" if chosen else ""))
    slo = (_ms("--slo-ttft", r.slo_ttft), _ms("--slo-tpot", r.slo_tpot))
    prompt, output = str(r.prompt), str(r.output)
    if r.lengths:
        parts = r.lengths.split(",")
        if len(parts) != 2:
            raise InputError("--lengths takes PROMPT_DIST,OUTPUT_DIST, e.g. lognormal:800:0.6,uniform:50:400")
        prompt, output = parts
    p_dist, o_dist = parse_lengths(prompt), parse_lengths(output)
    n = r.offline if r.offline is not None else r.num_requests
    if isinstance(n, int) and n < 1:
        raise InputError(f"the number of requests must be at least 1, got {n}")
    for name, value in (("--tp", r.tp), ("--pp", r.pp), ("--ep", r.ep), ("--dp", r.dp), ("--nodes", r.nodes)):
        if value < 1:
            raise InputError(f"{name} must be a whole number of devices, 1 or more, got {value}")
    dep = r.deployment()
    kwargs: dict[str, Any] = {"replicas": r.replicas, "router": r.router, "seed": r.seed, "slo_ttft_s": slo[0], "slo_tpot_s": slo[1]}
    if r.disagg is not None:
        if r.replicas != 1:
            raise InputError("--disagg P:D sets the replicas of each pool; leave out --replicas")
        kwargs["disagg"] = disaggregation(dep, r.disagg, r.kv_link)
    elif r.kv_link is not None:
        raise InputError("--kv-link only applies with --disagg P:D")
    if not 1 <= r.replicas <= MAX_REPLICAS:  # the simulator steps every replica: the web's bound, not a hang
        raise InputError(f"--replicas must be from 1 to {MAX_REPLICAS}, got {r.replicas}")
    if not (0 < r.burstiness <= MAX_BURSTINESS):
        raise InputError(f"--burstiness must be above 0 and at most {MAX_BURSTINESS:g}, got {r.burstiness:g}")
    arrival = "constant" if r.constant_rate else ("gamma" if r.burstiness != 1.0 else "poisson")
    if r.system_prompt_share is not None and r.system_prompt is None:
        raise InputError("--system-prompt-share needs --system-prompt TOKENS (the shared prompt's length)")
    shared: dict[str, Any] = {
        "system_prompt_tokens": r.system_prompt or 0, "system_prompts": r.system_prompts, "turns": r.turns,
        "think_s": r.think_s,
        "system_prompt_share": (1.0 if r.system_prompt_share is None else r.system_prompt_share) if r.system_prompt else 0.0,
    }
    base = Workload("offline", n, p_dist, o_dist, **shared)
    pools = kwargs.get("disagg")
    if r.rate is not None or r.sweep_rate:
        if r.rate is None:
            rates = auto_rates(dep, base, **kwargs)
        elif isinstance(r.rate, str):
            rates = parse_rates(r.rate)
        elif isinstance(r.rate, int | float):
            rates = parse_rates(str(r.rate))
        else:
            rates = parse_rates(",".join(str(x) for x in r.rate))
        base = replace(base, arrival=arrival, rate_per_s=rates[0], burstiness=r.burstiness)
        Workload(arrival, n, p_dist, o_dist, rate_per_s=rates[0], burstiness=r.burstiness, **shared)  # checks the inputs
        if len(rates) > 1:
            points = sweep_rates(dep, base, rates, progress=wrapper("request rates", as_json=not progress, unit="rate"), **kwargs)
            return SimulateResult(dep, base, points=tuple(points), knee=knee(points), disagg=pools, slo_ttft_s=slo[0], slo_tpot_s=slo[1])
        workload = base
    elif r.concurrency is not None:
        workload = Workload("closed", n, p_dist, o_dist, concurrency=r.concurrency, **shared)
    elif r.trace is not None:
        rows, ids = read_trace_ids(r.trace)
        workload = Workload("trace", prompt=p_dist, output=o_dist, trace=rows, trace_content=ids, **shared)
    else:
        workload = base
    if workload.total_requests >= LONG_RUN_REQUESTS and pools is None:
        with Counter("simulating", workload.total_requests, as_json=not progress, unit="req") as bar:
            result = run(dep, workload, check=bar.tick if bar.enabled else None, **kwargs)
    else:
        result = run(dep, workload, **kwargs)
    return SimulateResult(dep, workload, result=result, disagg=pools, slo_ttft_s=slo[0], slo_tpot_s=slo[1])


def _simulate_request(make: type[SimulateRequest], model: str, hw: str | None, fields: dict[str, Any]) -> SimulateRequest:
    """A `SimulateRequest` from `simulate`'s arguments; an unknown keyword is an `InputError` naming it."""
    from dataclasses import fields as fields_of

    known = {f.name for f in fields_of(make)}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise InputError(f"simulate takes no option {unknown[0]!r}; it takes {', '.join(sorted(known - {'model', 'hw'}))}",
                         field=unknown[0])
    if hw is None and "hw" not in fields:
        raise InputError("simulate needs the hardware (hw)", field="hw")
    return make(**{"model": model, "hw": hw, **fields})


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


def plan_space() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The hardware and weight formats `plan` (and `plan --frontier`) search when none are given."""
    from tokometer.usecases.plan import DEFAULT_HARDWARE, DEFAULT_QUANTS

    return tuple(DEFAULT_HARDWARE), tuple(DEFAULT_QUANTS)


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
    strict: bool = True,
    spec_method: str | None = None,
    spec_tokens: int | None = None,
    spec_acceptance: float | None = None,
    draft_model: str | None = None,
    spec: str = "on",
) -> PlanResult:
    """The cheapest deployments of `model` serving `rate` req/s within the p99 objectives (`tokometer plan`).

    `slo_ttft_p99`/`slo_tpot_p99` are milliseconds; `hw`/`quant` a comma-separated string or a list
    (default: the priced datacenter GPUs, bf16/fp8/awq-int4); `price` overrides dollars per
    device-hour. No configuration meeting the objectives is an `InputError` naming the best achievable.
    `progress=True` draws a bar on stderr over the simulated finalists when stderr is a terminal;
    `emit` (vllm, sglang, tensorrt-llm, llama-cpp) adds each row's launch command. `strict=False`
    answers no configuration with an empty result instead (`plan.best_ttft_p99_s`/`best_tpot_p99_s`:
    the best any candidate reached), as the web's plan form shows it.
    `spec_method` (draft, mtp, eagle3, ngram; `spec_tokens`, `spec_acceptance`, `draft_model` as in
    `simulate`) deploys every candidate with speculative decoding; `spec="auto"` also tries each without
    it and keeps the cheaper by the bounds.
    """
    from tokometer.report.progress import wrapper
    from tokometer.usecases.plan import DEFAULT_HARDWARE, DEFAULT_QUANTS, PlanSpec
    from tokometer.usecases.plan import plan as make_plan

    if spec not in ("on", "auto"):
        raise InputError(f"--spec takes on or auto, got {spec!r}", field="spec")
    if spec_method is None and (spec == "auto" or any(v is not None for v in (spec_tokens, spec_acceptance, draft_model))):
        raise InputError("--spec auto, --spec-tokens, --spec-acceptance and --draft-model go with --spec-method", field="spec_method")
    speculation = None if spec_method is None else PlanSpec(spec_method, spec_tokens, spec_acceptance, draft_model, auto=spec == "auto")
    result = make_plan(
        model, rate=rate, prompt=prompt, output=output, slo_ttft_s=slo_ttft_p99 / 1e3, slo_tpot_s=slo_tpot_p99 / 1e3,
        hardware=names(hw) or DEFAULT_HARDWARE, quants=names(quant) or DEFAULT_QUANTS, engine=engine,
        prices=parse_prices(price), seed=seed, top=top, disagg=disagg,
        progress=wrapper("simulating finalists", as_json=not progress), spec=speculation,
    )
    if not result.rows and strict:
        best = ", ".join(
            f"{name} {value * 1e3:,.0f} ms" for name, value in (("p99 TTFT", result.best_ttft_p99_s), ("p99 TPOT", result.best_tpot_p99_s))
            if value is not None
        )
        raise InputError(
            f"no configuration among {result.considered} meets p99 TTFT <= {slo_ttft_p99:g} ms and p99 TPOT <= "
            f"{slo_tpot_p99:g} ms at {rate:g} req/s" + (f"; the best achievable is {best}" if best else "")
        )
    return PlanResult(result, rate, prompt, output, slo_ttft_p99, slo_tpot_p99, disagg, emit)
