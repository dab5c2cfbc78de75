"""The bench bridge: rate and concurrency runs graded against the serving simulator, stored and shown."""

from __future__ import annotations

import json

import pytest

from bench_fixtures import bench_home, run_cli, synthetic  # noqa: F401
from tokometer.costmodel.serving import Workload, fixed
from tokometer.domain.runrecord import (
    SIMULATED_METRICS,
    Level,
    MetricCheck,
    RunSummary,
    SimulatedGrade,
)
from tokometer.usecases.bench_bridge import choose_engine, level_workload
from tokometer.usecases.simulate import deploy, run

pytestmark = pytest.mark.timeout(120)

PREDICT = ["--predict-model", "llama-3.1-8b", "-q", "bf16", "--hw", "h100-sxm"]


def bench(url: str, *extra: str) -> dict[str, object]:
    code, out, err = run_cli(["bench", url, "--max-tokens", "20", "--json", "--seed", "3", *PREDICT, *extra])
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_rate_run_is_graded_against_the_simulator_for_the_same_workload() -> None:
    with synthetic(tok_s=100.0, ttft_s=0.02) as server:
        data = bench(server.url, "--rate", "20", "--requests", "12")
    levels = data["levels"]
    assert isinstance(levels, list) and len(levels) == 1
    level = levels[0]
    sim = level["simulation"]
    assert set(sim["metrics"]) == set(SIMULATED_METRICS)
    summary = level["summary"]
    wl = sim["workload"]
    assert wl["arrival"] == "poisson" and wl["rate"] == 20.0 and wl["num_requests"] == summary["requests_total"] == 12
    assert wl["output_tokens"] == round(summary["output_tokens"]["mean"])
    # measured figures are the level's own
    m = sim["metrics"]
    assert m["tput_out_tok_s"]["measured"] == summary["output_throughput_tps"]
    assert m["ttft_ms_p50"]["measured"] == summary["ttft_ms"]["median"]
    assert m["tpot_ms_p99"]["measured"] == summary["tpot_ms"]["p99"]
    assert m["tpot_ms_p50"]["measured"] == pytest.approx(10.0, rel=0.2)  # the synthetic server's 100 tok/s
    # predicted figures are the simulator's on that workload, re-run here independently
    dep = deploy("llama-3.1-8b", "h100-sxm", quant="bf16", engine="vllm")
    again = run(dep, Workload("poisson", 12, fixed(wl["prompt_tokens"]), fixed(wl["output_tokens"]), rate_per_s=20.0), seed=3)
    assert m["tput_out_tok_s"]["predicted"] == pytest.approx(again.tput_out_tok_s)
    assert again.tpot_s.p50 is not None and m["tpot_ms_p50"]["predicted"] == pytest.approx(again.tpot_s.p50 * 1e3)
    for check in m.values():
        if check["error_fraction"] is not None:
            assert check["error_fraction"] == pytest.approx(check["predicted"] / check["measured"] - 1.0)
    # the synthetic server does not name its engine: vLLM's scheduler is assumed, and said so
    assert sim["engine"] == "vllm" and sim["engine_assumed"] is True
    # stored with the run: `runs show --json` and the text view carry it
    code, out, err = run_cli(["runs", "show", str(data["id"]), "--json"])
    assert code == 0, err
    assert json.loads(out)["levels"][0]["simulation"] == sim
    code, out, err = run_cli(["runs", "show", str(data["id"])])
    assert code == 0, err
    assert "simulated" in out and "TPOT p99 ms" in out and "median |error|" in out


def test_concurrency_levels_are_one_round_of_n_requests_at_once() -> None:
    with synthetic(tok_s=100.0, ttft_s=0.01) as server:
        data = bench(server.url, "--concurrency", "1,4", "--runs", "1", "--engine", "sglang")
    levels = data["levels"]
    assert isinstance(levels, list)
    for level, n in zip(levels, (1, 4), strict=True):
        sim = level["simulation"]
        assert sim["workload"]["arrival"] == "offline" and sim["workload"]["num_requests"] == n
        assert sim["engine"] == "sglang" and sim["engine_assumed"] is False
        assert sim["metrics"]["tput_out_tok_s"]["predicted"] > 0


def test_no_simulation_without_hardware_is_a_note_not_a_failure() -> None:
    with synthetic(tok_s=100.0, ttft_s=0.01) as server:
        code, out, err = run_cli(["bench", server.url, "--max-tokens", "10", "--json", "--rate", "20", "--requests", "4",
                                  "--predict-model", "llama-3.1-8b", "--bandwidth", "1000"])
    assert code == 0, err
    data = json.loads(out)
    assert "simulation" not in data["levels"][0]
    assert any("no serving simulation" in n for n in data["notes"])


def test_a_model_that_does_not_fit_is_a_note_not_a_failure() -> None:
    with synthetic(tok_s=100.0, ttft_s=0.01) as server:
        code, out, err = run_cli(["bench", server.url, "--max-tokens", "10", "--json", "--rate", "20", "--requests", "4",
                                  "--predict-model", "llama-3.1-70b", "-q", "bf16", "--hw", "l4"])
    assert code == 0, err
    data = json.loads(out)
    assert "simulation" not in data["levels"][0]
    assert any("no serving simulation" in n for n in data["notes"])


def test_simulated_grade_round_trips_and_errors_are_computed() -> None:
    grade = SimulatedGrade("vllm", True, {"arrival": "poisson", "rate": 2.0}, {
        "tput_out_tok_s": MetricCheck(100.0, 120.0), "req_per_s": MetricCheck(2.0, 1.0), "ttft_ms_p50": MetricCheck(None, 5.0),
    }, deployment="x")
    assert grade.metrics["tput_out_tok_s"].error_fraction == pytest.approx(0.2)
    assert grade.metrics["ttft_ms_p50"].error_fraction is None
    assert grade.median_abs_error == pytest.approx((0.2 + 0.5) / 2)
    level = Level("rate=2.0", "rate", 2.0, None, simulation=grade)
    assert Level.from_dict(level.to_dict()) == level
    assert "simulation" not in Level("rate=2.0", "rate", 2.0, None).to_dict()


def test_level_workload_and_engine_choice() -> None:
    summary = RunSummary.from_dict({"requests_total": 9, "requests_ok": 8, "prompt_tokens": 41.6, "output_tokens": {"n": 8, "mean": 19.5}})
    wl = level_workload("rate", 3.0, summary, 200)
    assert (wl.arrival, wl.num_requests, wl.rate_per_s, wl.prompt.a, wl.output.a) == ("poisson", 9, 3.0, 42, 20)
    wl = level_workload("concurrency", 8, summary, 200)
    assert (wl.arrival, wl.num_requests) == ("offline", 8)
    assert choose_engine(None, "llama.cpp") == ("llama-cpp", False)
    assert choose_engine(None, "ollama") == ("llama-cpp", False)
    assert choose_engine("tensorrt-llm", "vllm") == ("tensorrt-llm", False)
    assert choose_engine(None, None) == ("vllm", True)
