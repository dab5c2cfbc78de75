"""Serving fit and validation: the fit recovers known parameters, the shipped table is what the fit
produces on the shipped data, and the validation report keeps every row (with a reason when unscored)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tokometer.catalog.serving import SERVING_EFFICIENCY_FILE
from tokometer.costmodel.serving import ServingEfficiency
from tokometer.fitting.serving_fit import (
    Recording,
    calibrate_serving,
    file_sha256,
    fit,
    record_run,
)
from tokometer.fitting.serving_report import report
from tokometer.fitting.serving_runs import default_data_path, group_runs, read_rows
from tokometer.fitting.serving_validate import predict, simulate_run

TRUTH = ServingEfficiency(compute_fraction_max=0.55, compute_half_tokens=128.0, layer_step_overhead_us=96.0, sequence_overhead_us=20.0,
                          prefill_fraction_max=0.5)


def _rows(tmp_path: Path, rows: list[dict[str, str]]) -> Path:
    data = list(csv.DictReader(default_data_path().read_text(encoding="utf-8").splitlines()))
    header = list(data[0])
    path = tmp_path / "serving.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, header)
        w.writeheader()
        for r in rows:
            w.writerow({**{k: "" for k in header}, **r})
    return path


def _static_rows() -> list[dict[str, str]]:
    data = list(csv.DictReader(default_data_path().read_text(encoding="utf-8").splitlines()))
    # two model sizes: with one, a per-step overhead and the GEMM ramp of small steps trade off
    keep = [r for r in data if r["scenario"] == "static-batch" and r["model"] in ("Llama-2-7B-chat", "Llama-2-70B-chat")
            and r["metric"] in ("tput_out", "ttft_s_mean", "itl_s_p50")]
    return keep


def test_fit_recovers_known_parameters(tmp_path: Path) -> None:
    rows, _ = read_rows(_rows(tmp_path, _static_rows()))
    recs = [r for r in (record_run(run) for run in group_runs(rows)) if r is not None]
    assert len(recs) >= 4
    synthetic: list[Recording] = []
    for rec in recs:  # measurements made by the model itself with TRUTH
        pred = rec.predict(TRUTH)
        synthetic.append(Recording(**{**rec.__dict__, "targets": [(name, pred[name]) for name, _ in rec.targets]}))
    got = fit(synthetic)
    for rec in synthetic:
        for name, measured in rec.targets:
            assert rec.predict(got)[name] == pytest.approx(measured, rel=0.05)
    assert got.layer_step_overhead_us == pytest.approx(TRUTH.layer_step_overhead_us, rel=0.35)
    assert got.sequence_overhead_us == pytest.approx(TRUTH.sequence_overhead_us, rel=0.35)
    assert got.prefill_fraction_max == pytest.approx(0.5, abs=0.051)  # the prompts' plateau, not the prior's 0.7
    pooled = fit(synthetic, prefill=False)  # the pooled entry leaves prompts to single-stream physics
    assert pooled.prefill_fraction_max is None


def test_the_fits_shortcut_predicts_what_the_simulator_does(tmp_path: Path) -> None:
    """A recorded static batch, re-timed in numpy under other parameters, gives the simulator's own
    throughput, mean TTFT and median ITL for those parameters (within the blocks' averaging)."""
    rows, _ = read_rows(_rows(tmp_path, _static_rows()))
    checked = 0
    for run in group_runs(rows):
        rec = record_run(run)
        if rec is None:
            continue
        fast = rec.predict(TRUTH)
        sim = simulate_run(run, lambda _: TRUTH)
        assert fast["tput_out"] == pytest.approx(sim.tput_out_tok_s, rel=0.02)
        assert fast["ttft_mean"] == pytest.approx(sim.ttft_s.mean, rel=0.02)
        assert fast["itl_p50"] == pytest.approx(sim.itl_s.p50, rel=0.03)
        checked += 1
    assert checked >= 4


def test_validation_keeps_every_row_with_a_reason(tmp_path: Path) -> None:
    good = _static_rows()[:2]
    unknown = {**good[0], "row_id": "x1", "model": "NoSuchModel-9B"}
    odd = {**good[0], "row_id": "x2", "metric": "joules_per_token"}
    broken = {**good[0], "row_id": "x3", "value": "fast"}
    rows, bad = read_rows(_rows(tmp_path, [*good, unknown, odd, broken]))
    rep = report(predict(group_runs(rows), lambda _: TRUTH) + bad)
    assert rep["rows"] == 5
    reasons = {r["row_id"]: r["reason"] for r in rep["unpredictable"]}
    assert set(reasons) == {"x1", "x2", "x3"}
    assert "not in the model catalog" in reasons["x1"] and "not one the simulator produces" in reasons["x2"]
    m = rep["metrics"]["tput_out"]
    assert set(m) >= {"n", "scored", "median_ape", "p90_ape", "within_15"} and m["scored"] >= 1
    assert "static-batch" in rep["scenarios"]


def test_shipped_table_names_the_data_it_was_fitted_on() -> None:
    shipped = json.loads(SERVING_EFFICIENCY_FILE.read_text(encoding="utf-8"))
    assert shipped["data_sha256"] == file_sha256(default_data_path())
    for entry in shipped["entries"].values():
        assert 0 < entry["compute_fraction_max"] <= 1 and entry["layer_step_overhead_us"] >= 0 and entry["n_rows"] > 0


@pytest.mark.slow
def test_shipped_table_is_what_the_fit_produces() -> None:
    shipped = json.loads(SERVING_EFFICIENCY_FILE.read_text(encoding="utf-8"))
    assert calibrate_serving(default_data_path()) == shipped
