"""Imports point down only, and never in a circle: between modules or between packages.

`LAYERS` below is the one place the layer order is written (docs/ARCHITECTURE.md lists the same
packages, and `test_architecture_lists_every_package` keeps the two equal). Layers, top down: entry
points (`cli`, `web`, `__main__`, the package's `__init__`) -> `report` -> `usecases` -> adapters
(`bench`, `store`, `catalog`, `ingest`) -> `costmodel` (pure) -> `specs`, `units`, `errors`, `home`.
A module may import its own layer or any layer below it, never above; `web` and `cli` reach the
use cases only through the public API (`tokometer.api`, which the web's handlers do import), never the
cost model; `catalog` never imports the cost model; no two modules and no
two packages import each other, directly or round a loop (a failure names the edge). The cost model
does no I/O.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tokometer"

BOTTOM, COSTMODEL, ADAPTERS, USECASES, REPORT, ENTRY = range(6)
# a dotted key overrides its package's layer
LAYERS = {
    "domain": BOTTOM, "errors": BOTTOM, "home": BOTTOM, "guard": BOTTOM,
    "costmodel": COSTMODEL,
    "catalog": ADAPTERS, "ingest": ADAPTERS, "bench": ADAPTERS, "store": ADAPTERS, "calibration_data": ADAPTERS,
    "usecases": USECASES, "fitting": USECASES,
    "report": REPORT,
    "cli": ENTRY, "web": ENTRY, "api": ENTRY, "__main__": ENTRY, "__init__": ENTRY,
}
# (importer package, imported package) pairs refused even where the layers would allow them
FORBIDDEN = {("web", "costmodel"), ("web", "usecases"), ("web", "fitting"), ("cli", "costmodel"), ("cli", "usecases"),
             ("cli", "fitting"), ("cli", "bench"), ("cli", "store"),
             ("catalog", "costmodel"), ("catalog", "usecases"), ("store", "bench")}
# the web modules that answer requests: each gets its figures from the public API
WEB_HANDLERS = ("app", "compute", "serving")
# known exceptions (importing module, imported module); do not add
KNOWN_EXCEPTIONS: set[tuple[str, str]] = set()
IO_MODULES = {"httpx", "sqlite3", "socket", "subprocess", "urllib", "huggingface_hub", "requests", "os"}


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"] or ["__init__"]
    return "tokometer." + ".".join(parts)


def layer_of(module: str) -> int:
    parts = module.split(".")
    assert parts[0] == "tokometer"
    if len(parts) == 1:
        return LAYERS["__init__"]
    if len(parts) > 2 and f"{parts[1]}.{parts[2]}" in LAYERS:
        return LAYERS[f"{parts[1]}.{parts[2]}"]
    return LAYERS[parts[1]]


def imports(path: Path) -> list[str]:
    """Every `tokometer` module this file imports, at the top or inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "tokometer" and [a.name for a in node.names] == ["__version__"]:
                continue  # the version string is a constant every layer may read
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names]
    return found


MODULES = sorted(SRC.rglob("*.py"))
NAMES = {module_name(p) for p in MODULES}


def internal_imports(path: Path) -> Iterator[str]:
    for target in imports(path):
        if target == "tokometer" or target.startswith("tokometer."):
            yield target


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_down(path: Path) -> None:
    module = module_name(path)
    own = layer_of(module)
    for target in internal_imports(path):
        assert layer_of(target) <= own, f"{module} (layer {own}) imports {target} (layer {layer_of(target)})"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_forbidden_shortcuts(path: Path) -> None:
    module = module_name(path)
    package = module.split(".")[1] if "." in module else "__init__"
    for target in internal_imports(path):
        if (module, target) in KNOWN_EXCEPTIONS:
            continue
        reached = target.split(".")[1] if "." in target else "__init__"
        assert (package, reached) not in FORBIDDEN, f"{module} imports {target}: {package} must not reach {reached}"


def shortcut_imports(module: str, targets: list[str]) -> list[str]:
    """`module imports target` for every import of a refused (importer package, imported package) pair."""
    package = module.split(".")[1] if "." in module else "__init__"
    found = []
    for target in targets:
        reached = target.split(".")[1] if "." in target else "__init__"
        if (package, reached) in FORBIDDEN and (module, target) not in KNOWN_EXCEPTIONS:
            found.append(f"{module} imports {target}: {package} must not reach {reached}")
    return found


@pytest.mark.parametrize("name", WEB_HANDLERS)
def test_web_handlers_call_the_public_api(name: str) -> None:
    path = SRC / "web" / f"{name}.py"
    targets = list(internal_imports(path))
    assert any(t == "tokometer.api" or t.startswith("tokometer.api.") for t in targets), f"web/{name}.py imports no tokometer.api"
    assert shortcut_imports(module_name(path), targets) == []


def test_the_web_check_sees_a_use_case_import() -> None:
    assert shortcut_imports("tokometer.web.compute", ["tokometer.api.predict", "tokometer.usecases.estimate"]) == [
        "tokometer.web.compute imports tokometer.usecases.estimate: web must not reach usecases"
    ]
    assert shortcut_imports("tokometer.cli.plan", ["tokometer.usecases.plan"]) != []
    assert shortcut_imports("tokometer.api.serving", ["tokometer.usecases.plan"]) == []


def import_graph() -> dict[str, set[str]]:
    """module -> the modules it imports (a `from pkg.mod import x` edge goes to `pkg.mod`)."""
    graph: dict[str, set[str]] = {}
    for path in MODULES:
        module = module_name(path)
        edges = set()
        for target in internal_imports(path):
            while target not in NAMES and "." in target:
                target = target.rsplit(".", 1)[0]
            if target != module and target in NAMES:
                edges.add(target)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    graph = import_graph()
    # a package's __init__ that re-exports its own submodules is not a cycle worth refusing
    for module, edges in graph.items():
        edges -= {m for m in edges if m.startswith(module + ".") and SRC.joinpath(*module.split(".")[1:]).is_dir()}
    assert cycles(graph) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_an_upward_import_is_caught() -> None:
    assert layer_of("tokometer.usecases.estimate") > layer_of("tokometer.costmodel.roofline")
    assert layer_of("tokometer.report.json") > layer_of("tokometer.usecases.estimate")
    assert layer_of("tokometer.bench.runner") < layer_of("tokometer.report.bench")


def package_of(module: str) -> str:
    """`tokometer.usecases.estimate` -> `usecases`; the package's own `__init__` is `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def package_graph(module_imports: dict[str, set[str]]) -> dict[str, dict[str, tuple[str, str]]]:
    """package -> {package it imports: one (importing module, imported module) edge that shows it}."""
    graph: dict[str, dict[str, tuple[str, str]]] = {}
    for module, targets in sorted(module_imports.items()):
        edges = graph.setdefault(package_of(module), {})
        for target in sorted(targets):
            reached = package_of(target)
            if reached != package_of(module):
                edges.setdefault(reached, (module, target))
    return graph


def package_cycle_edges(module_imports: dict[str, set[str]]) -> list[str]:
    """Every import edge that lies on a loop between packages, as `a -> b (module imports module)`."""
    graph = package_graph(module_imports)
    found = []
    for component in cycles({pkg: set(edges) for pkg, edges in graph.items()}):
        members = set(component)
        for pkg in component:
            for reached, (module, target) in sorted(graph[pkg].items()):
                if reached in members:
                    found.append(f"{pkg} -> {reached} ({module} imports {target})")
    return found


def layer_violations(module_imports: dict[str, set[str]]) -> list[str]:
    """Every import of a higher layer, as `module (layer n) imports target (layer m)`."""
    return [
        f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
        for module, targets in sorted(module_imports.items())
        for target in sorted(targets)
        if layer_of(target) > layer_of(module)
    ]


def test_no_cycles_between_packages() -> None:
    edges = package_cycle_edges(import_graph())
    assert edges == [], "packages import each other round a loop:\n" + "\n".join(edges)


def test_no_import_against_the_layer_order() -> None:
    assert layer_violations(import_graph()) == []


def test_every_package_has_a_layer() -> None:
    packages = {package_of(m) for m in NAMES}
    assert packages - set(LAYERS) == set(), "give each new package a layer in LAYERS"


def architecture_packages(text: str) -> list[str]:
    """The packages docs/ARCHITECTURE.md describes: each bullet that opens with a `name`:."""
    return re.findall(r"^- `([A-Za-z_]+)`:", text, flags=re.MULTILINE)


def test_architecture_lists_every_package() -> None:
    listed = architecture_packages((SRC.parents[1] / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    assert len(listed) == len(set(listed)), "a package is described twice"
    assert sorted(listed) == sorted(LAYERS), "docs/ARCHITECTURE.md and LAYERS list different packages"


def test_the_architecture_check_sees_a_missing_package() -> None:
    assert architecture_packages("- `cli`: the command.\n- `web`: pages.\n  - `x`: nested\n") == ["cli", "web"]


def test_the_package_check_sees_an_injected_cycle() -> None:
    synthetic = {
        "tokometer.usecases.benchmark": {"tokometer.bench.runner"},
        "tokometer.bench.runner": {"tokometer.report.bench"},
        "tokometer.report.bench": {"tokometer.usecases.estimate"},
        "tokometer.usecases.estimate": {"tokometer.costmodel.roofline"},
        "tokometer.costmodel.roofline": set(),
    }
    edges = package_cycle_edges(synthetic)
    assert "bench -> report (tokometer.bench.runner imports tokometer.report.bench)" in edges
    assert "report -> usecases (tokometer.report.bench imports tokometer.usecases.estimate)" in edges
    assert "usecases -> bench (tokometer.usecases.benchmark imports tokometer.bench.runner)" in edges
    assert not any(e.startswith("usecases -> costmodel") for e in edges)  # not on the loop
    assert layer_violations(synthetic) == [
        "tokometer.bench.runner (layer 2) imports tokometer.report.bench (layer 4)",
    ]
    synthetic["tokometer.bench.runner"] = set()
    assert package_cycle_edges(synthetic) == []


@pytest.mark.parametrize("path", sorted((SRC / "costmodel").glob("*.py")), ids=lambda p: p.name)
def test_cost_model_does_no_io(path: Path) -> None:
    for target in imports(path):
        assert target.split(".")[0] not in IO_MODULES, f"{path.name} imports {target}"
    assert "open(" not in path.read_text(encoding="utf-8")


MAX_MODULE_LINES = 600  # issue #27: split by responsibility past this, not by size alone


def test_no_module_is_over_600_lines() -> None:
    """Every module of the package stays at or under `MAX_MODULE_LINES`; the message names the long ones."""
    long = {str(p.relative_to(SRC)): n for p in MODULES if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"
