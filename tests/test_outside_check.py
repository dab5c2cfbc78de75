"""The outside check: `outside.csv` holds published rows the fit never reads, and they resolve.

The README's "Outside check" is only honest if `tokometer calibrate` never sees these rows: the
calibrate command must open `measurements.csv` alone, and the shipped table must be the fit without
the outside rows while a fit with them comes out different (so the check has teeth).
"""

from __future__ import annotations

import csv
import tomllib
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import cli

from tokometer.calibration_data import MEASUREMENTS_CSV, OUTSIDE_CSV
from tokometer.fitting import rows
from tokometer.fitting.evidence import evidence_files, read_evidence
from tokometer.fitting.model import calibrate
from tokometer.fitting.rows import read_cases
from tokometer.fitting.validation import validate


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.timeout(900)  # fits the whole shipped evidence (about a minute a fit on 2 cores)
def test_calibrate_reads_the_measurements_and_never_the_outside_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened: list[Path] = []
    real = rows.read_cases

    def spy(path: str | Path) -> list[rows.Case]:
        opened.append(Path(path))
        return real(path)

    monkeypatch.setattr(rows, "read_cases", spy)
    out = tmp_path / "efficiency.toml"
    code, _, err = cli(capsys, "calibrate", "--out", str(out))
    assert code == 0, err
    assert opened == evidence_files()
    assert opened[0] == Path(MEASUREMENTS_CSV) and Path(OUTSIDE_CSV) not in opened
    assert out.exists()


@pytest.mark.timeout(900)  # fits the whole shipped evidence (about a minute a fit on 2 cores)
def test_the_shipped_table_is_not_a_fit_that_saw_the_outside_rows() -> None:
    from tokometer.catalog.efficiency import EFFICIENCY_FILE

    shipped = tomllib.loads(EFFICIENCY_FILE.read_text(encoding="utf-8"))["entries"]
    inside = read_evidence()
    with_outside, _, _ = calibrate(inside + read_cases(OUTSIDE_CSV), data_label="measurements.csv+outside.csv")
    without, _, _ = calibrate(inside, data_label="measurements.csv")

    def moved(table: dict[str, Any]) -> list[str]:
        return [
            key
            for key, entry in table.items()
            if key not in shipped
            or any(
                isinstance(value, float) and value != pytest.approx(shipped[key].get(name), rel=1e-4)
                for name, value in entry.to_dict().items()
                if name in shipped[key]
            )
        ]

    assert moved(without) == []  # the shipped table is the fit on measurements.csv alone
    assert moved(with_outside), "the outside rows would change the fit: they must stay out of it"


def test_every_outside_row_resolves_and_is_scored() -> None:
    results = validate(read_cases(OUTSIDE_CSV))
    assert 40 <= len(results) <= 150
    # the one reason an outside row may go unscored: weights past macOS's default GPU working set, a run of
    # paging (validation.pages_past_working_set: gpt-oss-20b on 16 GB Macs), never a row the reader cannot read
    unscored = [(r.case.row_id, r.reason) for r in results if not r.scored and "default GPU working set" not in (r.reason or "")]
    assert unscored == []
    assert sum(1 for r in results if not r.scored) <= 5


def test_outside_rows_are_sourced_and_none_is_a_calibration_row() -> None:
    outside = _rows(OUTSIDE_CSV)
    assert [r["row_id"] for r in outside] == sorted({r["row_id"] for r in outside})  # unique ids, in order
    for row in outside:
        assert row["source_ref"].startswith("https://"), row["row_id"]
        assert row["hardware_id"] and row["model"] and row["quant"] and row["metric"], row["row_id"]
    calibration_sources = {r["source_id"] for r in _rows(MEASUREMENTS_CSV)}
    assert not calibration_sources & {r["source_id"] for r in outside}

    def key(r: dict[str, str]) -> tuple[str, ...]:
        return (r["metric"], r["prompt_tokens"], r["gen_tokens"], f"{float(r['value']):g}")

    assert not {key(r) for r in outside} & {key(r) for r in _rows(MEASUREMENTS_CSV)}
