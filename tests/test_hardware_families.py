"""A bare family name ("A100", "M2 Ultra", "RTX 4060 Ti") resolves to one chosen variant, and the estimate
says which one it assumed and names the others (issue #14): never a catch-all entry, never silently."""

from __future__ import annotations

import pytest

from tokometer.catalog import hardware_catalog
from tokometer.report.json import estimate_warnings
from tokometer.usecases.estimate import estimate
from tokometer.usecases.policy import FAMILY_VARIANTS
from tokometer.usecases.resolve import hardware_variants, resolve_hardware

# every family the catalog holds in more than one variant, typed as people type it, with the variant chosen
FAMILIES = {
    "A100": "a100-80gb-sxm",
    "A100 40GB": "a100-40gb-sxm",
    "A100 80GB": "a100-80gb-sxm",
    "H100": "h100-sxm",
    "H200": "h200",
    "GH200": "gh200",
    "V100": "v100-sxm2-32gb",
    "V100 PCIe": "v100-pcie-32gb",
    "P100": "p100-pcie-16gb",
    "MI250X": "mi250x",
    "RTX 3050": "rtx-3050",
    "RTX 3080": "rtx-3080-10gb",
    "RTX 4060 Ti": "rtx-4060-ti-16gb",
    "RTX 5060 Ti": "rtx-5060-ti-16gb",
    "Arc A770": "arc-a770-16gb",
    "RTX A2000": "rtx-a2000",
    "RTX PRO 6000 Blackwell": "rtx-pro-6000-blackwell",
    "M1": "m1-8c",
    "M1 Max": "m1-max-32c",
    "M1 Ultra": "m1-ultra-64c",
    "M2 Max": "m2-max-38c",
    "M2 Ultra": "m2-ultra-60c",
    "M3 Max": "m3-max-40c",
    "M3 Ultra": "m3-ultra-80c",
    "M4 Max": "m4-max-40c",
    "Jetson AGX Orin 64GB": "jetson-agx-orin-64gb",  # MAXN; the MODE_30W entry is its variant
}


@pytest.mark.parametrize(("typed", "chosen"), FAMILIES.items())
def test_a_family_name_resolves_to_its_chosen_variant_and_says_so(typed: str, chosen: str) -> None:
    e = estimate("llama-3.1-8b", typed)
    assert e.hardware.id == chosen
    notes = [w for w in estimate_warnings(e) if "names several devices" in w]
    assert len(notes) == 1, estimate_warnings(e)
    others = hardware_variants(typed, e.hardware)
    assert others and chosen not in {o.id for o in others}
    assert e.hardware.name in notes[0] and all(o.id in notes[0] for o in others)


def test_every_multi_variant_family_in_the_catalog_is_listed() -> None:
    """Every name the catalog knows that is the start of several ids (`h100` of `h100-sxm`, `h100-pcie`...)
    is in FAMILIES: a new variant in the catalog takes its family into this test."""
    catalog = hardware_catalog()
    keys = {"-".join(hw_id.split("-")[:n]) for hw_id in catalog.ids for n in range(1, hw_id.count("-") + 2)}
    families = {key for key in keys if catalog.find(key) is not None and hardware_variants(key, resolve_hardware(key))}
    assert len(families) >= 15
    typed = {resolve_hardware(name).id: name for name in FAMILIES}
    assert sorted(f for f in families if resolve_hardware(f).id not in typed) == []


def test_catch_all_entries_are_never_what_a_name_gives() -> None:
    for catch_all, chosen in FAMILY_VARIANTS.items():
        assert resolve_hardware(catch_all).id == chosen
        assert hardware_catalog().get(chosen).memory_gb > 0  # the chosen variant exists, with its source
        assert hardware_catalog().get(chosen).source.startswith("https://")


@pytest.mark.parametrize("typed", ["MI300", "a100-40gb-sxm", "m2-ultra-76c", "rtx-4090", "M2 Pro"])
def test_one_device_names_resolve_without_a_note(typed: str) -> None:
    e = estimate("llama-3.1-8b", typed)
    assert not any("names several devices" in w for w in estimate_warnings(e)), estimate_warnings(e)
    assert typed != "MI300" or e.hardware.id == "mi300x"
