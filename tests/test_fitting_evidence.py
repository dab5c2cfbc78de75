"""The shipped evidence is measurements.csv plus every published/*.csv, never outside.csv (issue 25)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tokometer.calibration_data import MEASUREMENTS_CSV, OUTSIDE_CSV
from tokometer.fitting.evidence import evidence_files, evidence_label, read_evidence
from tokometer.fitting.rows import read_cases
from tokometer.fitting.validation import validate


def _published(tmp_path: Path, rows: list[str]) -> Path:
    folder = tmp_path / "published"
    folder.mkdir()
    header = Path(MEASUREMENTS_CSV).read_text(encoding="utf-8").splitlines()[0]
    (folder / "SRC-A.csv").write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    shutil.copy(OUTSIDE_CSV, folder / "outside.csv")  # even a stray copy of the outside rows is not read
    return folder


def test_evidence_reads_measurements_then_each_published_file_and_never_outside(tmp_path: Path) -> None:
    line = Path(MEASUREMENTS_CSV).read_text(encoding="utf-8").splitlines()[1]
    folder = _published(tmp_path, [line.replace("m0001,XD-L3", "p0001,SRC-A", 1)])
    files = evidence_files(folder)
    assert files == [Path(MEASUREMENTS_CSV), folder / "SRC-A.csv"]
    cases = read_evidence(files)
    assert len(cases) == len(read_cases(MEASUREMENTS_CSV)) + 1
    assert cases[-1].row_id == "p0001" and cases[-1].text("source_id") == "SRC-A"
    assert evidence_label(files) == "measurements.csv + 1 published/*.csv file"
    outside_ids = {c.row_id for c in read_cases(OUTSIDE_CSV)}
    assert not outside_ids & {c.row_id for c in cases}


def test_a_published_row_on_hardware_the_catalog_lacks_is_unscored_with_a_reason(tmp_path: Path) -> None:
    line = Path(MEASUREMENTS_CSV).read_text(encoding="utf-8").splitlines()[1]
    unknown = line.replace("m0001,XD-L3", "p0002,SRC-A", 1).replace("nvidia_rtx_3070,3070 8GB", "imaginary_gpu_9000,Imaginary 9000", 1)
    cases = read_evidence(evidence_files(_published(tmp_path, [unknown])))
    result = validate([cases[-1]])[0]
    assert not result.scored
    assert result.reason and "imaginary" in result.reason.lower()
