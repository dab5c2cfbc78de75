"""Serving catalogs: scheduler defaults per engine and the fitted serving efficiency.

`serving_engines.toml` gives each engine's scheduler knobs with their source (validated like the
other catalogs: unknown keys and missing sources are errors naming the file and the key).
`serving_efficiency.json` holds what `tokometer calibrate --serving` fitted on published serving
data (`calibration_data/serving.csv`): per engine, the batched-compute efficiency curve and the
per-step overhead, with the data and method they came from. `calibrate --serving` writes the user's
own fit into the tokometer home, which then takes precedence (`calibrate --serving --reset` removes it).
"""

from __future__ import annotations

import functools
import json
import math
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tokometer.catalog import DATA_DIR, engine_catalog, tokometer_home
from tokometer.catalog.schema import BOOL, INT, NUM, STR, Field, Schema, check_entry
from tokometer.domain.serving_specs import MEMORY_OF, SchedulerPolicy, ServingEfficiency
from tokometer.domain.specs import EngineSpec
from tokometer.errors import CatalogError, InputError, UnknownEntryError

SERVING_ENGINES_FILE = DATA_DIR / "serving_engines.toml"
SERVING_EFFICIENCY_FILE = DATA_DIR / "serving_efficiency.json"  # the shipped fit


def user_serving_efficiency_file() -> Path:
    """Where `tokometer calibrate --serving` writes by default: the tokometer home."""
    return tokometer_home() / "serving_efficiency.json"


def active_serving_efficiency_file() -> Path:
    """The user's serving fit when there is one, else the shipped one."""
    user = user_serving_efficiency_file()
    return user if user.is_file() else SERVING_EFFICIENCY_FILE

POLICY_SCHEMA: Schema = {
    "engine": Field(STR, True),
    "source": Field(STR, True),
    "max_num_seqs": Field(INT, True),
    "max_num_batched_tokens": Field(INT, True),
    "chunked_prefill": Field(BOOL),
    "mixed_batches": Field(BOOL),
    "static": Field(BOOL),
    "block_size_tokens": Field(INT),
    "memory_fraction": Field(NUM, True),
    "memory_of": Field(STR, True),
    "contiguous_context_tokens": Field(INT),
    "prefix_cache_hit_fraction": Field(NUM),
    "scheduler_steps": Field(INT),
    "request_latency_ms": Field(NUM),
    "eager_prefill_layer_us": Field(NUM),
    "graphed_step_tokens": Field(INT),
    "fp8_gemm_fraction": Field(NUM),
    "recv_interval_steps": Field(INT),
    "adp_balance_ranks": Field(INT),
    "adp_balance_timeout_steps": Field(INT),
}


@dataclass(frozen=True)
class ServingEngine:
    """A scheduler policy with the engine (memory habits, single-stream efficiency) it runs on."""

    id: str
    engine: EngineSpec
    policy: SchedulerPolicy


def _policy(entry_id: str, raw: dict[str, Any], path: Path) -> SchedulerPolicy:
    checked = check_entry(path, entry_id, raw, POLICY_SCHEMA)
    if checked["memory_of"] not in MEMORY_OF:
        raise CatalogError(f"{path}: entry {entry_id!r}: memory_of must be one of {', '.join(MEMORY_OF)}")
    if not 0 < checked["memory_fraction"] <= 1:
        raise CatalogError(f"{path}: entry {entry_id!r}: memory_fraction must be in (0, 1]")
    fields = {k: v for k, v in checked.items() if k != "engine"}
    return check_policy(SchedulerPolicy(engine=entry_id, **fields))


def check_policy(policy: SchedulerPolicy) -> SchedulerPolicy:
    """Knobs a user can override: whole numbers >= 1, fractions in range."""
    for name in ("max_num_seqs", "max_num_batched_tokens", "block_size_tokens", "scheduler_steps",
                 "recv_interval_steps", "adp_balance_ranks"):
        value = getattr(policy, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{name} must be a whole number, 1 or more, got {value!r}")
    wait = policy.adp_balance_timeout_steps
    if isinstance(wait, bool) or not isinstance(wait, int) or wait < 0:
        raise InputError(f"adp_balance_timeout_steps must be a whole number, 0 or more, got {wait!r}")
    if not 0 < policy.memory_fraction <= 1:
        raise InputError(f"the memory fraction must be in (0, 1], got {policy.memory_fraction!r}")
    if not 0 <= policy.prefix_cache_hit_fraction < 1:
        raise InputError(f"the prefix-cache hit fraction must be in [0, 1), got {policy.prefix_cache_hit_fraction!r}")
    if not 0 <= policy.request_latency_ms < math.inf:
        raise InputError(f"the request latency must be 0 ms or more, got {policy.request_latency_ms!r}")
    if not 0 <= policy.eager_prefill_layer_us < math.inf:
        raise InputError(f"the eager prefill host time per layer must be 0 us or more, got {policy.eager_prefill_layer_us!r}")
    if policy.graphed_step_tokens < 0:
        raise InputError(f"the largest CUDA-graphed step must be 0 tokens or more, got {policy.graphed_step_tokens!r}")
    if not 0 < policy.fp8_gemm_fraction <= 1:
        raise InputError(f"the FP8 GEMM fraction of the FP8 peak must be in (0, 1], got {policy.fp8_gemm_fraction!r}")
    return policy


@functools.cache
def serving_engines(path: Path = SERVING_ENGINES_FILE) -> dict[str, ServingEngine]:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{path}: not valid TOML: {exc}") from None
    out: dict[str, ServingEngine] = {}
    for entry_id, entry in raw.items():
        if not isinstance(entry, dict):
            raise CatalogError(f"{path}: entry {entry_id!r} must be a table")
        policy = _policy(entry_id, entry, path)
        out[entry_id] = ServingEngine(entry_id, engine_catalog().get(entry["engine"]), policy)
    return out


def serving_engine(name: str, **overrides: Any) -> ServingEngine:
    """An engine's scheduler by id or engine alias, with knobs overridden (None keeps the default)."""
    table = serving_engines()
    key = name.strip().lower()
    found = table.get(key)
    if found is None:
        spec = engine_catalog().find(name)
        # an engine built on another (llama-server on llama.cpp) runs that engine's scheduler
        ids = [spec.id, spec.based_on] if spec is not None else []
        found = next((e for wanted in ids for e in table.values() if wanted and e.engine.id == wanted), None)
    if found is None:
        raise UnknownEntryError("engine", name, list(table))
    changes = {k: v for k, v in overrides.items() if v is not None}
    if changes:
        found = ServingEngine(found.id, found.engine, check_policy(replace(found.policy, **changes)))
    return found


def serving_efficiency_table(path: Path | None = None) -> dict[str, Any]:
    """The fitted serving table in `path`, by default the active one (the user's, else the shipped one)."""
    return _serving_efficiency_table(path or active_serving_efficiency_file())


def clear_serving_efficiency_table() -> None:
    """Forget parsed serving fits (after `calibrate --serving` writes or `--reset` removes one)."""
    _serving_efficiency_table.cache_clear()


serving_efficiency_table.cache_clear = clear_serving_efficiency_table  # type: ignore[attr-defined]  # the old functools.cache API


@functools.cache
def _serving_efficiency_table(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {"entries": {}}
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{path}: not valid JSON: {exc}") from None
    return data


def serving_efficiency(engine_id: str) -> ServingEfficiency:
    """The fitted values for `engine_id`, else the pooled fit over every engine, else the defaults."""
    table = serving_efficiency_table()
    entries = table.get("entries", {})
    entry = entries.get(engine_id) or entries.get("*")
    if not entry:
        return ServingEfficiency()
    return ServingEfficiency(
        compute_fraction_max=float(entry["compute_fraction_max"]),
        compute_half_tokens=float(entry["compute_half_tokens"]),
        layer_step_overhead_us=float(entry["layer_step_overhead_us"]),
        sequence_overhead_us=float(entry.get("sequence_overhead_us", 0.0)),
        prefill_fraction_max=None if entry.get("prefill_fraction_max") is None else float(entry["prefill_fraction_max"]),
        source=f"fitted {table.get('fitted_on', '')} on {table.get('data', 'serving.csv')} ({'engine' if engine_id in entries else 'pooled'})",
    )
