"""Benchmark suites whose published figure is an aggregate over fixed tests, predicted as that aggregate.

LocalScore (Mozilla-Ocho/llamafile, `localscore/`, v0.9.2-0.9.3, commits 5748e86..ff0c02e) runs nine
(prompt, generation) tests once each (`--reps` default 1) and reports, per metric, the ARITHMETIC MEAN
over the tests of each test's own figure (`getResultsSummary` in localscore.cpp): prompt tok/s =
mean of n_prompt / prefill time, generation tok/s = mean of n_gen / generation time, TTFT = mean of
(prefill time + the first generated token's step). The published figure is therefore neither one
test's rate nor total tokens over total time, and no single estimate is that average: a suite row is
predicted by predicting each test as the single-stream row it is and averaging the same way, and its
80 % band is the same average of the tests' band edges (the tests share one efficiency, so their
errors move together). Suite rows are scored as held-out evidence only, never fitted (`features`).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace

from tokometer.fitting.rows import Case, CaseResult

# the raw column a suite's part carries, naming its test ("1024+16"): a part is never a suite again
PART_COLUMN = "suite_test"


@dataclass(frozen=True)
class SuiteTest:
    """One test of a suite: a prompt into an empty KV cache, then single-token decode steps."""

    prompt_tokens: int
    gen_tokens: int


@dataclass(frozen=True)
class Suite:
    """A fixed benchmark suite and where its definition was read."""

    name: str
    tests: tuple[SuiteTest, ...]
    source: str

    def aggregate(self, per_test: list[float]) -> float:
        """The reported figure from the tests' figures: their arithmetic mean (LocalScore's
        `total / valid_count` for prompt tok/s, generation tok/s and TTFT alike)."""
        return statistics.fmean(per_test)


LOCALSCORE = Suite(
    name="LocalScore",
    # localscore.cpp get_baseline_test_configs(), unchanged from 5748e86 (2025-04-01) to ff0c02e (v0.9.3)
    tests=tuple(
        SuiteTest(p, g)
        for p, g in (
            (1024, 16), (4096, 256), (2048, 256), (2048, 768), (1024, 1024),
            (1280, 3072), (384, 1152), (64, 1024), (16, 1536),
        )
    ),
    source="Mozilla-Ocho/llamafile localscore/localscore.cpp get_baseline_test_configs + getResultsSummary, "
    "localscore/benchmark.cpp, localscore/cmd.cpp (reps 1, n_batch 2048, n_ubatch 512, flash_attn off)",
)

SUITES = (LOCALSCORE,)


def suite_of(case: Case) -> Suite | None:
    """The suite a row reports the aggregate of: its engine names the suite and it states no lengths of
    its own (a row with a prompt or generation length measured that one test), else None."""
    if case.text(PART_COLUMN) or case.text("prompt_tokens") or case.text("gen_tokens"):
        return None
    engine = case.text("engine").lower()
    return next((s for s in SUITES if s.name.lower() in engine), None)


# LocalScore's accelerator as the site prints it: "<name> (GPU, <memory> GB); system CPU ...", an Apple
# GPU named by its chip and core counts ("Apple M4 Pro 10P+4E+20GPU": performance, efficiency, GPU cores)
ACCELERATOR = re.compile(r"^(?P<name>.*?) \(GPU, (?P<memory_gb>[\d.]+) GB\)")
APPLE_GPU = re.compile(r"^(?P<chip>Apple M\d(?: Pro| Max| Ultra)?) \d+P\+\d+E\+(?P<cores>\d+)GPU$")


def apple_gpu_cells(case: Case) -> dict[str, str]:
    """For a row without a hardware_id whose accelerator is an Apple GPU: the catalog entry its chip and
    GPU core count name (the catalog's own alias, "Apple M4 Pro 16-core"; a chip alone is not enough,
    since Max and Ultra tiers differ by core count) and the machine's memory as the row prints it
    (LocalScore reports Metal's memory as the system's RAM, `localscore/system.cpp`); {} otherwise."""
    from tokometer.catalog import hardware_catalog

    if case.text("hardware_id"):
        return {}
    accelerator = ACCELERATOR.match(case.text("hardware_as_stated"))
    apple = APPLE_GPU.match(accelerator.group("name")) if accelerator else None
    if accelerator is None or apple is None:
        return {}
    found = hardware_catalog().find(f"{apple.group('chip')} {apple.group('cores')}-core")
    if found is None:
        return {}
    return {"hardware_id": found.id, "memory_gb": accelerator.group("memory_gb")}


def suite_parts(case: Case, suite: Suite) -> list[Case]:
    """The suite row as one single-stream row per test, each with the test's lengths and the row's setup."""
    parts = []
    device = apple_gpu_cells(case)
    for test in suite.tests:
        label = f"{test.prompt_tokens}+{test.gen_tokens}"
        raw = {
            **case.raw, **device,
            "prompt_tokens": str(test.prompt_tokens), "gen_tokens": str(test.gen_tokens), PART_COLUMN: label,
        }
        parts.append(replace(case, raw=raw, prompt_tokens=test.prompt_tokens, gen_tokens=test.gen_tokens))
    return parts


def predict_suite(case: Case, suite: Suite, predict: Callable[[Case], CaseResult]) -> CaseResult:
    """Predict a suite row: each test through `predict` (the single-row prediction), then the suite's
    aggregate of the predictions and of their band edges. A test that cannot be predicted leaves the
    whole row unscored with that test's reason."""
    result = CaseResult(case)
    if case.problem:
        result.reason = case.problem
        return result
    parts = [predict(part) for part in suite_parts(case, suite)]
    first = parts[0]
    result.group, result.hardware_id = first.group, first.hardware_id
    missing = next((p for p in parts if p.predicted is None), None)
    if missing is not None:
        result.reason = _reason(suite, missing, parts)
        return result
    result.predicted = suite.aggregate([p.predicted for p in parts if p.predicted is not None])
    if all(p.low is not None and p.high is not None for p in parts):
        result.low = suite.aggregate([p.low for p in parts if p.low is not None])
        result.high = suite.aggregate([p.high for p in parts if p.high is not None])
    result.details = {"suite": suite.name, "tests": {p.case.text(PART_COLUMN): p.predicted for p in parts}}
    failed = next((p for p in parts if p.reason), None)
    if failed is not None:
        result.reason = _reason(suite, failed, parts)
    elif (over := next((p.details["does_not_fit"] for p in parts if p.details.get("does_not_fit")), None)) is not None:
        result.reason = (
            f"{suite.name} offloads every layer (n_gpu_layers 9999) and the model {over}: the run spilled to "
            "system memory (the driver's shared-memory fallback) or fell back, its speed is not the device's"
        )
    return result


def _reason(suite: Suite, failed: CaseResult, parts: list[CaseResult]) -> str | None:
    """A test's reason as the row's: plain when every test has it (the row's hardware, model or flag),
    else naming the test it belongs to."""
    if all(p.reason == failed.reason for p in parts):
        return failed.reason
    return f"{suite.name} test {failed.case.text(PART_COLUMN)}: {failed.reason}"
