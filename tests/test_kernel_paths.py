"""A llama.cpp build without a matrix-vector kernel for a weight type decodes it through the generic GEMM
path (fitting/kernel_paths.py): SYCL BF16 before PR #21580 moves 10 bytes per 2-byte weight."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokometer.calibration_data import PUBLISHED_DIR
from tokometer.domain.specs import Efficiency
from tokometer.fitting import kernel_paths, rows, validation
from tokometer.fitting.features import features
from tokometer.fitting.rows import Case

KYUZ0 = PUBLISHED_DIR / "KYUZ0-B70.csv"
needs_kyuz0 = pytest.mark.skipif(not KYUZ0.is_file(), reason="published evidence not shipped")


def _row(**cells: str) -> Case:
    raw = {"engine": "llama.cpp (llama-bench)", "backend": "SYCL", "quant": "BF16", "metric": "tg", **cells}
    return Case(row_id="t", line=1, raw=raw, metric="tg", value=5.0, n_devices=1, batch=1, prompt_tokens=0,
                gen_tokens=128, flag="")


def _with_build(case: Case, version: str) -> Case:
    return replace(case, raw={**case.raw, "engine_version": version})


def _bf16_sycl_rows() -> list[Case]:
    return [c for c in rows.read_cases(KYUZ0) if c.metric == "tg" and c.text("quant") == "BF16" and c.text("backend") == "SYCL"]


@pytest.mark.parametrize(
    ("version", "engine", "backend", "weights", "expected"),
    [
        ("build: 74d6248f7 (9039)", "llama-cpp", "sycl", "bf16", 5.0),  # before the BF16 DMMV kernel
        ("b9274", "llama-cpp", "SYCL", "bf16", 5.0),  # the last build known without it
        ("b9299", "llama-cpp", "sycl", "bf16", 1.0),  # it had landed
        ("build: 74d6248f7 (9039)", "llama-cpp", "vulkan", "bf16", 1.0),  # Vulkan has its own kernel
        ("build: 74d6248f7 (9039)", "llama-cpp", "sycl", "q4_k_m", 1.0),  # quantized weights have MMVQ/DMMV
        ("build: 74d6248f7 (9039)", "vllm", "sycl", "bf16", 1.0),  # another engine's kernels
        ("", "llama-cpp", "sycl", "bf16", 1.0),  # no stated build: today's, which has the kernel
    ],
)
def test_the_gemm_fallback_is_read_from_backend_weights_and_build(
    version: str, engine: str, backend: str, weights: str, expected: float
) -> None:
    build = validation.engine_build(_row(engine_version=version))
    assert kernel_paths.decode_weight_traffic(build, engine, backend, weights) == expected


def test_as_built_divides_the_weight_shares_only() -> None:
    eff = Efficiency(bandwidth_fraction=0.8, layer_overhead_us=20.0, step_overhead_us=300.0,
                     prefill_efficiency_max=0.5, prefill_half_tokens=100.0,
                     quantized_bandwidth_fraction=0.6, kv_bandwidth_fraction=0.7)
    built = kernel_paths.as_built(eff, 5.0)
    assert built.bandwidth_fraction == pytest.approx(0.16)
    assert built.quantized_bandwidth_fraction == pytest.approx(0.12)
    assert built.kv_bandwidth_fraction == eff.kv_bandwidth_fraction
    assert built.layer_overhead_us == eff.layer_overhead_us and built.prefill_efficiency_max == eff.prefill_efficiency_max
    assert kernel_paths.as_built(eff, 1.0) is eff


@needs_kyuz0
def test_a_pre_kernel_sycl_bf16_row_is_predicted_several_times_slower_than_the_same_row_on_todays_build() -> None:
    rows_ = _bf16_sycl_rows()
    assert len(rows_) == 6
    for case in rows_:
        then = validation.predict_case(case)
        today = validation.predict_case(_with_build(case, "b9442"))
        assert then.scored and today.scored, (then.reason, today.reason)
        # weights are nearly all of a BF16 8-14B step: the 5x traffic makes it at least 3x slower
        assert today.predicted is not None and then.predicted is not None
        assert 3.0 < today.predicted / then.predicted <= 5.0


@needs_kyuz0
def test_the_fit_sees_the_fallbacks_bytes_on_the_same_rows() -> None:
    for case in _bf16_sycl_rows():
        then, today = features(case), features(_with_build(case, "b9442"))
        assert then is not None and today is not None
        assert then.memory_s == pytest.approx(5.0 * today.memory_s)
        assert then.kv_s == pytest.approx(today.kv_s)
