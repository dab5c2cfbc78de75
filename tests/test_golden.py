"""Behaviour stays the same: `estimate --json`, `validate --json`, bench grading, `bench --json` and
`runs show/list --json` (measured and imported runs) are byte-equal to the golden files written from
the code before the restructure (the bench and runs cases: before the reads became typed). Regenerate
only for an intended change: `PYTHONPATH=src python tests/golden.py [PREFIX...]`."""

from __future__ import annotations

import pytest

import golden


@pytest.mark.parametrize("name", sorted(golden.ESTIMATE_CASES))
def test_estimate_json_is_unchanged(name: str) -> None:
    assert golden.estimate_json(name) == (golden.GOLDEN / f"estimate-{name}.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("mode", sorted(golden.VALIDATE_MODES))
def test_validate_json_is_unchanged(mode: str) -> None:
    assert golden.validate_json(mode) == (golden.GOLDEN / f"validate-{mode}.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(golden.GRADING_RUNS))
def test_bench_grading_json_is_unchanged(name: str) -> None:
    assert golden.grading_json(name) == (golden.GOLDEN / f"grading-{name}.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(golden.BENCH_CASES))
def test_bench_json_is_unchanged(name: str) -> None:
    assert golden.bench_json(name) == (golden.GOLDEN / f"bench-{name}.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", golden.RUNS_CASES)
def test_runs_show_and_list_json_are_unchanged(name: str) -> None:
    assert golden.runs_json(name) == (golden.GOLDEN / f"runs-{name}.json").read_text(encoding="utf-8")


def test_imported_runs_show_and_list_json_are_unchanged() -> None:
    assert golden.runs_imported_json() == (golden.GOLDEN / "runs-imported.json").read_text(encoding="utf-8")
