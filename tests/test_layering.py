"""Imports point down only: entry points -> api/explore -> adapters -> costmodel -> specs/units.

A module may import its own layer or any layer below it, never above. The cost model does no I/O.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tokometer"

# lower number = lower layer; a dotted key overrides its package's layer
LAYERS = {
    "units": 0, "errors": 0, "report.text": 0, "specs": 1,
    "costmodel": 2,
    "catalog": 3, "ingest": 3, "bench": 4, "store": 5,
    "api": 4, "validate": 5, "calibrate": 5, "explore": 5, "report": 6,
    "usecases": 5,
    "cli": 9, "web": 8, "__main__": 10, "__init__": 10,
}
IO_MODULES = {"httpx", "sqlite3", "socket", "subprocess", "urllib", "huggingface_hub", "requests", "os"}


def layer_of(module: str) -> int:
    parts = module.split(".")
    assert parts[0] == "tokometer"
    if len(parts) > 2 and f"{parts[1]}.{parts[2]}" in LAYERS:
        return LAYERS[f"{parts[1]}.{parts[2]}"]
    return LAYERS[parts[1]] if len(parts) > 1 else 10


def imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names]
    return found


MODULES = sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_down(path: Path) -> None:
    rel = path.relative_to(SRC).with_suffix("")
    module = "tokometer." + ".".join(rel.parts)
    own = layer_of(module)
    for target in imports(path):
        if target.startswith("tokometer.") and target.split(".")[1] in LAYERS:
            assert layer_of(target) <= own, f"{module} (layer {own}) imports {target} (layer {layer_of(target)})"


@pytest.mark.parametrize("path", sorted((SRC / "costmodel").glob("*.py")), ids=lambda p: p.name)
def test_cost_model_does_no_io(path: Path) -> None:
    for target in imports(path):
        assert target.split(".")[0] not in IO_MODULES, f"{path.name} imports {target}"
    assert "open(" not in path.read_text(encoding="utf-8")
