"""`tokometer validate` on the calibration data, and its handling of malformed files."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers import run_cli

from tokometer.calibration_data import MEASUREMENTS_CSV as MEASUREMENTS
from tokometer.errors import InputError
from tokometer.usecases.calibration import leave_one_hardware_out
from tokometer.usecases.validation import read_cases, report, validate


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
        (HEADER + "r1,tg,fast,Llama 3.1 8B,nvidia_rtx_4090,Q4_K_M,0,128,1\n", "line 2, column 'value'"),
        (HEADER + "r1,tg,100,Llama 3.1 8B,nvidia_rtx_4090,Q4_K_M,zero,128,1\n", "line 2, column 'prompt_tokens'"),
        (HEADER + "r1,speed,100,Llama 3.1 8B,nvidia_rtx_4090,Q4_K_M,0,128,1\n", "column 'metric'"),
    ],
)
def test_malformed_csv_names_row_and_column(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "cases.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_cases(path)
    r = run_cli("validate", str(path))
    assert r.code == 2 and "Traceback" not in r.err


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


def test_shipped_efficiency_table_is_what_calibrate_produces(tmp_path: Path) -> None:
    import tomllib

    from tokometer.catalog.efficiency import EFFICIENCY_FILE

    out = tmp_path / "efficiency.toml"
    r = run_cli("calibrate", str(MEASUREMENTS), "--out", str(out))
    assert r.code == 0, r.err
    fresh = tomllib.loads(out.read_text(encoding="utf-8"))["entries"]
    shipped = tomllib.loads(EFFICIENCY_FILE.read_text(encoding="utf-8"))["entries"]
    assert fresh.keys() == shipped.keys()
    for key in shipped:
        for name, value in shipped[key].items():
            if isinstance(value, float):
                assert fresh[key][name] == pytest.approx(value, rel=1e-4), (key, name)
