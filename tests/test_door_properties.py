"""Hypothesis at the doors: random catalog TOML, config.json, traces (CSV and JSON Lines) and run
imports, with random types, nesting, encodings and numbers from -inf to 1e308, each give a result
or a clean `TokometerError` (an `InputError` at the door, or the catalog's or ingest's own error)
within `MAX_ANSWER_S`, never another exception. Seeds and example counts are fixed.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tokometer.bench.importers import import_file
from tokometer.bench.trace import parse_trace
from tokometer.catalog import clear_caches, hardware_catalog, model_catalog
from tokometer.errors import TokometerError
from tokometer.ingest import load_model
from tokometer.store import RunStore
from tokometer.usecases.estimate import estimate
from tokometer.usecases.simulate import read_trace

MAX_ANSWER_S = 2.0  # CPU seconds of this process: a loaded CI machine does not count against it; hangs meet the timeout
EXAMPLES = 60
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))

numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 1e308, -1e308, 5e-324, 2**63, 2**63 - 1, 10**30, float("inf"), float("nan")]),
)
scalars = st.one_of(numbers, st.text(max_size=20), st.booleans(), st.none())
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=12)
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "latin-1"]


def clean_or_result(call: Callable[[], Any]) -> Any:
    """`call()`'s result, or None when it raised a TokometerError; anything else fails; both in time."""
    started = time.process_time()
    try:
        result = call()
    except TokometerError as exc:
        assert str(exc) and len(str(exc)) < 2000
        result = None
    assert time.process_time() - started < MAX_ANSWER_S
    event("refused" if result is None else "a result")
    return result


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The test's own tokometer home (conftest's), shared by the examples of one test."""
    from tokometer.home import tokometer_home

    monkeypatch.setenv("TOKOMETER_CATALOG_CACHE", "0")  # a file rewritten within one mtime tick must be read again
    clear_caches()
    estimate("llama-3.1-8b", "h100-sxm")  # imports and catalogs warm: the time bound is per example, not per import
    yield tokometer_home()
    clear_caches()


# ---------------------------------------------------------------- catalog TOML


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value if v is not None) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items() if v is not None) + "}"
    return '""'


HARDWARE = {
    "name": "My GPU", "vendor": "me", "kind": "gpu", "segment": "desktop", "memory_gb": 24,
    "memory_bandwidth_gb_per_s": 1000, "launch_year": 2024, "source": "mine", "fp16_tflops": 100,
}
HARDWARE_KEYS = [*HARDWARE, "compute_units", "tdp_w", "pcie_lanes", "nvlink_gb_per_s", "fp8_tflops", "aliases"]


@FUZZ
@given(changes=st.dictionaries(st.sampled_from(HARDWARE_KEYS), json_values, max_size=3), encoding=st.sampled_from(ENCODINGS),
       cut=st.none() | st.integers(min_value=0, max_value=400))
def test_a_user_hardware_file_loads_or_is_refused(home: Path, changes: dict[str, Any], encoding: str, cut: int | None) -> None:
    entry = {**HARDWARE, **changes}
    text = "[my-gpu]\n" + "".join(f"{key} = {toml_value(value)}\n" for key, value in entry.items() if value is not None)
    data = text.encode(encoding, errors="replace")
    (home / "hardware.toml").write_bytes(data if cut is None else data[:cut])
    clear_caches()
    catalog = clean_or_result(hardware_catalog)
    if catalog is not None and "my-gpu" in catalog:
        device = catalog.get("my-gpu")
        assert math.isfinite(device.memory_bandwidth_gb_per_s) and device.memory_bandwidth_gb_per_s > 0
        result = clean_or_result(lambda: estimate("llama-3.1-8b", "my-gpu"))
        assert result is None or math.isfinite(result.ceiling_tok_s)
    (home / "hardware.toml").unlink()
    clear_caches()


MODEL_CONFIG = {"model_type": "llama", "hidden_size": 512, "intermediate_size": 1024, "num_attention_heads": 8,
                "num_key_value_heads": 2, "num_hidden_layers": 4, "vocab_size": 1000}


@FUZZ
@given(changes=st.dictionaries(st.sampled_from([*MODEL_CONFIG, "num_local_experts", "num_experts_per_tok", "head_dim"]), json_values, max_size=3))
def test_a_user_model_loads_or_is_refused(home: Path, changes: dict[str, Any]) -> None:
    config = {**MODEL_CONFIG, **changes}
    text = '[my-model]\nname = "m"\nsource = "s"\n[my-model.config]\n' + "".join(f"{k} = {toml_value(v)}\n" for k, v in config.items() if v is not None)
    (home / "models.toml").write_text(text, encoding="utf-8")
    clear_caches()
    catalog = clean_or_result(model_catalog)
    if catalog is not None:
        clean_or_result(lambda: estimate("my-model", "h100-sxm"))
    (home / "models.toml").unlink()
    clear_caches()


# ---------------------------------------------------------------- config.json


CONFIG_KEYS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "vocab_size",
               "intermediate_size", "num_local_experts", "num_experts_per_tok", "head_dim", "max_position_embeddings", "model_type"]


@FUZZ
@given(changes=st.dictionaries(st.sampled_from(CONFIG_KEYS), json_values, max_size=4), encoding=st.sampled_from(ENCODINGS),
       nesting=st.integers(min_value=0, max_value=3000))
def test_a_config_json_loads_or_is_refused(tmp_path_factory: pytest.TempPathFactory, changes: dict[str, Any], encoding: str, nesting: int) -> None:
    config: dict[str, Any] = {**MODEL_CONFIG, **changes}
    if nesting > 40:
        config["extra"] = json.loads("[" * 40 + "]" * 40)  # honest depth stays fine
    text = json.dumps(config)
    if nesting > 2000:
        text = text[:-1] + ', "deep": ' + "[" * nesting + "]" * nesting + "}"
    path = tmp_path_factory.mktemp("config") / "config.json"
    path.write_bytes(text.encode(encoding, errors="replace"))
    spec = clean_or_result(lambda: load_model(str(path)))
    if spec is not None:
        clean_or_result(lambda: estimate(spec, "h100-sxm"))


# ---------------------------------------------------------------- traces

honest = st.integers(min_value=1, max_value=5000).map(str)
cells = st.one_of(honest, honest, honest, numbers.map(str), st.text(max_size=12), st.sampled_from(["", "inf", "nan", "1e308", "-1", "2023-11-16 18:15:46.6805900", '"', ",", "\n"]))


@FUZZ
@given(rows=st.lists(st.tuples(cells, cells, cells), min_size=0, max_size=6), as_jsonl=st.booleans(), encoding=st.sampled_from(ENCODINGS))
def test_a_trace_reads_or_is_refused(tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, str, str]], as_jsonl: bool, encoding: str) -> None:
    if as_jsonl:
        text = "".join(json.dumps({"arrival_s": _maybe_number(a), "prompt_tokens": _maybe_number(p), "output_tokens": _maybe_number(o)}) + "\n" for a, p, o in rows)
    else:
        text = "arrival_s,prompt_tokens,output_tokens\n" + "".join(f"{a},{p},{o}\n" for a, p, o in rows)
    path = tmp_path_factory.mktemp("trace") / ("t.jsonl" if as_jsonl else "t.csv")
    path.write_bytes(text.encode(encoding, errors="replace"))
    simulated = clean_or_result(lambda: read_trace(str(path)))
    benched = clean_or_result(lambda: parse_trace(text, path.name))
    for trace in (simulated or ()), tuple((r.arrival_s, r.prompt_tokens, r.output_tokens) for r in benched or ()):
        for arrival, prompt, output in trace:
            assert math.isfinite(arrival) and arrival >= 0 and 0 <= prompt <= 10_000_000 and 1 <= output <= 10_000_000


def _maybe_number(cell: str) -> Any:
    try:
        return json.loads(cell)
    except ValueError:
        return cell


# ---------------------------------------------------------------- run imports

RUN: dict[str, Any] = {
    "started_at": "2025-01-01T00:00:00+00:00", "status": "complete", "source": "tokometer", "model": "m", "mode": "speed",
    "summary": {"requests_ok": 1, "requests_total": 1, "decode_tps": {"n": 1, "median": 50.0}},
    "levels": [], "notes": [],
    "requests": [{"seq": 0, "phase": "decode", "ok": True, "t0_s": 0.0, "event_times_s": [0.1, 0.2], "output_tokens": 2, "prompt_tokens": 10}],
}
RUN_PATHS = [("summary",), ("levels",), ("notes",), ("status",), ("summary", "decode_tps"), ("summary", "decode_tps", "median"),
             ("summary", "requests_ok"), ("requests",), ("requests", 0), ("requests", 0, "seq"), ("requests", 0, "phase"),
             ("requests", 0, "prompt_tokens"), ("requests", 0, "event_times_s"), ("requests", 0, "metrics"), ("config",), ("started_at",)]


@FUZZ
@given(edits=st.lists(st.tuples(st.sampled_from(RUN_PATHS), json_values), max_size=3), encoding=st.sampled_from(ENCODINGS))
def test_a_run_file_imports_or_is_refused(tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[tuple[Any, ...], Any]], encoding: str) -> None:
    run = json.loads(json.dumps(RUN))
    for path, value in edits:
        target = run
        for step in path[:-1]:
            target = target[step] if isinstance(target, dict | list) and _has(target, step) else None
        if isinstance(target, dict) or (isinstance(target, list) and _has(target, path[-1])):
            target[path[-1]] = value
    folder = tmp_path_factory.mktemp("import")
    path = folder / "run.json"
    path.write_bytes(json.dumps(run).encode(encoding, errors="replace"))
    runs = clean_or_result(lambda: import_file(path))
    if runs is not None:
        with RunStore(folder / "runs.db") as store:
            for imported in runs:
                run_id = store.save_run(imported)
                assert store.get_run(run_id).requests is not None
        with sqlite3.connect(folder / "runs.db") as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _has(container: Any, step: Any) -> bool:
    return (isinstance(container, dict) and step in container) or (isinstance(container, list) and isinstance(step, int) and step < len(container))
