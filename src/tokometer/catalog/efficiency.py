"""Fitted efficiency per engine x backend x hardware class (written by `tokometer calibrate`).

`efficiency.toml` holds the fitted values with the date, the data and the method they came from.
The package ships one; `tokometer calibrate` writes the user's own into the tokometer home
(`$TOKOMETER_HOME/efficiency.toml`), which then takes precedence for every estimate until
`calibrate --reset` removes it. Nothing ever writes into the installed package by default.
Lookup falls back from the most specific key to the engine's documented default, so hardware the
fit never saw still gets its class's values.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from tokometer.catalog import DATA_DIR, engine_catalog, make_efficiency, tokometer_home
from tokometer.catalog.cache import load_parsed
from tokometer.domain.families import family_scaled, gpu_family
from tokometer.domain.specs import Efficiency, EngineSpec, HardwareSpec
from tokometer.errors import CatalogError

EFFICIENCY_FILE = DATA_DIR / "efficiency.toml"  # the shipped fit
USER_EFFICIENCY_NAME = "efficiency.toml"  # the user's fit, in the tokometer home


def user_efficiency_file() -> Path:
    """Where `tokometer calibrate` writes by default: the tokometer home, never the package."""
    return tokometer_home() / USER_EFFICIENCY_NAME


def active_efficiency_file() -> Path:
    """The fit estimates use: the user's (from `tokometer calibrate`) when there is one, else the shipped one."""
    user = user_efficiency_file()
    return user if user.is_file() else EFFICIENCY_FILE
ANY = "*"  # a key part that matches every engine, backend or hardware class


class GroupKey(NamedTuple):
    """`engine/backend/hardware-class`, the key of a fitted entry; `*` in a part matches any value.

    The table and the TOML file keep the text form; `parse` is the one place that reads it.
    """

    engine: str
    backend: str
    hardware_class: str

    @classmethod
    def parse(cls, text: str) -> GroupKey:
        parts = text.split("/")
        if len(parts) != 3:
            raise CatalogError(f"efficiency key {text!r} is not engine/backend/hardware-class")
        return cls(*parts)

    def __str__(self) -> str:
        return f"{self.engine}/{self.backend}/{self.hardware_class}"

    def fallbacks(self) -> tuple[str, ...]:
        """This key, then by backend, by hardware class, and the engine alone (most specific first)."""
        e, b, c = self
        return tuple(str(k) for k in (self, GroupKey(e, b, ANY), GroupKey(e, ANY, c), GroupKey(e, ANY, ANY)))

    def matches(self, pattern: GroupKey) -> bool:
        """Whether a fitted entry's key (`*` parts allowed) covers this group."""
        return all(p == ANY or p == g for g, p in zip(self, pattern, strict=True))


@dataclass(frozen=True)
class FittedTable:
    """efficiency.toml: the fit's metadata and one Efficiency per engine/backend/hardware-class key."""

    meta: dict[str, Any]
    entries: dict[str, Efficiency]


def _parse_toml(path: Path) -> dict[str, Any]:
    import tomllib  # only on a cache miss: a cached call never parses TOML

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{path}: not valid TOML: {exc}") from None


def fitted_table(path: Path | None = None) -> FittedTable:
    """The fitted table in `path`, by default the active one (the user's fit, else the shipped one)."""
    return _fitted_table(path or active_efficiency_file())


def clear_fitted_table() -> None:
    """Forget parsed fits (after `calibrate` writes or `--reset` removes one)."""
    _fitted_table.cache_clear()


fitted_table.cache_clear = clear_fitted_table  # type: ignore[attr-defined]  # callers of the old functools.cache API


@functools.cache
def _fitted_table(path: Path) -> FittedTable:
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


def fit_engine_id(engine: EngineSpec) -> str:
    """The engine whose fitted entries this engine's rows train and read: its own id at the root or when it
    is fitted apart (`own_fit`), else that of the engine it is based on (its rows are the parent's kernels)."""
    seen = {engine.id}
    while engine.based_on and not engine.own_fit:
        parent = engine_catalog().find(engine.based_on)
        if parent is None or parent.id in seen:
            return engine.based_on
        seen.add(parent.id)
        engine = parent
    return engine.id


def parent_fit_engine_id(engine_id: str) -> str | None:
    """For an engine fitted apart (`own_fit`), the fitted engine its entries are shrunk toward and fall back to."""
    engine = engine_catalog().find(engine_id)
    if engine is None or not engine.own_fit or not engine.based_on:
        return None
    parent = engine_catalog().find(engine.based_on)
    return fit_engine_id(parent) if parent is not None else engine.based_on


def group_key(engine: EngineSpec, hardware: HardwareSpec, backend: str | None = None) -> str:
    """The most specific key a fit can hold: `engine/backend/hardware-class`."""
    return str(GroupKey(fit_engine_id(engine), backend or hardware.backend, hardware.hardware_class))


def lookup_keys(engine: EngineSpec, backend: str, hardware_class: str) -> list[str]:
    names = [engine.id, fit_engine_id(engine)]
    if (parent := parent_fit_engine_id(names[-1])) is not None:
        names.append(parent)
    names += [engine.based_on] if engine.based_on else []
    keys: list[str] = []
    for name in dict.fromkeys(names):
        keys += GroupKey(name, backend, hardware_class).fallbacks()
    return keys


def multi_device_log_sd(metric: str = "tg") -> float | None:
    """Spread of multi-device decode (`tg`) or prefill (`pp`) errors out of sample, when the fit measured one."""
    key = "multi_device_prefill_residual_log_sd" if metric == "pp" else "multi_device_residual_log_sd"
    value = fitted_table().meta.get(key)
    return float(value) if isinstance(value, int | float) else None


# the fit's meta key holding each GPU architecture family's offsets per metric (`fitting.families_fit`)
FAMILY_OFFSETS_KEY = "family_log_offsets"
# the fit's meta keys holding how far an unseen group strays from its parent (`fitting.shrinkage`)
UNSEEN_KEYS = {
    "tg": {"engine": "unseen_engine_log_sd", "backend": "unseen_backend_log_sd", "class": "unseen_class_log_sd"},
    "pp": {
        "engine": "unseen_engine_prefill_log_sd",
        "backend": "unseen_backend_prefill_log_sd",
        "class": "unseen_class_prefill_log_sd",
    },
}


def _unseen_sd(meta: dict[str, Any], metric: str, levels: tuple[str, ...]) -> float:
    """The extra log spread of a group the fit never saw at these levels (root sum of squares)."""
    extra = [meta.get(UNSEEN_KEYS[metric][level]) for level in levels]
    return math.sqrt(sum(float(v) ** 2 for v in extra if isinstance(v, int | float)))


def _widened(eff: Efficiency, meta: dict[str, Any], levels: tuple[str, ...]) -> Efficiency:
    """`eff` borrowed from a parent (or an engine's default): its bands widened by the spread of unseen
    groups at `levels` ("engine", "backend", "class"), in quadrature."""
    tg, pp = _unseen_sd(meta, "tg", levels), _unseen_sd(meta, "pp", levels)
    if not tg and not pp:
        return eff
    return replace(
        eff,
        residual_log_sd=math.hypot(eff.residual_log_sd, tg),
        prefill_residual_log_sd=math.hypot(eff.prefill_residual_log_sd, pp),
        source=f"{eff.source}; no measured rows for this {' and '.join(levels)}: band widened by their spread",
    )


def _attention_as_run(eff: Efficiency, unfused: bool) -> Efficiency:
    """An entry as a run with fused (flash) attention reads it: no score traffic through memory, in decode
    (`decode_score_bytes`) or in prefill (`attention_score_bytes`); a run without it keeps both."""
    if unfused or (not eff.decode_score_bytes and not eff.attention_score_bytes):
        return eff
    return replace(eff, decode_score_bytes=0.0, attention_score_bytes=0.0)


def _own_decode_work(borrowed: Efficiency, own: Efficiency) -> Efficiency:
    """A parent's entry as an engine fitted apart reads it: at least the engine's documented shader work
    per weight (`decode_alu_flops_per_weight`), which its own format costs and the parent's kernels do
    not (ExLlamaV3's EXL3 trellis decode over ExLlamaV2's EXL2 lookups)."""
    if own.decode_alu_flops_per_weight <= borrowed.decode_alu_flops_per_weight:
        return borrowed
    return replace(
        borrowed,
        decode_alu_flops_per_weight=own.decode_alu_flops_per_weight,
        source=f"{borrowed.source}; the engine's documented {own.decode_alu_flops_per_weight:g} shader ops per weight",
    )


def efficiency_for(
    engine: EngineSpec,
    hardware: HardwareSpec,
    backend: str | None = None,
    *,
    unfused_decode_attention: bool = False,
    entries: dict[str, Efficiency] | None = None,
    meta: dict[str, Any] | None = None,
) -> Efficiency:
    """The fitted efficiency for this engine on this kind of hardware, else the engine default.

    `decode_score_bytes` and `attention_score_bytes` are what an unfused decode and prefill attention
    cost per score, fitted on measurements taken without flash attention (llama.cpp's default until its
    2025 builds switched to `--flash-attn auto`); an estimate for today's engines runs fused attention,
    so both terms are dropped unless `unfused_decode_attention` (validation of such historical rows,
    decode and prefill alike) asks for them.
    The engine's own host sampling cost (`host_sampling_ns_per_vocab`, documented in engines.toml, never
    fitted) rides on whichever table entry it borrows: llama-server shares llama-bench's GPU kernels.
    An entry borrowed from a parent (a backend or hardware class, or the whole engine, without rows)
    gets the parent's values and a band widened by the fit's spread of unseen groups at that level.
    `entries` / `meta`: look up in this fit instead of the shipped one (a fit being checked).
    """
    table = fitted_table() if entries is None else FittedTable(meta or {}, entries)
    for key in lookup_keys(engine, backend or hardware.backend, hardware.hardware_class):
        found = table.entries.get(key)
        if found is not None:
            found_engine, found_backend, found_class = GroupKey.parse(key)
            unseen = tuple(name for name, part in (("backend", found_backend), ("class", found_class)) if part == ANY)
            if engine.own_fit and found_engine != engine.id:
                unseen = ("engine", *unseen)  # an engine fitted apart, without rows: its parent's fit, widened
                found = _own_decode_work(found, engine.efficiency)
            elif found.engines_seen and engine.id not in found.engines_seen:
                # an engine pooled with its parent and never measured (its parent's kernels, its own
                # server and harness): its parent's fit, widened
                unseen = ("engine", *unseen)
            found = _widened(found, table.meta, unseen)
            found = _attention_as_run(found, unfused_decode_attention)
            found = family_scaled(found, table.meta.get(FAMILY_OFFSETS_KEY), gpu_family(hardware.family, backend or hardware.backend))
            return _engine_own(found, engine, backend or hardware.backend)
    default = engine.efficiency
    if engine.based_on:
        base = engine_catalog().find(engine.based_on)
        if base is not None and base.efficiency.source != "engine default":
            default = base.efficiency
    default = _attention_as_run(_widened(default, table.meta, ("engine",)), unfused_decode_attention)
    return _engine_own(default, engine, backend or hardware.backend)


def _engine_own(eff: Efficiency, engine: EngineSpec, backend: str | None = None) -> Efficiency:
    """The entry with what the engine itself documents, never fitted: its host sampling cost, its recurrent layers'
    state traffic and extra kernels (`roofline.recurrent_state_bytes`), the per-layer
    launches of a CUDA build without CUDA graphs (`EngineSpec.ungraphed_layer_us`, on `cuda` only), and whether
    its MoE layers run every touched expert in one grouped kernel (`Efficiency.grouped_experts`)."""
    own = engine.efficiency
    if own.host_sampling_ns_per_vocab:
        eff = replace(eff, host_sampling_ns_per_vocab=own.host_sampling_ns_per_vocab)
    if (own.recurrent_state_bytes, own.recurrent_layer_extra) != (eff.recurrent_state_bytes, eff.recurrent_layer_extra):
        eff = replace(eff, recurrent_state_bytes=own.recurrent_state_bytes, recurrent_layer_extra=own.recurrent_layer_extra)
    if engine.ungraphed_layer_us and backend == "cuda":
        eff = replace(eff, launch_layer_us=engine.ungraphed_layer_us)
    if engine.grouped_moe_kernel != eff.grouped_experts:
        eff = replace(eff, grouped_experts=engine.grouped_moe_kernel)
    return eff
