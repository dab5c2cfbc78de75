"""The explanation lines are generated from the bound that actually applies (issue 28): a prefill
that waits on PCIe copies, reads or all-reduces is not worded with the compute side's numbers, and
the batching line's expert count is the one at the batch it names (docs/PHYSICS.md section 1)."""

from __future__ import annotations

import re

import pytest

from helpers import cli
from tokometer.costmodel.curves import experts_touched
from tokometer.report.json import PREFILL_BOUND_WORDS, explanation
from tokometer.usecases.estimate import estimate

SETUPS = [
    ("gpt-oss-120b", "rtx-4090", {"offload_experts": "all"}),
    ("gpt-oss-120b", "rtx-4090", {"offload_experts": 30}),
    ("llama-3.1-70b", "h100-sxm", {"tp": 8}),
    ("deepseek-v3", "h100-sxm", {"tp": 8}),
    ("llama-3.1-70b", "rtx-4090", {"gpu_layers": 40, "prompt_tokens": 4000}),
    ("llama-3.1-8b", "rtx-4090", {}),
    ("llama-3.1-8b", "h100-sxm", {"prompt_tokens": 16}),
    ("qwen3-30b-a3b", "rtx-4090", {}),
]


def _prefill_line(e) -> str:
    return next(line for line in explanation(e) if line.startswith("prefill of "))


@pytest.mark.parametrize(("model", "hw", "levers"), SETUPS)
def test_the_prefill_line_names_the_term_that_takes_the_most_time(model: str, hw: str, levers: dict) -> None:
    e = estimate(model, hw, **levers)
    pre = e.prefill
    assert pre is not None
    terms = {
        "compute": pre.compute_time_s,
        "memory": pre.memory_time_s - pre.transfer_time_s,
        "transfer": pre.transfer_time_s,
        "communication": pre.comm_time_s,
        "overhead": pre.overhead_time_s - pre.comm_time_s,
    }
    assert terms[pre.binding] == max(terms.values())
    line = _prefill_line(e)
    assert f" is {PREFILL_BOUND_WORDS[pre.binding]}-bound: " in line, line
    if pre.binding == "compute":
        assert re.search(r"-bound: [\d.,]+ TFLOP at \d+% of the ", line), line
    else:  # the binding term's own time comes first, the compute time after it
        first = float(re.search(r"-bound: ([\d.,]+) ms ", line).group(1).replace(",", ""))
        assert first == pytest.approx(terms[pre.binding] * 1e3, abs=0.06), line
        computing = float(re.search(r", ([\d.,]+) ms computing \(", line).group(1).replace(",", ""))
        assert computing == pytest.approx(pre.compute_time_s * 1e3, abs=0.06)


def test_offloaded_experts_make_prefill_pcie_bound_not_memory_bound() -> None:
    """All experts of gpt-oss-120b in RAM: 60.9 GB cross PCIe per prompt; the line said "memory-bound:
    5.3 TFLOP at 38 % of the 330.3 TFLOPS peak"."""
    e = estimate("gpt-oss-120b", "rtx-4090", offload_experts="all")
    line = _prefill_line(e)
    assert e.prefill is not None and e.prefill.binding == "transfer"
    assert "PCIe-bound" in line and "copying" in line and "pcie4x16" in line
    assert not re.search(r"memory-bound: [\d.]+ TFLOP", line)
    moved = float(re.search(r"copying ([\d.]+) GB", line).group(1))
    assert moved == pytest.approx(e.offload.cpu_weights_gb, rel=0.05)  # the experts kept in RAM


def test_tensor_parallel_prefill_says_the_work_is_split() -> None:
    e = estimate("llama-3.1-70b", "h100-sxm", tp=8)
    assert _prefill_line(e).endswith(", split over 8 devices") or ", split over 8 devices)" in _prefill_line(e)


def test_the_batching_line_counts_experts_at_its_own_batch(capsys: pytest.CaptureFixture[str]) -> None:
    """`8.0 of 256 experts read per layer` sat in the batch-256 sentence but was the batch-1 count."""
    code, out, err = cli(capsys, "estimate", "qwen3-30b-a3b", "--hw", "h100-sxm")
    assert code == 0, err
    line = next(line for line in out.splitlines() if line.startswith("batching:"))
    batch = int(re.search(r"aggregate at batch (\d+)", line).group(1))
    shown = float(re.search(r"; ([\d.]+) of 128 experts read per layer at batch (\d+)", line).group(1))
    e = estimate("qwen3-30b-a3b", "h100-sxm")
    assert shown == pytest.approx(experts_touched(e.model, batch), abs=0.05)
    assert shown > 2 * experts_touched(e.model, 1)  # not the batch-1 count (8 of 128)
