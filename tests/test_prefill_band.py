"""Prefill and TTFT carry the 80 % band `tokometer validate` scores, next to prefill's roofline (issue 25).

`estimate` printed decode with its ceiling and band but prefill and time to first token as bare numbers,
while `validate` scored a prefill band and a TTFT band on every pp and ttft_ms row (`fitting/validation.py`).
Both now come from one routine (`usecases.estimate.prefill_band_log_sd`), and prefill shows the ceiling it
is measured against: the prompt at the datasheet peak and bandwidth.
"""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from tokometer.catalog.efficiency import multi_device_log_sd
from tokometer.cli import cli
from tokometer.costmodel.memory import weight_bytes_read
from tokometer.costmodel.roofline import Z_80, prefill_log_sd
from tokometer.domain.units import GB, TFLOP
from tokometer.fitting.rows import read_cases
from tokometer.fitting.validation import predict_case
from tokometer.usecases.estimate import estimate, prefill_band_log_sd

SETUPS = [
    dict(model="llama-3.1-8b", hw="rtx-4090", prompt_tokens=512),
    dict(model="qwen3-30b-a3b", hw="m4-max-40c", engine="mlx", quant="mlx-4bit", prompt_tokens=2048),
    dict(model="deepseek-r1", hw="h200", quant="fp8", engine="sglang", tp=8, prompt_tokens=1024),
]


@pytest.mark.parametrize("kw", SETUPS)
def test_prefill_and_ttft_bands_are_the_fit_spread_around_the_estimate(kw: dict) -> None:
    est = estimate(**kw)
    assert est.prefill is not None and est.ttft_s is not None
    band, ttft = est.prefill_interval, est.ttft_interval
    assert band is not None and ttft is not None
    sd = prefill_band_log_sd(est.efficiency, est.peak, est.layout_setup.layout.devices)
    assert sd >= prefill_log_sd(est.efficiency, est.peak)  # never narrower than the engine's own spread
    if est.layout_setup.layout.devices > 1:
        assert sd >= (multi_device_log_sd("pp") or 0.0)
    assert band.low < est.prefill.tok_s < band.high
    assert math.log(band.high / est.prefill.tok_s) == pytest.approx(Z_80 * sd)
    assert math.log(est.prefill.tok_s / band.low) == pytest.approx(Z_80 * sd)
    assert ttft.low < est.ttft_s < ttft.high
    assert math.log(ttft.high / est.ttft_s) == pytest.approx(Z_80 * sd)


@pytest.mark.parametrize("kw", SETUPS)
def test_prefill_ceiling_is_the_roofline_the_estimate_sits_under(kw: dict) -> None:
    est = estimate(**kw)
    assert est.prefill is not None and est.prefill_ceiling_tok_s is not None
    assert est.prefill.tok_s < est.prefill_ceiling_tok_s
    tp = est.layout_setup.layout.tp
    # never faster than the matmul and attention FLOPs at the datasheet peak over the TP group
    compute_bound = est.workload.prompt_tokens / (est.prefill.flops / (est.peak.tflops * TFLOP * tp))
    assert est.prefill_ceiling_tok_s <= compute_bound * (1 + 1e-9)


def test_an_offloaded_prompt_ceiling_carries_the_pcie_transfer() -> None:
    """The ceiling goes through the estimate's layout: 40 of 80 layers in RAM cross PCIe once per chunk."""
    on_gpu = estimate(model="llama-3.1-70b", hw="rtx-4090", pp=2, prompt_tokens=512)
    offloaded = estimate(model="llama-3.1-70b", hw="rtx-4090", gpu_layers=40, prompt_tokens=512)
    assert on_gpu.prefill_ceiling_tok_s is not None and offloaded.prefill_ceiling_tok_s is not None
    assert offloaded.prefill is not None and offloaded.prefill.transfer_time_s > 0
    assert offloaded.prefill.tok_s < offloaded.prefill_ceiling_tok_s < on_gpu.prefill_ceiling_tok_s / 2


def test_a_short_prompt_ceiling_is_the_weight_read() -> None:
    """Eight prompt tokens of an 8B fp16 model: reading 16 GB, not 0.1 TFLOP, bounds the prefill."""
    est = estimate(model="llama-3.1-8b", hw="rtx-4090", quant="fp16", prompt_tokens=8)
    assert est.prefill_ceiling_tok_s is not None
    read_s = weight_bytes_read(est.model, est.weights, 8) / (est.hardware.memory_bandwidth_gb_per_s * GB)
    assert est.weights.total / (est.hardware.memory_bandwidth_gb_per_s * GB) > read_s > 0.9 * est.weights.total / (
        est.hardware.memory_bandwidth_gb_per_s * GB)  # all weights but the embedding rows not looked up
    assert est.prefill_ceiling_tok_s == pytest.approx(8 / read_s)


def test_validate_scores_the_band_estimate_prints(tmp_path) -> None:
    """A pp row and a ttft_ms row: validate's interval is the estimate's, in the row's unit."""
    head = "row_id,source_id,engine,hardware_id,n_devices,model,quant,batch_size,prompt_tokens,gen_tokens,metric,unit,value"
    rows = ["p,T,llama.cpp,rtx-4090,1,llama-3.1-8b,Q4_K_M,1,512,,pp,tok/s,9000",
            "t,T,llama.cpp,rtx-4090,1,llama-3.1-8b,Q4_K_M,1,512,1,ttft_ms,ms,60"]
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([head, *rows]) + "\n")
    pp, ttft = (predict_case(c) for c in read_cases(path))
    est = estimate(model="llama-3.1-8b", hw="rtx-4090", engine="llama.cpp", quant="q4_k_m", prompt_tokens=512)
    assert pp.reason is None and ttft.reason is None, (pp.reason, ttft.reason)
    assert est.prefill_interval is not None and est.prefill is not None
    # validate predicts the row with its own reading of it (build, backend); the band's spread is the estimate's
    spread = math.log(est.prefill_interval.high / est.prefill.tok_s)
    assert pp.low is not None and pp.high is not None and pp.predicted is not None
    assert math.log(pp.high / pp.predicted) == pytest.approx(spread)
    assert math.log(pp.predicted / pp.low) == pytest.approx(spread)
    assert ttft.high is not None and ttft.predicted is not None
    assert math.log(ttft.high / ttft.predicted) == pytest.approx(spread)


def test_the_cli_prints_and_serialises_the_bands() -> None:
    res = CliRunner().invoke(cli, ["estimate", "llama-3.1-8b", "--hw", "rtx-4090", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    pre, lat = d["prefill"], d["latency"]
    assert pre["interval_tok_s"]["low"] < pre["tok_s"] < pre["interval_tok_s"]["high"] < pre["ceiling_tok_s"]
    assert lat["ttft_interval_s"]["low"] < lat["ttft_s"] < lat["ttft_interval_s"]["high"]
    text = CliRunner().invoke(cli, ["estimate", "llama-3.1-8b", "--hw", "rtx-4090"]).output
    row = next(line for line in text.splitlines() if line.startswith("prefill ("))
    assert f"{pre['ceiling_tok_s']:,.0f} tok/s" in row and f"({pre['interval_tok_s']['low']:,.0f}-" in row
    ttft_row = next(line for line in text.splitlines() if line.startswith("time to first token"))
    assert f"({lat['ttft_interval_s']['low'] * 1e3:,.0f}-{lat['ttft_interval_s']['high'] * 1e3:,.0f} ms)" in ttft_row
