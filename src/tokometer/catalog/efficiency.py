"""Fitted efficiency per engine x backend x hardware class (written by `tokometer calibrate`).

`efficiency.toml` holds the fitted values with the date, the data and the method they came from.
Lookup falls back from the most specific key to the engine's documented default, so hardware the
fit never saw still gets its class's values.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokometer.catalog import DATA_DIR, engine_catalog, make_efficiency
from tokometer.catalog.cache import load_parsed
from tokometer.errors import CatalogError
from tokometer.specs import Efficiency, EngineSpec, HardwareSpec

EFFICIENCY_FILE = DATA_DIR / "efficiency.toml"


@dataclass(frozen=True)
class FittedTable:
    """efficiency.toml: the fit's metadata and one Efficiency per engine/backend/hardware-class key."""

    meta: dict[str, Any]
    entries: dict[str, Efficiency]


def _parse_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{path}: not valid TOML: {exc}") from None


@functools.cache
def fitted_table(path: Path = EFFICIENCY_FILE) -> FittedTable:
    if not path.is_file():
        return FittedTable({}, {})
    raw = load_parsed(path, _parse_toml)
    entries_raw = raw.pop("entries", {})
    entries: dict[str, Efficiency] = {}
    for key, value in entries_raw.items():
        if not isinstance(value, dict):
            raise CatalogError(f"{path}: entries.{key} must be a table")
        fields = {k: v for k, v in value.items() if k not in ("n_rows", "n_prefill_rows", "hardware_seen")}
        entries[key] = make_efficiency(fields, f"{path}: entries.{key!r}", f"fitted {raw.get('fitted_on', '')}")
    return FittedTable(raw, entries)


def group_key(engine: EngineSpec, hardware: HardwareSpec, backend: str | None = None) -> str:
    """The most specific key a fit can hold: `engine/backend/hardware-class`."""
    return f"{engine.based_on or engine.id}/{backend or hardware.backend}/{hardware.hardware_class}"


def lookup_keys(engine: EngineSpec, backend: str, hardware_class: str) -> list[str]:
    names = [engine.id] + ([engine.based_on] if engine.based_on else [])
    keys: list[str] = []
    for name in names:
        keys += [f"{name}/{backend}/{hardware_class}", f"{name}/{backend}/*", f"{name}/*/{hardware_class}", f"{name}/*/*"]
    return keys


def multi_device_log_sd() -> float | None:
    """Spread of multi-device decode errors out of sample, when the fit measured one."""
    value = fitted_table().meta.get("multi_device_residual_log_sd")
    return float(value) if isinstance(value, int | float) else None


def efficiency_for(engine: EngineSpec, hardware: HardwareSpec, backend: str | None = None) -> Efficiency:
    """The fitted efficiency for this engine on this kind of hardware, else the engine default."""
    table = fitted_table()
    for key in lookup_keys(engine, backend or hardware.backend, hardware.hardware_class):
        found = table.entries.get(key)
        if found is not None:
            return found
    if engine.based_on:
        base = engine_catalog().find(engine.based_on)
        if base is not None and base.efficiency.source != "engine default":
            return base.efficiency
    return engine.efficiency
