"""A benchmark output a publication prints twice counts once (fitting/reprints.py, issue 29)."""

from __future__ import annotations

from pathlib import Path

from tokometer.fitting.reprints import MIN_METRICS, REPRINT, TWO_DEVICES, drop_repeated_blocks
from tokometer.fitting.serving_families import published_paths
from tokometer.fitting.serving_runs import Row, group_runs, read_rows

METRICS = ("req_per_s", "tput_out", "ttft_ms_mean", "tpot_ms_mean", "itl_ms_p50")


def _block(block: str, values: tuple[float, ...], hw: str = "h200", model: str = "m", source: str = "S") -> list[Row]:
    raw = {"source_id": source, "hardware_id": hw, "n_devices": "8", "model": model, "engine": "SGLang",
           "scenario": "online-concurrency", "concurrency": "16", "prompt_tokens": "1000", "gen_tokens": "1000"}
    return [Row(f"{block}-{m}", {**raw, "metric": m, "value": str(v)}, m, v) for m, v in zip(METRICS, values, strict=True)]


FIGURES = (0.51, 258.18, 374.3, 53.25, 53.97)


def test_a_block_reprinted_in_another_section_of_the_same_run_is_dropped() -> None:
    rows = _block("S-b1", FIGURES) + _block("S-b2", FIGURES)
    kept = drop_repeated_blocks(rows)
    assert [r.row_id for r in kept] == [r.row_id for r in rows[: len(METRICS)]]


def test_blocks_that_share_fewer_figures_are_separate_measurements() -> None:
    other = (*FIGURES[: MIN_METRICS - 1], 60.0, 61.0)  # three figures alike, two not
    rows = _block("S-b1", FIGURES) + _block("S-b2", other)
    assert len(drop_repeated_blocks(rows)) == 2 * len(METRICS)
    # one rounded figure alone (0.25 req/s) recurs by chance: a block of fewer than MIN_METRICS figures is never matched
    short = _block("S-b1", FIGURES)[: MIN_METRICS - 1] + _block("S-b2", FIGURES)[: MIN_METRICS - 1]
    assert len(drop_repeated_blocks(short)) == len(short)


def test_the_same_output_under_two_models_on_one_device_is_scored_once() -> None:
    runs = group_runs(_block("S-K2.5-b1", FIGURES, model="Kimi-K2.5") + _block("S-K2.6-b1", FIGURES, model="Kimi-K2.6"))
    assert len(runs) == 2
    first, second = runs
    assert first.reason is None or "digit for digit" not in first.reason
    assert second.reason == REPRINT.format(other="S-K2.5-b1")


def test_the_same_output_under_two_devices_is_not_scored_at_all() -> None:
    runs = group_runs(_block("S-a100-b1", FIGURES, hw="a100-80gb-sxm") + _block("S-h100-b1", FIGURES, hw="h100-sxm"))
    want = TWO_DEVICES.format(a="8 x a100-80gb-sxm", b="8 x h100-sxm")
    assert [r.reason for r in runs] == [want, want]


def test_two_sources_printing_equal_figures_are_two_measurements() -> None:
    runs = group_runs(_block("A-b1", FIGURES, source="A") + _block("B-b1", FIGURES, source="B"))
    assert all(r.reason is None or "digit for digit" not in r.reason for r in runs)


def _path(stem: str) -> Path:
    return next(p for p in published_paths() if p.stem == stem)


def test_the_shipped_reprints_are_read_as_such() -> None:
    runs = group_runs(read_rows(_path("SGL-COOKBOOK"))[0])
    reprinted = {r.rows[0].text("model") for r in runs if r.reason and r.reason.startswith(REPRINT.split("{")[0])}
    # the Kimi-K2.6 page prints the K2.5 page's ten outputs, GLM-5's page two of GLM-5.1's
    assert any("K2.6" in m for m in reprinted) and any("GLM-5" in m for m in reprinted)
    assert not any("K2.5" in m for m in reprinted)
    lab = group_runs(read_rows(_path("GPS-PERFLAB"))[0])
    both = [r for r in lab if r.reason and "which one ran it" in r.reason]
    assert len(both) == 16 and {r.rows[0].text("hardware_id") for r in both} == {"a100-80gb-sxm", "h100-sxm"}
    rows = read_rows(_path("GPS-PERFLAB"))[0]
    assert sum(len(r.rows) for r in lab) < len(rows)  # a baseline block printed in two sections of one page, once
