"""The architecture-family level of the fit (docs/PHYSICS.md section 4, "Architecture families")."""

from __future__ import annotations

import math
import tomllib
from dataclasses import replace

import pytest

from tokometer.catalog import clear_caches, engine_catalog, hardware_catalog
from tokometer.catalog.efficiency import FAMILY_OFFSETS_KEY, efficiency_for, fitted_table
from tokometer.costmodel.roofline import decode_step, prefill
from tokometer.domain.families import FAMILIES, family_scaled
from tokometer.errors import CatalogError
from tokometer.fitting.tablefile import _toml_value
from tokometer.usecases.estimate import estimate


def test_every_gpu_and_soc_names_a_known_family_and_cpus_none() -> None:
    for hw in hardware_catalog():
        if hw.kind == "cpu":
            assert hw.family is None, hw.id
        else:
            assert hw.family in FAMILIES, hw.id
    assert hardware_catalog().get("m1-ultra-64c").family == "apple-m1"
    assert hardware_catalog().get("dgx-spark").family == "nvidia-blackwell-rtx"
    assert hardware_catalog().get("b200").family == "nvidia-blackwell"
    assert hardware_catalog().get("radeon-ai-pro-r9700").family == "amd-rdna4"


def test_an_unknown_family_in_a_users_catalog_is_a_clear_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TOKOMETER_HOME", str(tmp_path))
    (tmp_path / "hardware.toml").write_text(
        '[my-gpu]\nname = "Mine"\nvendor = "nvidia"\nfamily = "nvidia-kepler"\nkind = "gpu"\nsegment = "desktop"\n'
        'memory_gb = 8.0\nmemory_bandwidth_gb_per_s = 200.0\nfp16_tflops = 10.0\nsource = "mine"\n'
        'compute_source = "mine"\nlaunch_year = 2020\naliases = []\nmemory_type = "GDDR6"\n',
        encoding="utf-8",
    )
    clear_caches()
    try:
        with pytest.raises(CatalogError, match="nvidia-kepler"):
            hardware_catalog()
    finally:
        monkeypatch.delenv("TOKOMETER_HOME")
        clear_caches()


def _case():
    est = estimate("llama-3.1-8b", "m4-max-40c", quant="q4_k_m")
    return est.model, est.weights, est.hardware, est.efficiency, est.peak


def test_a_family_offset_scales_every_fitted_term_of_a_decode_step() -> None:
    model, weights, hw, eff, peak = _case()
    base = replace(eff, family_time_scales=(1.0, 1.0))
    offsets = {"tg": {"apple-m4": 0.2}, "pp": {"apple-m4": -0.1}}
    scaled = family_scaled(base, offsets, "apple-m4")
    m = math.exp(-0.2)
    one = decode_step(model, weights, hw, base, batch=1, depth_tokens=512)
    two = decode_step(model, weights, hw, scaled, batch=1, depth_tokens=512)
    launch = (base.launch_layer_us or 0.0) * model.n_layers * 1e-6  # documented by the engine, never fitted
    assert two.time_s - launch == pytest.approx((one.time_s - launch) * m, rel=1e-9)
    assert scaled.family_time_scales == (pytest.approx(m), pytest.approx(math.exp(0.1)))
    # prefill: the GEMM efficiencies divided by p, so a compute-bound prompt takes longer when u_pp < 0
    p1 = prefill(model, weights, hw, base, 2048, peak, quantized=True)
    p2 = prefill(model, weights, hw, scaled, 2048, peak, quantized=True)
    assert p1 is not None and p2 is not None and p2.compute_time_s > p1.compute_time_s * 1.05


def test_no_offset_or_no_family_leaves_the_entry_unchanged() -> None:
    _, _, _, eff, _ = _case()
    assert family_scaled(eff, None, "apple-m4") is eff
    assert family_scaled(eff, {"tg": {"apple-m4": 0.2}}, None) is eff
    assert family_scaled(eff, {"tg": {"apple-m1": 0.2}, "pp": {}}, "apple-m4") is eff


def test_the_shipped_fit_holds_shrunk_offsets_and_estimates_use_them() -> None:
    offsets = fitted_table().meta.get(FAMILY_OFFSETS_KEY)
    assert offsets and set(offsets) == {"tg", "pp"}
    assert set(offsets["tg"]) <= set(FAMILIES) and offsets["tg"]
    # shrunk: no family's decode offset is beyond a factor 2, and the Apple generations all have one
    assert all(abs(u) < math.log(2) for u in offsets["tg"].values())
    assert {"apple-m1", "apple-m3", "apple-m4", "apple-m5"} <= set(offsets["tg"])
    assert "amd-cdna3" not in offsets["tg"]  # one MI300X row is no observation of a family (MIN_FAMILY_ROWS)
    hw = hardware_catalog().get("m5-10c")
    u = offsets["tg"]["apple-m5"]
    eff = efficiency_for(engine_catalog().get("llama-cpp"), hw)
    assert eff.family_time_scales[0] == pytest.approx(math.exp(-u))
    assert "apple-m5 family" in eff.source
    # a CPU backend on an APU reads its cores, not its GPU family
    apu = hardware_catalog().get("ryzen-ai-max-plus-395")
    assert efficiency_for(engine_catalog().get("llama-cpp"), apu, "cpu").family_time_scales == (1.0, 1.0)
    est = estimate("llama-3.1-8b", "m5-10c", quant="q4_k_m")
    assert "apple-m5 family" in est.efficiency.source


def test_offsets_write_as_an_inline_table_that_reads_back() -> None:
    value = {"tg": {"amd-rdna3.5": -0.05, "apple-m1": 0.12}, "pp": {}}
    text = f"{FAMILY_OFFSETS_KEY} = {_toml_value(value)}\n"
    assert tomllib.loads(text)[FAMILY_OFFSETS_KEY] == value
