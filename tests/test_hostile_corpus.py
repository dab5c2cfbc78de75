"""Replay the hostile corpus (tests/data/hostile/, written by its build.py) through every door.

A file named `ok-...` must give a correct result; any other must give a clean error: on the command
line exit 2, at most 3 lines on stderr, no traceback; on the web 400/413/422 with `{"error"}`;
each within `MAX_ANSWER_S`. Special files git cannot hold (a FIFO, /dev/zero, a folder) are made
here. The runs database must stay sound (`PRAGMA integrity_check`) after every import.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from helpers import cli
from tokometer.bench.trace import parse_trace, read_trace_text
from tokometer.catalog import clear_caches
from tokometer.errors import TokometerError
from tokometer.web.app import create_app
from tokometer.web.openapi import COMPUTING

CORPUS = Path(__file__).parent / "data" / "hostile"
MAX_ANSWER_S = 2.0  # CPU seconds of this process: a loaded CI machine does not count against it; hangs meet the timeout
pytestmark = pytest.mark.timeout(60)


def corpus(door: str) -> list[Path]:
    return sorted(p for p in (CORPUS / door).iterdir() if p.is_file())


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("TOKOMETER_HOME", str(folder))
    clear_caches()
    yield folder
    clear_caches()


@pytest.fixture
def specials(tmp_path: Path) -> dict[str, str]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    return {"fifo": str(fifo), "dev-zero": "/dev/zero", "folder": str(folder), "missing": str(tmp_path / "missing")}


def answer(capsys: pytest.CaptureFixture[str], ok: bool, *args: str) -> str:
    started = time.process_time()
    code, out, err = cli(capsys, *args)
    took = time.process_time() - started
    assert took < MAX_ANSWER_S, f"{args} took {took:.1f} s"
    assert "Traceback" not in err and "internal error" not in err, err
    if ok:
        assert code == 0, err
    else:
        assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) <= 3, (code, err)
        assert all(len(line) <= 500 for line in err.splitlines()), "a quoted value must not flood the terminal"
    return out


# ---------------------------------------------------------------- catalog files in the tokometer home

CATALOG_COMMAND = {"hardware": ["hardware", "list"], "engines": ["engines", "list"], "models": ["models", "list"]}


@pytest.mark.parametrize("path", corpus("catalog"), ids=lambda p: p.name)
def test_catalog_files(path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok = path.name.startswith("ok-")
    catalog = path.name.removeprefix("ok-").split("-")[0]
    shutil.copy(path, home / f"{catalog}.toml")
    answer(capsys, ok, *CATALOG_COMMAND[catalog])
    if ok and catalog == "hardware":
        assert "tok/s" in answer(capsys, True, "estimate", "llama-3.1-8b", "--hw", "my-gpu")


@pytest.mark.parametrize("special", ["fifo", "dev-zero", "folder"])
def test_a_catalog_that_is_not_a_regular_file(special: str, specials: dict[str, str], home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = home / "hardware.toml"
    if special == "folder":
        target.mkdir()
    else:
        target.symlink_to(specials[special])
    answer(capsys, False, "hardware", "list")


# ---------------------------------------------------------------- model configs


@pytest.mark.parametrize("path", [*corpus("config"), "fifo", "dev-zero"], ids=lambda p: getattr(p, "name", p))
def test_model_configs(path: Path | str, specials: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    target = specials[path] if isinstance(path, str) else str(path)
    ok = isinstance(path, Path) and path.name.startswith("ok-")
    answer(capsys, ok, "estimate", target, "--hw", "h100-sxm")


# ---------------------------------------------------------------- traces and length distributions


@pytest.mark.parametrize("path", [*corpus("trace"), "fifo", "dev-zero", "folder", "missing"], ids=lambda p: getattr(p, "name", p))
def test_traces(path: Path | str, specials: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    target = specials[path] if isinstance(path, str) else str(path)
    ok = isinstance(path, Path) and path.name.startswith("ok-")
    out = answer(capsys, ok, "simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--trace", target, "--json")
    started = time.process_time()
    try:  # the bench reads traces through its own parser, behind the same door
        requests = parse_trace(read_trace_text(target), Path(target).name)
        assert ok and len(requests) == 2
    except TokometerError:
        assert not ok
    assert time.process_time() - started < MAX_ANSWER_S
    if ok:
        assert json.loads(out)["workload"]["trace"] == 2


FLAGS = [
    ["estimate", "llama-3.1-8b", "--hw", "h100-sxm", "--memory-gb", "1e308"],
    ["estimate", "llama-3.1-8b", "--hw", "h100-sxm", "--bandwidth", "1e308"],
    ["utilization", "--measured-decode", "1e308"],
    ["simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1", "--replicas", "99999999999999999999"],
    ["simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1", "--burstiness", "1e308"],
    ["simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1", "--burstiness", "nan"],
]


@pytest.mark.parametrize("args", FLAGS, ids=lambda a: " ".join(a[-2:]))
def test_flags_out_of_any_range(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Found by sweeping every numeric flag with 1e308, inf, nan, -1, 0, 10^20 and 1e-308: these were
    internal errors (a TypeError on a non-finite figure) or a hang (the gamma sampler, 10^20 replicas)."""
    answer(capsys, False, *args)


DISTRIBUTIONS = [
    "normal:100:1e308", "lognormal:100:1000", "uniform:1:1e400", "fixed:-1", "1e309", "normal:nan:1", "lognormal:100:-1",
    "uniform:5:1", "99999999999999999999", "normal:1e20:1", "file:{fifo}", "file:{dev-zero}", "file:{folder}", "lognormal:", ":",
]


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_length_distributions(dist: str, specials: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    given = dist
    for name, target in specials.items():
        given = given.replace("{" + name + "}", target)
    answer(capsys, False, "simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1", "--prompt", given)


def test_a_sane_distribution_still_runs(capsys: pytest.CaptureFixture[str]) -> None:
    out = answer(capsys, True, "simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1", "--num-requests", "20", "--prompt", "lognormal:500:1", "--json")
    assert json.loads(out)


# ---------------------------------------------------------------- run imports


def _integrity_ok(home: Path) -> None:
    db = home / "runs.db"
    if db.exists():
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize("path", [*corpus("import"), "fifo", "dev-zero", "folder"], ids=lambda p: getattr(p, "name", p))
def test_run_imports(path: Path | str, specials: dict[str, str], home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = specials[path] if isinstance(path, str) else str(path)
    ok = isinstance(path, Path) and path.name.startswith("ok-")
    answer(capsys, ok, "runs", "import", target)
    _integrity_ok(home)
    listed = json.loads(answer(capsys, True, "runs", "list", "--json"))
    assert len(listed) == (1 if ok else 0)
    if ok:
        assert "decode" in answer(capsys, True, "runs", "show", str(listed[0]["id"]))


# ---------------------------------------------------------------- web bodies


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


@pytest.mark.parametrize("path", corpus("web"), ids=lambda p: p.name)
def test_web_bodies(path: Path) -> None:
    client = TestClient(create_app(), raise_server_exceptions=False)
    raw = path.read_bytes()
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        parsed = None
    for endpoint, (_, fields) in COMPUTING.items():
        # the whole body, then (for an object) only the fields this endpoint takes
        bodies = [raw]
        if isinstance(parsed, dict):
            bodies.append(json.dumps({k: v for k, v in parsed.items() if k in fields}).encode())
        for body in bodies:
            started = time.process_time()
            response = client.post(endpoint, content=body, headers={"content-type": "application/json"})
            assert time.process_time() - started < MAX_ANSWER_S, endpoint
            assert response.status_code in (200, 400, 413, 422), (endpoint, response.status_code, response.text[:300])
            data = response.json()
            if response.status_code != 200:
                assert isinstance(data["error"], str) and len(data["error"]) < 1000
            else:
                assert _finite(data)
    for query in ("seconds=1e308", "seconds=inf", "rates=nan", "limit=99999999999999999999999", "requests_limit=-1"):
        for endpoint in ("/api/feel", "/api/runs", "/api/runs/1"):
            response = client.get(f"{endpoint}?{query}")
            assert response.status_code in (200, 404, 422), (endpoint, query, response.text[:300])


# ---------------------------------------------------------------- names no file system takes

LONG = "rtx" * 30_000


@pytest.mark.parametrize(
    "args",
    [
        ["estimate", LONG, "--hw", "h100-sxm"],
        ["estimate", "a/" * 3000, "--hw", "h100-sxm"],
        ["estimate", "x" * 300 + ".gguf", "--hw", "h100-sxm"],
        ["estimate", "llama-3.1-8b", "--hw", LONG],
        ["simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--trace", "x" * 5000],
        ["simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1", "--prompt", "file:" + "x" * 5000],
        ["runs", "import", "x" * 5000],
        ["runs", "show", "9" * 30],
    ],
    ids=["model-90k-chars", "model-3000-folders", "gguf-name-300-chars", "hardware-90k-chars", "trace-5000-chars", "lengths-5000-chars", "import-5000-chars", "run-id-30-digits"],
)
def test_names_no_file_system_takes(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    answer(capsys, False, *args)


def test_a_page_beyond_64_bits_lists_every_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert json.loads(answer(capsys, True, "runs", "list", "--limit", "9" * 30, "--json")) == []
