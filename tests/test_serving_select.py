"""`validate --serving --only SOURCE --family WORDS` (fitting/serving_select.py), the reading of the SGL
cookbook's GLM-5 rows, SGLang's per-token ITL client, and what a TP 8 step charges for Kimi K2's MLA."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers import cli, shipped_serving_rows, write_rows_csv

from tokometer.errors import InputError
from tokometer.fitting.serving_families import published_paths
from tokometer.fitting.serving_runs import (
    default_data_path,
    group_runs,
    per_token_itl_client,
    read_rows,
)
from tokometer.fitting.serving_select import family_words, matches, publications, resolve_sources

# three serving.csv sources: a TensorRT-LLM offline row, an LMDeploy static batch, SGLang online-rate rows
KEEP = ("s0145", "s0878", "s0879", "s1444", "s1445", "s1446", "s1447")


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    header, rows = shipped_serving_rows(KEEP)
    return write_rows_csv(tmp_path_factory.mktemp("select") / "rows.csv", header, rows)


def test_publications_list_the_fit_file_and_the_compiled_sources() -> None:
    pubs = publications()
    assert pubs["TRT-PO-V017"] == default_data_path()
    assert {p.stem for p in published_paths()} <= set(pubs)
    assert pubs["SGL-COOKBOOK"].name == "SGL-COOKBOOK.csv"
    assert resolve_sources(["sgl-cookbook", " VLLM-FP8KV "], pubs) == ["SGL-COOKBOOK", "VLLM-FP8KV"]
    with pytest.raises(InputError, match=r"NOPE; known: .*SGL-COOKBOOK.*TRT-PO-V017"):
        resolve_sources(["NOPE"], pubs)


def test_family_words_are_checked() -> None:
    assert family_words("moe hopper") == {"model": "MoE", "device": "Hopper"}
    assert family_words(None) == {}
    for bad, why in (("Volta", "unknown serving family word"), ("MoE dense", "two model values"), ("  ", "empty")):
        with pytest.raises(InputError, match=why):
            family_words(bad)
    assert matches(None, {}) and not matches(None, {"model": "MoE"})


def test_cli_unknown_source_or_family_exits_2_with_the_known_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "validate", "--serving", "--only", "NOPE")
    assert code == 2 and "known:" in err and "IX-DSR1-API" in err and "LMDEPLOY-A100-V010" in err
    assert "Traceback" not in err
    code, _, err = cli(capsys, "validate", "--serving", "--family", "Volta")
    assert code == 2 and "Hopper" in err


def test_one_compiled_publication_is_scored_alone(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "validate", "--serving", "--only", "vllm-fp8kv", "--json", "--rows")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["mode"]["only"] == ["VLLM-FP8KV"]
    assert rep["mode"]["held_out"] == {"VLLM-FP8KV": "source (not in the fit)"}
    assert {r["source"] for r in rep["results"]} == {"VLLM-FP8KV"}
    src = rep["sources"]["VLLM-FP8KV"]
    assert src["all"]["n"] == rep["rows"] and src["throughput"]["scored"] >= 1
    assert 0 <= src["throughput"]["median_ape"] < 1
    # the family filter keeps only the dense runs of that publication
    code, out, err = cli(capsys, "validate", "--serving", "--only", "VLLM-FP8KV", "--family", "dense", "--json")
    assert code == 0, err
    dense = json.loads(out)
    assert 0 < dense["rows"] < rep["rows"]
    assert {k.split("|")[0] for k in dense["families"]} <= {"all", "dense", "dense BF16", "dense FP8", "dense Hopper"}
    code, out, err = cli(capsys, "validate", "--serving", "--only", "VLLM-FP8KV")
    assert code == 0, err
    assert "per publication" in out and "VLLM-FP8KV" in out and "per serving family" in out


def test_a_fit_file_source_is_held_out_at_the_cost_of_one_fit(small_csv: Path) -> None:
    from tokometer.api.measurements import validate

    held = validate(small_csv, lso=True, only=["SGL-BENCH-VLLM060"], rows=True)
    inside = validate(small_csv, only=["SGL-BENCH-VLLM060"], rows=True)
    assert held.report["mode"]["held_out"] == {"SGL-BENCH-VLLM060": "source"}
    assert inside.report["mode"]["held_out"] == {"SGL-BENCH-VLLM060": "none (in-sample)"}
    assert {r["source"] for r in held.rows} == {"SGL-BENCH-VLLM060"} and len(held.rows) == 4
    pred = {r["row_id"]: r["predicted"] for r in held.rows}
    base = {r["row_id"]: r["predicted"] for r in inside.rows}
    assert all(pred[k] is not None for k in pred)
    # held out, SGLang falls back to the pooled fit of the two other sources: the predictions move
    assert any(abs(pred[k] - base[k]) > 1e-6 * base[k] for k in pred)


def test_sglang_native_bench_times_itl_per_token() -> None:
    assert per_token_itl_client("deploy: x; bench: python3 -m sglang.bench_serving --backend sglang --model m")
    assert per_token_itl_client("bench: python -m sglang.bench_serving --backend=sglang-native --dataset-name random")
    assert not per_token_itl_client("bench: python3 -m sglang.bench_serving --backend sglang-oai --model m")
    assert not per_token_itl_client("bench: vllm bench serve --backend vllm --model m")
    assert not per_token_itl_client("deploy: sglang serve --backend sglang; bench: python benchmark_serving.py --backend vllm")


def _cookbook_runs(model: str) -> list:  # type: ignore[type-arg]
    path = next(p for p in published_paths() if p.stem == "SGL-COOKBOOK")
    rows, _ = read_rows(path)
    return group_runs(r for r in rows if r.text("model").startswith(model) and r.text("hardware_id") == "h200")


def test_glm5_cookbook_rows_are_the_fp8_checkpoint_with_mtp() -> None:
    """The H200 benchmark ran the page's "FP8 on H200" command (GLM-5-FP8, EAGLE 3 steps, top-k 1),
    not the ROCm BF16 one printed just before the block; its accept length 3.48 / 3.50 is printed."""
    runs = _cookbook_runs("zai-org/GLM-5")
    assert len(runs) == 4
    # GLM-5's page prints GLM-5.1's two outputs digit for digit: those count once, under GLM-5.1 (fitting/reprints.py)
    reprints = [r for r in runs if r.reason and "digit for digit" in r.reason]
    assert {r.rows[0].text("model") for r in reprints} == {"zai-org/GLM-5-FP8"} and len(reprints) == 2
    for run in (r for r in runs if r not in reprints):
        assert run.reason is None
        kw = run.deploy_kwargs
        assert kw["quant"] == "fp8" and kw["spec_method"] == "mtp" and kw["spec_tokens"] == 3
        assert run.tokens_per_pass in (3.48, 3.5)
        assert run.itl_per_token  # python3 -m sglang.bench_serving --backend sglang


def test_kimi_tp8_step_reads_the_whole_latent_and_its_heads_absorbed_flops() -> None:
    """MLA's latent is shared by every head, so TP does not split it: each of the 8 GPUs reads all
    576 x 2 bytes x 61 layers of it per context token, and runs the absorbed decode of its own 64 / 8
    heads: 4 x 8 x (2 x 512 + 64) / 2 FLOPs per layer per context token."""
    from tokometer.catalog.serving import serving_efficiency
    from tokometer.fitting.serving_validate import deploy_run

    run = _cookbook_runs("moonshotai/Kimi-K2.5")[0]
    dep = deploy_run(run, serving_efficiency(run.engine))
    assert dep.setup.layout.tp == 8 and dep.setup.kv_bytes_per_element == 2.0
    cost = dep.cost
    assert cost.kv_token_bytes == pytest.approx(576 * 2 * 61)
    heads = 64 // 8
    assert cost.decode_attention_flops_per_pair == pytest.approx(61 * 4 * heads * (2 * 512 + 64) / 2)
    # at 100 sequences of 820 tokens the latent read is about 1.5 ms of the step, not the 365 ms measured
    _, _, kv_s, att_s, _ = cost.split(100, 100 * 820.0, 100 * 820.0, 100)
    assert 1e-3 < kv_s < 2e-3 and att_s < kv_s
