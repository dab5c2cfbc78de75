"""Progress bars: drawn on a terminal's stderr only, never under --json or in pipes, tqdm imported lazily."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from tokometer.report import progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_bar_in_pipes_or_under_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert not progress.shown()
    assert progress.wrapper("x") is None
    monkeypatch.setattr(sys, "stderr", _Tty())
    assert progress.shown() and not progress.shown(as_json=True)
    assert progress.wrapper("x", as_json=True) is None


def test_a_bar_on_a_terminal_passes_every_item_and_draws_on_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    wrap = progress.wrapper("rows")
    assert wrap is not None
    assert list(wrap([1, 2, 3])) == [1, 2, 3]
    assert "rows" in err.getvalue()
    with progress.Counter("simulating", 10) as bar:
        assert bar.enabled
        bar.tick(4)
        bar.tick(10)
        assert bar._bar.n == 10


def test_a_counter_off_a_terminal_draws_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with progress.Counter("simulating", 10) as bar:
        bar.tick(5)
    assert not bar.enabled and err.getvalue() == ""


def test_importing_tokometer_does_not_import_tqdm() -> None:
    code = "import sys, tokometer, tokometer.cli.validate, tokometer.report.progress; print('tqdm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
