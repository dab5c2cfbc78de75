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
