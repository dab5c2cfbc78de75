"""The GPU architecture inside the unified-memory APU class (issue #25): `apu:ampere` (Jetson Orin),
`apu:blackwell` (DGX Spark GB10, Jetson Thor), `apu:rdna3.5` (Strix Halo) are a fit level below `apu`,
each shrunk toward the class, and a sub-class without rows reads the class's entry with a wider band."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

import pytest

from tokometer.catalog import _architecture, engine_catalog, hardware_catalog
from tokometer.catalog.efficiency import GroupKey, efficiency_for
from tokometer.costmodel.layout import IDEAL
from tokometer.errors import CatalogError
from tokometer.fitting.calibration import fit_table, lookup, matches
from tokometer.fitting.features import Features, predicted_time

BASE = replace(IDEAL, bandwidth_fraction=0.8, layer_overhead_us=30.0, step_overhead_us=500.0)


def test_apus_are_classed_by_their_gpu_architecture() -> None:
    hw = hardware_catalog()
    orin = ("jetson-agx-orin-64gb", "jetson-agx-orin-32gb", "jetson-agx-orin-devkit-32gb", "jetson-agx-orin-64gb-30w")
    assert [hw.get(i).hardware_class for i in orin] == ["apu:ampere"] * 4
    assert [hw.get(i).hardware_class for i in ("dgx-spark", "jetson-agx-thor")] == ["apu:blackwell"] * 2
    assert hw.get("ryzen-ai-max-plus-395").hardware_class == "apu:rdna3.5"
    assert all(hw.get(i).architecture_source for i in (*orin, "dgx-spark", "jetson-agx-thor", "ryzen-ai-max-plus-395"))
    # discrete cards and Apple are untouched
    assert hw.get("rtx-4090").hardware_class == "gddr-gpu" and hw.get("arc-b580").hardware_class == "xe2"


def test_an_apu_architecture_on_a_discrete_card_is_refused() -> None:
    entry = {"kind": "gpu", "architecture": "ampere", "architecture_source": "s"}
    with pytest.raises(CatalogError, match="kind must be apu"):
        _architecture(entry)
    with pytest.raises(CatalogError, match="is not one of"):
        _architecture({**entry, "kind": "apu", "architecture": "hopper"})
    assert _architecture({**entry, "kind": "apu"}) == {"architecture": "ampere", "architecture_source": "s"}


def test_a_sub_class_falls_back_to_its_class_before_the_backend() -> None:
    key = GroupKey.parse("llama-cpp/cuda/apu:ampere")
    assert key.parent_class == "apu" and GroupKey.parse("llama-cpp/cuda/apu").parent_class is None
    assert key.fallbacks() == (
        "llama-cpp/cuda/apu:ampere", "llama-cpp/cuda/apu", "llama-cpp/cuda/*",
        "llama-cpp/*/apu:ampere", "llama-cpp/*/apu", "llama-cpp/*/*",
    )
    assert matches("llama-cpp/cuda/apu:ampere", "llama-cpp/cuda/apu")  # the class covers its sub-classes
    assert matches("llama-cpp/cuda/apu:ampere", "llama-cpp/*/*")
    assert not matches("llama-cpp/cuda/apu:ampere", "llama-cpp/cuda/apu:blackwell")
    assert not matches("llama-cpp/cuda/apu", "llama-cpp/cuda/apu:ampere")  # a class is not its sub-class


@dataclass(frozen=True)
class _Row:
    metric: str = "tg"
    source: str = "S"

    def text(self, key: str) -> str:
        return self.source if key == "source_id" else ""


def _rows(arch: str, slowdown: float, n: int, seed: int) -> list[Features]:
    rng = random.Random(seed)
    truth = replace(BASE, bandwidth_fraction=0.8 / slowdown, step_overhead_us=500.0 * slowdown)
    rows = []
    for _ in range(n):
        f = Features(
            case=_Row(),  # type: ignore[arg-type]
            group=f"llama-cpp/cuda/apu:{arch}", engine_id="llama-cpp", backend="cuda", hardware_id=f"hw-{arch}",
            prior=BASE, t_measured_s=1.0, memory_s=rng.uniform(2e-3, 5e-2), n_layers=rng.choice([28, 40, 60]),
        )
        rows.append(replace(f, t_measured_s=predicted_time(f, truth) * rng.uniform(0.97, 1.03)))
    return rows


def test_each_architecture_keeps_its_own_rate_under_the_apu_class() -> None:
    ampere, blackwell = _rows("ampere", 2.0, 80, 1), _rows("blackwell", 1.0, 80, 2)
    table = fit_table(ampere + blackwell)
    assert {"llama-cpp/cuda/apu", "llama-cpp/cuda/apu:ampere", "llama-cpp/cuda/apu:blackwell"} <= set(table)
    for rows, want in ((ampere, 2.0), (blackwell, 1.0)):
        own = lookup(table, rows[0].group)
        assert own is not None
        errors = sorted(abs(predicted_time(f, own) / f.t_measured_s - 1) for f in rows)
        assert errors[len(errors) // 2] < 0.05  # each architecture predicts its own rows
        slow = sorted(predicted_time(f, own) / predicted_time(f, table["llama-cpp/cuda/apu"]) for f in rows)
        assert (slow[len(slow) // 2] > 1.2) if want == 2.0 else (slow[len(slow) // 2] < 0.9)
    # an architecture the fit never saw (Strix Halo's under CUDA does not exist; any new one) reads the class
    assert lookup(table, "llama-cpp/cuda/apu:rdna3.5") is table["llama-cpp/cuda/apu"]


def test_an_unseen_architecture_borrows_the_class_with_a_wider_band() -> None:
    engine = engine_catalog().get("llama-cpp")
    orin = hardware_catalog().get("jetson-agx-orin-devkit-32gb")
    parent = replace(BASE, residual_log_sd=0.1, prefill_residual_log_sd=0.2, source="fitted")
    meta = {"unseen_architecture_log_sd": 0.3, "unseen_architecture_prefill_log_sd": 0.4}
    borrowed = efficiency_for(engine, orin, entries={"llama-cpp/cuda/apu": parent}, meta=meta)
    assert borrowed.residual_log_sd == pytest.approx((0.1**2 + 0.3**2) ** 0.5)
    assert borrowed.prefill_residual_log_sd == pytest.approx((0.2**2 + 0.4**2) ** 0.5)
    assert "no measured rows for this architecture" in borrowed.source
    own = replace(parent, bandwidth_fraction=0.5)
    found = efficiency_for(engine, orin, entries={"llama-cpp/cuda/apu": parent, "llama-cpp/cuda/apu:ampere": own}, meta=meta)
    assert found.bandwidth_fraction == 0.5 and found.residual_log_sd == pytest.approx(0.1)
    # a table fitted before the level existed (no unseen_architecture_* in its meta) reads the class unchanged
    assert efficiency_for(engine, orin, entries={"llama-cpp/cuda/apu": parent}, meta={}).residual_log_sd == pytest.approx(0.1)


def test_a_class_with_one_architecture_has_no_sub_class_entry() -> None:
    """Strix Halo is the only APU under Vulkan: its sub-class would refit the class's own rows."""
    table = fit_table(_rows("rdna3.5", 1.5, 60, 3))
    assert "llama-cpp/cuda/apu" in table and "llama-cpp/cuda/apu:rdna3.5" not in table
    assert lookup(table, "llama-cpp/cuda/apu:rdna3.5") is table["llama-cpp/cuda/apu"]
