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
