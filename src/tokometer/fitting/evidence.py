"""The shipped single-stream evidence: `measurements.csv` plus every `published/*.csv`, never `outside.csv`.

New publications arrive as one CSV per source in `calibration_data/published/` with
`measurements.csv`'s header; `tokometer calibrate` and `validate` (without a file argument) fit and
score all of them together. `outside.csv` is the outside check: it is never read here, so it is never
fitted (tests/test_outside_check.py).
"""

from __future__ import annotations

from pathlib import Path

from tokometer.calibration_data import MEASUREMENTS_CSV, OUTSIDE_CSV, PUBLISHED_DIR
from tokometer.fitting import rows
from tokometer.fitting.rows import Case


def evidence_files(published_dir: Path = PUBLISHED_DIR) -> list[Path]:
    """measurements.csv, then each published/*.csv in name order (outside.csv excluded by name)."""
    published = sorted(published_dir.glob("*.csv")) if published_dir.is_dir() else []
    return [Path(MEASUREMENTS_CSV), *(p for p in published if p.name != Path(OUTSIDE_CSV).name)]


def read_evidence(files: list[Path] | None = None) -> list[Case]:
    """Every row of the evidence files, in file order (each file's header checked by `read_cases`)."""
    cases: list[Case] = []
    for path in files if files is not None else evidence_files():
        cases += rows.read_cases(path)
    return cases


def evidence_label(files: list[Path] | None = None) -> str:
    """What a fit on the evidence was fitted on, for the table's `data` field."""
    names = [p.name for p in (files if files is not None else evidence_files())]
    if not names:
        return "(no evidence)"
    published = len(names) - 1
    return names[0] + (f" + {published} published/*.csv file{'s' if published > 1 else ''}" if published else "")
