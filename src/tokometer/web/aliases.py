"""The web API takes the CLI's names for its fields as well as its own.

`tokometer simulate --rate 5` and `/api/simulate?rate=5` should mean the same, so a request may name
a field as the API does (`rate_per_s`), as the CLI's long option (`rate`, `--rate`, `slo-ttft`) or its
short one (`q`). `canonical` renames the CLI's names to the API's before the door checks the fields;
naming one field twice (`rate` and `rate_per_s`) is an error that names both. The estimate family
takes the flags `EstimateRequest` declares (`--params` -> `params_b`), so a new flag needs no entry here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from tokometer.errors import InputError

# /api/simulate and /api/plan: the flags of `tokometer simulate` and `tokometer plan`
SIMULATE_ALIASES = {
    "rate": "rate_per_s", "rates": "rates_per_s", "q": "quant", "e": "engine", "prompt": "prompt_tokens",
    "output": "output_tokens", "n": "num_requests", "slo_ttft": "slo_ttft_ms", "slo_tpot": "slo_tpot_ms",
}  # fmt: skip
PLAN_ALIASES = {
    "rate": "rate_per_s", "q": "quant", "e": "engine", "prompt": "prompt_tokens", "output": "output_tokens",
    "slo_ttft_p99": "slo_ttft_ms", "slo_tpot_p99": "slo_tpot_ms", "slo_ttft": "slo_ttft_ms", "slo_tpot": "slo_tpot_ms",
}  # fmt: skip
# /api/frontier: the flags of `tokometer simulate --frontier`
FRONTIER_ALIASES = {"q": "quant", "e": "engine", "prompt": "prompt_tokens", "output": "output_tokens"}
# `tokometer utilization`'s own flags, beside the estimate's
UTILISATION_ALIASES = {"measured_decode": "measured_decode_tok_s", "measured_prefill": "measured_prefill_tok_s"}


def _key(name: str) -> str:
    return name.strip().lstrip("-").replace("-", "_")


@functools.cache
def estimate_aliases() -> dict[str, str]:
    """CLI flag (long and short, without dashes) -> `EstimateRequest` field, for every flag that differs."""
    from tokometer.api.request import request_fields

    names: dict[str, str] = {}
    for f in request_fields():
        for flag in (f.metadata.get("flag"), f.metadata.get("short")):
            if flag and _key(flag) != f.name:
                names[_key(flag)] = f.name
    return names


def aliases_for(path: str) -> dict[str, str]:
    """The CLI names an API path takes."""
    if path.startswith("/api/simulate"):
        return SIMULATE_ALIASES
    if path.startswith("/api/plan"):
        return PLAN_ALIASES
    if path.startswith("/api/frontier"):
        return FRONTIER_ALIASES
    if path.startswith(("/api/utilisation", "/api/utilization")):
        return {**estimate_aliases(), **UTILISATION_ALIASES}
    if path.startswith(("/api/estimate", "/api/curve", "/api/roofline", "/api/panorama")):
        return estimate_aliases()
    return {}


def canonical(data: Mapping[str, Any], aliases: Mapping[str, str]) -> dict[str, Any]:
    """`data` with the CLI's names renamed to the API's; a field given under two names is refused.

    A `rate` holding a list (`1,2,4`, as `simulate --rate` takes) is the list of rates.
    """
    if not aliases:
        return dict(data)
    out: dict[str, Any] = {}
    given_as: dict[str, str] = {}
    for name, value in data.items():
        key = _key(name) if isinstance(name, str) else name
        target = aliases.get(key, key if key in aliases.values() else name)
        if target == "rate_per_s" and key == "rate" and "rates_per_s" in aliases.values() and (
            isinstance(value, list) or (isinstance(value, str) and "," in value)
        ):
            target = "rates_per_s"
        if target in out:
            raise InputError(f"{given_as[target]!r} and {name!r} name the same field ({target}): give one", field=target)
        out[target] = value
        given_as[target] = name
    return out
