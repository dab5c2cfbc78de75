"""The prefill fit reads a quantized row's half-saturation term as the estimate does, T_half / eta_quant
(issue 25): one T_half in tokens for plain and block-quantized weights, fitted consistently."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokometer.costmodel.layout import IDEAL
from tokometer.fitting.calibration import fit_prefill
from tokometer.fitting.features import Features, predicted_time
from tokometer.fitting.rows import Case

CASE = Case(row_id="x", line=2, raw={}, metric="pp", value=1.0, n_devices=1, batch=1, prompt_tokens=1, gen_tokens=0, flag="")
PRIOR = replace(IDEAL, prefill_efficiency_max=0.5, prefill_half_tokens=128.0, prefill_chunk_tokens=4096)
NO_OVERHEADS = {"layer_overhead_us": 0.0, "step_overhead_us": 0.0}


def _rows(quantized: bool, eta_max: float, half_tokens: float, lengths: tuple[int, ...] = (16, 64, 256, 1024, 4096)) -> list[Features]:
    rows = []
    for tokens in lengths:
        matmul_s = tokens * 1e-4
        t = matmul_s / (eta_max * tokens / (tokens + half_tokens))
        rows.append(
            Features(case=CASE, group="e/b/c", engine_id="e", backend="b", hardware_id="h", prior=PRIOR,
                     t_measured_s=t, matmul_s=matmul_s, prompt_tokens=tokens, n_layers=1, quantized=quantized)
        )
    return rows


def test_a_shared_half_length_is_recovered_with_each_kinds_eta() -> None:
    plain = _rows(False, 0.08, 150.0, (512,))  # one length of BF16 rows at a slow (vector-rate-like) share
    quant = _rows(True, 0.6, 150.0)
    fitted = fit_prefill(plain + quant, PRIOR, NO_OVERHEADS, ridge=1e-6)  # the rows alone
    assert fitted["prefill_half_tokens"] == pytest.approx(150.0, rel=0.03)
    assert fitted["quantized_prefill_efficiency_max"] == pytest.approx(0.6, rel=0.03)
    assert fitted["prefill_efficiency_max"] == pytest.approx(0.08, rel=0.03)


def test_the_fit_and_the_estimate_read_quantized_rows_alike() -> None:
    """With eta_plain 7.5x below eta_quant, a half term shared as T_half / eta_plain (the fit before) put the
    quantized rows' predicted times far from what the fit had solved for."""
    plain = _rows(False, 0.08, 150.0, (512,))
    quant = _rows(True, 0.6, 150.0)
    eff = replace(PRIOR, **fit_prefill(plain + quant, PRIOR, NO_OVERHEADS, ridge=1e-6))
    for f in plain + quant:
        assert predicted_time(f, eff) == pytest.approx(f.t_measured_s, rel=0.03)


def test_plain_rows_at_one_length_do_not_move_the_quantized_prediction() -> None:
    """BF16 rows read at a rate 8x apart (an Arc card's XMX or vector peak) change eta_plain, not the
    quantized rows' fitted times (the previous helper's T_half 133 -> 316 on SYCL/Xe2)."""
    quant = _rows(True, 0.6, 150.0)
    slow = fit_prefill(_rows(False, 0.08, 150.0, (512,)) + quant, PRIOR, NO_OVERHEADS)
    fast = fit_prefill(_rows(False, 0.64, 150.0, (512,)) + quant, PRIOR, NO_OVERHEADS)
    for f in quant:
        assert predicted_time(f, replace(PRIOR, **slow)) == pytest.approx(predicted_time(f, replace(PRIOR, **fast)), rel=0.05)
