"""`tokometer.list_catalog`: the entries `tokometer hardware|models|quants|engines list` shows."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tokometer.api.result import JsonResult, dumps
from tokometer.errors import InputError

CATALOG_KINDS = ("hardware", "models", "quants", "engines")


@dataclass(frozen=True)
class CatalogListing(JsonResult):
    """The entries of one catalog as `tokometer <kind> list` shows them: typed (`items`: `HardwareSpec`s,
    model presets, `QuantFormat`s or `EngineSpec`s) and as the JSON dicts (`entries`)."""

    kind: str
    items: tuple[Any, ...]
    entries: tuple[Mapping[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        """`{kind: [entry, ...]}`; `to_json()` prints the list itself, as `tokometer <kind> list --json`."""
        return {self.kind: [dict(e) for e in self.entries]}

    def to_json(self) -> str:
        """The text `tokometer <kind> list --json` prints (a JSON list)."""
        return dumps(self.to_dict()[self.kind])


def list_catalog(kind: str, *, vendor: str | None = None, segment: str | None = None, sort: str = "id") -> CatalogListing:
    """The entries `tokometer <kind> list` shows, for `kind` in hardware, models, quants, engines.

    Hardware takes the command's filters (`vendor`, `segment`) and `sort` (id, bandwidth, memory,
    year). The catalogs themselves are `tokometer.hardware_catalog()`, `model_catalog()`,
    `quant_catalog()` and `engine_catalog()`.
    """
    from tokometer.catalog import engine_catalog, hardware_catalog, model_catalog, quant_catalog

    if kind == "hardware":
        keys: dict[str, Callable[[Any], Any]] = {
            "id": lambda h: h.id,
            "bandwidth": lambda h: -h.memory_bandwidth_gb_per_s,
            "memory": lambda h: -h.memory_gb,
            "year": lambda h: -(h.launch_year or 0),
        }
        if sort not in keys:
            raise InputError(f"sort must be one of {', '.join(keys)}, got {sort!r}", field="sort")
        items = [h for h in hardware_catalog() if (not vendor or h.vendor == vendor.lower()) and (not segment or h.segment == segment.lower())]
        items.sort(key=keys[sort])
        return CatalogListing(kind, tuple(items), tuple(h.to_dict() for h in items))
    if kind == "models":
        presets = tuple(model_catalog())
        return CatalogListing(kind, presets, tuple(
            {"id": p.id, "name": p.name, "hf_id": p.hf_id, "architecture": p.spec.architecture, "total_params": p.spec.total_params,
             "active_params": p.spec.active_params(), "max_context_tokens": p.spec.max_context_tokens, "source": p.source}
            for p in presets
        ))
    if kind == "quants":
        formats = tuple(quant_catalog())
        return CatalogListing(kind, formats, tuple(q.to_dict() for q in formats))
    if kind == "engines":
        engines = tuple(engine_catalog())
        return CatalogListing(kind, engines, tuple(e.to_dict() for e in engines))
    raise InputError(f"kind must be one of {', '.join(CATALOG_KINDS)}, got {kind!r}", field="kind")


@dataclass(frozen=True)
class CatalogEntry(JsonResult):
    """One resolved entry with every number and its source: a `HardwareSpec` (`item`) or a model's
    architecture and accounting (`item`: its `ModelSpec`), as `tokometer hardware|models show` prints it."""

    kind: str
    item: Any
    data: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer <kind> show --json` shape."""
        return dict(self.data)


def show_hardware(name: str) -> CatalogEntry:
    """One hardware entry (catalog id or name, or `local` after `tokometer probe`) with its sources
    (`tokometer hardware show`)."""
    from tokometer.catalog import hardware_catalog

    h = hardware_catalog().get(name)
    return CatalogEntry("hardware", h, h.to_dict())


def show_model(name: str, *, kv_dtype: str = "fp16") -> CatalogEntry:
    """Resolved architecture and accounting of a model (`tokometer models show`): a catalog name, a
    config.json, a model folder, a .gguf or .safetensors file, or a Hugging Face Hub id.

    Weight bytes are exact when read from files, else parameters x the published format; the per-token
    KV figures are in `kv_dtype`.
    """
    from tokometer.catalog import quant_catalog
    from tokometer.report.models import model_report
    from tokometer.usecases.resolve import resolve_model

    spec = resolve_model(name)
    weights = None if spec.exact_weight_bytes is not None else quant_catalog().find(spec.default_quant or "bf16")
    return CatalogEntry("models", spec, model_report(spec, quant_catalog().get(kv_dtype), weights))
