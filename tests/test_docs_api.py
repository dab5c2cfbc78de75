"""docs/api.md's examples run as written, in order, in one namespace, and each verb has one.

The tokometer home is a temporary directory (nothing of the user's is read or written). Only the
probe's measurement is faked (a quick real probe takes over ten seconds on a busy machine); the
example still runs through `tokometer.probe`, its load check and its result.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench_fixtures import bench_home  # noqa: F401

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"
VERBS = ["estimate", "simulate", "plan", "validate", "calibrate", "fit", "sweep", "benchmark", "bench_async", "probe", "list_catalog",
         "frontier", "utilization", "feel", "list_runs", "runs_path", "show_hardware", "show_model"]


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_every_verb_has_an_example() -> None:
    code = "\n".join(python_blocks(DOC.read_text(encoding="utf-8")))
    missing = [v for v in VERBS if f"tokometer.{v}(" not in code]
    assert missing == []


def test_the_block_reader_finds_blocks_and_only_python_ones() -> None:
    text = "x\n```python\na = 1\n```\n```bash\nls\n```\n```python\nb = 2\n```\n"
    assert python_blocks(text) == ["a = 1\n", "b = 2\n"]


@pytest.mark.timeout(300)
def test_the_examples_run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import tokometer.bench.probe as probe_module
    from test_bench_probe import fake_result

    monkeypatch.setattr(probe_module, "probe", lambda quick=False, device="auto": fake_result(42.0))
    blocks = python_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 8
    namespace: dict[str, object] = {"__name__": "api_md"}
    for n, block in enumerate(blocks, 1):
        try:
            exec(compile(block, f"docs/api.md block {n}", "exec"), namespace)
        except Exception as exc:  # name the block that broke
            raise AssertionError(f"docs/api.md block {n} failed: {exc!r}\n{block}") from exc
    out = capsys.readouterr().out
    assert "tok/s per stream" in out and "42 GB/s" in out and "complete" in out
