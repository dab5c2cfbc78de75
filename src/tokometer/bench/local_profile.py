"""The `local` hardware profile: a probe's result written as entry `local` of
`tokometer_home()/hardware.toml` (the user catalog, same schema as the shipped one; other entries in the
file are kept), so `--hw local` predicts for this very machine (see `bench/probe.py`).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from datetime import date
from pathlib import Path
from typing import Any

from tokometer.bench.probe import ProbeResult
from tokometer.errors import CatalogError

_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(_significant(value))
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def _significant(value: float, digits: int = 6) -> float:
    """`value` to `digits` significant figures: a slow device's 0.021 TFLOPS keeps its precision, as an H200's 719 does
    (a fixed 4 decimals wrote a CPU probe's 0.020953 as 0.021, 0.2 % off)."""
    return float(f"{value:.{digits}g}")


def profile_entry(result: ProbeResult, today: date | None = None) -> dict[str, Any]:
    """The `local` hardware entry, in the shipped catalog's schema."""
    day = (today or date.today()).isoformat()
    entry: dict[str, Any] = {
        "name": f"This machine: {result.name}" + (f" ({result.threads} threads)" if result.device == "cpu" else ""),
        "vendor": result.vendor,
        "kind": result.kind,
        "segment": result.segment,
        "backend": result.backend,
        "memory_gb": float(result.memory_gb),
        "memory_bandwidth_gb_per_s": round(result.memory_bandwidth_gb_per_s, 2),
    }
    if result.fp32_tflops:
        entry["fp32_tflops"] = _significant(result.fp32_tflops)
    if result.fp16_tflops:
        entry["fp16_tflops"] = _significant(result.fp16_tflops)
    if result.matrix_tflops.get("fp8"):
        entry["fp8_tflops"] = _significant(result.matrix_tflops["fp8"])
    if result.matrix_tflops.get("int8"):
        entry["int8_tops"] = _significant(result.matrix_tflops["int8"])
    entry["launch_year"] = (today or date.today()).year
    entry["source"] = f"tokometer probe {day}"
    entry["notes"] = (
        f"Measured, not a datasheet: {result.device} copy {result.copy_gb_per_s:.1f} GB/s, triad "
        f"{result.triad_gb_per_s:.1f} GB/s (best of {result.repetitions} passes over {result.array_bytes / 1e6:.0f} MB arrays"
        + (f", {result.threads} threads" if result.device == "cpu" else "")
        + ")"
        + (f"; fp32 GEMM {result.fp32_tflops:.3f} TFLOPS" if result.fp32_tflops else "")
        + (f"; fp16 GEMM {result.fp16_tflops:.2f} TFLOPS" if result.fp16_tflops else "")
        + "".join(f"; {k} GEMM {v:.3g} {'TOPS' if k == 'int8' else 'TFLOPS'}" for k, v in result.matrix_tflops.items() if k not in ("fp16", "fp32"))
        + (f"; {result.formats_note}" if result.formats_note else "")
        + (" (quick probe: a lower bound, smaller arrays and fewer repetitions)" if result.quick else "")
        + ". launch_year is the probe year."
    )
    return entry


def render_entry(entry_id: str, entry: dict[str, Any]) -> str:
    return f"[{entry_id}]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in entry.items())


def replace_table(text: str, entry_id: str, block: str) -> str:
    """`text` with table `[entry_id]` (and its sub-tables) replaced by `block`, or `block` appended."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        match = _HEADER.match(line)
        if match:
            name = match.group(1).strip().strip('"')
            skipping = name == entry_id or name.startswith(entry_id + ".")
        if not skipping:
            out.append(line)
    kept = "".join(out).rstrip("\n")
    return (kept + "\n\n" if kept else "") + block


def save_local_profile(result: ProbeResult, home: Path | None = None, *, entry_id: str = "local") -> Path:
    """Write/replace `[local]` in the user hardware catalog, validate it, clear the catalog caches."""
    from tokometer.catalog import HARDWARE_SCHEMA, clear_caches, hardware_catalog, tokometer_home
    from tokometer.catalog.schema import check_entry

    path = (home or tokometer_home()) / "hardware.toml"
    existing = ""
    if path.is_file():
        existing = path.read_text(encoding="utf-8")
        try:
            tomllib.loads(existing)
        except tomllib.TOMLDecodeError as exc:
            raise CatalogError(f"{path}: not valid TOML ({exc}); fix or move it before `tokometer probe` writes to it") from None
    entry = profile_entry(result)
    text = replace_table(existing, entry_id, render_entry(entry_id, entry))
    parsed = tomllib.loads(text)
    check_entry(path, entry_id, parsed[entry_id], HARDWARE_SCHEMA)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    clear_caches()
    hardware_catalog().get(entry_id)  # fail loudly now, not at the next --hw local
    return path
