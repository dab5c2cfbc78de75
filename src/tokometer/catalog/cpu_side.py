"""The CPU cores of an APU: optional `cpu_*` keys of a `kind = "apu"` hardware entry.

An APU entry's compute peaks are its integrated GPU's. A run on its CPU cores (llama.cpp `--backend cpu`)
is predicted against these instead (`usecases.resolve.cpu_view`, docs/PHYSICS.md section 5, "The CPU view of an
APU"). They follow the `kind = "cpu"` entries: `cpu_fp32_tflops` the FP32 FMA rate, `cpu_fp16_tflops` the
BF16/FP16 vector rate where the ISA has one (else the FP32 rate), `cpu_int8_tops` the integer dot-product
rate, at the part's maximum clock (the Jetsons publish only that; a mobile x86 part under a many-thread
llama.cpp load runs far above its base clock, and its base-clock reading measured worse:
docs/notes/notes_apucpu2.md). No vendor prints them: each is derived (cores x clock x FLOPs per
cycle), and `cpu_compute_source` shows the arithmetic and the base-clock figure.
"""

from __future__ import annotations

from typing import Any

from tokometer.catalog.schema import INT, NUM, STR, Field, Schema
from tokometer.errors import CatalogError

CPU_SCHEMA: Schema = {
    "cpu_cores": Field(INT),
    "cpu_fp32_tflops": Field(NUM),
    "cpu_fp16_tflops": Field(NUM),
    "cpu_int8_tops": Field(NUM),
    "cpu_compute_source": Field(STR),
}
CPU_PEAK_LIMIT_TFLOPS = 1e3  # a thousand TFLOPS on CPU cores: over 30x a 192-core server's AMX rate


def cpu_side(raw: dict[str, Any]) -> dict[str, Any]:
    """The `cpu_*` keys as `HardwareSpec` fields: an APU's only, FP32 rate and core count required,
    and a source that shows the derivation (it says "derived")."""
    given = {key: raw[key] for key in CPU_SCHEMA if key in raw}
    if not given:
        return {}
    if raw["kind"] != "apu":
        raise CatalogError(f"{', '.join(sorted(given))}: CPU-core peaks belong to kind \"apu\" entries (a cpu entry's own peaks are fp32_tflops...)")
    for key in ("cpu_cores", "cpu_fp32_tflops", "cpu_compute_source"):
        if key not in given:
            raise CatalogError(f"CPU-core peaks need {key}")
    if "derived" not in given["cpu_compute_source"].lower():
        raise CatalogError("cpu_compute_source must show its arithmetic and say \"derived\" (cores x clock x FLOPs per cycle)")
    if not given["cpu_cores"] > 0:
        raise CatalogError("cpu_cores must be positive")
    for key in ("cpu_fp32_tflops", "cpu_fp16_tflops", "cpu_int8_tops"):
        if key in given and not 0 < given[key] <= CPU_PEAK_LIMIT_TFLOPS:
            raise CatalogError(f"{key} = {given[key]:,g} is implausible (above 0, at most {CPU_PEAK_LIMIT_TFLOPS:,g})")
    return {key: float(v) if key.endswith(("_tflops", "_tops")) else v for key, v in given.items()}
