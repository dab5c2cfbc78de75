"""Small helpers shared by tests: run the CLI in-process and capture what a user would see."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(*args: str, env: dict[str, str] | None = None, timeout_s: float = 120.0) -> Result:
    """Run `python -m tokometer ARGS` in a subprocess, as a user would (killed after `timeout_s`)."""
    proc = subprocess.run(
        [sys.executable, "-m", "tokometer", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout_s,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run `tokometer ARGS` in-process, as `main` maps errors: (exit code, stdout, stderr)."""
    from tokometer.cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def shipped_serving_rows(keep: tuple[str, ...]) -> tuple[list[str], list[dict[str, str]]]:
    """The header of the shipped serving.csv and its rows whose row_id is in `keep`, in file order."""
    import csv

    from tokometer.fitting.serving_runs import default_data_path

    with default_data_path().open(encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), [r for r in reader if r["row_id"] in keep]


def write_rows_csv(path: Any, header: list[str], rows: list[dict[str, str]]) -> Any:
    """Write `rows` under `header` to `path` (a pathlib.Path) as a measurements CSV and return the path."""
    import csv
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header)
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path
