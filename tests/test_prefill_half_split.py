"""Plain and block-quantized weights each have their own prefill half-saturation length (issue 25):
the fit recovers both, and the prediction reads each row back with the T_half its weights were fitted with."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokometer.costmodel.layout import IDEAL
from tokometer.domain.specs import Efficiency
from tokometer.fitting.calibration import fit_prefill
from tokometer.fitting.features import Features, predicted_time
from tokometer.fitting.rows import Case

CASE = Case(row_id="x", line=2, raw={}, metric="pp", value=1.0, n_devices=1, batch=1, prompt_tokens=1, gen_tokens=0, flag="")
PRIOR = replace(IDEAL, prefill_efficiency_max=0.5, prefill_half_tokens=128.0, prefill_chunk_tokens=4096)
NO_OVERHEADS = {"layer_overhead_us": 0.0, "step_overhead_us": 0.0}


def _rows(quantized: bool, eta_max: float, half_tokens: float) -> list[Features]:
    rows = []
    for tokens in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096):
        matmul_s = tokens * 1e-4
        t = matmul_s / (eta_max * tokens / (tokens + half_tokens))
        rows.append(
            Features(case=CASE, group="e/b/c", engine_id="e", backend="b", hardware_id="h", prior=PRIOR,
                     t_measured_s=t, matmul_s=matmul_s, prompt_tokens=tokens, n_layers=1, quantized=quantized)
        )
    return rows


def test_plain_and_quantized_half_lengths_are_fitted_apart() -> None:
    plain = _rows(False, 0.25, 400.0)  # a dequantize-to-f32 GEMM: slow and wide tiles
    quant = _rows(True, 0.6, 40.0)  # an MMQ kernel: fast, saturated early
    fitted = fit_prefill(plain + quant, PRIOR, NO_OVERHEADS, ridge=1e-6)  # the rows alone
    assert fitted["prefill_half_tokens"] == pytest.approx(400.0, rel=0.02)
    assert fitted["quantized_prefill_half_tokens"] == pytest.approx(40.0, rel=0.02)
    assert fitted["prefill_efficiency_max"] == pytest.approx(0.25, rel=0.02)
    assert fitted["quantized_prefill_efficiency_max"] == pytest.approx(0.6, rel=0.02)
    # with the default ridge the two still come apart, the quantized one the shorter
    ridged = fit_prefill(plain + quant, PRIOR, NO_OVERHEADS)
    assert ridged["quantized_prefill_half_tokens"] < 0.75 * ridged["prefill_half_tokens"]


def test_the_prediction_reads_each_row_with_its_own_half_length() -> None:
    plain = _rows(False, 0.25, 400.0)
    quant = _rows(True, 0.6, 40.0)
    fitted = fit_prefill(plain + quant, PRIOR, NO_OVERHEADS, ridge=1e-6)
    eff = replace(PRIOR, **fitted)
    for f in plain + quant:  # what the fit solved is what the estimate computes (no shared T_half / eta_plain)
        assert predicted_time(f, eff) == pytest.approx(f.t_measured_s, rel=0.02)


def test_without_quantized_rows_the_quantized_half_length_is_the_parents() -> None:
    parent = replace(PRIOR, quantized_prefill_half_tokens=70.0, quantized_prefill_efficiency_max=0.4)
    fitted = fit_prefill(_rows(False, 0.25, 400.0), parent, NO_OVERHEADS, ridge=1e-6)
    assert fitted["quantized_prefill_half_tokens"] == pytest.approx(70.0)
    assert fitted["prefill_half_tokens"] == pytest.approx(400.0, rel=0.02)


def test_an_entry_without_a_quantized_half_length_reads_the_plain_one() -> None:
    eff: Efficiency = replace(PRIOR, prefill_half_tokens=90.0)
    assert eff.prefill_half_for(True) == 90.0
    assert replace(eff, quantized_prefill_half_tokens=30.0).prefill_half_for(True) == 30.0
    assert replace(eff, quantized_prefill_half_tokens=30.0).prefill_half_for(False) == 90.0
