"""Partial pooling (`tokometer.fitting.shrinkage`, issue 25): a thin group keeps its parent's value,
a thick one its own; the level variance is estimated from the groups' spread."""

from __future__ import annotations

import random

import pytest

from tokometer.fitting.shrinkage import MIN_TAU2, LevelPrior, level_prior


def _groups(rng: random.Random, offsets: list[float], n: int, noise: float) -> dict[str, list[float]]:
    return {f"g{i}": [u + rng.gauss(0.0, noise) for _ in range(n)] for i, u in enumerate(offsets)}


def test_level_variance_recovers_the_spread_of_group_offsets() -> None:
    rng = random.Random(3)
    offsets = [rng.gauss(0.0, 0.2) for _ in range(200)]
    prior = level_prior(_groups(rng, offsets, 10, 0.1))
    assert prior.tau == pytest.approx(0.2, rel=0.15)
    assert prior.sigma2 == pytest.approx(0.01, rel=0.1)
    assert prior.n_groups == 200


def test_thin_group_keeps_its_parent_and_thick_group_its_own() -> None:
    prior = LevelPrior(tau2=0.05**2, sigma2=0.3**2, n_groups=10)  # groups agree; rows are noisy
    one_row = [0.4]
    many_rows = [0.4] * 2000
    assert abs(prior.pooled_mean(one_row)) < 0.02  # one noisy row: the parent's value (offset ~ 0)
    assert prior.pooled_mean(many_rows) == pytest.approx(0.4, rel=0.03)  # thousands of rows: its own
    assert prior.weight(0) == 0.0 and prior.pooled_mean([]) == 0.0  # no rows: exactly the parent


def test_agreeing_groups_pool_hard_and_disagreeing_groups_hardly() -> None:
    rng = random.Random(5)
    agree = level_prior(_groups(rng, [0.0] * 30, 5, 0.1))
    differ = level_prior(_groups(rng, [rng.gauss(0.0, 0.5) for _ in range(30)], 5, 0.1))
    assert agree.tau2 == pytest.approx(MIN_TAU2, abs=2e-3)
    assert agree.ridge > 10 * differ.ridge
    assert differ.weight(5) > 0.9 and agree.weight(5) < 0.5


def test_too_little_data_estimates_nothing() -> None:
    fallback = LevelPrior(tau2=0.04, sigma2=0.01, n_groups=0)
    assert level_prior({"only": [0.1, 0.2, 0.3]}, fallback).tau2 == fallback.tau2  # one group: no spread to see
    assert level_prior({"a": [0.1], "b": [0.2]}, fallback) is fallback


def test_architecture_classes_pool_among_themselves_not_with_memory_classes() -> None:
    """Two Intel GPU generations far apart (calibration.kind_level_priors) must not loosen the pooling
    of the memory-system classes (GDDR, HBM, APU...), whose spread is their own."""
    from tokometer.fitting.calibration import kind_level_priors

    rng = random.Random(7)
    memory = {f"llama-cpp/{b}/{c}": [rng.gauss(0.0, 0.1) for _ in range(8)] for b in ("cuda", "rocm", "vulkan") for c in ("gddr-gpu", "hbm-gpu")}
    arch = {"llama-cpp/sycl/xe-hpg": [0.9 + rng.gauss(0.0, 0.1) for _ in range(8)], "llama-cpp/sycl/xe2": [-0.5 + rng.gauss(0.0, 0.1) for _ in range(8)]}
    alone = kind_level_priors({k: (v, v) for k, v in memory.items()})
    both = kind_level_priors({k: (v, v) for k, v in {**memory, **arch}.items()})
    assert set(alone) == {"memory"} and set(both) == {"memory", "architecture"}
    assert both["memory"][0] == alone["memory"][0] and both["memory"][1] == alone["memory"][1]
    mixed = level_prior({**memory, **arch})  # the old single pool: the generations' gap inflates tau
    assert mixed.tau > 2 * alone["memory"][0].tau


def test_intel_discrete_gpus_are_classed_by_architecture_family() -> None:
    from tokometer.catalog import hardware_catalog

    hw = hardware_catalog()
    assert [hw.get(i).hardware_class for i in ("arc-a750", "arc-a770-8gb", "arc-a770-16gb")] == ["xe-hpg"] * 3
    assert [hw.get(i).hardware_class for i in ("arc-b570", "arc-b580", "arc-pro-b70")] == ["xe2"] * 3
    assert all(hw.get(i).architecture_source for i in ("arc-a770-16gb", "arc-b580", "arc-pro-b70"))
    assert hw.get("gaudi2").hardware_class == "hbm-gpu" and hw.get("rtx-4090").hardware_class == "gddr-gpu"
