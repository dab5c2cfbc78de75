"""Unit constants. Sizes and bandwidths are decimal, as vendors publish them (docs/PHYSICS.md, Units).

Every quantity in tokometer carries its unit in its name (`memory_bandwidth_gb_per_s`,
`step_time_s`); conversions happen once, at the edges, with these constants.
"""

from __future__ import annotations

from typing import Final

KB: Final = 1e3
MB: Final = 1e6
GB: Final = 1e9
TB: Final = 1e12
KIB: Final = 1024.0
MIB: Final = 1024.0**2
GIB: Final = 1024.0**3

TFLOP: Final = 1e12
BITS_PER_BYTE: Final = 8.0
US: Final = 1e-6
NS: Final = 1e-9
MS: Final = 1e-3
BILLION: Final = 1e9


def gib_to_gb(size_gib: float) -> float:
    """Binary gibibytes (llama-bench, nvidia-smi) to decimal gigabytes."""
    return size_gib * GIB / GB
