"""Catalogs as data: hardware, quantization formats, model presets and engines, each entry sourced.

Shipped TOML files live in `catalog/data/`; a user adds or overrides entries with files of the same
name in the tokometer home (`$TOKOMETER_HOME`, default `~/.local/share/tokometer`). Names resolve
through ids and aliases, case- and punctuation-insensitively; a near miss gets "did you mean".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from tokometer.catalog.cpu_side import CPU_SCHEMA, cpu_side
from tokometer.catalog.schema import BOOL, INT, LIST, NUM, STR, TABLE, Field, Schema, check_entry
from tokometer.domain.families import FAMILIES
from tokometer.domain.specs import (
    HARDWARE_KINDS,
    SEGMENTS,
    Efficiency,
    EngineSpec,
    HardwareSpec,
    ModelSpec,
    QuantFormat,
)
from tokometer.errors import CatalogError, InputError, TokometerError, UnknownEntryError
from tokometer.home import tokometer_home

DATA_DIR = Path(__file__).parent / "data"
T = TypeVar("T")


def normalise(name: str) -> str:
    """`RTX 4090`, `rtx_4090`, `Rtx-4090` -> `rtx-4090` (dots kept: `llama-3.1-8b`)."""
    text = _SEPARATORS.sub("-", name.strip().lower())
    return _DASHES.sub("-", _OTHER_CHARACTERS.sub("", text)).strip("-")


# compiled once: every catalog load normalises each of ~900 aliases
_SEPARATORS = re.compile(r"[\s_/:]+")
_OTHER_CHARACTERS = re.compile(r"[^a-z0-9.+-]")
_DASHES = re.compile(r"-+")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One catalog entry: its id, its value and the file it came from."""

    id: str
    value: T
    path: str


class Catalog(Generic[T]):
    """Entries of one kind, resolved by id or alias."""

    def __init__(
        self, kind: str, entries: dict[str, Entry[T]], aliases: dict[str, str], prefixes: tuple[str, ...] = ()
    ) -> None:
        self.kind = kind
        self._entries = entries
        self._aliases = aliases
        self._prefixes = prefixes  # leading words a name may carry that no id does (vendor, brand)

    def __iter__(self) -> Iterator[T]:
        return (e.value for e in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None

    @property
    def ids(self) -> list[str]:
        return list(self._entries)

    def find(self, name: str) -> T | None:
        """The entry `name` names: id or alias, any case and punctuation, vendor/brand words optional.

        `nvidia_h100_pcie`, `H100 PCIe`, `h100-pcie` and `NVIDIA GeForce RTX 4090` all resolve.
        """
        key = normalise(name)
        while True:
            entry_id = self._lookup(key)
            if entry_id is not None:
                return self._entries[entry_id].value
            stripped = next((key[len(p) + 1 :] for p in self._prefixes if key.startswith(p + "-")), None)
            if not stripped:
                return None
            key = stripped

    def _lookup(self, key: str) -> str | None:
        entry_id = key if key in self._entries else self._aliases.get(key)
        if entry_id is None:
            entry_id = self._aliases.get("~" + key.replace("-", ""))
        return entry_id

    def get(self, name: str) -> T:
        found = self.find(name)
        if found is None:  # a comma-separated list of entries names each (`UnknownEntryError`'s `several`)
            parts = [self.find(p) for p in name.split(",")] if "," in name else []
            several = [str(getattr(p, "id", p)) for p in parts] if len(parts) > 1 and None not in parts else []
            raise UnknownEntryError(self.kind, name, [*self._entries, *self._aliases], several)
        return found

    def path_of(self, entry_id: str) -> str:
        return self._entries[entry_id].path


def _read_toml(path: Path) -> dict[str, Any]:
    from tokometer.catalog.cache import load_parsed

    return load_parsed(path, _parse_toml)


# The shipped catalogs together are about 165 kB; a user's own file 100 times larger is still honest.
MAX_CATALOG_BYTES = 16 << 20


def _parse_toml(path: Path) -> dict[str, Any]:
    """A catalog file through the guarded door (a regular UTF-8 file, bounded in size and nesting); on a cache miss only."""
    from tokometer.guard import load_toml, read_text

    try:
        text = read_text(path, door="catalog", limit_bytes=MAX_CATALOG_BYTES, what="a UTF-8 TOML catalog file")
        return load_toml(text, str(path), door="catalog")
    except InputError as exc:
        raise CatalogError(str(exc)) from None


def _build(
    kind: str,
    filename: str,
    schema: Schema,
    make: Callable[[str, dict[str, Any], str], T],
    home: Path | None = None,
    prefixes: tuple[str, ...] = (),
) -> Catalog[T]:
    entries: dict[str, Entry[T]] = {}
    aliases: dict[str, str] = {}
    paths = [DATA_DIR / filename]
    user = (home or tokometer_home()) / filename
    if user.exists():  # a folder or a FIFO by that name is refused by the reader, not skipped in silence
        paths.append(user)
    for path in paths:
        shipped = path.parent == DATA_DIR
        for entry_id, raw in _read_toml(path).items():
            checked = check_entry(path, entry_id, raw, schema)
            try:
                value = make(entry_id, checked, str(path))
            except TokometerError as exc:
                raise CatalogError(f"{path}: entry {entry_id!r}: {exc}") from None
            if entry_id in entries and shipped:
                raise CatalogError(f"{path}: duplicate id {entry_id!r}")
            entries[entry_id] = Entry(entry_id, value, str(path))  # a user entry overrides
            for alias in checked.get("aliases", []):
                key = normalise(alias)
                owner = aliases.get(key)
                if shipped and ((owner is not None and owner != entry_id) or key in entries and key != entry_id):
                    raise CatalogError(f"{path}: alias {alias!r} of {entry_id!r} is already used by {owner or key!r}")
                aliases[key] = entry_id
    for entry_id in entries:
        aliases.setdefault("~" + entry_id.replace("-", ""), entry_id)
    for key, entry_id in list(aliases.items()):
        if not key.startswith("~"):
            aliases.setdefault("~" + key.replace("-", ""), entry_id)
    return Catalog(kind, entries, aliases, prefixes)


HARDWARE_SCHEMA: Schema = {
    "name": Field(STR, True),
    "vendor": Field(STR, True),
    "kind": Field(STR, True),
    "segment": Field(STR, True),
    "backend": Field(STR),
    "memory_gb": Field(NUM, True),
    "memory_type": Field(STR),
    "memory_bandwidth_gb_per_s": Field(NUM, True),
    "fp32_tflops": Field(NUM),
    "fp16_tflops": Field(NUM),
    "fp16_acc16_tflops": Field(NUM),
    "fp16_mma_sync_tflops": Field(NUM),
    "int32_tops": Field(NUM),
    "fp8_tflops": Field(NUM),
    "int8_tops": Field(NUM),
    "fp4_tflops": Field(NUM),
    "pcie_gen": Field(INT),
    "pcie_lanes": Field(INT),
    "nvlink_gb_per_s": Field(NUM),
    "tdp_w": Field(NUM),
    "launch_year": Field(INT, True),
    "aliases": Field(LIST),
    "calibration_ids": Field(LIST),
    "source": Field(STR, True),
    "spec_source": Field(STR),
    "notes": Field(STR),
    "compute_source": Field(STR),
    "fp16_mma_sync_source": Field(STR),
    "int32_source": Field(STR),
    "compute_peak_derived": Field(BOOL),
    "compute_units": Field(INT),
    "compute_units_source": Field(STR),
    "architecture": Field(STR), "architecture_source": Field(STR), "family": Field(STR),
    # serving cost (issue 11)
    "price_per_hour_usd": Field(NUM),
    "price_source": Field(STR),
    "price_date": Field(STR),
    **CPU_SCHEMA,  # an APU's CPU cores (catalog/cpu_side.py)
}

# Plausibility of a device's datasheet figures: far above any real device (the largest in the shipped
# catalog: 768 GB, 8,000 GB/s, 13,500 FP4 TFLOPS), so only a typo or a made-up device is refused.
HARDWARE_LIMITS: dict[str, tuple[float, str]] = {
    "memory_gb": (1e6, "a petabyte of device memory; the largest machine in the catalog has 768 GB"),
    "memory_bandwidth_gb_per_s": (1e6, "1 PB/s, over 100x an 8 TB/s HBM3e GPU"),
    "nvlink_gb_per_s": (1e6, "1 PB/s of link bandwidth, over 500x NVLink 5"),
    **{key: (1e7, "10 exaFLOP/s on one device, over 700x the fastest FP4 GPU") for key in (
        "fp32_tflops", "fp16_tflops", "fp16_acc16_tflops", "fp16_mma_sync_tflops", "int32_tops", "fp8_tflops", "int8_tops", "fp4_tflops")},
    "compute_units": (1e6, "a million SMs or cores on one device; the largest has 304"),
    "tdp_w": (1e6, "a megawatt for one device"),
    "pcie_lanes": (64, "PCIe links are at most x32; 64 leaves room"),
    "pcie_gen": (16, "PCIe 7 is the newest generation"),
}

# Vendor and brand words a device name may lead with (`nvidia_h100_pcie`, `AMD Radeon RX 7900 XTX`).
HARDWARE_NAME_PREFIXES = ("nvidia", "amd", "intel", "apple", "geforce", "radeon", "tesla", "instinct")

_KINDS = set(HARDWARE_KINDS)
_SEGMENTS = set(SEGMENTS)


def _opt_float(raw: dict[str, Any], key: str) -> float | None:
    value = raw.get(key)
    return None if value is None else float(value)


def _make_hardware(entry_id: str, raw: dict[str, Any], path: str) -> HardwareSpec:
    if raw["kind"] not in _KINDS:
        raise CatalogError(f"kind must be one of {sorted(_KINDS)}")
    if raw["segment"] not in _SEGMENTS:
        raise CatalogError(f"segment must be one of {sorted(_SEGMENTS)}")
    if "family" in raw and raw["family"] not in FAMILIES:  # a level of the fit (`domain.families`)
        raise CatalogError(f"family {raw['family']!r} is not one of {', '.join(sorted(FAMILIES))}")
    for key in ("memory_gb", "memory_bandwidth_gb_per_s"):
        if not raw[key] > 0:
            raise CatalogError(f"{key} must be positive")
    for key, (limit, why) in HARDWARE_LIMITS.items():
        if key in raw and raw[key] > limit:
            raise CatalogError(f"{key} = {raw[key]:,g} is implausible (at most {limit:,g}: {why})")
    return HardwareSpec(
        id=entry_id,
        name=raw["name"],
        vendor=raw["vendor"],
        kind=raw["kind"],
        segment=raw["segment"],
        backend=raw.get("backend", "cpu" if raw["kind"] == "cpu" else "cuda"),
        memory_gb=float(raw["memory_gb"]),
        memory_type=raw.get("memory_type"),
        memory_bandwidth_gb_per_s=float(raw["memory_bandwidth_gb_per_s"]),
        fp32_tflops=_opt_float(raw, "fp32_tflops"),
        fp16_tflops=_opt_float(raw, "fp16_tflops"),
        fp16_acc16_tflops=_opt_float(raw, "fp16_acc16_tflops"),
        fp16_mma_sync_tflops=_opt_float(raw, "fp16_mma_sync_tflops"),
        int32_tops=_opt_float(raw, "int32_tops"),
        fp8_tflops=_opt_float(raw, "fp8_tflops"),
        int8_tops=_opt_float(raw, "int8_tops"),
        fp4_tflops=_opt_float(raw, "fp4_tflops"),
        pcie_gen=raw.get("pcie_gen"),
        pcie_lanes=raw.get("pcie_lanes"),
        nvlink_gb_per_s=_opt_float(raw, "nvlink_gb_per_s"),
        tdp_w=_opt_float(raw, "tdp_w"),
        launch_year=raw.get("launch_year"),
        aliases=tuple(raw.get("aliases", [])),
        calibration_ids=tuple(raw.get("calibration_ids", [])),
        source=raw["source"],
        spec_source=raw.get("spec_source"),
        notes=raw.get("notes"),
        compute_source=raw.get("compute_source"),
        compute_peak_derived=bool(raw.get("compute_peak_derived", False)),
        compute_units=_units(raw),
        compute_units_source=raw.get("compute_units_source"),
        family=raw.get("family"),
        **_architecture(raw),
        **_price(raw),
        **cpu_side(raw),
    )


def _architecture(raw: dict[str, Any]) -> dict[str, Any]:
    """A GPU architecture family that is a fit class of its own (`specs.ARCH_CLASSES`), with its source."""
    from tokometer.domain.specs import ARCH_CLASSES

    if "architecture" not in raw:
        return {}
    if raw["architecture"] not in ARCH_CLASSES:
        raise CatalogError(f"architecture {raw['architecture']!r} is not one of {', '.join(sorted(ARCH_CLASSES))}")
    if not raw.get("architecture_source"):
        raise CatalogError("architecture needs architecture_source")
    return {"architecture": raw["architecture"], "architecture_source": raw["architecture_source"]}


def _units(raw: dict[str, Any]) -> int | None:
    """SMs / CUs / GPU cores (Little's-law bandwidth limit, docs/PHYSICS.md section 4): positive, with a source."""
    if "compute_units" not in raw:
        return None
    if not raw["compute_units"] > 0:
        raise CatalogError("compute_units must be positive")
    if not raw.get("compute_units_source"):
        raise CatalogError("compute_units needs compute_units_source")
    return int(raw["compute_units"])


def _price(raw: dict[str, Any]) -> dict[str, Any]:
    """A price needs its source and date (serving cost, issue 11)."""
    if "price_per_hour_usd" not in raw:
        return {}
    if not raw.get("price_source") or not raw.get("price_date"):
        raise CatalogError("price_per_hour_usd needs price_source and price_date")
    return {
        "price_per_hour_usd": float(raw["price_per_hour_usd"]),
        "price_source": raw["price_source"],
        "price_date": raw["price_date"],
    }


QUANT_SCHEMA: Schema = {
    "name": Field(STR, True),
    "bits_per_weight": Field(NUM, True),
    "usage": Field(STR, True),
    "compute_dtype": Field(STR, True),
    "kind": Field(STR),
    "ggml_type": Field(STR),
    "block_size": Field(INT),
    "type_size_bytes": Field(INT),
    "aliases": Field(LIST),
    "unquantized": Field(LIST),
    "container": Field(STR),
    "source": Field(STR, True),
    "notes": Field(STR),
}

_UNQUANTIZED_CLASSES = {"embedding", "lm_head", "dense"}


def _make_quant(entry_id: str, raw: dict[str, Any], path: str) -> QuantFormat:
    if raw["usage"] not in ("weights", "kv", "both"):
        raise CatalogError("usage must be weights, kv or both")
    if raw["compute_dtype"] not in ("fp32", "fp16", "fp8", "int8", "fp4"):
        raise CatalogError("compute_dtype must be fp32, fp16, fp8, int8 or fp4")
    if not raw["bits_per_weight"] > 0:
        raise CatalogError("bits_per_weight must be positive")
    unknown = set(raw.get("unquantized", [])) - _UNQUANTIZED_CLASSES
    if unknown:
        raise CatalogError(f"unquantized may name {sorted(_UNQUANTIZED_CLASSES)}, not {sorted(unknown)}")
    aliases = list(raw.get("aliases", []))
    if raw.get("ggml_type"):
        aliases.append(raw["ggml_type"])
    return QuantFormat(
        id=entry_id,
        name=raw["name"],
        bits_per_weight=float(raw["bits_per_weight"]),
        usage=raw["usage"],
        compute_dtype=raw["compute_dtype"],
        kind=raw.get("kind", "plain"),
        ggml_type=raw.get("ggml_type"),
        block_size=raw.get("block_size"),
        type_size_bytes=raw.get("type_size_bytes"),
        aliases=tuple(raw.get("aliases", [])),
        source=raw["source"],
        notes=raw.get("notes"),
        unquantized=tuple(raw.get("unquantized", [])),
        container=raw.get("container"),
    )


EFFICIENCY_SCHEMA: Schema = {
    "bandwidth_fraction": Field(NUM, True),
    "layer_overhead_us": Field(NUM, True),
    "step_overhead_us": Field(NUM, True),
    "prefill_efficiency_max": Field(NUM, True),
    "prefill_half_tokens": Field(NUM, True),
    "prefill_chunk_tokens": Field(INT),
    "decode_compute_fraction": Field(NUM),
    "residual_log_sd": Field(NUM),
    "quantized_bandwidth_fraction": Field(NUM),
    "prefill_attention_fraction": Field(NUM),
    "prefill_residual_log_sd": Field(NUM),
    "quantized_prefill_efficiency_max": Field(NUM),
    "attention_score_bytes": Field(NUM),
    "prefill_batch_tokens": Field(INT),
    "kv_bandwidth_fraction": Field(NUM),
    "decode_alu_flops_per_weight": Field(NUM),
    "decode_score_bytes": Field(NUM),
    "inline_ecc_overhead": Field(NUM),
    "unit_bandwidth_gb_per_s": Field(NUM),
    "host_sampling_ns_per_vocab": Field(NUM),
    "expert_overhead_us": Field(NUM),
    "engines_seen": Field(LIST),
    "kv_stream_gb_per_s": Field(NUM),
    "int32_flop_per_op": Field(NUM),
    "recurrent_state_bytes": Field(NUM), "recurrent_layer_extra": Field(NUM),
    "source": Field(STR),
}


def make_efficiency(raw: dict[str, Any], where: str, default_source: str) -> Efficiency:
    checked = check_entry(where, "efficiency", raw, EFFICIENCY_SCHEMA)
    for key in ("bandwidth_fraction", "prefill_efficiency_max", "quantized_bandwidth_fraction", "quantized_prefill_efficiency_max", "kv_bandwidth_fraction"):
        if key in checked and not 0 < checked[key] <= 1:
            raise CatalogError(f"{where}: {key} must be in (0, 1]")
    for key in ("decode_alu_flops_per_weight", "decode_score_bytes", "inline_ecc_overhead", "expert_overhead_us", "recurrent_layer_extra"):
        if checked.get(key, 0.0) < 0:
            raise CatalogError(f"{where}: {key} must be >= 0")
    for key in ("unit_bandwidth_gb_per_s", "kv_stream_gb_per_s", "int32_flop_per_op", "recurrent_state_bytes"):
        if key in checked and not checked[key] > 0:
            raise CatalogError(f"{where}: {key} must be positive")
    # keys left out take `Efficiency`'s own defaults, so each default is written once
    numbers: dict[str, Any] = {
        key: (int if key in ("prefill_chunk_tokens", "prefill_batch_tokens") else float)(value)
        for key, value in checked.items() if key not in ("source", "engines_seen")
    }
    seen = tuple(str(e) for e in checked.get("engines_seen", ()))
    return Efficiency(**numbers, engines_seen=seen, source=str(checked.get("source", default_source)))


ENGINE_SCHEMA: Schema = {
    "name": Field(STR, True),
    "source": Field(STR, True),
    "aliases": Field(LIST),
    "backends": Field(LIST),
    "based_on": Field(STR),
    "own_fit": Field(BOOL),
    "runtime_overhead_gb": Field(NUM, True),
    "usable_memory_fraction": Field(NUM, True),
    "kv_allocation": Field(STR, True),
    "default_kv_dtype": Field(STR),
    "fp16_accumulate": Field(BOOL),
    "tensor_wgmma": Field(BOOL),
    "fp4_block_tensor_rate": Field(BOOL),
    "grouped_moe_kernel": Field(BOOL),
    "ungraphed_layer_us": Field(NUM),
    "notes": Field(STR),
    "efficiency": Field(TABLE, True),
    "weight_formats": Field(LIST),
    "experimental_formats": Field(LIST),
    "formats_source": Field(STR),
}


def _make_engine(entry_id: str, raw: dict[str, Any], path: str) -> EngineSpec:
    if raw["kv_allocation"] not in ("paged", "contiguous"):
        raise CatalogError("kv_allocation must be paged or contiguous")
    if not 0 < raw["usable_memory_fraction"] <= 1:
        raise CatalogError("usable_memory_fraction must be in (0, 1]")
    if raw.get("own_fit") and not raw.get("based_on"):
        raise CatalogError("own_fit needs based_on: the engine whose fit it is kept apart from")
    if (raw.get("weight_formats") or raw.get("experimental_formats")) and not raw.get("formats_source"):
        raise CatalogError("weight_formats needs a formats_source saying where the list comes from")
    if not raw.get("ungraphed_layer_us", 0.0) >= 0:
        raise CatalogError("ungraphed_layer_us must be >= 0")
    return EngineSpec(
        id=entry_id,
        name=raw["name"],
        source=raw["source"],
        efficiency=make_efficiency(raw["efficiency"], f"{path}: entry {entry_id!r}", "engine default"),
        runtime_overhead_gb=float(raw["runtime_overhead_gb"]),
        usable_memory_fraction=float(raw["usable_memory_fraction"]),
        kv_allocation=raw["kv_allocation"],
        default_kv_dtype=raw.get("default_kv_dtype", "fp16"),
        based_on=raw.get("based_on"),
        own_fit=bool(raw.get("own_fit", False)),
        fp16_accumulate=bool(raw.get("fp16_accumulate", False)),
        tensor_wgmma=bool(raw.get("tensor_wgmma", True)),
        fp4_block_tensor_rate=bool(raw.get("fp4_block_tensor_rate", True)),
        grouped_moe_kernel=bool(raw.get("grouped_moe_kernel", False)),
        ungraphed_layer_us=float(raw.get("ungraphed_layer_us", 0.0)),
        backends=tuple(raw.get("backends", [])),
        aliases=tuple(raw.get("aliases", [])),
        notes=raw.get("notes"),
        weight_formats=tuple(raw.get("weight_formats", [])),
        experimental_formats=tuple(raw.get("experimental_formats", [])),
        formats_source=raw.get("formats_source"),
    )


MODEL_SCHEMA: Schema = {
    "name": Field(STR, True),
    "hf_id": Field(STR),
    "tokenizer": Field(STR),
    "default_quant": Field(STR),
    "source": Field(STR, True),
    "aliases": Field(LIST),
    "release_year": Field(INT),
    "params_b": Field(NUM),
    "active_params_b": Field(NUM),
    "notes": Field(STR),
    "config": Field(TABLE, True),
}


@dataclass(frozen=True)
class ModelPreset:
    """A catalog model: its HF config plus provenance; `spec` is the accounted architecture."""

    id: str
    name: str
    config: dict[str, Any]
    source: str
    hf_id: str | None = None
    tokenizer: str | None = None
    default_quant: str | None = None
    params_b: float | None = None
    active_params_b: float | None = None
    release_year: int | None = None
    aliases: tuple[str, ...] = ()
    notes: str | None = None

    @functools.cached_property
    def spec(self) -> ModelSpec:
        from tokometer.errors import IngestError
        from tokometer.ingest.architecture import spec_from_config

        try:
            return spec_from_config(
                self.config,
                self.name,
                source=self.source,
                tokenizer=self.tokenizer,
                default_quant=self.default_quant,
                model_id=self.id,
            )
        except (TypeError, ValueError, ArithmeticError, AttributeError, KeyError, IndexError) as exc:
            raise IngestError(f"model {self.id!r}: a configuration field has the wrong type or range ({exc})") from None


def _make_model(entry_id: str, raw: dict[str, Any], path: str) -> ModelPreset:
    from tokometer.ingest.architecture import check_config_numbers, language_config

    check_config_numbers(language_config(raw["config"]))  # at load, like a config.json: not at first use
    return ModelPreset(
        id=entry_id,
        name=raw["name"],
        config=raw["config"],
        source=raw["source"],
        hf_id=raw.get("hf_id"),
        tokenizer=raw.get("tokenizer"),
        default_quant=raw.get("default_quant"),
        params_b=raw.get("params_b"),
        active_params_b=raw.get("active_params_b"),
        release_year=raw.get("release_year"),
        aliases=tuple(raw.get("aliases", [])),
        notes=raw.get("notes"),
    )


@functools.cache
def hardware_catalog(home: Path | None = None) -> Catalog[HardwareSpec]:
    """Devices (`HardwareSpec`): the shipped hardware.toml and the user's, in the tokometer home (or `home`)."""
    return _build("hardware", "hardware.toml", HARDWARE_SCHEMA, _make_hardware, home, HARDWARE_NAME_PREFIXES)


@functools.cache
def quant_catalog(home: Path | None = None) -> Catalog[QuantFormat]:
    """Weight and KV-cache formats (`QuantFormat`): the shipped quants.toml and the user's."""
    return _build("quantization", "quants.toml", QUANT_SCHEMA, _make_quant, home)


@functools.cache
def engine_catalog(home: Path | None = None) -> Catalog[EngineSpec]:
    """Inference engines (`EngineSpec`): the shipped engines.toml and the user's."""
    return _build("engine", "engines.toml", ENGINE_SCHEMA, _make_engine, home)


@functools.cache
def model_catalog(home: Path | None = None) -> Catalog[ModelPreset]:
    """Model presets (`ModelPreset`): the shipped models.toml and the user's."""
    return _build("model", "models.toml", MODEL_SCHEMA, _make_model, home)


def clear_caches() -> None:
    """Forget loaded catalogs (tests and `tokometer probe` call this after writing user files)."""
    for loader in (hardware_catalog, quant_catalog, engine_catalog, model_catalog):
        loader.cache_clear()


__all__ = [
    "Catalog",
    "ModelPreset",
    "engine_catalog",
    "hardware_catalog",
    "model_catalog",
    "normalise",
    "quant_catalog",
    "tokometer_home",
    "clear_caches",
]
