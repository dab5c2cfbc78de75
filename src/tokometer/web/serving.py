"""The Serving page's endpoints: `/api/simulate` (a rate sweep with its knee and one chosen point),
`/api/plan` (the cheapest setups meeting p99 objectives) and `/api/frontier` (tokens/s per GPU against
tokens/s per user), from the public API: `serving_curve`, `plan` and `frontier`.

Inputs are checked here with the field at fault, catalog names only (no paths, no Hub ids). Work
per call is bounded: at most `serving_curve.MAX_REQUESTS` requests per simulated point and
`MAX_RATES` points; a plan searches at most `MAX_PLAN_HARDWARE` devices x `MAX_PLAN_QUANTS` formats
with the usecase's own fixed request count for its finalists; a frontier at most
`MAX_FRONTIER_CONCURRENCIES` closed loops on each layout that fits one device kind and format.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tokometer.api.serving_curve import MAX_RATES, SPEC_METHODS, ServingQuery, serving_curve
from tokometer.errors import InputError
from tokometer.web.inputs import (
    MAX_FRONTIER_CONCURRENCIES,
    MAX_FRONTIER_USERS,
    catalog_model,
    flag,
    number,
    number_list,
    optional_number,
    text,
)

SPEC_FIELDS = ("spec_method", "spec_tokens", "spec_acceptance", "draft_model")  # `tokometer simulate`'s names
PREFIX_FIELDS = ("system_prompt", "system_prompt_share", "system_prompts", "turns")
SIMULATE_FIELDS = ("model", "hw", "quant", "engine", "tp", "replicas", "prompt_tokens", "output_tokens", "num_requests",
                   "rate_per_s", "concurrency", "rates_per_s", "slo_ttft_ms", "slo_tpot_ms", "seed", *SPEC_FIELDS, *PREFIX_FIELDS)
PLAN_FIELDS = ("model", "hw", "quant", "engine", "rate_per_s", "prompt_tokens", "output_tokens", "slo_ttft_ms",
               "slo_tpot_ms", "top", "disagg", *SPEC_FIELDS, "spec")
FRONTIER_FIELDS = ("model", "hw", "quant", "engine", "prompt_tokens", "output_tokens", "concurrencies", "seed", *SPEC_FIELDS)
MAX_FRONTIER_OUTPUT_TOKENS = 8192  # the decode steps of the slowest point grow with the answer's length
DEFAULT_FRONTIER_CONCURRENCIES: tuple[int, ...] = (1, 4, 16, 64, 256)
MAX_PLAN_HARDWARE = 12
MAX_PLAN_QUANTS = 4
MAX_PLAN_TOP = 10


def _given(data: Mapping[str, Any], key: str) -> bool:
    value = data.get(key)
    return value is not None and not (isinstance(value, str) and not value.strip())


def _known(data: Mapping[str, Any], fields: tuple[str, ...]) -> None:
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise InputError(f"unknown field {unknown[0]!r}; expected some of {', '.join(fields)}", field=unknown[0])


def _name(data: Mapping[str, Any], key: str, default: str | None = None) -> str | None:
    return text(key, data[key]) if _given(data, key) else default


def _int(data: Mapping[str, Any], key: str, default: int) -> int:
    value = optional_number(data, key, integer=True)
    return default if value is None else int(value)


def optional_int(data: Mapping[str, Any], key: str) -> int | None:
    value = optional_number(data, key, integer=True)
    return None if value is None else int(value)


def _ms_to_s(data: Mapping[str, Any], key: str) -> float | None:
    value = optional_number(data, key)
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise InputError(f"{key} must be a positive number of milliseconds, got {value!r}", field=key)
    return None if value is None else value / 1e3


def _required(data: Mapping[str, Any], key: str) -> str:
    name = _name(data, key)
    if name is None:
        raise InputError(f"{key} is required", field=key)
    return name


def simulate_query(data: Mapping[str, Any]) -> ServingQuery:
    """A checked `ServingQuery` from a JSON body or a query string."""
    _known(data, SIMULATE_FIELDS)
    model = catalog_model(_required(data, "model"))
    rate = optional_number(data, "rate_per_s")
    concurrency = optional_number(data, "concurrency", integer=True)
    if rate is not None and concurrency is not None:
        raise InputError("give rate_per_s or concurrency, not both", field="concurrency")
    rates = number_list("rates_per_s", data["rates_per_s"], limit=MAX_RATES) if _given(data, "rates_per_s") else []
    method = _name(data, "spec_method")
    if method is not None and method not in SPEC_METHODS:
        raise InputError(f"spec_method must be one of {', '.join(SPEC_METHODS)}, got {method!r}", field="spec_method")
    draft = _name(data, "draft_model")
    acceptance, system_prompt = optional_number(data, "spec_acceptance"), optional_number(data, "system_prompt", integer=True)
    share = optional_number(data, "system_prompt_share")
    query = ServingQuery(
        model=model, hw=_required(data, "hw"), quant=_name(data, "quant"), engine=_name(data, "engine", "vllm") or "vllm",
        tp=_int(data, "tp", 1), replicas=_int(data, "replicas", 1), prompt_tokens=_int(data, "prompt_tokens", 1000),
        output_tokens=_int(data, "output_tokens", 200), num_requests=_int(data, "num_requests", 1000),
        rate_per_s=None if rate is None else float(rate), concurrency=None if concurrency is None else int(concurrency),
        rates_per_s=tuple(sorted(float(r) for r in rates)), slo_ttft_s=_ms_to_s(data, "slo_ttft_ms"),
        slo_tpot_s=_ms_to_s(data, "slo_tpot_ms"), seed=_int(data, "seed", 0),
        spec_method=method, spec_tokens=optional_int(data, "spec_tokens"),
        spec_acceptance=None if acceptance is None else float(acceptance),
        draft_model=None if draft is None else catalog_model(draft),
        system_prompt=None if system_prompt is None else int(system_prompt), system_prompt_share=None if share is None else float(share),
        system_prompts=_int(data, "system_prompts", 1), turns=_int(data, "turns", 1),
    )
    query.check()
    return query


def simulate_dict(data: Mapping[str, Any]) -> dict[str, Any]:
    return serving_curve(simulate_query(data)).to_dict()


def _names(data: Mapping[str, Any], key: str, limit: int) -> tuple[str, ...] | None:
    if not _given(data, key):
        return None
    value = data[key]
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise InputError(f"{key} must be a list of names or a comma-separated string, got {value!r}", field=key)
    names = tuple(text(key, i) for i in items if i.strip())
    if len(names) > limit:
        raise InputError(f"{key} holds {len(names)} names, at most {limit}", field=key)
    return names or None


def plan_dict(data: Mapping[str, Any]) -> dict[str, Any]:
    """The plan as `tokometer plan --json` prints it; no configuration is an answer (empty `configs`
    with the best p99 any candidate reached), not an error."""
    from tokometer.api.serving import plan

    _known(data, PLAN_FIELDS)
    model = catalog_model(_required(data, "model"))
    rate = number("rate_per_s", data["rate_per_s"]) if _given(data, "rate_per_s") else None
    if rate is None:
        raise InputError("rate_per_s is required", field="rate_per_s")
    ttft_s, tpot_s = _ms_to_s(data, "slo_ttft_ms"), _ms_to_s(data, "slo_tpot_ms")
    if ttft_s is None or tpot_s is None:
        missing = "slo_ttft_ms" if ttft_s is None else "slo_tpot_ms"
        raise InputError(f"{missing} is required", field=missing)
    prompt, output, top = _int(data, "prompt_tokens", 1000), _int(data, "output_tokens", 200), _int(data, "top", 5)
    for key, value in (("prompt_tokens", prompt), ("output_tokens", output)):
        if not 1 <= value <= 1_000_000:
            raise InputError(f"{key} must be between 1 and 1,000,000, got {value:,}", field=key)
    if not 1 <= top <= MAX_PLAN_TOP:
        raise InputError(f"top must be between 1 and {MAX_PLAN_TOP}, got {top}", field="top")
    if not (rate > 0 and math.isfinite(rate)):
        raise InputError(f"rate_per_s must be a positive number, got {rate!r}", field="rate_per_s")
    method = _name(data, "spec_method")
    if method is not None and method not in SPEC_METHODS:
        raise InputError(f"spec_method must be one of {', '.join(SPEC_METHODS)}, got {method!r}", field="spec_method")
    draft, acceptance = _name(data, "draft_model"), optional_number(data, "spec_acceptance")
    result = plan(
        model, rate=rate, prompt=prompt, output=output, slo_ttft_p99=float(optional_number(data, "slo_ttft_ms") or 0), slo_tpot_p99=float(optional_number(data, "slo_tpot_ms") or 0),
        hw=_names(data, "hw", MAX_PLAN_HARDWARE), quant=_names(data, "quant", MAX_PLAN_QUANTS),
        engine=_name(data, "engine", "vllm") or "vllm", top=top,
        disagg=flag("disagg", data["disagg"]) if _given(data, "disagg") else True, strict=False,
        spec_method=method, spec_tokens=optional_int(data, "spec_tokens"), spec=_name(data, "spec", "on") or "on",
        spec_acceptance=None if acceptance is None else float(acceptance), draft_model=None if draft is None else catalog_model(draft),
    )
    return {**result.to_dict(), "best_ttft_p99_s": result.plan.best_ttft_p99_s, "best_tpot_p99_s": result.plan.best_tpot_p99_s}


def frontier_dict(data: Mapping[str, Any]) -> dict[str, Any]:
    """The predicted frontier on one device kind and format (`tokometer simulate --frontier --json`),
    with the workload it was drawn for: closed loops at each concurrency on every layout that fits."""
    from tokometer.api.frontier import frontier

    _known(data, FRONTIER_FIELDS)
    model = catalog_model(_required(data, "model"))
    hw = _required(data, "hw")
    if "," in hw:
        raise InputError("hw names one device; the frontier compares layouts and concurrencies on it", field="hw")
    prompt, output = _int(data, "prompt_tokens", 1000), _int(data, "output_tokens", 200)
    for key, value, high in (("prompt_tokens", prompt, 1_000_000), ("output_tokens", output, MAX_FRONTIER_OUTPUT_TOKENS)):
        if not 1 <= value <= high:
            raise InputError(f"{key} must be between 1 and {high:,}, got {value:,}", field=key)
    users = DEFAULT_FRONTIER_CONCURRENCIES
    if _given(data, "concurrencies"):
        users = tuple(sorted({int(c) for c in number_list("concurrencies", data["concurrencies"], integer=True,
                                                           limit=MAX_FRONTIER_CONCURRENCIES)}))
    for c in users:
        if not 1 <= c <= MAX_FRONTIER_USERS:
            raise InputError(f"concurrencies must be from 1 to {MAX_FRONTIER_USERS:,} users, got {c:,}", field="concurrencies")
    method = _name(data, "spec_method")
    if method is not None and method not in SPEC_METHODS:
        raise InputError(f"spec_method must be one of {', '.join(SPEC_METHODS)}, got {method!r}", field="spec_method")
    acceptance, draft = optional_number(data, "spec_acceptance"), _name(data, "draft_model")
    result = frontier(model, hw, quant=_name(data, "quant"), engine=_name(data, "engine", "vllm") or "vllm", prompt=prompt,
                      output=output, concurrencies=users, seed=_int(data, "seed", 0), spec_method=method,
                      spec_tokens=optional_int(data, "spec_tokens"), spec_acceptance=None if acceptance is None else float(acceptance),
                      draft_model=None if draft is None else catalog_model(draft))
    return {**result.to_dict(), "prompt_tokens": prompt, "output_tokens": output, "concurrencies": list(users)}


OVERLAID_MODES = ("rate", "concurrency")
OVERLAY_REQUESTS = (50, 1000)  # simulated requests per point: the run's own count, within these bounds


def _first(*values: Any) -> Any:
    return next((v for v in values if v not in (None, "")), None)


def _measured(level: Mapping[str, Any]) -> dict[str, Any]:
    summary = level.get("summary") or {}

    def p99(key: str) -> Any:
        return (summary.get(key) or {}).get("p99")

    return {
        "label": level.get("label"), "rate_per_s": level.get("rate"), "concurrency": level.get("concurrency"),
        "req_per_s": summary.get("request_throughput_rps"), "tput_out_tok_s": summary.get("output_throughput_tps"),
        "ttft_p99_ms": p99("ttft_ms"), "tpot_p99_ms": p99("tpot_ms"), "requests_ok": summary.get("requests_ok"),
    }


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def run_overlay(run: Mapping[str, Any]) -> dict[str, Any]:
    """A stored `bench --rate/--concurrency` run beside the simulated curve for the same workload.

    Model, hardware, format and engine come from the run's prediction when it has one, else from the
    run; lengths from what the levels measured (else the run's configuration); the simulated rates
    are the run's own when it measured two or more, else the saturation sweep; a concurrency run's
    levels are simulated as closed loops of as many users.
    """
    from tokometer.catalog.serving import serving_engines

    mode = run.get("mode")
    if mode not in OVERLAID_MODES:
        raise InputError(f"run {run.get('id')} is a {mode!r} run: only `bench --rate` and `--concurrency` runs have a served curve")
    prediction = run.get("prediction") or {}
    config = run.get("config") or {}
    levels = [lv for lv in run.get("levels") or [] if isinstance(lv, Mapping) and lv.get("summary")]
    if not levels:
        raise InputError(f"run {run.get('id')} has no measured levels to overlay")
    notes: list[str] = []
    model = _first(prediction.get("model"), run.get("model"))
    hw = _first(prediction.get("hardware"), run.get("hardware"))
    if model is None or hw is None:
        raise InputError(f"run {run.get('id')} names no {'model' if model is None else 'hardware'}: "
                         "run `tokometer bench` with --model-id and --hw to compare it with the simulator")
    engine = _first(prediction.get("engine"), "vllm")
    known = {e.engine.id for e in serving_engines().values()} | set(serving_engines())
    if engine not in known:
        notes.append(f"the simulator has no scheduler for {engine}; vLLM's is used")
        engine = "vllm"
    summaries = [lv["summary"] for lv in levels]
    prompt = _first(*[_number(s.get("prompt_tokens")) for s in summaries], _number(config.get("prompt_tokens")), 1000.0)
    output = _first(*[_number((s.get("output_tokens") or {}).get("median")) for s in summaries],
                    _number(config.get("max_tokens")), 200.0)
    asked = _number(config.get("requests")) or max((_number(s.get("requests_total")) or 0.0) for s in summaries) or 200.0
    n = int(min(max(asked, OVERLAY_REQUESTS[0]), OVERLAY_REQUESTS[1]))
    rates = sorted({r for r in (_number(lv.get("rate")) for lv in levels) if r is not None})
    users = sorted({int(c) for c in (_number(lv.get("concurrency")) for lv in levels) if c is not None})
    query = ServingQuery(
        model=catalog_model(str(model)), hw=str(hw), quant=prediction.get("quant") or None, engine=str(engine),
        prompt_tokens=int(prompt), output_tokens=int(output), num_requests=n,
        rates_per_s=tuple(rates[:MAX_RATES]) if len(rates) >= 2 else (), rate_per_s=rates[0] if rates else None,
        concurrency_levels=tuple(users[:MAX_RATES]),
    )
    curve = serving_curve(query)
    return {"run_id": run.get("id"), "mode": mode, "simulated": curve.to_dict(), "measured": [_measured(lv) for lv in levels],
            "notes": notes}
