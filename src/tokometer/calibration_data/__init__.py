"""The published calibration measurements shipped with tokometer, as package data.

`measurements.csv` (single-machine decode and prompt rows) is what `tokometer calibrate` fits and
`tokometer validate` scores by default; `hardware.csv` holds the spec of every device those rows
name. Both are public, sourced data (see `README.md` beside them), shipped so that a fresh clone or
an installed wheel fits and tests without any folder beside the checkout.

`published/*.csv` (one file per publication, `measurements.csv`'s header) holds the 2025-26 published
single-stream rows; `tokometer calibrate` and `validate` read them with `measurements.csv`
(`tokometer.fitting.evidence.evidence_files`).

`outside.csv` holds published measurements the fit never sees: `tokometer calibrate` reads
`measurements.csv` and `published/*.csv` only, and the README's "Outside check" scores the shipped
fit on these rows.
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).parent
MEASUREMENTS_CSV = DATA_DIR / "measurements.csv"
HARDWARE_CSV = DATA_DIR / "hardware.csv"
OUTSIDE_CSV = DATA_DIR / "outside.csv"
PUBLISHED_DIR = DATA_DIR / "published"

__all__ = ["DATA_DIR", "HARDWARE_CSV", "MEASUREMENTS_CSV", "OUTSIDE_CSV", "PUBLISHED_DIR"]
