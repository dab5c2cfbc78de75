"""Hardware families: the groups a user's device falls in, for per-family error and band coverage.

`validate` and the README tables report every metric per family as well as overall, because a fit
can be right on average and wrong one way on a whole family (Apple too slow, datacenter cards too
fast); the band must hold where the user is, not only on the mix of devices the data happen to hold.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tokometer.fitting.rows import CaseResult
from tokometer.fitting.validation import summarise

FAMILIES = ("Apple", "NVIDIA consumer", "datacenter", "AMD and Intel GPUs", "APUs and CPUs")
FAMILY_METRICS = ("tg", "pp")


def hardware_family(hardware_id: str | None) -> str:
    """Apple (any Apple chip), datacenter (any vendor's datacenter part), NVIDIA consumer (desktop,
    laptop and workstation cards), AMD and Intel GPUs (their consumer and workstation cards), APUs
    and CPUs (unified-memory PCs, Jetsons, CPUs); a device the catalog lacks counts as the last."""
    from tokometer.catalog import hardware_catalog

    hw = hardware_catalog().find(hardware_id or "")
    if hw is None:
        return "APUs and CPUs"
    if hw.vendor == "apple":
        return "Apple"
    if hw.segment == "datacenter":
        return "datacenter"
    if hw.kind in ("cpu", "apu", "soc"):
        return "APUs and CPUs"
    return "NVIDIA consumer" if hw.vendor == "nvidia" else "AMD and Intel GPUs"


def family_report(results: Iterable[CaseResult], single_device: bool = True) -> dict[str, dict[str, Any]]:
    """`summarise` per family and metric (tg, pp), single-device rows by default; empty families left out."""
    rows = [r for r in results if r.case.n_devices == 1 or not single_device]
    out: dict[str, dict[str, Any]] = {}
    for name in FAMILIES:
        mine = [r for r in rows if hardware_family(r.hardware_id) == name]
        metrics = {m: summarise(mine, m) for m in FAMILY_METRICS}
        if any(v["n"] for v in metrics.values()):
            out[name] = metrics
    return out
