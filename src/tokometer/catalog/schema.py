"""Validation of catalog files: every key known, every quantity with its unit, every entry sourced.

A schema maps each allowed key to its accepted Python types and whether it is required.
Errors name the file, the entry and the key, so a user editing their own catalog can fix it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokometer.errors import CatalogError

ID_PATTERN = re.compile(r"^[a-z0-9]+([.-][a-z0-9]+)*$")


@dataclass(frozen=True, slots=True)
class Field:
    """One key of a catalog entry: the types it accepts and whether it is required."""

    types: tuple[type, ...]
    required: bool = False


Schema = Mapping[str, Field]

# No catalog quantity (bytes, FLOP/s, tokens, watts, years) comes near 10^15 in its own unit; a
# larger integer is a typo, and a 4,000-digit one would make float() and str() fail downstream.
MAX_CATALOG_INT = 10**15
_NUMBERS = (int, float)  # a tuple, built once (`int | float` would build a union for every key)
_UNIT_SUFFIXES = ("_gb", "_gb_per_s", "_tflops", "_tops", "_w", "_us", "_tokens", "_b")


def check_entry(path: Path | str, entry_id: str, raw: Any, schema: Schema) -> dict[str, Any]:
    """Return `raw` as a dict after checking keys, types and the entry id; raise CatalogError."""
    where = f"{path}: entry {entry_id!r}"
    if not ID_PATTERN.match(entry_id):
        raise CatalogError(f"{where}: id must be lowercase letters, digits and hyphens")
    if not isinstance(raw, Mapping):
        raise CatalogError(f"{where}: must be a table of keys")
    for key, value in raw.items():
        field = schema.get(key)
        if field is None:
            unit_keys = [k for k in schema if k.startswith(key + "_") and k.endswith(_UNIT_SUFFIXES)]
            if unit_keys:
                raise CatalogError(f"{where}: key {key!r} has no unit; write it as {unit_keys[0]!r}")
            raise CatalogError(f"{where}: unknown key {key!r} (allowed: {', '.join(sorted(schema))})")
        if isinstance(value, bool) and bool not in field.types:
            raise CatalogError(f"{where}: key {key!r} must be {_names(field.types)}, got {value!r}")
        if not isinstance(value, field.types):
            raise CatalogError(f"{where}: key {key!r} must be {_names(field.types)}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise CatalogError(f"{where}: key {key!r} must be a finite number, got {value!r}")
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_CATALOG_INT:
            raise CatalogError(f"{where}: key {key!r} is a {len(str(abs(value)))}-digit number; no catalog quantity is that large")
        if isinstance(value, _NUMBERS) and not isinstance(value, bool) and value < 0:
            raise CatalogError(f"{where}: key {key!r} must not be negative, got {value!r}")
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            raise CatalogError(f"{where}: key {key!r} must be a list of strings")
    for key, field in schema.items():
        if field.required and key not in raw:
            raise CatalogError(f"{where}: missing required key {key!r}")
    source = raw.get("source")
    if "source" in schema and schema["source"].required and (
        not isinstance(source, str) or not source.strip()
    ):
        raise CatalogError(f"{where}: every entry needs a non-empty 'source'")
    return dict(raw)


def _names(types: tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in types)


NUM = (int, float)
STR = (str,)
INT = (int,)
LIST = (list,)
TABLE = (dict,)
BOOL = (bool,)
