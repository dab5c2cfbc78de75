"""A suite's published figure (LocalScore) is predicted as the suite aggregates it (fitting/suites.py):
each test predicted as the single-stream row it is, then the arithmetic mean the suite reports."""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from tokometer.calibration_data import PUBLISHED_DIR
from tokometer.fitting import rows, suites, validation
from tokometer.fitting.features import features
from tokometer.fitting.rows import Case, CaseResult

LOCALSCORE_CSV = PUBLISHED_DIR / "LOCALSCORE.csv"
needs_localscore = pytest.mark.skipif(not LOCALSCORE_CSV.is_file(), reason="published evidence not shipped")

# localscore/localscore.cpp get_baseline_test_configs() (Mozilla-Ocho/llamafile 5748e86 .. ff0c02e)
LOCALSCORE_TESTS = [(1024, 16), (4096, 256), (2048, 256), (2048, 768), (1024, 1024), (1280, 3072), (384, 1152), (64, 1024), (16, 1536)]

HEADER = "row_id,engine,hardware_id,model,quant,batch_size,prompt_tokens,gen_tokens,metric,value,measured_date\n"


def _cases(tmp_path: Path, body: str) -> list[Case]:
    path = tmp_path / "rows.csv"
    path.write_text(HEADER + body, encoding="utf-8")
    return rows.read_cases(path)


def test_the_localscore_suite_is_the_nine_tests_of_its_source() -> None:
    assert [(t.prompt_tokens, t.gen_tokens) for t in suites.LOCALSCORE.tests] == LOCALSCORE_TESTS


def test_the_aggregate_of_known_predictions_is_their_arithmetic_mean(tmp_path: Path) -> None:
    case = _cases(tmp_path, "r1,LocalScore (llamafile / llama.cpp),rtx-3090,llama-3.1-8b,Q4_K_M,1,,,tg,100,2025-04-01\n")[0]

    def rate(part: Case) -> CaseResult:  # a prediction known in closed form: decode slows with depth
        value = 1000.0 / (1.0 + (part.prompt_tokens + (part.gen_tokens or 0) / 2) / 1000.0)
        return CaseResult(part, predicted=value, low=0.8 * value, high=1.25 * value)

    result = suites.predict_suite(case, suites.LOCALSCORE, rate)
    expected = statistics.fmean(1000.0 / (1.0 + (p + g / 2) / 1000.0) for p, g in LOCALSCORE_TESTS)
    assert result.scored
    assert result.predicted == pytest.approx(expected, rel=1e-12)
    assert (result.low, result.high) == (pytest.approx(0.8 * expected), pytest.approx(1.25 * expected))
    # the mean of rates, not total tokens over total time: the two differ on this suite
    total_tokens = sum(g for _, g in LOCALSCORE_TESTS)
    total_time = sum(g * (1.0 + (p + g / 2) / 1000.0) / 1000.0 for p, g in LOCALSCORE_TESTS)
    assert abs(result.predicted - total_tokens / total_time) > 0.01 * expected


def test_a_constant_rate_aggregates_to_itself(tmp_path: Path) -> None:
    case = _cases(tmp_path, "r1,LocalScore,rtx-3090,llama-3.1-8b,Q4_K_M,1,,,pp,100,2025-04-01\n")[0]
    result = suites.predict_suite(case, suites.LOCALSCORE, lambda part: CaseResult(part, predicted=50.0, low=40.0, high=60.0))
    assert (result.predicted, result.low, result.high) == (pytest.approx(50.0), pytest.approx(40.0), pytest.approx(60.0))


def test_a_row_that_states_its_lengths_or_names_no_suite_is_not_a_suite(tmp_path: Path) -> None:
    suite, own_lengths, plain = _cases(
        tmp_path,
        "a,LocalScore (llamafile / llama.cpp),rtx-3090,llama-3.1-8b,Q4_K_M,1,,,tg,100,\n"
        "b,LocalScore (llamafile / llama.cpp),rtx-3090,llama-3.1-8b,Q4_K_M,1,512,128,tg,100,\n"
        "c,llama.cpp,rtx-3090,llama-3.1-8b,Q4_K_M,1,,,tg,100,\n",
    )
    assert suites.suite_of(suite) is suites.LOCALSCORE
    assert suites.suite_of(own_lengths) is None and suites.suite_of(plain) is None
    parts = suites.suite_parts(suite, suites.LOCALSCORE)
    assert [(p.prompt_tokens, p.gen_tokens) for p in parts] == LOCALSCORE_TESTS
    assert all(suites.suite_of(p) is None for p in parts)  # a part is one test, never a suite again


def test_a_localscore_row_is_scored_as_the_mean_of_its_tests(tmp_path: Path) -> None:
    tg, pp, ttft = _cases(
        tmp_path,
        "a,LocalScore (llamafile / llama.cpp),rtx-3090,llama-3.1-8b,Q4_K_M,1,,,tg,103,2025-03-19\n"
        "b,LocalScore (llamafile / llama.cpp),rtx-3090,llama-3.1-8b,Q4_K_M,1,,,pp,3552,2025-03-19\n"
        "c,LocalScore (llamafile / llama.cpp),rtx-3090,llama-3.1-8b,Q4_K_M,1,,,ttft_ms,358,2025-03-19\n",
    )
    for case in (tg, pp, ttft):
        result = validation.predict_case(case)
        assert result.scored, result.reason
        parts = [validation.predict_case(p) for p in suites.suite_parts(case, suites.LOCALSCORE)]
        assert result.predicted == pytest.approx(statistics.fmean(p.predicted or 0.0 for p in parts))
        assert result.low is not None and result.high is not None and result.low < result.predicted < result.high
        assert result.hardware_id == "rtx-3090"
    by_test = validation.predict_case(tg).details["tests"]
    assert by_test["16+1536"] > by_test["1280+3072"]  # a deeper cache decodes slower
    # TTFT of a test is its prefill plus one step: the longest prompt waits longest
    ttft_parts = {p.case.text("suite_test"): p.predicted for p in map(validation.predict_case, suites.suite_parts(ttft, suites.LOCALSCORE))}
    assert ttft_parts["4096+256"] == max(ttft_parts.values())


def test_a_suite_row_that_cannot_be_predicted_keeps_its_reason(tmp_path: Path) -> None:
    unknown, unreadable, flagged = _cases(
        tmp_path,
        "a,LocalScore,no-such-gpu-9000,llama-3.1-8b,Q4_K_M,1,,,tg,103,\n"
        "b,LocalScore,rtx-3090,llama-3.1-8b,Q4_K_M,1,,,tg,fast,\n"
        "c,LocalScore,rtx-3090,llama-3.1-8b,Q4_K_M,1,,,tg,103,\n",
    )
    assert "unknown hardware" in (validation.predict_case(unknown).reason or "")
    assert not validation.predict_case(unknown).reason.startswith("LocalScore test")  # type: ignore[union-attr]
    assert "not a number" in (validation.predict_case(unreadable).reason or "")
    flagged = replace(flagged, flag="suspect run")
    result = validation.predict_case(flagged)
    assert not result.scored and "suspect run" in (result.reason or "")


@needs_localscore
def test_published_localscore_rows_are_scored_but_never_fitted() -> None:
    cases = rows.read_cases(LOCALSCORE_CSV)[:30]
    results = [validation.predict_case(c) for c in cases]
    assert sum(r.scored for r in results) >= 10
    assert all(r.reason for r in results if not r.scored)
    assert all(features(c) is None for c in cases)


def test_a_suite_run_whose_model_overflows_the_gpu_is_not_scored_as_the_gpus_speed(tmp_path: Path) -> None:
    # LocalScore offloads every layer; a 14B Q4_K_M (about 9 GB of weights) on an 8 GB card spilled
    over, fits = _cases(
        tmp_path,
        "a,LocalScore,rtx-4060-ti-8gb,qwen2.5-14b,Q4_K_M,1,,,tg,3.5,\n"
        "b,LocalScore,rtx-4060-ti-16gb,qwen2.5-14b,Q4_K_M,1,,,tg,30,\n",
    )
    result = validation.predict_case(over)
    assert not result.scored and "spilled" in (result.reason or "") and result.predicted is not None
    assert validation.predict_case(fits).scored


def test_an_apple_gpu_is_read_from_localscores_accelerator_name_with_its_core_count(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    stated = [
        "Apple M4 Pro 8P+4E+16GPU (GPU, 24 GB); system CPU Apple M4 Pro 8P+4E, 24 GB RAM, Darwin",
        "Apple M4 Max 12P+4E (CPU, 128 GB); system CPU Apple M4 Max 12P+4E, 128 GB RAM, Darwin",
        "Apple M9 Pro 8P+4E+16GPU (GPU, 24 GB); system CPU Apple M9 Pro, 24 GB RAM, Darwin",
    ]
    body = "".join(f'r{i},LocalScore,,"{s}",llama-3.1-8b,Q4_K_M,1,,,tg,30,\n' for i, s in enumerate(stated))
    path.write_text("row_id,engine,hardware_id,hardware_as_stated,model,quant,batch_size,prompt_tokens,gen_tokens,metric,value,measured_date\n" + body, encoding="utf-8")
    gpu, cpu, unknown = rows.read_cases(path)
    assert suites.apple_gpu_cells(gpu) == {"hardware_id": "m4-pro", "memory_gb": "24"}
    result = validation.predict_case(gpu)
    assert result.scored and result.hardware_id == "m4-pro"
    assert suites.apple_gpu_cells(cpu) == {} and suites.apple_gpu_cells(unknown) == {}  # a CPU run, an unknown chip
    assert "unknown hardware" in (validation.predict_case(unknown).reason or "")
