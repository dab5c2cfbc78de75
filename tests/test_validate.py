"""`tokometer validate` on the calibration data, and its handling of malformed files."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers import run_cli

from tokometer.calibration_data import MEASUREMENTS_CSV as MEASUREMENTS
from tokometer.errors import InputError
from tokometer.fitting.model import leave_one_hardware_out
from tokometer.fitting.rows import read_cases
from tokometer.fitting.validation import report, resolve_case_hardware, validate


def test_decode_median_error_on_the_calibration_file_is_at_most_12_percent() -> None:
    r = run_cli("validate", str(MEASUREMENTS), "--json")
    assert r.code == 0, r.err
    data = r.json()
    tg = data["metrics"]["tg"]
    assert tg["scored"] >= 150
    assert tg["median_ape"] <= 0.12
    assert set(data["metrics"]["pp"]) >= {"n", "scored", "median_ape", "p90_ape", "within_15"}
    # nothing dropped silently: every row is there, scored or with its reason
    assert len(data["rows"]) == tg["n"] + data["metrics"]["pp"]["n"]
    assert all(row["scored"] or row["reason"] for row in data["rows"])


def test_fitted_model_beats_the_peer_formulas() -> None:
    cases = read_cases(MEASUREMENTS)
    ours = report(validate(cases))["metrics"]["tg"]["median_ape"]
    ceiling = report(validate(cases, baseline="ceiling"))["metrics"]["tg"]["median_ape"]
    derate = report(validate(cases, baseline="derate"))["metrics"]["tg"]["median_ape"]
    assert ours < derate < ceiling


def test_leave_one_hardware_out_stays_useful() -> None:
    rep = report(leave_one_hardware_out(read_cases(MEASUREMENTS)))
    tg = rep["subsets"]["tg_single_device"]
    assert tg["median_ape"] <= 0.12
    assert tg["interval_coverage"] >= 0.6


HEADER = "row_id,metric,value,model,hardware_id,quant,prompt_tokens,gen_tokens,n_devices\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty file"),
        ("row_id,value\nr1,3\n", "missing column(s) metric"),
    ],
)
def test_a_file_without_its_columns_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "cases.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_cases(path)
    r = run_cli("validate", str(path))
    assert r.code == 2 and "Traceback" not in r.err


GOOD_ROW = "r0,tg,100,Llama 3.1 8B,nvidia_rtx_4090,Q4_K_M,0,128,1\n"


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("r1,tg,fast,Llama 3.1 8B,nvidia_rtx_4090,Q4_K_M,0,128,1\n", "column 'value'"),
        ("r1,tg,100,Llama 3.1 8B,nvidia_rtx_4090,Q4_K_M,zero,128,1\n", "column 'prompt_tokens'"),
        ("r1,speed,100,Llama 3.1 8B,nvidia_rtx_4090,Q4_K_M,0,128,1\n", "metric 'speed' is not scored"),
        ("r1,tg,100,Llama 3.1 8B,nvidia_rtx_4090,Q4_K_M,0,128,1,extra\n", "more fields"),
    ],
)
def test_a_bad_row_is_left_unscored_with_its_reason_never_fatal(tmp_path: Path, row: str, reason: str) -> None:
    path = tmp_path / "cases.csv"
    path.write_text(HEADER + GOOD_ROW + row, encoding="utf-8")
    good, bad = validate(read_cases(path))
    assert good.scored and not bad.scored and reason in (bad.reason or "")
    r = run_cli("validate", str(path), "--json")
    assert r.code == 0, r.err
    data = r.json()
    assert data["rows_total"] == 2 and data["rows_scored"] == 1
    assert sum(data["not_scored"].values()) == 1 and reason in next(iter(data["not_scored"]))


def test_an_unreadable_batch_cell_leaves_only_that_row_unscored(tmp_path: Path) -> None:
    path = tmp_path / "cases.csv"
    path.write_text(
        "row_id,metric,value,model,hardware_id,quant,prompt_tokens,gen_tokens,batch_size,engine\n"
        "a,tg,100,Llama 3.1 8B,h100-sxm,fp16,0,128,1,vllm\n"
        'b,tput_out,20000,Llama 3.1 8B,h100-sxm,fp16,128,128,"lots of them",vllm\n',
        encoding="utf-8",
    )
    first, second = validate(read_cases(path))
    assert first.scored
    assert not second.scored and "batch_size" in (second.reason or "")


def test_served_or_batchless_throughput_is_left_unscored(tmp_path: Path) -> None:
    path = tmp_path / "cases.csv"
    path.write_text(
        "row_id,metric,value,model,hardware_id,quant,prompt_tokens,gen_tokens,batch_size,concurrency,engine\n"
        "s,tput_out,4000,Llama 3.1 8B,h100-sxm,fp16,128,128,,64,vllm\n"
        "b,tput_out,4000,Llama 3.1 8B,h100-sxm,fp16,128,128,,,vllm\n"
        "k,tput_out,4000,Llama 3.1 8B,h100-sxm,fp16,128,128,32,,vllm\n",
        encoding="utf-8",
    )
    served, batchless, static = validate(read_cases(path))
    assert not served.scored and "concurrency" in (served.reason or "")
    assert not batchless.scored and "batch_size" in (batchless.reason or "")
    assert static.scored


def test_ttft_ms_is_scored_as_prefill_plus_the_first_step(tmp_path: Path) -> None:
    path = tmp_path / "cases.csv"
    path.write_text(
        "row_id,metric,value,model,hardware_id,quant,prompt_tokens,gen_tokens,batch_size,engine\n"
        "t1,ttft_ms,400,Llama 3.1 8B,rtx-4090,Q4_K_M,2048,128,1,llama.cpp\n"
        "t2,ttft_ms,3000,Llama 3.1 8B,rtx-4090,Q4_K_M,12000,128,1,llama.cpp\n"
        "t3,ttft_ms,400,Llama 3.1 8B,rtx-4090,Q4_K_M,2048,128,4,llama.cpp\n",
        encoding="utf-8",
    )
    short, long, batched = validate(read_cases(path))
    assert short.scored and long.scored and short.predicted and long.predicted
    # prefill grows faster than the prompt (attention is quadratic): 6x the tokens, more than 6x the time
    assert long.predicted > 6 * short.predicted
    assert short.low is not None and short.low < short.predicted < (short.high or 0)
    assert not batched.scored and "batch 1" in (batched.reason or "")
    assert report([short, long])["metrics"]["ttft_ms"]["scored"] == 2


def test_spec_columns_override_numbers_of_the_catalog_device_not_its_memory(tmp_path: Path) -> None:
    from tokometer.fitting.validation import resolve_case_hardware

    path = tmp_path / "cases.csv"
    path.write_text(
        "row_id,metric,value,model,hardware_id,quant,mem_bandwidth_gbps,memory_type,prompt_tokens\n"
        "h,tg,100,Llama 3.1 8B,nvidia_h100_pcie,fp16,1900,,0\n"
        "n,tg,100,Llama 3.1 8B,mystery-card,fp16,1500,HBM3,0\n"
        "g,tg,100,Llama 3.1 8B,mystery-card,fp16,1500,,0\n",
        encoding="utf-8",
    )
    h, n, g = (resolve_case_hardware(c) for c in read_cases(path))
    assert h.id == "h100-pcie" and h.memory_bandwidth_gb_per_s == 1900
    assert h.hardware_class == "hbm-gpu" and h.fp16_tflops  # the catalog's peak survives
    assert n.hardware_class == "hbm-gpu" and g.hardware_class == "gddr-gpu"


@pytest.mark.parametrize(
    ("engine", "expected"),
    [
        ("AutoAWQ (HF transformers)", "transformers"),
        ("AutoGPTQ", "transformers"),
        ("HF transformers", "transformers"),
        ("llama.cpp (llama-bench)", "llama-cpp"),
        ("llama.cpp (llama-server)", "llama-server"),
        ("vLLM", "vllm"),
    ],
)
def test_engine_names_map_to_their_engine(tmp_path: Path, engine: str, expected: str) -> None:
    from tokometer.fitting.validation import estimate_kwargs

    path = tmp_path / "cases.csv"
    path.write_text(HEADER.strip() + ",engine\n" + GOOD_ROW.strip() + f',"{engine}"\n', encoding="utf-8")
    assert estimate_kwargs(read_cases(path)[0])["engine"] == expected


def test_an_unknown_engine_leaves_the_row_unscored(tmp_path: Path) -> None:
    path = tmp_path / "cases.csv"
    path.write_text(HEADER.strip() + ",engine\n" + GOOD_ROW.strip() + ",WarpDrive 9000\n", encoding="utf-8")
    (result,) = validate(read_cases(path))
    assert not result.scored and "WarpDrive 9000" in (result.reason or "")


def test_leave_one_hardware_out_holds_out_multi_device_rows_too() -> None:
    from tokometer.fitting.model import leave_one_source_out

    cases = read_cases(MEASUREMENTS)
    multi = [c for c in cases if c.n_devices > 1 and c.metric == "tg" and not c.flag][::20]
    held = leave_one_hardware_out(cases, only=multi)
    fitted = validate(multi)
    changed = [a for a, b in zip(held, fitted, strict=True) if a.predicted != b.predicted]
    assert len(changed) >= len(multi) // 2, "multi-device rows are still predicted by the shipped (in-sample) table"
    by_source = leave_one_source_out(cases, only=multi)
    assert all(r.scored or r.reason for r in by_source)


def test_rows_with_their_own_specs_and_bare_counts(tmp_path: Path) -> None:
    path = tmp_path / "cases.csv"
    path.write_text(
        "row_id,metric,value,total_params_b,bits_per_weight,mem_bandwidth_gbps,fp16_dense_tflops,prompt_tokens,gen_tokens,engine\n"
        "x1,tg,60,8,4.9,1000,160,0,128,llama.cpp\n"
        "x2,tg,1,8,4.9,,,0,128,llama.cpp\n",
        encoding="utf-8",
    )
    results = validate(read_cases(path))
    assert results[0].scored and results[0].predicted and 40 < results[0].predicted < 205
    assert not results[1].scored and results[1].reason


def test_aggregates_are_predicted_as_aggregates(tmp_path: Path) -> None:
    path = tmp_path / "cases.csv"
    path.write_text(
        "row_id,metric,value,model,hardware_id,quant,prompt_tokens,gen_tokens,batch_size,engine\n"
        "s1,tg,100,Llama 3.1 8B,h100-sxm,fp16,0,128,1,vllm\n"
        "a8,tg_agg,700,Llama 3.1 8B,h100-sxm,fp16,0,128,8,vllm\n",
        encoding="utf-8",
    )
    single, aggregate = validate(read_cases(path))
    assert single.predicted and aggregate.predicted
    # eight streams share one read of the weights: far more than one stream, at most 8x
    assert single.predicted * 4 < aggregate.predicted <= single.predicted * 8


@pytest.mark.timeout(900)  # the session's one `calibrate` of the whole shipped evidence (minutes on 2 cores)
def test_shipped_efficiency_table_is_what_calibrate_produces(calibrated_by_cli: tuple[Path, list[Path], int, str]) -> None:
    import tomllib

    from tokometer.catalog.efficiency import EFFICIENCY_FILE

    out, _, code, err = calibrated_by_cli  # `tokometer calibrate --out`: what scripts/calibrate_shipped.py writes too
    assert code == 0, err
    fresh = tomllib.loads(out.read_text(encoding="utf-8"))["entries"]
    shipped = tomllib.loads(EFFICIENCY_FILE.read_text(encoding="utf-8"))["entries"]
    assert fresh.keys() == shipped.keys()
    for key in shipped:
        for name, value in shipped[key].items():
            if isinstance(value, float):
                assert fresh[key][name] == pytest.approx(value, rel=1e-4), (key, name)


def test_validate_cli_holds_out_a_source_and_says_so() -> None:
    # measurements.csv alone: three publications, three fits (the whole evidence's hold-outs are
    # scripts/accuracy_tables.py's, checked by tests/test_docs.py)
    from tokometer.calibration_data import MEASUREMENTS_CSV

    r = run_cli("validate", str(MEASUREMENTS_CSV), "--lso", "--json", timeout_s=600)
    assert r.code == 0, r.err
    data = r.json()
    assert data["mode"]["held_out"] == "source" and data["mode"]["lso"] is True
    assert data["subsets"]["tg_single_device"]["scored"] >= 150
    # the same rows with each publication weighing the same: three publications, as many scored rows
    pub = data["per_publication"]["tg"]
    assert pub["publications"] == 3 and pub["scored"] == data["subsets"]["tg_single_device"]["scored"]
    assert 0 < pub["median_ape"] <= pub["p90_ape"]
    text = run_cli("validate", str(MEASUREMENTS_CSV), timeout_s=600)
    assert text.code == 0 and "each of 3 publications weighing the same" in text.out
    both = run_cli("validate", "--loho", "--lso")
    assert both.code == 2 and "choose one" in both.err and "Traceback" not in both.err
    peer = run_cli("validate", "--lso", "--baseline", "ceiling")
    assert peer.code == 2 and "Traceback" not in peer.err


def test_static_batch_aggregates_go_through_the_simulator(tmp_path: Path) -> None:
    """tg_agg / pp_agg / tput_out at batch > 1 or a "max" batch: a simulated static batch, not one step."""
    path = tmp_path / "cases.csv"
    path.write_text(
        "row_id,metric,value,model,hardware_id,quant,prompt_tokens,gen_tokens,batch_size,engine\n"
        "s1,tg,100,Llama 3.1 8B,h100-sxm,fp16,0,128,1,vllm\n"
        "a8,tg_agg,700,Llama 3.1 8B,h100-sxm,fp16,0,128,8,vllm\n"
        "t64,tput_out,3000,Llama 3.1 8B,h100-sxm,fp16,512,128,64,vllm\n"
        "p64,pp_agg,30000,Llama 3.1 8B,h100-sxm,fp16,512,128,64,vllm\n"
        "tmax,tput_out,9000,Llama 3.1 8B,h100-sxm,fp16,512,128,\"max (offline, all requests queued)\",vllm\n"
        "huge,tput_out,900,Llama 3.1 8B,h100-sxm,fp16,8192,1024,4096,vllm\n",
        encoding="utf-8",
    )
    cases = read_cases(path)
    assert cases[4].batch_max and cases[4].problem is None
    results = {r.case.row_id: r for r in validate(cases, time_limit_s=60.0)}
    assert all(r.scored for r in results.values()), {k: r.reason for k, r in results.items()}
    for rid in ("a8", "t64", "p64", "tmax", "huge"):
        assert results[rid].details == {"simulated": "static batch"}
        assert results[rid].hardware_id == resolve_case_hardware(results[rid].case).id
    single = results["s1"].predicted
    assert single and single * 4 < (results["a8"].predicted or 0) <= single * 8
    # a whole run (prefill included) emits fewer tokens/s than the same batch's decode alone
    assert (results["t64"].predicted or 0) < 64 * single
    # the engine's own batch limit, unbounded by a stated batch, is above 64
    assert (results["tmax"].predicted or 0) > (results["t64"].predicted or 0)
    # 4096 requests of 9k tokens: the KV cache runs them in waves, the run still ends
    assert (results["huge"].predicted or 0) > 0


def test_a_static_batch_past_the_time_limit_is_unscored(tmp_path: Path) -> None:
    path = tmp_path / "cases.csv"
    path.write_text(
        "row_id,metric,value,model,hardware_id,quant,prompt_tokens,gen_tokens,batch_size,engine\n"
        "big,tput_out,900,Llama 3.1 8B,h100-sxm,fp16,2048,2048,4096,vllm\n",
        encoding="utf-8",
    )
    (result,) = validate(read_cases(path), time_limit_s=1e-9)
    assert not result.scored and "time limit" in (result.reason or "")


def test_model_size_is_read_in_the_unit_the_source_printed(tmp_path: Path) -> None:
    """llama-bench's JSON prints bytes and its table GiB; MLX tools print MB or MiB. The same file in
    four units predicts the same speed (a byte count once read as GB made a 3.8 GB model 3.8 EB)."""
    path = tmp_path / "cases.csv"
    gib = 3.56
    rows = [(gib, "GiB"), (gib * 2**30, "bytes"), (gib * 1024, "MiB"), (gib * 2**30 / 1e6, "MB")]
    path.write_text(
        "row_id,metric,value,model,hardware_id,quant,model_size,model_size_unit,prompt_tokens,gen_tokens,batch_size,engine\n"
        + "".join(f"r{i},tg,100,Llama 2 7B,rtx-4090,Q4_0,{size},{unit},0,128,1,llama.cpp\n" for i, (size, unit) in enumerate(rows)),
        encoding="utf-8",
    )
    results = validate(read_cases(path))
    speeds = [r.predicted for r in results]
    assert all(s is not None for s in speeds), [r.reason for r in results]
    assert max(speeds) == pytest.approx(min(speeds), rel=1e-9)  # type: ignore[type-var]
    assert 60 < speeds[0] < 300  # type: ignore[operator]


def test_only_a_source_is_its_held_out_error_and_nothing_else(tmp_path: Path) -> None:
    """`validate --lso --only SOURCE`: that publication's rows alone, predicted by a fit without it."""
    small = tmp_path / "cases.csv"
    lines = MEASUREMENTS.read_text(encoding="utf-8").splitlines()
    keep = [line for line in lines[1:] if ",XD-L3," in line and ",1," in line][::3]
    # one publication split in two by row, so that holding one half out still leaves a fit of the same devices
    keep = [line.replace(",XD-L3,", ",XD-A," if i % 2 else ",XD-B,", 1) for i, line in enumerate(keep)]
    small.write_text("\n".join([lines[0], *keep]) + "\n", encoding="utf-8")
    held = run_cli("validate", str(small), "--lso", "--only", "xd-a", "--json", timeout_s=600)
    assert held.code == 0, held.err
    data = held.json()
    assert data["mode"]["only"] == ["XD-A"] and data["mode"]["held_out"] == "source"
    mine = {line.split(",")[0] for line in keep if line.split(",")[1] == "XD-A"}
    assert mine and {r["row_id"] for r in data["rows"]} == mine
    assert list(data["sources"]) == ["XD-A"] and data["sources"]["XD-A"]["tg"]["scored"] > 0, data["sources"]
    fitted = run_cli("validate", str(small), "--only", "XD-A", "--json", timeout_s=600).json()
    assert [r["row_id"] for r in fitted["rows"]] == [r["row_id"] for r in data["rows"]]
    moved = [a for a, b in zip(data["rows"], fitted["rows"], strict=True) if a["predicted"] != b["predicted"]]
    assert moved, "the held-out rows read the same as the shipped table: no fit without the source ran"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--only", "NO-SUCH-SOURCE"), "known: "),
        (("--family", "martian"), "one of: Apple"),
        (("--serving", "--only", "X"), "no serving rows from publication(s) X; known: "),
        (("--serving", "--family", "martian"), "unknown serving family word"),
    ],
)
def test_only_and_family_refuse_what_matches_nothing(args: tuple[str, ...], message: str) -> None:
    r = run_cli("validate", *args)
    assert r.code == 2 and message in r.err and "Traceback" not in r.err, r.err
