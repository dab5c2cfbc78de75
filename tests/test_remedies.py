"""A setup that does not fit says so first and names the nearest setups that do (issue #14, item 2)."""

from __future__ import annotations

import pytest
from tests.helpers import run_cli

from tokometer.report.json import estimate_json
from tokometer.usecases.estimate import estimate


def test_each_remedy_is_an_estimate_that_fits() -> None:
    e = estimate("llama-3.1-8b", "rtx-4060", quant="bf16")
    assert not e.fits and {r.kind for r in e.remedies} == {"quant", "offload", "devices"}
    for r in e.remedies:
        change = {"quant": {"quant": r.quant}, "offload": {"gpu_layers": r.gpu_layers}, "devices": {"pp": r.pp, "tp": r.tp}}
        setup = {"quant": "bf16", "engine": e.engine.id, **change[r.kind]}
        again = estimate("llama-3.1-8b", "rtx-4060", **setup)
        assert again.fits, r
        assert again.estimate_tok_s == pytest.approx(r.estimate_tok_s, rel=1e-12)
        assert r.memory_gb <= r.available_gb
    quant = next(r for r in e.remedies if r.kind == "quant")
    assert quant.quant == "q6-k"  # the best ladder step below BF16 that fits 7.8 GB (Q8_0 needs 9.4)


def test_the_offload_remedy_keeps_the_most_layers_that_fit() -> None:
    e = estimate("llama-3.1-70b", "rtx-4090", quant="q4_k_m")
    off = next(r for r in e.remedies if r.kind == "offload")
    assert off.gpu_layers is not None
    assert estimate("llama-3.1-70b", "rtx-4090", quant="q4_k_m", gpu_layers=off.gpu_layers).fits
    assert not estimate("llama-3.1-70b", "rtx-4090", quant="q4_k_m", gpu_layers=off.gpu_layers + 1).fits


def test_a_setup_that_fits_has_no_remedy_and_the_json_names_it() -> None:
    fits = estimate_json(estimate("llama-3.1-8b", "rtx-4090"))["fit"]
    assert fits == {"fits": True, "speeds_if_it_fit": False, "headline": None, "remedies": []}
    nofit = estimate_json(estimate("llama-3.1-70b", "rtx-4090", quant="q4_k_m"))["fit"]
    assert nofit["fits"] is False and nofit["speeds_if_it_fit"] is True
    assert nofit["headline"].startswith("does not fit: needs 44.2 GB") and len(nofit["remedies"]) == 2


def test_advise_off_computes_no_remedy() -> None:
    assert estimate("llama-3.1-70b", "rtx-4090", quant="q4_k_m", advise=False).remedies == ()


def test_the_cli_says_does_not_fit_before_any_speed() -> None:
    r = run_cli("estimate", "llama-3.1-70b", "--hw", "rtx-4090", "-q", "q4_k_m")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("DOES NOT FIT"))
    first_speed = next(i for i, line in enumerate(lines) if "tok/s" in line and not line.startswith("  - "))
    assert verdict < first_speed
    assert "ceiling if it fit" in r.out and "feel (if it fit):" in r.out
    assert "(--gpu-layers " in r.out and "(--pp 2)" in r.out
    fits = run_cli("estimate", "llama-3.1-8b", "--hw", "rtx-4090")
    assert "if it fit" not in fits.out and "DOES NOT FIT" not in fits.out
