"""`tokometer validate` and `calibrate` on a file with serving columns: predicted through the simulator,
reported per metric and per scenario; mixed, unknown and malformed rows are listed with a reason."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from tests.helpers import cli, shipped_serving_rows, write_rows_csv

from tokometer.fitting.parallelism import parse_parallelism
from tokometer.fitting.serving_runs import default_data_path, is_serving_file

KEEP = ("s0145", "s0878", "s0879", "s0880", "s0881", "s1444", "s1445", "s1446", "s1447")


@pytest.fixture(scope="module")
def serving_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Nine published rows (offline, static batch, online rate) and four that cannot be scored."""
    header, rows = shipped_serving_rows(KEEP)
    base = next(r for r in rows if r["row_id"] == "s0145")
    rows += [
        {**base, "row_id": "x-single", "scenario": "", "metric": "tg"},
        {**base, "row_id": "x-scenario", "scenario": "disaggregated"},
        {**base, "row_id": "x-value", "value": "fast"},
        {**base, "row_id": "x-metric", "metric": "ttft_ms_p75"},
    ]
    return write_rows_csv(tmp_path_factory.mktemp("serving") / "rows.csv", header, rows)


def test_serving_columns_are_detected(serving_csv: Path, tmp_path: Path) -> None:
    assert is_serving_file(serving_csv) and is_serving_file(default_data_path())
    plain = tmp_path / "m.csv"
    plain.write_text("row_id,metric,value\nr1,tg,10\n", encoding="utf-8")
    assert not is_serving_file(plain)
    assert not is_serving_file(tmp_path / "missing.csv")


def test_validate_reads_serving_rows(capsys: pytest.CaptureFixture[str], serving_csv: Path) -> None:
    code, out, err = cli(capsys, "validate", str(serving_csv), "--json", "--rows")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["mode"]["serving"] is True and rep["rows"] == 13
    assert sum(m["n"] for m in rep["metrics"].values()) == 13  # every row counted, none dropped
    for name in ("tput_out", "ttft_s_mean", "ttft_ms_p50"):
        assert set(rep["metrics"][name]) >= {"n", "scored", "median_ape", "p90_ape", "within_15"}
    assert rep["scenarios"]["offline"]["tput_out"]["scored"] == 1
    assert rep["scenarios"]["static-batch"]["tput_out"]["scored"] == 1
    assert rep["scenarios"]["online-rate"]["tpot_ms_p50"]["scored"] == 1
    by_id = {r["row_id"]: r for r in rep["results"]}
    for rid in KEEP:
        r = by_id[rid]
        assert r["reason"] is None and r["predicted"] > 0
        assert r["ape"] == pytest.approx(abs(r["predicted"] - r["measured"]) / r["measured"])
    reasons = {r["row_id"]: r["reason"] for r in rep["unpredictable"]}
    assert "no scenario" in reasons["x-single"]
    assert "'disaggregated' is not simulated" in reasons["x-scenario"]
    assert "not a number" in reasons["x-value"]
    assert "ttft_ms_p75" in reasons["x-metric"]
    offline = rep["scenarios"]["offline"]["tput_out"]
    assert offline["median_ape"] == pytest.approx(by_id["s0145"]["ape"])


def test_validate_text_report_and_refusals(capsys: pytest.CaptureFixture[str], serving_csv: Path) -> None:
    code, out, err = cli(capsys, "validate", str(serving_csv))
    assert code == 0, err
    assert "static-batch" in out and "online-rate" in out and "not scored:" in out and "9 of 13 rows scored" in out
    for bad in (["--baseline", "ceiling"], ["--loho"], ["--serving"]):
        code, out, err = cli(capsys, "validate", str(serving_csv), *bad)
        assert code == 2, (bad, out, err)
        assert "Traceback" not in err and err.strip()


def test_calibrate_fits_serving_rows(capsys: pytest.CaptureFixture[str], serving_csv: Path, tmp_path: Path) -> None:
    target = tmp_path / "fit.json"
    code, out, err = cli(capsys, "calibrate", str(serving_csv), "--out", str(target), "--json")
    assert code == 0, err
    written = json.loads(target.read_text(encoding="utf-8"))
    shown = json.loads(out)
    assert shown["written"] == str(target)
    entries = written["entries"]
    assert "*" in entries  # too few rows per engine for their own entries: the pooled fit only
    assert entries["*"]["n_runs"] == 2  # offline and static-batch: the fit targets tput_out and static TTFT means and ITL medians
    for entry in entries.values():
        assert 0 < entry["compute_fraction_max"] <= 1 and entry["layer_step_overhead_us"] >= 0


def test_sharegpt_lengths_follow_the_models_tokenizer() -> None:
    """The same ShareGPT conversations are fewer tokens under InternLM's 103k vocabulary than under
    Llama 2's 32k: each closed-loop run draws its lengths with its own model's tokenizer."""
    from tokometer.fitting.serving_runs import group_runs, read_rows

    rows, _ = read_rows(default_data_path())
    runs = [r for r in group_runs(rows) if r.rows[0].scenario == "online-concurrency" and r.workload is not None]
    by_model = {r.rows[0].text("model"): r for r in runs}
    llama, intern = by_model["Llama-2-7B-chat"].workload, by_model["InternLM-chat-20B"].workload
    assert llama is not None and intern is not None
    # each mean is that tokenizer's first run: tput_out / req_per_s of the source's own rows
    first = {r.row_id: r.value for r in rows if r.row_id in ("s1358", "s1362", "s1382", "s1386")}
    assert llama.output.mean == pytest.approx(first["s1362"] / first["s1358"], rel=0.02)
    assert intern.output.mean == pytest.approx(first["s1386"] / first["s1382"], rel=0.02)
    assert intern.output.mean < 0.85 * llama.output.mean


# ---------------------------------------------------------------- rows read as their sources mean them


def _variants(tmp_path: Path, variants: dict[str, dict[str, str]]) -> Path:
    """The published H200 FP8 Llama 3.1 8B offline row (s0145) and variants of it, in one file."""
    with default_data_path().open(encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames or [])
        base = next(r for r in reader if r["row_id"] == "s0145")
    rows = [base] + [{**base, "row_id": rid, **change} for rid, change in variants.items()]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header)
    writer.writeheader()
    writer.writerows(rows)
    path = tmp_path / "variants.csv"
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def _results(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> dict[str, dict[str, object]]:
    code, out, err = cli(capsys, "validate", str(path), "--json", "--rows", *extra)
    assert code == 0, err
    return {r["row_id"]: r for r in json.loads(out)["results"]}


def test_parallelism_spellings_never_end_validate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _variants(tmp_path, {
        "ep": {"parallelism": "tp=8,ep=2", "n_devices": "8"},
        "dpep": {"parallelism": "dp=4,ep=4", "n_devices": "4"},
        "dep": {"parallelism": "DEP8", "n_devices": "8"},
        "dpattn": {"parallelism": "tp=8 (dp-attention)", "n_devices": "8"},
        "bad": {"parallelism": "banana"},
        "tp2": {"parallelism": "TP2", "n_devices": "2"},
        "moe-tp": {"model": "Qwen3-30B-A3B", "parallelism": "tp=2", "n_devices": "2"},
        "moe-ep": {"model": "Qwen3-30B-A3B", "parallelism": "tp=2,ep=2", "n_devices": "2"},
        "moe-dep": {"model": "Qwen3-30B-A3B", "parallelism": "DEP2", "n_devices": "2"},
        "disagg": {"parallelism": "disaggregated: prefill tp=8,ep=8 x1 workers; decode tp=8,ep=8 x2 workers", "n_devices": ""},
        "disagg-tp": {"parallelism": "disaggregated: prefill tp=1 x1 workers; decode tp=2 x2 workers", "n_devices": ""},
        "disagg-vague": {"parallelism": "disaggregated: prefill 8 GPU, TP=8; decode 32 GPU, EP=8", "n_devices": ""},
    })
    by_id = _results(capsys, path)
    for rid in ("ep", "dpep", "dep"):  # the base row's model, Llama-3.1-8B, has no experts to spread
        assert "dense model" in str(by_id[rid]["reason"])
    assert by_id["dpattn"]["reason"] is None and by_id["dpattn"]["predicted"] > 0  # type: ignore[operator]
    assert "'banana'" in str(by_id["bad"]["reason"])
    assert by_id["tp2"]["reason"] is None and by_id["tp2"]["predicted"] > 0  # type: ignore[operator]
    # expert and attention-data parallel rows of a MoE model are simulated, each with its own layout
    moe = {rid: by_id[rid]["predicted"] for rid in ("moe-tp", "moe-ep", "moe-dep")}
    assert all(isinstance(v, float) and v > 0 for v in moe.values()), moe
    assert len(set(moe.values())) == 3, moe
    # stated pools are simulated, each with its own layout (a dense model's EP still refused); vague ones keep a reason
    assert "dense model" in str(by_id["disagg"]["reason"])
    assert by_id["disagg-tp"]["reason"] is None and by_id["disagg-tp"]["predicted"] > 0  # type: ignore[operator]
    assert "disaggregated" in str(by_id["disagg-vague"]["reason"])


def test_a_per_gpu_unit_is_compared_with_the_prediction_per_gpu(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _variants(tmp_path, {
        "tp2": {"parallelism": "tp=2", "n_devices": "2"},
        "tp2-gpu": {"parallelism": "tp=2", "n_devices": "2", "unit": "output tokens/s per GPU"},
        "tp2-flag": {"parallelism": "tp=2", "n_devices": "2", "unit": "tok/s", "flag": "per_gpu_normalized"},
        "total": {"metric": "tput_total", "unit": "total tokens/s"},
        "wrong": {"unit": "total tokens/s"},
        "replicas": {"parallelism": "tp=1", "n_devices": "4"},
    })
    by_id = _results(capsys, path)
    whole = float(by_id["tp2"]["predicted"])  # type: ignore[arg-type]
    assert float(by_id["tp2-gpu"]["predicted"]) == pytest.approx(whole / 2)  # type: ignore[arg-type]
    assert float(by_id["tp2-flag"]["predicted"]) == pytest.approx(whole / 2)  # type: ignore[arg-type]
    one = float(by_id["s0145"]["predicted"])  # type: ignore[arg-type]
    # 128 prompt + 128 output tokens per request: the total is twice the output
    assert float(by_id["total"]["predicted"]) == pytest.approx(2 * one, rel=0.02)  # type: ignore[arg-type]
    assert by_id["wrong"]["predicted"] is None and "'total tokens/s'" in str(by_id["wrong"]["reason"])
    # four GPUs at tp=1 are four replicas: four times one replica's throughput
    assert float(by_id["replicas"]["predicted"]) == pytest.approx(4 * one, rel=0.05)  # type: ignore[arg-type]


def test_vendor_quant_words_read_with_the_device(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _variants(tmp_path, {
        "fp4": {"hardware_id": "nvidia_b200", "hardware_as_stated": "B200", "quant": "FP4", "kv_cache_dtype": ""},
        "fp8-b200": {"hardware_id": "nvidia_b200", "hardware_as_stated": "B200"},
        "w4a8": {"quant": "W4A8"},
    })
    by_id = _results(capsys, path)
    assert by_id["fp4"]["reason"] is None and by_id["fp8-b200"]["reason"] is None
    # NVFP4 weights are half of FP8's bytes: more output tokens/s on the same device
    assert float(by_id["fp4"]["predicted"]) > float(by_id["fp8-b200"]["predicted"])  # type: ignore[arg-type]
    assert "W4A8" in str(by_id["w4a8"]["reason"])


def test_max_batch_and_static_rows_go_through_the_simulator(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _variants(tmp_path, {
        "max": {"scenario": "static-batch", "batch_size": "max (offline, all requests queued)"},
        "b8": {"scenario": "static-batch", "batch_size": "8", "num_requests": ""},
        "b64": {"scenario": "static-batch", "batch_size": "64", "num_requests": ""},
        "user": {"scenario": "online-concurrency", "concurrency": "8", "num_requests": "64", "unit": "tokens/s/user"},
    })
    by_id = _results(capsys, path)
    assert by_id["max"]["predicted"] == pytest.approx(by_id["s0145"]["predicted"])  # the same offline run
    b8, b64 = (float(by_id[k]["predicted"]) for k in ("b8", "b64"))  # type: ignore[arg-type]
    assert 0 < b8 < b64 < float(by_id["s0145"]["predicted"])  # type: ignore[arg-type]
    # one user's tokens/s is 1 / TPOT: far below the replica's throughput, above a few tokens/s
    user = float(by_id["user"]["predicted"])  # type: ignore[arg-type]
    assert 10 < user < b8


def test_a_run_past_the_time_limit_is_unscored_with_that_reason(tmp_path: Path) -> None:
    from tokometer.catalog.serving import serving_efficiency
    from tokometer.fitting.serving_runs import group_runs, read_rows
    from tokometer.fitting.serving_validate import predict

    path = _variants(tmp_path, {})
    rows, _ = read_rows(path)
    runs = group_runs(rows)
    seen: list[int] = []
    results = predict(runs, serving_efficiency, time_limit_s=1e-9, progress=lambda rs: seen.append(1) or rs)
    assert seen and results and all("time limit" in str(r.reason) for r in results)
    assert predict(runs, serving_efficiency, time_limit_s=60.0)[0].reason is None


def test_validate_time_limit_option_is_checked(capsys: pytest.CaptureFixture[str], serving_csv: Path) -> None:
    code, out, err = cli(capsys, "validate", str(serving_csv), "--time-limit", "0")
    assert code == 2 and "--time-limit" in err and "Traceback" not in err
    code, out, err = cli(capsys, "validate", str(serving_csv), "--json", "--time-limit", "30")
    assert code == 0 and json.loads(out)["mode"]["time_limit_s"] == 30.0


def test_the_cli_default_time_limit_is_the_use_cases() -> None:
    from tokometer.cli.validate import DEFAULT_TIME_LIMIT_S as CLI_DEFAULT
    from tokometer.fitting.serving_runs import DEFAULT_TIME_LIMIT_S

    assert CLI_DEFAULT == DEFAULT_TIME_LIMIT_S


def test_nominal_random_lengths_are_drawn_up_to_the_nominal_length(tmp_path: Path) -> None:
    from tokometer.fitting.serving_runs import group_runs, read_rows

    path = _variants(tmp_path, {"rnd": {"flag": "nominal_random_lengths", "prompt_tokens": "1024", "gen_tokens": "512"}})
    rows, _ = read_rows(path)
    runs = {run.rows[0].row_id: run for run in group_runs(rows)}
    fixed_wl, random_wl = runs["s0145"].workload, runs["rnd"].workload
    assert fixed_wl is not None and random_wl is not None
    assert fixed_wl.prompt.kind == "fixed" and fixed_wl.prompt.mean == 128
    assert random_wl.prompt.kind == "uniform" and random_wl.prompt.mean == pytest.approx(512.5)
    assert random_wl.output.mean == pytest.approx(256.5)


@pytest.mark.parametrize("cell, engine", [
    ("TensorRT-LLM", "tensorrt-llm"), ("TRT-LLM", "tensorrt-llm"), ("trtllm-serve", "tensorrt-llm"),
    ("TensorRT-LLM (PyTorch backend)", "tensorrt-llm"), ("SGLang", "sglang"), ("vLLM V1", "vllm"),
    ("LMDeploy (TurboMind)", "lmdeploy"),
])
def test_engine_cells_name_their_scheduler(cell: str, engine: str) -> None:
    from tokometer.fitting.serving_runs import Row, _engine

    assert _engine(Row("r", {"engine": cell}, "tput_out", 1.0)) == engine


def test_per_node_counts_the_nodes_the_replicas_fill() -> None:
    from tokometer.fitting.quantity import Quantity
    from tokometer.fitting.serving_runs import Run
    from tokometer.fitting.serving_validate import as_quantity

    totals: dict[str, float | None] = {"tput_out": 800.0}
    node = Quantity("output_tokens", "node")
    eight_singles = Run([], parallelism=parse_parallelism("tp=1"), replicas=8)  # one node of 8 GPUs
    assert as_quantity(node, eight_singles, totals) == (800.0, None)
    two_nodes = Run([], parallelism=parse_parallelism("tp=16 (2 nodes)"))
    assert as_quantity(node, two_nodes, totals) == (400.0, None)
    assert as_quantity(Quantity("output_tokens", "gpu"), two_nodes, totals) == (50.0, None)


def test_cells_no_number_reads_leave_their_rows_unscored_never_raise(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _variants(tmp_path, {
        "inf": {"n_devices": "inf"},
        "nan": {"num_requests": "nan"},
        "neg": {"num_requests": "-1"},
        "gen": {"gen_tokens": "inf"},
        "rate": {"scenario": "online-rate", "request_rate": "fast"},
        "conc": {"scenario": "online-concurrency", "concurrency": "-4"},
    })
    by_id = _results(capsys, path)
    assert by_id["s0145"]["reason"] is None
    for rid, column in (("inf", "n_devices"), ("nan", "num_requests"), ("neg", "num_requests"), ("gen", "gen_tokens"),
                        ("rate", "request_rate"), ("conc", "concurrency")):
        assert by_id[rid]["predicted"] is None and f"'{column}'" in str(by_id[rid]["reason"]), rid
