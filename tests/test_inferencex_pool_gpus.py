"""InferenceX's per-GPU throughput of a disaggregated run divides each count by its own pool: input tokens/s by
the prefill GPUs, output tokens/s by the decode GPUs, total tokens/s by both (InferenceX `utils/process_result.py`,
multinode branch). The published rows say so themselves: per-GPU total x all GPUs = per-GPU input x prefill GPUs +
per-GPU output x decode GPUs, never (input + output) x all GPUs (docs/PHYSICS.md section 6, "InferenceX's per-GPU
figures of disaggregated runs")."""

from __future__ import annotations

import pytest

from tokometer.fitting.quantity import Quantity
from tokometer.fitting.serving_families import published_paths
from tokometer.fitting.serving_runs import Run, group_runs, read_rows
from tokometer.fitting.serving_validate import as_quantity

TOTALS: dict[str, float | None] = {"tput_out": 3200.0, "tput_in": 8000.0, "tput_total": 11200.0}


def test_each_count_divides_by_its_own_pool() -> None:
    run = Run([], gpus=40, pool_gpus=(8, 32))
    assert as_quantity(Quantity("input_tokens", "gpu"), run, TOTALS) == (1000.0, None)
    assert as_quantity(Quantity("output_tokens", "gpu"), run, TOTALS) == (100.0, None)
    assert as_quantity(Quantity("total_tokens", "gpu"), run, TOTALS) == (280.0, None)
    # without the source's convention every count divides by both pools' GPUs
    both = Run([], gpus=40)
    assert as_quantity(Quantity("output_tokens", "gpu"), both, TOTALS) == (80.0, None)
    # a replica-wide figure is not divided at all
    assert as_quantity(Quantity("output_tokens", "replica"), run, TOTALS) == (3200.0, None)


def test_published_inferencex_rows_add_up_per_pool() -> None:
    path = next(p for p in published_paths() if p.stem == "IX-DSR1-API")
    rows, _ = read_rows(path)
    checked = consistent = 0
    for run in group_runs(rows):
        if run.disagg is None:
            assert run.pool_gpus is None
            continue
        assert run.pool_gpus is not None and sum(run.pool_gpus) == run.gpus
        values = {r.metric: r.value for r in run.rows}
        if not all(values.get(k) for k in ("tput_total", "tput_in", "tput_out")):
            continue
        prefill, decode = run.pool_gpus
        total = values["tput_total"] * (prefill + decode)
        checked += 1
        consistent += values["tput_in"] * prefill + values["tput_out"] * decode == pytest.approx(total, rel=0.02)
        # the all-GPU reading would double-count whenever both pools hold GPUs
        assert (values["tput_in"] + values["tput_out"]) * (prefill + decode) != pytest.approx(total, rel=0.02)
    assert checked >= 100
    assert consistent >= 0.95 * checked


class _NoResult:
    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"an unscored ITL row read the simulated result ({name})")


def test_disaggregated_inferencex_itl_is_unscored_with_its_reason() -> None:
    from tokometer.fitting.inferencex import INFERENCEX_DISAGG_ITL
    from tokometer.fitting.serving_validate import read_metric

    path = next(p for p in published_paths() if p.stem == "IX-DSR1-API")
    rows, _ = read_rows(path)
    runs = [run for run in group_runs(rows) if run.reason is None]
    disagg = [run for run in runs if run.disagg is not None]
    assert disagg and all(run.itl_reason == INFERENCEX_DISAGG_ITL for run in disagg)
    assert all(run.itl_reason is None for run in runs if run.disagg is None)
    # the measured ITL / TPOT of these runs is a chunk size: far from 1 in most of them
    ratios = []
    for run in disagg:
        values = {r.metric: r.value for r in run.rows}
        if values.get("itl_s_mean") and values.get("tpot_s_mean"):
            ratios.append(values["itl_s_mean"] / values["tpot_s_mean"])
    assert len(ratios) >= 100 and sum(r > 5 for r in ratios) > 0.5 * len(ratios)
    itl_row = next(r for run in disagg for r in run.rows if r.metric.startswith("itl"))
    run = next(run for run in disagg if itl_row in run.rows)
    assert read_metric(_NoResult(), itl_row, run) == (None, INFERENCEX_DISAGG_ITL)  # type: ignore[arg-type]


def test_median_interactivity_is_one_over_the_median_tpot() -> None:
    """InferenceX's "median interactivity" is 1000 / median TPOT (ms); a per-user figure without the word
    stays 1 / the mean TPOT."""
    from types import SimpleNamespace

    from tokometer.fitting.serving_runs import Row
    from tokometer.fitting.serving_validate import read_metric

    result = SimpleNamespace(tput_out_tok_s=1.0, tput_total_tok_s=2.0, tput_in_tok_s=1.0, req_per_s=0.1,
                             tpot_s=SimpleNamespace(mean=0.025, p50=0.020))
    median = Row("m", {"unit": "tokens/s/user (median interactivity)"}, "tput_out_per_user", 50.0)
    plain = Row("p", {"unit": "tokens/s/user"}, "tput_out_per_user", 40.0)
    assert read_metric(result, median) == (pytest.approx(50.0), None)  # type: ignore[arg-type]
    assert read_metric(result, plain) == (pytest.approx(40.0), None)  # type: ignore[arg-type]
