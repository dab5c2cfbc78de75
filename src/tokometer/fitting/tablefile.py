"""The fitted table as a TOML file (`efficiency.toml`): written here, read by `catalog.efficiency`."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from tokometer.domain.specs import Efficiency


def write_table(path: Path, table: dict[str, Efficiency], meta: dict[str, Any], counts: dict[str, tuple[int, int, list[str]]]) -> None:
    lines = [
        "# Fitted efficiency per engine/backend/hardware-class (docs/PHYSICS.md section 4).",
        "# Written by `tokometer calibrate`; do not edit by hand: rerun it.",
    ]
    for key, value in meta.items():
        lines.append(f"{key} = {_toml_value(value)}")
    lines.append("")
    for key, eff in table.items():
        n_tg, n_pp, hardware = counts.get(key, (0, 0, []))
        lines.append(f'[entries."{key}"]')
        for name in (
            "bandwidth_fraction",
            "quantized_bandwidth_fraction",
            "layer_overhead_us",
            "step_overhead_us",
            "prefill_efficiency_max",
            "quantized_prefill_efficiency_max",
            "prefill_half_tokens",
            "prefill_attention_fraction",
            "prefill_chunk_tokens",
            "attention_score_bytes",
            "prefill_batch_tokens",
            "decode_compute_fraction",
            "kv_bandwidth_fraction",
            "decode_alu_flops_per_weight",
            "decode_score_bytes",
            "inline_ecc_overhead",
            "unit_bandwidth_gb_per_s",
            "expert_overhead_us",
            "kv_stream_gb_per_s",
            "int32_flop_per_op",
            "residual_log_sd",
            "prefill_residual_log_sd",
        ):
            value = getattr(eff, name)
            if value is not None:
                lines.append(f"{name} = {_toml_value(round(value, 6) if isinstance(value, float) else value)}")
        if eff.engines_seen:
            lines.append(f"engines_seen = {_toml_value(sorted(eff.engines_seen))}")
        lines.append(f"source = {_toml_value(eff.source)}")
        lines.append(f"n_rows = {n_tg}")
        lines.append(f"n_prefill_rows = {n_pp}")
        lines.append(f"hardware_seen = {_toml_value(sorted(hardware))}")
        lines.append("")
    text = "\n".join(lines)
    tomllib.loads(text)
    path.write_text(text, encoding="utf-8")


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):  # an inline table (the families' offsets per metric), keys quoted
        return "{ " + ", ".join(f"{_toml_value(str(k))} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)

