"""`tokometer validate` and `calibrate` on a file with serving columns: predicted through the simulator,
reported per metric and per scenario; mixed, unknown and malformed rows are listed with a reason."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from tests.helpers import cli

from tokometer.usecases.serving_validate import default_data_path, is_serving_file

KEEP = ("s0145", "s0878", "s0879", "s0880", "s0881", "s1444", "s1445", "s1446", "s1447")


@pytest.fixture(scope="module")
def serving_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Nine published rows (offline, static batch, online rate) and four that cannot be scored."""
    with default_data_path().open(encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames or [])
        rows = [r for r in reader if r["row_id"] in KEEP]
    base = next(r for r in rows if r["row_id"] == "s0145")
    rows += [
        {**base, "row_id": "x-single", "scenario": "", "metric": "tg"},
        {**base, "row_id": "x-scenario", "scenario": "disaggregated"},
        {**base, "row_id": "x-value", "value": "fast"},
        {**base, "row_id": "x-metric", "metric": "ttft_ms_p75"},
    ]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header)
    writer.writeheader()
    writer.writerows(rows)
    path = tmp_path_factory.mktemp("serving") / "rows.csv"
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


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
    from tokometer.usecases.serving_validate import group_runs, read_rows

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
