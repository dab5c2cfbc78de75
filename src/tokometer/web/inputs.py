"""Request data -> keyword arguments of `tokometer.usecases.estimate.estimate`, checked before any work is done.

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
from typing import Any

from tokometer.catalog import model_catalog
from tokometer.errors import InputError, UnknownEntryError
from tokometer.specs import BACKENDS
from tokometer.usecases.request import request_fields


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
    return number(key, value, integer=integer)


def number_list(name: str, value: Any, *, integer: bool = False, limit: int = 64) -> list[float | int]:
    """A JSON list of numbers or a comma-separated string, at most `limit` of them."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list):
        raise InputError(f"{name} must be a list of numbers, got {_shown(value)}", field=name)
    items = [item for item in items if not (isinstance(item, str) and not item.strip())]
    if not items:
        raise InputError(f"{name} must hold at least one number", field=name)
    if len(items) > limit:
        raise InputError(f"{name} holds {len(items)} values, at most {limit}", field=name)
    return [number(name, item, integer=integer) for item in items]
