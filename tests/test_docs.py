"""Generated docs are checked in and must match what `scripts/gen_docs.py` writes now."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("rel", ["docs/cli.md", "docs/hardware.md"])
def test_generated_docs_are_current(rel: str) -> None:
    expected = load_generator().DOCS[rel]()
    actual = (ROOT / rel).read_text(encoding="utf-8")
    assert actual == expected, f"{rel} is stale: run `python scripts/gen_docs.py`"


def test_cli_reference_covers_every_command() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for command in ["estimate", "hardware list", "models show", "quants list", "validate", "calibrate", "bench", "runs list", "probe", "serve", "feel", "fit", "sweep", "utilization"]:
        assert f"## `tokometer {command}`" in text, command


def test_cli_reference_usage_lines_name_each_command_once() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    usages = [line for line in text.splitlines() if line.startswith("Usage: ")]
    assert "Usage: tokometer hardware list [OPTIONS]" in usages
    assert len(usages) > 15 and not [u for u in usages if u.count("tokometer") != 1]
