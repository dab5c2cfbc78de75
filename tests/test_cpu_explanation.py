"""On a CPU the decode explanation names the compute term (issue 25: "39 % of the ceiling = 96 % of
bandwidth + 1.65 ms/token" did not add up because the matvec arithmetic was left out of the words):
the unhidden arithmetic is stated with its ops per weight and the dot-product peak, and when it takes
longer than the stream the bound says compute."""

from __future__ import annotations

import re
from dataclasses import replace

from tokometer.report.json import _decode_bound_words, explanation
from tokometer.usecases.estimate import estimate


def _realised_line(e) -> str:  # type: ignore[no-untyped-def]
    return next(line for line in explanation(e) if line.startswith("estimate = "))


def test_a_cpu_estimate_names_its_arithmetic_with_its_peak() -> None:
    e = estimate("llama-3.1-8b", "ddr5-dual-channel")
    s = e.step
    assert s.alu_time_s > 0  # the shipped table carries k_alu for llama.cpp
    line = _realised_line(e)
    assert "matvec arithmetic" in line and "dot-product peak" in line and "compute, not memory" in line
    stated = float(re.search(r"\+ ([\d.]+) ms/token of matvec arithmetic", line).group(1))  # type: ignore[union-attr]
    assert stated == round(s.alu_time_s * 1e3, 2)
    assert stated > 1.0  # on a CPU it is a large share of the step, not a rounding term


def test_a_gpu_without_unhidden_arithmetic_keeps_the_short_line() -> None:
    e = estimate("llama-3.1-8b", "m2-ultra-76c")
    if e.step.alu_time_s == 0:
        assert "matvec arithmetic" not in _realised_line(e)
    else:
        assert "fp32 shader peak" in _realised_line(e)


def test_the_bound_says_compute_when_the_arithmetic_outlasts_the_stream() -> None:
    s = estimate("llama-3.1-8b", "ddr5-dual-channel").step
    assert _decode_bound_words(s) == "memory-bound"
    slow = replace(s, alu_time_s=s.memory_time_s * 0.7)  # 70 % of the memory side is arithmetic
    assert _decode_bound_words(slow).startswith("compute-bound")
