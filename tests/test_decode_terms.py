"""The decode stream's terms beyond W / (eta BW): KV efficiency, unfused attention scores, inline ECC,
unhidden matvec arithmetic (docs/PHYSICS.md section 4), and that the fit recovers them."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from tokometer.catalog import hardware_catalog, make_efficiency, model_catalog
from tokometer.costmodel.layout import IDEAL
from tokometer.costmodel.roofline import (
    Peak,
    alu_peak_tflops,
    decode_score_elements,
    decode_step,
    unhidden_alu_time_s,
)
from tokometer.domain.specs import Efficiency
from tokometer.domain.units import GB, TFLOP
from tokometer.errors import CatalogError
from tokometer.fitting.calibration import fit_decode
from tokometer.fitting.features import Features, predicted_time

LLAMA_70B = model_catalog().get("llama-3-70b").spec
BASE = replace(IDEAL, bandwidth_fraction=0.8)


def _step(eff: Efficiency, hw_id: str = "rtx-4090", depth: float = 4096.0, batch: int = 1):  # type: ignore[no-untyped-def]
    hw = hardware_catalog().get(hw_id)
    return decode_step(LLAMA_70B, LLAMA_70B.params, hw, eff, batch=batch, depth_tokens=depth, peak=Peak(None, None))


def test_decode_scores_count_query_heads_times_depth() -> None:
    # Llama 3 70B: 80 layers x 64 query heads, one score per cached token
    assert decode_score_elements(LLAMA_70B, 1000.0) == pytest.approx(80 * 64 * 1000.0)
    assert decode_score_elements(LLAMA_70B, 0.0) == 0.0


def test_score_term_is_bytes_per_score_over_bandwidth_per_stream() -> None:
    hw = hardware_catalog().get("rtx-4090")
    plain = _step(BASE, batch=3)
    scored = _step(replace(BASE, decode_score_bytes=500.0), batch=3)
    want = 3 * 500.0 * decode_score_elements(LLAMA_70B, 4096.0) / (hw.memory_bandwidth_gb_per_s * GB)
    assert scored.memory_time_s - plain.memory_time_s == pytest.approx(want)
    assert scored.score_time_s == pytest.approx(want)


def test_kv_traffic_uses_its_own_efficiency() -> None:
    hw = hardware_catalog().get("rtx-4090")
    plain = _step(BASE)
    slow_kv = _step(replace(BASE, kv_bandwidth_fraction=0.4))
    kv = plain.kv_read_bytes + plain.kv_write_bytes
    bw = hw.memory_bandwidth_gb_per_s * GB
    assert slow_kv.memory_time_s - plain.memory_time_s == pytest.approx(kv / (0.4 * bw) - kv / (0.8 * bw))


def test_inline_ecc_is_datacenter_gddr_only_and_costs_bytes() -> None:
    cat = hardware_catalog()
    assert cat.get("a40").inline_ecc and cat.get("l40s").inline_ecc
    assert not any(cat.get(h).inline_ecc for h in ("rtx-a6000", "rtx-4090", "h100-pcie", "m2-ultra-76c"))
    eff = replace(BASE, inline_ecc_overhead=0.1)
    on, off = _step(eff, "a40"), _step(BASE, "a40")
    assert on.memory_time_s - off.memory_time_s == pytest.approx(0.1 * on.bytes / (cat.get("a40").memory_bandwidth_gb_per_s * GB))
    assert _step(eff, "rtx-a6000").memory_time_s == pytest.approx(_step(BASE, "rtx-a6000").memory_time_s)


def test_alu_term_is_ops_per_weight_over_the_shader_or_dot_product_peak() -> None:
    cat = hardware_catalog()
    eff = replace(BASE, decode_alu_flops_per_weight=6.0)
    a100 = cat.get("a100-80gb-sxm")
    assert alu_peak_tflops(a100) == a100.fp32_tflops  # shader fp32, not the 312 TFLOPS tensor peak
    assert unhidden_alu_time_s(LLAMA_70B, a100, eff) == pytest.approx(6.0 * LLAMA_70B.matmul_params_per_token() / (19.5 * TFLOP))
    cpu = cat.get("ddr5-6000-dual-channel")
    assert alu_peak_tflops(cpu) == cpu.fp16_tflops  # dot-product instructions on a CPU
    assert unhidden_alu_time_s(LLAMA_70B, a100, BASE) == 0.0
    # once per step: a batch of streams shares the dequantization
    assert _step(eff, "a100-80gb-sxm", batch=8).alu_time_s == _step(eff, "a100-80gb-sxm", batch=1).alu_time_s


@pytest.mark.parametrize(
    ("key", "value"),
    [("decode_score_bytes", -1.0), ("decode_alu_flops_per_weight", -0.5), ("inline_ecc_overhead", -0.1), ("kv_bandwidth_fraction", 1.5)],
)
def test_catalog_rejects_impossible_decode_terms(key: str, value: float) -> None:
    raw = {"bandwidth_fraction": 0.8, "layer_overhead_us": 10.0, "step_overhead_us": 100.0, "prefill_efficiency_max": 0.5, "prefill_half_tokens": 100.0}
    assert make_efficiency(raw, "test", "x").decode_score_bytes == 0.0
    with pytest.raises(CatalogError, match=key):
        make_efficiency({**raw, key: value}, "test", "x")


def test_fit_recovers_known_decode_terms_from_synthetic_rows() -> None:
    truth = replace(
        BASE,
        bandwidth_fraction=0.85,
        quantized_bandwidth_fraction=0.75,
        # KV reads stream like weights: the fit pins their share near the prior's (KV_PRIOR_SCALE), 0.7 here
        kv_bandwidth_fraction=0.7,
        decode_alu_flops_per_weight=6.0,
        decode_score_bytes=300.0,
        inline_ecc_overhead=0.08,
        layer_overhead_us=30.0,
        step_overhead_us=400.0,
    )
    rng = random.Random(7)
    rows = []
    for _ in range(60):
        f = Features(
            case=None,  # type: ignore[arg-type]
            group="llama-cpp/cuda/gddr-gpu",
            engine_id="llama-cpp",
            backend="cuda",
            hardware_id="x",
            prior=BASE,
            t_measured_s=1.0,
            memory_s=rng.uniform(2e-3, 5e-2),
            kv_s=rng.uniform(0, 5e-3),
            alu_s=rng.uniform(1e-5, 1e-3),
            decode_score_s=rng.uniform(0, 2e-5),
            ecc_s=rng.uniform(2e-3, 5e-2) if rng.random() < 0.3 else 0.0,
            quantized=rng.random() < 0.5,
            n_layers=rng.choice([32, 80]),
        )
        t = predicted_time(replace(f, case=type("C", (), {"metric": "tg"})()), truth)  # type: ignore[arg-type]
        rows.append(replace(f, t_measured_s=t))
    fitted = fit_decode(rows, replace(BASE, bandwidth_fraction=0.7, layer_overhead_us=25.0, step_overhead_us=300.0))
    assert fitted["bandwidth_fraction"] == pytest.approx(0.85, rel=0.03)
    assert fitted["quantized_bandwidth_fraction"] == pytest.approx(0.75, rel=0.03)
    assert fitted["kv_bandwidth_fraction"] == pytest.approx(0.7, rel=0.03)
    assert fitted["decode_alu_flops_per_weight"] == pytest.approx(6.0, rel=0.1)
    # the score term grows with depth as KV reads do; with the KV share held to its prior, the two no
    # longer trade off freely and s_dec lands within 15 % of the truth (10 % when the KV share was free)
    assert fitted["decode_score_bytes"] == pytest.approx(300.0, rel=0.15)
    # the ridge pulls e_ecc a little toward its prior (0.1); it still sits nearer the truth than the prior
    assert abs(fitted["inline_ecc_overhead"] - 0.08) < abs(fitted["inline_ecc_overhead"] - 0.12)
    assert fitted["inline_ecc_overhead"] == pytest.approx(0.08, abs=0.025)


def test_estimates_run_fused_decode_attention_while_calibration_rows_keep_the_unfused_term() -> None:
    from tokometer.catalog import engine_catalog
    from tokometer.catalog.efficiency import efficiency_for

    engine, hw = engine_catalog().get("llama-cpp"), hardware_catalog().get("rtx-4090")
    measured = efficiency_for(engine, hw, unfused_decode_attention=True)
    assert measured.decode_score_bytes > 0  # fitted on llama.cpp builds without flash attention
    assert measured.attention_score_bytes > 0  # prefill's score traffic, fitted on the same builds
    # flash attention (today's default) keeps the scores on chip in decode and in prefill alike
    assert efficiency_for(engine, hw) == replace(measured, decode_score_bytes=0.0, attention_score_bytes=0.0)


_MINIMAL = {"bandwidth_fraction": 0.8, "layer_overhead_us": 30.0, "step_overhead_us": 500.0,
            "prefill_efficiency_max": 0.8, "prefill_half_tokens": 64.0}


def test_mlx_kv_stream_cap_holds_the_kv_read_on_apple_gpus_only() -> None:
    """MLX's decode attention streams about 180 GB/s from the cache whatever the bus (C_kv, engines.toml):
    on an M3 Max (400 GB/s) the KV term reads at 180 GB/s, the weights keep their own share, and a CUDA
    device (no such kernel) is untouched."""
    from tokometer.catalog import engine_catalog

    # shipped (engines.toml, chosen under leave-one-source-out): every engine that runs MLX's kernels (based_on mlx)
    # must carry the same value, since a pooled group's fit takes its first row's engine default as the prior (a
    # child without the cap made the cap inert in the fit)
    mlx_cap = engine_catalog().get("mlx").efficiency.kv_stream_gb_per_s
    assert mlx_cap == 180.0
    children = [e for e in engine_catalog() if e.based_on == "mlx"]
    assert children and all(e.efficiency.kv_stream_gb_per_s == mlx_cap for e in children)
    assert make_efficiency({**_MINIMAL, "kv_stream_gb_per_s": 180.0}, "t", "t").kv_stream_gb_per_s == 180.0
    eff = replace(BASE, bandwidth_fraction=0.85, kv_bandwidth_fraction=0.85, kv_stream_gb_per_s=180.0)
    m3 = hardware_catalog().get("m3-max-40c-64gb")
    on_m3 = eff.for_hardware(m3)
    assert on_m3.kv_fraction_for(False) * m3.memory_bandwidth_gb_per_s == pytest.approx(180.0)
    assert on_m3.bandwidth_fraction == pytest.approx(eff.for_hardware(replace(m3, backend="cuda")).bandwidth_fraction)
    assert on_m3.for_hardware(m3) == on_m3  # folded once
    gpu = hardware_catalog().get("rtx-4090")
    assert eff.for_hardware(gpu).kv_fraction_for(False) == pytest.approx(0.85)
    # a small bus below the cap is not held by it: an M2 Pro's 200 GB/s x 0.85 < 180
    m2 = replace(m3, memory_bandwidth_gb_per_s=200.0, compute_units=None)
    assert eff.for_hardware(m2).kv_fraction_for(False) == pytest.approx(0.85)


def test_fit_reads_capped_kv_rows_at_the_cap_and_recovers_the_other_terms() -> None:
    """Rows whose KV stream the cap holds carry that time as known; the fit recovers eta_bw and the overheads,
    and `predicted_time` takes the slower of eta_kv and the cap, as the estimate does."""
    truth = replace(BASE, bandwidth_fraction=0.8, kv_bandwidth_fraction=0.8, layer_overhead_us=40.0, step_overhead_us=500.0,
                    kv_stream_gb_per_s=180.0)
    rng = random.Random(11)
    rows = []
    for _ in range(60):
        f = Features(
            case=type("C", (), {"metric": "tg"})(),  # type: ignore[arg-type]
            group="mlx/metal/apple", engine_id="mlx", backend="metal", hardware_id="m3-max-40c-64gb", prior=BASE,
            t_measured_s=1.0, memory_s=rng.uniform(5e-3, 5e-2), kv_s=rng.uniform(0, 2e-2), n_layers=rng.choice([40, 64]),
            bandwidth_gb_per_s=400.0,
        )
        rows.append(replace(f, t_measured_s=predicted_time(f, truth)))
    deep = max(rows, key=lambda f: f.kv_s)
    # at 400 GB/s the cap (180) is slower than eta_kv (0.8 x 400 = 320): the KV term is bytes / 180 GB/s
    kv_time = predicted_time(deep, truth) - predicted_time(replace(deep, kv_s=0.0), truth)
    assert kv_time == pytest.approx(deep.kv_s * 400.0 / 180.0)
    fitted = fit_decode(rows, replace(BASE, bandwidth_fraction=0.7, layer_overhead_us=25.0, step_overhead_us=300.0,
                                      kv_stream_gb_per_s=180.0), units=(None,))
    assert fitted["bandwidth_fraction"] == pytest.approx(0.8, rel=0.04)  # the ridge pulls a little toward 0.7

    def worst(values: dict[str, float | None], cap: float | None) -> float:
        eff = replace(BASE, **{k: v for k, v in values.items() if k != "unit_bandwidth_gb_per_s"}, kv_stream_gb_per_s=cap)
        return max(abs(predicted_time(f, eff) / f.t_measured_s - 1.0) for f in rows)

    # without the cap, eta_kv pinned near eta_bw (KV_PRIOR_SCALE) cannot explain the deep rows
    free = fit_decode(rows, replace(BASE, bandwidth_fraction=0.7, layer_overhead_us=25.0, step_overhead_us=300.0), units=(None,))
    assert worst(fitted, 180.0) < 0.06
    assert worst(free, None) > 2 * worst(fitted, 180.0)
