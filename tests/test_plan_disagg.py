"""`tokometer plan` with disaggregated prefill/decode pools (issue 11): a P:D split is a candidate like a
colocated one, chosen where it is the cheapest simulated setup meeting both objectives, and only there."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.helpers import cli

from tokometer.costmodel.serving import Workload, fixed
from tokometer.usecases.plan import candidates, plan
from tokometer.usecases.simulate import disaggregation, run

# long prompts, tight TPOT: prefill chunks in colocated decode steps cost replicas a split does not need
LONG: dict[str, Any] = {"rate": 10.0, "prompt": 16000, "output": 200, "slo_ttft_s": 3.0, "slo_tpot_s": 0.012,
                        "hardware": ("h100-sxm",), "quants": ("fp8",)}
# short prompts, loose objectives: one colocated replica serves it, a split needs two at least
SHORT: dict[str, Any] = {"rate": 5.0, "prompt": 200, "output": 200, "slo_ttft_s": 1.0, "slo_tpot_s": 0.05,
                         "hardware": ("h100-sxm",), "quants": ("fp8",)}


def test_a_split_is_the_cheapest_setup_for_long_prompts_under_a_tight_tpot() -> None:
    result = plan("llama-3.1-8b", **LONG)
    best = result.rows[0]
    assert best.candidate.pools is not None and best.candidate.split == f"{best.candidate.pools[0]}P:{best.candidate.pools[1]}D"
    assert best.candidate.replicas == sum(best.candidate.pools)
    assert best.candidate.devices == best.candidate.replicas * best.candidate.tp
    # its figures are the disaggregated simulator's at the asked rate
    c = best.candidate
    workload = Workload("poisson", 1500, fixed(LONG["prompt"]), fixed(LONG["output"]), rate_per_s=LONG["rate"])
    again = run(c.deployment, workload, router="least-outstanding", seed=0,
                disagg=disaggregation(c.deployment, f"{c.pools[0]}:{c.pools[1]}"))
    assert (best.result.ttft_s.p99, best.result.tpot_s.p99) == (again.ttft_s.p99, again.tpot_s.p99)
    assert again.ttft_s.p99 <= LONG["slo_ttft_s"] and again.tpot_s.p99 <= LONG["slo_tpot_s"]
    # and it beats every colocated setup the search confirms
    colocated = plan("llama-3.1-8b", **LONG, disagg=False)
    assert colocated.rows and all(r.candidate.pools is None for r in colocated.rows)
    assert c.usd_per_hour < colocated.rows[0].candidate.usd_per_hour
    row = best.to_dict(LONG["rate"], LONG["output"])
    assert row["disagg"] == c.split and (row["prefill_replicas"], row["decode_replicas"]) == c.pools
    assert row["gpus"] == c.devices and row["tpot_p99_s"] == again.tpot_s.p99


def test_a_split_is_considered_but_not_chosen_when_colocated_is_cheaper() -> None:
    found, _, _, _ = candidates("llama-3.1-8b", rate=SHORT["rate"], prompt=SHORT["prompt"], output=SHORT["output"],
                                slo_ttft_s=SHORT["slo_ttft_s"], slo_tpot_s=SHORT["slo_tpot_s"],
                                hardware=SHORT["hardware"], quants=SHORT["quants"], engine="vllm", prices={})
    assert any(c.pools is not None for c in found)
    result = plan("llama-3.1-8b", **SHORT)
    assert result.rows[0].candidate.pools is None
    assert result.rows[0].to_dict(SHORT["rate"], SHORT["output"])["disagg"] is None
    splits = [r.candidate for r in result.rows if r.candidate.pools is not None]
    assert all(s.usd_per_hour >= result.rows[0].candidate.usd_per_hour for s in splits)


def test_a_split_that_misses_tpot_grows_its_decode_pool_and_one_that_misses_ttft_its_prefill_pool() -> None:
    found, _, _, _ = candidates("llama-3.1-8b", rate=LONG["rate"], prompt=LONG["prompt"], output=LONG["output"],
                                slo_ttft_s=LONG["slo_ttft_s"], slo_tpot_s=LONG["slo_tpot_s"],
                                hardware=LONG["hardware"], quants=LONG["quants"], engine="vllm", prices={})
    split = next(c for c in found if c.pools is not None)
    p, d = split.pools or (0, 0)
    assert split.grown(False, True).pools == (p, d + 1) and split.grown(True, False).pools == (p + 1, d)
    assert split.grown(True, True).replicas == p + d + 2
    colocated = next(c for c in found if c.pools is None)
    assert colocated.grown(True, True).replicas == colocated.replicas + 1 and colocated.grown(True, True).pools is None


def test_plan_cli_shows_the_split_and_no_disagg_leaves_it_out(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "llama-3.1-8b", "--rate", "10", "--prompt", "16000", "--output", "200", "--slo-ttft-p99", "3000",
            "--slo-tpot-p99", "12", "--hw", "h100-sxm", "-q", "fp8", "--top", "3"]
    code, out, _ = cli(capsys, *args, "--json")
    configs = json.loads(out)["configs"]
    assert code == 0 and configs[0]["disagg"]
    code, text, _ = cli(capsys, *args)
    assert code == 0 and configs[0]["disagg"] in text and "P:D split" in text
    code, out, _ = cli(capsys, *args, "--no-disagg", "--json")
    assert code == 0 and all(c["disagg"] is None for c in json.loads(out)["configs"])


def test_the_web_plan_takes_the_disagg_flag() -> None:
    from starlette.testclient import TestClient

    from tokometer.web.app import create_app

    client = TestClient(create_app())
    body = {"model": "llama-3.1-8b", "rate_per_s": 10, "prompt_tokens": 16000, "output_tokens": 200, "slo_ttft_ms": 3000,
            "slo_tpot_ms": 12, "hw": "h100-sxm", "quant": "fp8", "top": 3}
    assert client.post("/api/plan", json=body).json()["configs"][0]["disagg"]
    off = client.post("/api/plan", json=body | {"disagg": False}).json()["configs"]
    assert off and all(c["disagg"] is None for c in off)
    bad = client.post("/api/plan", json=body | {"disagg": "maybe"})
    assert bad.status_code == 422 and "disagg" in bad.json()["error"]
