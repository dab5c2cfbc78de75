"""The compiled 2025-26 serving rows scored per family (`fitting.serving_families`): every row scored or
unscored with a reason, families read from the planned runs, EP/DP rows simulated with their layout."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from tokometer.catalog.serving import serving_efficiency
from tokometer.fitting.serving_families import (
    family,
    family_report,
    metric_class,
    published_paths,
    validate_published,
)
from tokometer.fitting.serving_runs import RowResult, group_runs, read_rows
from tokometer.fitting.serving_validate import predict


def test_metric_classes_are_the_targets_means_and_medians() -> None:
    assert metric_class("tput_out") == metric_class("req_per_s") == metric_class("tput_total_per_gpu") == "throughput"
    assert metric_class("tput_out_per_gpu") == "throughput" and metric_class("tput_total_per_user") is None
    assert metric_class("ttft_s_mean") == metric_class("ttft_ms_p50") == "ttft"
    assert metric_class("itl_ms_p50") == metric_class("tpot_s_mean") == metric_class("tput_out_per_user") == "itl"
    assert metric_class("ttft_s_p99") is None and metric_class("e2e_s_mean") is None


def test_every_published_row_is_planned_or_has_a_reason() -> None:
    paths = published_paths()
    assert len(paths) >= 14
    total = planned = 0
    for path in paths:
        rows, bad = read_rows(path)
        total += len(rows) + len(bad)
        for run in group_runs(rows):
            assert (run.reason is None) == bool(run.deploy_kwargs), run.rows[0].row_id
            if run.reason is None:
                planned += len(run.rows)
            else:
                assert run.reason.strip()
    assert total == 16_114  # 13,526 + Vultr 199 + ROCm blogs 322 + Massed Compute 2,067 (2026-12-07)
    assert planned > total * 0.4  # EP/DP, Dynamo, ATOM, aliases and new devices read: 6,317 planned here


def test_expert_and_attention_dp_runs_are_simulated_with_their_layout() -> None:
    path = next(p for p in published_paths() if p.name == "IX-DSR1-API.csv")
    rows, _ = read_rows(path)
    runs = [r for r in group_runs(rows) if r.reason is None]
    dep = next(r for r in runs if r.deploy_kwargs.get("dp", 1) > 1)  # tp=8,ep=8 (dp-attention): attention tp 1 x dp 8
    ep = next(r for r in runs if r.deploy_kwargs.get("ep", 1) > 1 and r.deploy_kwargs.get("dp", 1) == 1)
    assert dep.deploy_kwargs["tp"] * dep.deploy_kwargs["dp"] == dep.parallelism.n_gpus
    assert ep.deploy_kwargs["tp"] == ep.parallelism.n_gpus
    fam = family(dep)
    assert fam is not None and fam.model == "MoE"
    results = predict([dep, ep], serving_efficiency, naive=False, time_limit_s=120.0)
    scored = [r for r in results if r.reason is None and r.predicted]
    assert len(scored) >= len(results) // 2
    report = family_report(results, [dep, ep])
    assert report["rows"] == len(results)
    assert "MoE|throughput" in report["groups"] and report["groups"]["MoE|throughput"]["median_ape"] is not None


def test_a_run_whose_weights_leave_no_kv_room_is_unscored_with_that_reason(tmp_path: Path) -> None:
    src = next(p for p in published_paths() if p.name == "IX-DSR1-API.csv")
    text = src.read_text(encoding="utf-8")
    reader = csv.DictReader(io.StringIO(text))
    base = next(r for r in reader if r["hardware_id"] == "b200" and r["engine"] == "SGLang" and "ep=1" in r["parallelism"])
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(base))
    writer.writeheader()
    writer.writerow({**base, "row_id": "tiny", "parallelism": "tp=1", "n_devices": "1", "quant": "bf16"})  # 1.3 TB on 180 GB
    path = tmp_path / "tiny.csv"
    path.write_text(buf.getvalue(), encoding="utf-8")
    (res,) = validate_published([path])["unscored"].items()
    assert "no request completed" in res[0] and res[1] == 1


def test_family_report_counts_unscored_reasons() -> None:
    path = next(p for p in published_paths() if p.name == "LMDEPLOY-DSV3.csv")
    rows, _ = read_rows(path)
    runs = group_runs(rows)
    results = [RowResult(r, reason=run.reason) for run in runs for r in run.rows]
    rep = family_report(results, runs)
    assert rep["scored"] == 0 and sum(rep["unscored"].values()) == len(results) == 36
    assert all("hardware not stated" in k for k in rep["unscored"])


@pytest.mark.parametrize("name", ["GB300", "8xH20", "NVIDIA H800 GPU (16x)", "AMD Instinct MI350X GPU (4x)"])
def test_new_devices_resolve_from_their_printed_names(name: str) -> None:
    from tokometer.catalog import hardware_catalog
    from tokometer.fitting.serving_runs import _hardware_words

    assert any(hardware_catalog().find(w) is not None for w in _hardware_words(name))


def _runs(name: str) -> list:
    path = next(p for p in published_paths() if p.name == name)
    rows, _ = read_rows(path)
    return group_runs(rows)


def test_inferencex_runs_read_as_its_harness_runs_them() -> None:
    """InferenceX: lengths uniform in [int(0.8 L), L], 10 x concurrency prompts, TensorRT-LLM streaming every 10th token."""
    runs = [r for r in _runs("IX-DSR1-API.csv") if r.reason is None]
    run = next(r for r in runs if r.rows[0].text("prompt_tokens") == "1024" and r.rows[0].text("concurrency") == "4")
    wl = run.workload
    assert wl is not None and wl.arrival == "closed" and wl.concurrency == 4
    assert wl.num_requests == 40
    assert (wl.prompt.kind, wl.prompt.a, wl.prompt.b) == ("uniform", 819, 1024)
    trt = next(r for r in runs if r.engine == "tensorrt-llm")
    assert trt.stream_tokens == 10 and run.stream_tokens == (10 if run.engine == "tensorrt-llm" else 1)


def test_frontends_and_assumed_engines_resolve_to_a_backend_scheduler() -> None:
    from tokometer.fitting.serving_runs import _engine

    engines = {}
    for name in ("IX-DSR1-API.csv", "IX-BLOG.csv"):
        for run in _runs(name):
            engines[run.rows[0].text("engine")] = _engine(run.rows[0])
    assert engines["Dynamo + SGLang"] == "sglang"
    assert engines["Dynamo + TensorRT-LLM"] == "tensorrt-llm"
    assert engines["Dynamo + vLLM"] == "vllm"
    assert engines["ATOM"] == "vllm"  # stated assumption: a vLLM-style scheduler
    assert engines["SGLang (MoRI)"] == "sglang"


def test_blank_quant_cells_read_as_the_checkpoints_own_format() -> None:
    runs = [r for r in _runs("SGL-COOKBOOK.csv") + _runs("GPS-PERFLAB.csv") if r.reason is None and not r.rows[0].text("quant")]
    formats = {(r.rows[0].text("model"), r.deploy_kwargs["quant"]) for r in runs}
    assert ("moonshotai/Kimi-K2.5", "int4-experts-g32") in formats  # Moonshot's native INT4 checkpoint
    assert ("deepseek-ai/DeepSeek-R1-0528", "fp8") in formats  # DeepSeek's FP8 checkpoint, not BF16
    assert ("openai/gpt-oss-120b", "mxfp4") in formats


def test_sharegpt_means_come_from_the_runs_printed_totals() -> None:
    run = next(r for r in _runs("GPS-PERFLAB.csv")
               if r.reason is None and "sharegpt" in r.rows[0].text("dataset").lower() and r.rows[0].scenario == "offline")
    notes = run.rows[0].text("notes")
    m = re.search(r"Total input tokens ([\d,]+), Total generated tokens ([\d,]+)", notes)
    assert m is not None and run.workload is not None
    n = float(run.rows[0].text("num_requests"))
    total_in, total_out = (float(g.replace(",", "")) for g in m.groups())
    assert run.workload.prompt.mean == pytest.approx(total_in / n, rel=0.01)
    assert run.workload.output.mean == pytest.approx(total_out / n, rel=0.01)


def test_kimi_int4_rows_read_the_native_checkpoint_experts_int4_attention_bf16() -> None:
    """Kimi K2.5's INT4 is its own checkpoint (routed experts INT4 in groups of 32 with a BF16 scale,
    attention and shared experts BF16), whether the cell is blank or says "INT4"; an explicit AWQ stays AWQ."""
    from tokometer.catalog import quant_catalog
    from tokometer.fitting.serving_runs import _checkpoint_word
    from tokometer.usecases.simulate import deploy

    stated = [r for r in _runs("IX-BLOG.csv") if r.reason is None and r.rows[0].text("quant") == "INT4"
              and "kimi" in r.rows[0].text("model").lower()]
    assert stated and {r.deploy_kwargs["quant"] for r in stated} == {"int4-experts-g32"}
    assert _checkpoint_word("AWQ", "Kimi-K2.5") == "AWQ" and _checkpoint_word("INT4", "Llama-3.1-8B") == "INT4"
    fmt = quant_catalog().get("int4-experts-g32")
    assert fmt.bits_per_weight == 4.5 and fmt.compute_dtype == "fp16" and "dense" in fmt.unquantized
    run = stated[0]
    kw = dict(run.deploy_kwargs)
    native = deploy(kw.pop("model"), kw.pop("hw"), check_fit=False, **kw).setup.weights
    kw = {**run.deploy_kwargs, "quant": "awq-int4"}
    awq = deploy(kw.pop("model"), kw.pop("hw"), check_fit=False, **kw).setup.weights
    # the experts carry 4.5 / 4.156 bits, the BF16 attention and shared experts 16 / 4.156
    assert native.routed_experts / awq.routed_experts == pytest.approx(4.5 / 4.15625, rel=1e-6)
    assert native.dense / awq.dense == pytest.approx(16 / 4.15625, rel=1e-6)


def test_mi355x_kimi_rows_are_mxfp4_and_the_fallback_kernel_runs_are_unscored() -> None:
    """The MI355X Kimi K2.5 post measures AMD's MXFP4 checkpoint; its vLLM 0.16 rows ran the reference
    TritonMLA fallback (the post's own words) and are unscored with that reason, its 0.18 rows scored."""
    runs = [r for r in _runs("IX-BLOG.csv") if r.rows[0].row_id.startswith("IX-BLOG-mi355x-kimi-k2-5")]
    old = [r for r in runs if r.rows[0].text("engine_version") == "0.16.0"]
    new = [r for r in runs if r.rows[0].text("engine_version") == "0.18.0"]
    assert len(old) == 5 and len(new) == 7
    assert all(r.reason is not None and "reference kernel" in r.reason for r in old)
    assert all(r.reason is None and r.deploy_kwargs["quant"] == "mxfp4" for r in new)
    fam = family(new[0])
    assert fam is not None and (fam.weights, fam.device) == ("FP4", "Instinct")


def test_family_medians_also_weigh_each_publication_the_same() -> None:
    """Three publications read at 10 %, 30 % and 50 % on every row: the row-weighted median is the largest
    one's 10 %, the per-publication median the middle publication's 30 %."""
    errors = {"IX-DSR1-API.csv": 0.10, "IX-BLOG.csv": 0.30, "SGL-COOKBOOK.csv": 0.50}
    runs, results = [], []
    for path in published_paths():
        if path.name not in errors:
            continue
        rows, _ = read_rows(path)
        planned = [r for r in group_runs(rows) if r.reason is None]
        runs += planned
        results += [RowResult(row, predicted=row.value * (1 + errors[path.name])) for run in planned for row in run.rows]
    rep = family_report(results, runs)
    cell = rep["groups"]["all|itl"]
    assert cell["publications"] == 3
    assert cell["median_ape"] == pytest.approx(0.10)  # IX-DSR1-API holds most ITL rows
    assert cell["median_ape_per_publication"] == pytest.approx(0.30)
