"""Request data -> keyword arguments of `tokometer.estimate` (`api.predict.estimate`), checked before any work is done.

The web API takes `EstimateRequest`'s field names (`params_b`, `bandwidth_gb_per_s`, `hw`..., and
the levers `draft`, `tp`, `gpu_layers`... of `LEVER_FIELDS`), each read as its `kind` says, from a JSON
body or a query string. Anything malformed is an `InputError` whose `field` the page marks (422 with
its message); names go through the
catalogs only: a page can never make the server read a file or fetch a URL (`estimate` would
ingest a path or a Hub id given as a model or a draft, so those are refused here).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tokometer.api.feel import MAX_FEEL_SECONDS, MAX_RATE_TOK_S, MAX_RATES
from tokometer.api.request import request_fields
from tokometer.api.serving_curve import MAX_RATES as MAX_SWEEP_RATES
from tokometer.api.serving_curve import MAX_SPEC_TOKENS, MAX_SYSTEM_PROMPTS, MAX_TURNS, SPEC_METHODS
from tokometer.catalog import model_catalog
from tokometer.domain.specs import BACKENDS
from tokometer.errors import InputError, UnknownEntryError


def _fields_of(*kinds: str) -> tuple[str, ...]:
    return tuple(f.name for f in request_fields() if f.metadata["kind"] in kinds)


# the form's fields and how each is read, all from `EstimateRequest` (`efficiency` is not a form field)
NAME_FIELDS = _fields_of("name")
TEXT_FIELDS = _fields_of("text")  # parsed and checked by the library
FLOAT_FIELDS = _fields_of("float")
INT_FIELDS = _fields_of("int")
LAYER_FIELDS = _fields_of("layers")  # a count (26) or a share (0.8): a string keeps the CLI's reading of it
FLAG_FIELDS = _fields_of("flag")
SETUP_FIELDS = (*NAME_FIELDS, *TEXT_FIELDS, *FLOAT_FIELDS, *INT_FIELDS, *LAYER_FIELDS, *FLAG_FIELDS)
# the levers of `estimate` (speculative decoding, TP/PP, CPU offload), as `tokometer estimate --help` lists them
LEVER_FIELDS = tuple(
    f.name for f in request_fields() if f.metadata["group"] in ("speculative", "parallel", "offload")
)
# the other fields some endpoints take (latency, utilisation, curves, feel, runs)
OTHER_FIELDS = (
    "ttft_ms",
    "tok_s",
    "measured_decode_tok_s",
    "measured_prefill_tok_s",
    "axis",
    "values",
    "batches",
    "rates",
    "seconds",
    "lang",
    "text",
    "limit",
)
MAX_NAME_CHARS = 200
MAX_INT = 10**9
MAX_RUNS_PAGE = 1000  # runs listed at once
MAX_REQUESTS_PAGE = 1000  # a run's requests shown at once
MAX_FRONTIER_CONCURRENCIES = 8
MAX_FRONTIER_USERS = 1024  # a frontier point simulates twice its users' requests: 2,048 at most


@dataclass(frozen=True, slots=True)
class ApiField:
    """One field the web API takes besides `EstimateRequest`'s: how it is read, its unit and range.

    `kind`: `float`, `int`, `text`, `flag`, `floats` or `ints` (a list, or a comma-separated
    string). `low`/`high` bound a number (each item of a list); `low_open` makes `low` exclusive.
    The handlers check values against this (`optional_number`, `number_list`) and
    `/api/openapi.json` is generated from it, so the two cannot disagree.
    """

    kind: str
    help: str
    unit: str | None = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] | None = None
    max_items: int | None = None


# The fields of the non-estimate endpoints, one definition each (the Serving page's are in `web.serving`).
API_FIELDS: dict[str, ApiField] = {
    "ttft_ms": ApiField("float", "Time to first token.", "ms", 0),
    "tok_s": ApiField("float", "Decode speed of one stream.", "tok/s", 0, None, True),
    "measured_decode_tok_s": ApiField("float", "The decode speed you measured.", "tok/s", 0, None, True),
    "measured_prefill_tok_s": ApiField("float", "The prefill speed you measured.", "tok/s", 0, None, True),
    "axis": ApiField("text", "What the curve varies: context, batch, prompt or output tokens.", None),
    "values": ApiField("ints", "The points of the curve's axis.", None, -MAX_INT, MAX_INT, max_items=64),
    "batches": ApiField("ints", "Batch sizes to place on the roofline.", None, -MAX_INT, MAX_INT, max_items=64),
    "rates": ApiField("floats", "Streaming speeds to show side by side.", "tok/s", 0, MAX_RATE_TOK_S, True, max_items=MAX_RATES),
    "seconds": ApiField("float", "How long to stream.", "s", 0, MAX_FEEL_SECONDS, True),
    "lang": ApiField("text", "Language of the sample answer.", None, choices=("en", "fr")),
    "text": ApiField("text", "Your own answer to stream instead of the sample.", None),
    "limit": ApiField("int", "How many runs to list.", None, 1, MAX_RUNS_PAGE),
    "requests_limit": ApiField("int", "How many of the run's requests to include.", None, 0, MAX_REQUESTS_PAGE),
    "requests_offset": ApiField("int", "The first request to include.", None, 0, MAX_INT),
    # the Serving page (`web.serving`; model, hw, quant, engine, tp, prompt and output tokens are `EstimateRequest`'s)
    "replicas": ApiField("int", "Engine replicas behind the router.", None, -MAX_INT, MAX_INT),
    "num_requests": ApiField("int", "Requests simulated per point.", None, -MAX_INT, MAX_INT),
    "rate_per_s": ApiField("float", "Arrival rate (Poisson).", "requests/s"),
    "concurrency": ApiField("int", "Requests kept in flight (closed loop).", None, -MAX_INT, MAX_INT),
    "rates_per_s": ApiField("floats", "Arrival rates of the sweep.", "requests/s", max_items=MAX_SWEEP_RATES),
    "slo_ttft_ms": ApiField("float", "Objective on p99 time to first token.", "ms"),
    "slo_tpot_ms": ApiField("float", "Objective on p99 time per output token.", "ms"),
    "seed": ApiField("int", "Random seed of the simulated arrivals and lengths.", None, -MAX_INT, MAX_INT),
    "top": ApiField("int", "How many setups to list.", None, -MAX_INT, MAX_INT),
    "disagg": ApiField("flag", "Also try prefill/decode disaggregation."),
    # speculative decoding and shared prefixes, with `tokometer simulate`'s names
    "spec_method": ApiField("text", "Speculative decoding: draft model, MTP head, EAGLE-3 or n-gram.", None, choices=SPEC_METHODS),
    "spec_tokens": ApiField("int", "Tokens drafted per pass (default per method).", None, 1, MAX_SPEC_TOKENS),
    "spec_acceptance": ApiField("float", "Share of drafted tokens accepted (default per method, sourced).", None, 0, 1),
    "draft_model": ApiField("text", "The draft model of spec_method draft (a catalog model).", None),
    "spec": ApiField("text", "Plan: on (every setup speculates) or auto (each with and without, the cheaper kept).", None,
                     choices=("on", "auto")),
    "system_prompt": ApiField("int", "Tokens of the shared system prompt(s).", "tokens", 0, 1_000_000),
    "system_prompt_share": ApiField("float", "Share of requests that start with a shared system prompt.", None, 0, 1),
    "system_prompts": ApiField("int", "Distinct shared system prompts.", None, 1, MAX_SYSTEM_PROMPTS),
    "turns": ApiField("int", "Turns per conversation, each prompt carrying the history.", None, 1, MAX_TURNS),
    "concurrencies": ApiField("ints", "Users kept in flight at each frontier point (closed loops).", None, 1,
                              MAX_FRONTIER_USERS, max_items=MAX_FRONTIER_CONCURRENCIES),
}

TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")


def number(name: str, value: Any, *, integer: bool = False) -> float | int:
    """A JSON number or a query-string numeral; booleans and other strings are refused."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text) if integer and text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise InputError(f"{name} must be a number, got {value!r}", field=name) from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{name} must be a number, got {_shown(value)}", field=name)
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{name} must be a finite number, got {value!r}", field=name)
    if integer:
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise InputError(f"{name} must be a whole number, got {value!r}", field=name)
        if abs(value) > MAX_INT:
            raise InputError(f"{name} must be at most {MAX_INT:,}, got {value!r}", field=name)
        return int(value)
    return float(value)


def _shown(value: Any) -> str:
    """A value as an error message quotes it: short, whatever a client sent."""
    shown = repr(value) if isinstance(value, str | int | float) and not (isinstance(value, int) and abs(value) > 10**40) else type(value).__name__
    return shown if len(shown) <= 60 else shown[:57] + "..."


def text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string, got {_shown(value)}", field=name)
    stripped: str = value.strip()
    if len(stripped) > MAX_NAME_CHARS:
        raise InputError(f"{name} is too long ({len(stripped)} characters, at most {MAX_NAME_CHARS})", field=name)
    return stripped


def layers(name: str, value: Any) -> int | float | str:
    """`gpu_layers`: a string as typed (`"26"` is a count, `"0.8"` a share, as on the command line)
    or a JSON number (an integer is a count, a float a share); the library checks the value."""
    if isinstance(value, str):
        return text(name, value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{name} must be a layer count or a fraction like 0.8, got {_shown(value)}", field=name)
    return value


def flag(name: str, value: Any) -> bool:
    """A JSON boolean, or true/false (1/0, yes/no, on/off) in a query string."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS:
        return value.strip().lower() in TRUE_WORDS
    raise InputError(f"{name} must be true or false, got {_shown(value)}", field=name)


def catalog_model(name: str) -> str:
    """Only catalog models: a path or a Hub id would make the server read files or the network."""
    catalog = model_catalog()
    if catalog.find(name) is None:
        aliases = [alias for preset in catalog for alias in preset.aliases]
        raise UnknownEntryError("model", name, catalog.ids + aliases)
    return name


def setup_kwargs(data: Mapping[str, Any], *, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """Checked `estimate(...)` arguments from `data`; keys in `extra` are left to the caller.

    Empty values (null, "") mean "not given", so a form can send every field it has.
    """
    unknown = sorted(set(data) - set(SETUP_FIELDS) - set(extra))
    if unknown:
        raise InputError(f"unknown field {unknown[0][:60]!r}; expected some of {', '.join(SETUP_FIELDS)}", field=unknown[0][:60])
    kwargs: dict[str, Any] = {}
    for key in SETUP_FIELDS:
        value = data.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        if key in NAME_FIELDS or key in TEXT_FIELDS:
            kwargs[key] = text(key, value)
        elif key in LAYER_FIELDS:
            kwargs[key] = layers(key, value)
        elif key in FLAG_FIELDS:
            kwargs[key] = flag(key, value)
        else:
            kwargs[key] = number(key, value, integer=key in INT_FIELDS)
    for key in ("model", "draft"):
        if key in kwargs:
            catalog_model(kwargs[key])
    backend = kwargs.get("backend")
    if backend is not None and backend not in BACKENDS:
        raise InputError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}", field="backend")
    return kwargs


def optional_number(data: Mapping[str, Any], key: str, *, integer: bool = False) -> float | int | None:
    value = data.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return in_range(key, number(key, value, integer=integer))


def in_range(name: str, value: float | int) -> float | int:
    """`value` within the range `API_FIELDS[name]` declares (no declaration: any finite number)."""
    spec = API_FIELDS.get(name)
    if spec is None:
        return value
    low_ok = spec.low is None or (value > spec.low if spec.low_open else value >= spec.low)
    if not low_ok or (spec.high is not None and value > spec.high):
        unit = f" {spec.unit}" if spec.unit else ""
        if spec.low is not None and spec.high is not None and not spec.low_open:
            wanted = f"between {spec.low:g} and {spec.high:g}"
        else:
            low = "" if spec.low is None else "a positive number" if spec.low_open and spec.low == 0 else "zero or more" if spec.low == 0 else f"{'above' if spec.low_open else 'at least'} {spec.low:g}"
            high = "" if spec.high is None else f"at most {spec.high:g}"
            wanted = " of ".join(p for p in (low, high) if p) if low == "a positive number" else " and ".join(p for p in (low, high) if p)
        raise InputError(f"{name} must be {wanted}{unit}, got {value!r}", field=name)
    return value


def number_list(name: str, value: Any, *, integer: bool = False, limit: int | None = None) -> list[float | int]:
    """A JSON list of numbers or a comma-separated string, at most `limit` of them."""
    declared = API_FIELDS.get(name)
    limit = limit or (declared.max_items if declared is not None else None) or 64
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list):
        raise InputError(f"{name} must be a list of numbers, got {_shown(value)}", field=name)
    items = [item for item in items if not (isinstance(item, str) and not item.strip())]
    if not items:
        raise InputError(f"{name} must hold at least one number", field=name)
    if len(items) > limit:
        raise InputError(f"{name} holds {len(items)} values, at most {limit}", field=name)
    return [in_range(name, number(name, item, integer=integer)) for item in items]
