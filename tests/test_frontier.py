"""The serving frontier: Pareto set of tokens/s per GPU against tokens/s per user (usecases/frontier.py)."""

from __future__ import annotations

import json

import pytest
from tests.helpers import cli

from tokometer.usecases.frontier import frontier, pareto_flags


def test_pareto_flags_keep_exactly_the_undominated_points() -> None:
    pts = [(1.0, 10.0), (2.0, 9.0), (2.0, 8.0), (3.0, 1.0), (0.5, 10.0), (3.0, 1.0)]
    assert pareto_flags(pts) == [True, True, False, True, False, True]


def test_the_frontier_is_undominated_and_moves_from_interactivity_to_throughput() -> None:
    front = frontier("llama-3.1-8b", hardware=["h100-sxm"], quants=["bf16"], prompt=512, output=128,
                     concurrencies=(1, 16, 256))
    best = front.pareto
    assert best and len(best) < len(front.points)
    for p in best:
        assert not any(q.tok_s_per_gpu >= p.tok_s_per_gpu and q.tok_s_per_user >= p.tok_s_per_user
                       and (q.tok_s_per_gpu > p.tok_s_per_gpu or q.tok_s_per_user > p.tok_s_per_user) for q in front.points)
    per_user = [p.tok_s_per_user for p in best]
    per_gpu = [p.tok_s_per_gpu for p in best]
    assert per_user == sorted(per_user, reverse=True) and per_gpu == sorted(per_gpu)
    assert {p.layout for p in front.points} == {"tp1", "tp2", "tp4", "tp8"}
    for p in front.points:  # tokens/s per GPU is the run's output over the replica's GPUs
        assert p.tok_s_per_gpu == pytest.approx(p.result.tput_out_tok_s / p.gpus)


def test_moe_frontier_tries_dp_and_ep_layouts(capsys: pytest.CaptureFixture[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    plot = tmp_path / "front.png"
    code, out, err = cli(capsys, "simulate", "deepseek-r1", "--hw", "b200", "-q", "nvfp4", "--frontier",
                         "--concurrencies", "1,64,512", "--json", "--plot", str(plot))
    assert code == 0, err
    data = json.loads(out)
    layouts = {p["layout"] for p in data["points"]}
    assert "tp1 dp8 ep8" in layouts and "tp8" in layouts
    assert data["frontier"] and all(p["on_frontier"] for p in data["frontier"])
    assert plot.stat().st_size > 1000


def test_plan_frontier_and_its_input_errors(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "plan", "llama-3.1-8b", "--frontier", "--hw", "l40s", "-q", "fp8", "--concurrencies", "1,32")
    assert code == 0, err
    assert "tok/s/GPU" in out and "l40s" in out
    code, out, err = cli(capsys, "plan", "llama-3.1-8b", "--rate", "2")
    assert code == 2 and "--slo-ttft-p99" in err
    code, out, err = cli(capsys, "simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--frontier", "--concurrencies", "0")
    assert code == 2 and "1 or more" in err
    code, out, err = cli(capsys, "simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--concurrency", "4", "--concurrencies", "4")
    assert code == 2 and "--frontier" in err
