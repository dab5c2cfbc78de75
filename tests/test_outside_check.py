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

from tokometer.calibration_data import MEASUREMENTS_CSV, OUTSIDE_CSV
from tokometer.fitting.evidence import evidence_files, read_evidence
from tokometer.fitting.rows import read_cases
from tokometer.fitting.validation import validate


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.timeout(900)  # the session's one `calibrate` of the whole shipped evidence (minutes on 2 cores)
def test_calibrate_reads_the_measurements_and_never_the_outside_rows(calibrated_by_cli: tuple[Path, list[Path], int, str]) -> None:
    out, opened, code, err = calibrated_by_cli
    assert code == 0, err
    assert opened == evidence_files()
    assert opened[0] == Path(MEASUREMENTS_CSV) and Path(OUTSIDE_CSV) not in opened
    assert out.exists()


@pytest.mark.timeout(900)  # the session's one `calibrate` of the whole shipped evidence (minutes on 2 cores)
def test_the_shipped_table_is_not_a_fit_that_saw_the_outside_rows(calibrated_by_cli: tuple[Path, list[Path], int, str]) -> None:
    from tokometer.catalog.efficiency import EFFICIENCY_FILE
    from tokometer.fitting.calibration import fit_table
    from tokometer.fitting.features import features

    shipped = tomllib.loads(EFFICIENCY_FILE.read_text(encoding="utf-8"))["entries"]
    out, _, code, err = calibrated_by_cli
    assert code == 0, err
    without = tomllib.loads(out.read_text(encoding="utf-8"))["entries"]  # calibrate reads no outside row (above)

    def moved(table: dict[str, dict[str, Any]], reference: dict[str, dict[str, Any]]) -> list[str]:
        return [
            key
            for key, entry in table.items()
            if key not in reference
            or any(
                isinstance(value, float) and value != pytest.approx(reference[key].get(name), rel=1e-4)
                for name, value in entry.items()
                if name in reference[key]
            )
        ]

    assert moved(without, shipped) == []  # the shipped table is the fit on the shipped evidence alone
    # teeth: the outside rows are rows a fit would learn from (the fitted terms, bands aside, move with them)
    inside = [f for c in read_evidence() if (f := features(c)) is not None]
    outside = [f for c in read_cases(OUTSIDE_CSV) if (f := features(c)) is not None]
    assert len(outside) >= 20
    plain = {k: e.to_dict() for k, e in fit_table(inside).items()}
    seen = {k: e.to_dict() for k, e in fit_table(inside + outside).items()}
    assert moved(seen, plain), "the outside rows would change the fit: they must stay out of it"


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
