"""Small helpers shared by tests: run the CLI in-process and capture what a user would see."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(*args: str, env: dict[str, str] | None = None) -> Result:
    """Run `python -m tokometer ARGS` in a subprocess, as a user would."""
    proc = subprocess.run(
        [sys.executable, "-m", "tokometer", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)
