"""Shared by the web tests and benchmarks/web_roundtrip.py: the Chromium launch settings, a free
port, starting `tokometer serve`, and a fake run store shaped like `tokometer.store.RunStore`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import types
from typing import Any

RUNS: list[dict[str, Any]] = [
    {
        "id": 12,
        "started_at": "2026-11-29T10:00:00+00:00",
        "url": "http://127.0.0.1:8080/v1",
        "model": "llama-3.1-8b",
        "hardware": "rtx-4090",
        "mode": "decode",
        "summary": {"decode_tps": {"median": 121.5}, "ttft_ms": {"median": 84.0}, "requests_ok": 20, "requests_failed": 0},
        "prediction": {"ceiling_tok_s": 220.0, "estimate_tok_s": 134.0},
        "grading": {
            "verdict": "55% of the physical ceiling (220.0 tok/s); below the predicted range (121.0-148.0 tok/s)",
            "flags": [
                {"code": "below-range", "severity": "info", "message": "below the predicted range (121.0-148.0 tok/s)"},
                {"code": "no-probe", "severity": "warning", "message": "no `local` profile: run `tokometer probe` first"},
            ],
        },
    },
    {
        "id": 11,
        "started_at": "2026-11-28T09:00:00+00:00",
        "url": "http://127.0.0.1:8080/v1",
        "model": "qwen3-8b",
        "hardware": "rtx-4090",
        "mode": "decode",
        "summary": {"decode_tps": {"median": 250.0}, "ttft_ms": {"median": 60.0}, "requests_ok": 5, "requests_failed": 1},
        "prediction": {"ceiling_tok_s": 200.0, "estimate_tok_s": 120.0},
    },
    {
        "id": 10,
        "started_at": "2026-11-27T08:00:00+00:00",
        "url": "http://127.0.0.1:8080/v1",
        "model": None,
        "hardware": None,
        "mode": "decode",
        "summary": {"decode_tps": {"median": 50.0}, "ttft_ms": {"median": None}, "requests_ok": 3, "requests_failed": 1},
        "prediction": None,
    },
]


class FakeStore:
    """Typed reads, as `RunStore` gives them (`ListedRun`, `RunRecord`); an unknown id is a LookupError.
    A context manager, as `RunStore` is (`tokometer.api.runs` opens and closes it)."""

    def __enter__(self) -> FakeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def list_runs(self, limit: int = 50, *, model: str | None = None, offset: int = 0) -> list[Any]:
        from tokometer.domain.runrecord import ListedRun

        return [ListedRun.from_dict({"source": "tokometer", **run}) for run in RUNS[offset:offset + limit]]

    def get_run(self, run_id: int, *, requests_limit: int | None = None, requests_offset: int = 0) -> Any:
        from tokometer.domain.runrecord import RunRecord

        run = next((r for r in RUNS if r["id"] == run_id), None)
        if run is None:
            raise LookupError(f"no run #{run_id}")
        requests = run.get("requests") or []
        end = None if requests_limit is None else requests_offset + requests_limit
        return RunRecord.from_dict({**run, "requests": requests[requests_offset:end]})

    def count_requests(self, run_id: int) -> int:
        return len(next((r.get("requests") or [] for r in RUNS if r["id"] == run_id), []))


def fake_store_module() -> types.ModuleType:
    """A stand-in `tokometer.store` module whose `open_store()` returns a `FakeStore`."""
    module = types.ModuleType("tokometer.store")
    module.open_store = lambda path=None: FakeStore()  # type: ignore[attr-defined]
    return module


CHROMIUM = os.environ.get("TOKOMETER_CHROMIUM", "/usr/bin/chromium")
# Debian's chromium as root on a machine with no network: no sandbox, no background traffic.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_serve(home: str, *extra: str, log: bool = False) -> tuple[subprocess.Popen[str], str]:
    """Start `tokometer serve` on a free port; return it and its base URL once /api/meta answers.

    Raises RuntimeError (with the server's output when `log`) if it does not start in 30 s.
    """
    import httpx

    port = free_port()
    env = {**os.environ, "TOKOMETER_HOME": home}
    command = [sys.executable, "-m", "tokometer", "serve", "--port", str(port), *extra]
    output = subprocess.PIPE if log else subprocess.DEVNULL
    proc = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base}/api/meta", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            text = proc.stdout.read() if proc.stdout else ""
            raise RuntimeError(f"tokometer serve did not start:\n{text}")
        time.sleep(0.1)


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
