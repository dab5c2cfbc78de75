"""What quantity a published throughput is: the units of serving.csv and common vendor spellings."""

from __future__ import annotations

import csv

import pytest

from tokometer.errors import InputError
from tokometer.fitting.quantity import Quantity, is_throughput, read_quantity
from tokometer.fitting.serving_runs import default_data_path

CASES = [
    # metric, unit, flag, (kind, per)
    ("tput_out", "output tokens/s (total across all TP GPUs)", "", ("output_tokens", "replica")),
    ("tput_out", "output tokens/s (total across TP GPUs)", "", ("output_tokens", "replica")),
    ("tput_total", "tokens/s (prompt+completion, total)", "", ("total_tokens", "replica")),
    ("req_per_s", "requests/s", "", ("requests", "replica")),
    ("tput_out", "output tokens/s per GPU", "", ("output_tokens", "gpu")),
    ("tput_out", "tok/s/gpu", "", ("output_tokens", "gpu")),
    ("tput_out", "tokens/s/user", "", ("output_tokens", "user")),
    ("tput_out", "output tokens/s per user", "", ("output_tokens", "user")),
    ("tput_total", "total tokens/s", "", ("total_tokens", "replica")),
    ("tput", "total tokens/s", "", ("total_tokens", "replica")),
    ("tput", "input + output tokens/s per GPU", "", ("total_tokens", "gpu")),
    ("tput_out", "output tokens/s per node", "", ("output_tokens", "node")),
    ("tput_out", "tokens/s", "per_gpu_normalized", ("output_tokens", "gpu")),
    ("tput_out", "", "", ("output_tokens", "replica")),
    ("tput_in", "input tokens/s", "", ("input_tokens", "replica")),
    ("tput_out_per_gpu", "tok/s", "", ("output_tokens", "gpu")),
    ("req_per_s", "samples/s", "", ("requests", "replica")),
]


@pytest.mark.parametrize("metric, unit, flag, expected", CASES)
def test_spellings_read_into_one_quantity(metric: str, unit: str, flag: str, expected: tuple[str, str]) -> None:
    q = read_quantity(metric, unit, flag)
    assert (q.kind, q.per) == expected


@pytest.mark.parametrize("metric, unit", [
    ("tput_out", "total tokens/s"),  # input + output counted as output: not the same number
    ("tput_out", "requests/s"),
    ("tput_total", "output tokens/s"),
    ("tput_out", "ms"),
    ("tput_out_per_gpu", "tokens/s/user"),
])
def test_a_unit_that_contradicts_the_metric_is_an_error(metric: str, unit: str) -> None:
    with pytest.raises(InputError) as info:
        read_quantity(metric, unit)
    assert repr(unit) in str(info.value)


def test_latency_metrics_are_not_throughputs() -> None:
    assert not is_throughput("ttft_ms_mean")
    with pytest.raises(InputError):
        read_quantity("ttft_ms_mean", "ms")


def test_describe_names_the_count_and_its_denominator() -> None:
    assert Quantity("output_tokens", "gpu").describe() == "output tokens/s per gpu"
    assert Quantity("total_tokens").describe() == "input+output tokens/s"


def test_every_throughput_row_of_the_shipped_serving_file_reads() -> None:
    with default_data_path().open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if is_throughput(r["metric"])]
    assert rows
    for r in rows:
        q = read_quantity(r["metric"], r["unit"], r["flag"])
        assert q.per == "replica"  # the shipped file prints replica totals only
        assert q.kind == {"tput_out": "output_tokens", "tput_total": "total_tokens", "req_per_s": "requests"}[r["metric"]]
