"""`plan --emit ENGINE`: launch commands whose flags are pinned per engine version (usecases/launch.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from tests.helpers import cli

from tokometer.errors import InputError
from tokometer.usecases.launch import (
    EMIT_ENGINES,
    Launch,
    check_flags,
    launch,
    pinned_flags,
    used_flags,
)
from tokometer.usecases.simulate import deploy


def test_every_engine_is_pinned_with_a_version_and_its_documentation() -> None:
    for engine in EMIT_ENGINES:
        pin = pinned_flags()[engine]
        assert pin["version"] and str(pin["doc"]).startswith("https://") and pin["flags"]


def test_the_check_refuses_a_flag_the_pinned_list_does_not_hold() -> None:
    bad = Launch("vllm", "0.12.0", "", (("one node", "vllm serve m --tensor-parallel-size 2 --tp-size 2"),))
    with pytest.raises(ValueError, match="--tp-size"):
        check_flags("vllm", bad)
    assert used_flags("vllm", "vllm serve m --tensor-parallel-size 2 --port 8000") == ["--tensor-parallel-size", "--port"]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm"])
@pytest.mark.parametrize("layout", [dict(tp=8), dict(ep=8, dp=8), dict(ep=16, dp=16, nodes=2)])
def test_moe_layouts_emit_only_pinned_flags(engine: str, layout: dict[str, int]) -> None:
    dep = deploy("deepseek-r1", "h200", quant="fp8", engine="vllm", **layout)
    out = launch(dep, "fp8", engine)
    for _, command in out.commands:  # launch() already checked; check again from the outside
        assert set(used_flags(engine, command)) <= set(pinned_flags()[engine]["flags"])
    assert len(out.commands) == (layout.get("nodes", 1) if engine != "tensorrt-llm" else 1)


def test_vllm_spreads_data_parallel_ranks_over_nodes() -> None:
    dep = deploy("deepseek-r1", "h200", quant="fp8", engine="vllm", ep=16, dp=16, nodes=2, overlap=True)
    (_, head), (_, second) = launch(dep, "fp8", "vllm").commands
    assert "--data-parallel-size 16" in head and "--data-parallel-size-local 8" in head and "--enable-expert-parallel" in head
    assert "--enable-dbo" in head and "--headless" not in head
    assert "--data-parallel-start-rank 8" in second and "--headless" in second


def test_sglang_counts_every_gpu_in_tp_size_and_trtllm_writes_its_yaml() -> None:
    dep = deploy("deepseek-r1", "b200", quant="fp8", engine="sglang", ep=8, dp=8)
    (_, command), = launch(dep, "fp8", "sglang").commands
    assert "--tp-size 8 --dp-size 8 --enable-dp-attention --ep-size 8" in command
    trt = launch(dep, "fp8", "trtllm")
    assert "enable_attention_dp: true" in trt.files["extra-llm-api-config.yml"]
    assert "--extra_llm_api_options extra-llm-api-config.yml" in trt.commands[0][1]


def test_split_rows_start_both_pools_and_llama_server_refuses_what_it_cannot_run() -> None:
    dep = deploy("llama-3.1-8b", "h100-sxm", quant="bf16", engine="vllm", tp=2)
    split = launch(dep, "bf16", "sglang", pools=(1, 3))
    assert [r.split(",")[0] for r, _ in split.commands] == ["prefill pool", "decode pool"]
    assert all("--disaggregation-mode" in c for _, c in split.commands)
    assert "-sm row" in launch(dep, "bf16", "llama-cpp").commands[0][1]
    with pytest.raises(InputError, match="does not run"):
        launch(dep, "fp8", "llama-cpp")
    moe = deploy("deepseek-r1", "b200", quant="fp8", engine="vllm", ep=8, dp=8)
    with pytest.raises(InputError, match="expert or data parallelism"):
        launch(replace(moe), "bf16", "llama-cpp")
    with pytest.raises(InputError, match="--emit takes"):
        launch(dep, "bf16", "ollama")


def test_plan_emit_puts_the_launch_in_each_row(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "plan", "llama-3.1-8b", "--rate", "5", "--slo-ttft-p99", "1000", "--slo-tpot-p99", "50",
                         "--hw", "h100-sxm", "-q", "fp8", "--top", "2", "--emit", "vllm", "--json")
    assert code == 0, err
    rows = json.loads(out)["configs"]
    assert rows and all(r["launch"]["commands"][0]["command"].startswith("vllm serve meta-llama/") for r in rows)
    code, out, err = cli(capsys, "plan", "llama-3.1-8b", "--rate", "5", "--slo-ttft-p99", "1000", "--slo-tpot-p99", "50",
                         "--hw", "h100-sxm", "-q", "fp8", "--top", "1", "--emit", "sglang")
    assert code == 0 and "python -m sglang.launch_server" in out
