"""`tokometer calibrate` writes the user's fit into the tokometer home, which every later estimate
uses, and `--reset` goes back to the shipped fit; the installed package is never written (issue 28)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path

import pytest

from helpers import cli
from test_validate_serving import serving_csv  # noqa: F401
from tokometer.calibration_data import MEASUREMENTS_CSV
from tokometer.catalog import tokometer_home
from tokometer.catalog.efficiency import EFFICIENCY_FILE, active_efficiency_file, fitted_table
from tokometer.catalog.serving import SERVING_EFFICIENCY_FILE, serving_efficiency
from tokometer.usecases.estimate import estimate

pytestmark = pytest.mark.timeout(300)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _slower_measurements(tmp_path: Path) -> Path:
    """The shipped measurements with every value halved: a fit that must predict slower."""
    with Path(MEASUREMENTS_CSV).open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames or [])
        rows = [{**r, "value": str(float(r["value"]) / 2)} if r["value"] else r for r in reader]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header)
    writer.writeheader()
    writer.writerows(rows)
    path = tmp_path / "slower.csv"
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def test_calibrate_writes_the_home_and_estimates_use_it_until_reset(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    shipped_digest = _digest(EFFICIENCY_FILE)
    before = estimate("llama-3.1-8b", "rtx-4090").estimate_tok_s
    assert active_efficiency_file() == EFFICIENCY_FILE

    code, out, err = cli(capsys, "calibrate", str(_slower_measurements(tmp_path)))
    assert code == 0, err
    user = tokometer_home() / "efficiency.toml"
    assert user.is_file() and str(user) in out and "--reset" in out
    assert _digest(EFFICIENCY_FILE) == shipped_digest  # the package is never written
    assert active_efficiency_file() == user and fitted_table().meta.get("data") == "slower.csv"
    after = estimate("llama-3.1-8b", "rtx-4090").estimate_tok_s
    assert after < 0.75 * before  # halved measurements fit a slower engine, and estimate uses it

    code, out, err = cli(capsys, "calibrate", "--reset")
    assert code == 0, err
    assert not user.exists() and "removed" in out
    assert estimate("llama-3.1-8b", "rtx-4090").estimate_tok_s == pytest.approx(before)
    code, out, err = cli(capsys, "calibrate", "--reset")
    assert code == 0 and "already applies" in out


def test_calibrate_serving_writes_the_home(capsys: pytest.CaptureFixture[str], serving_csv: Path) -> None:  # noqa: F811
    shipped_digest = _digest(SERVING_EFFICIENCY_FILE)
    code, out, err = cli(capsys, "calibrate", str(serving_csv), "--json")
    assert code == 0, err
    user = tokometer_home() / "serving_efficiency.json"
    assert json.loads(out)["written"] == str(user) and user.is_file()
    assert _digest(SERVING_EFFICIENCY_FILE) == shipped_digest
    assert "(pooled)" in serving_efficiency("vllm").source and json.loads(user.read_text())["entries"].keys() == {"*"}
    code, out, err = cli(capsys, "calibrate", "--serving", "--reset", "--json")
    assert code == 0, err
    assert json.loads(out)["removed"] == str(user) and not user.exists()


def test_reset_takes_no_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "calibrate", "x.csv", "--reset")
    assert code == 2 and "--reset" in err and "Traceback" not in err
