"""Fakes shared by the web tests: a run store shaped like `tokometer.store.RunStore`."""

from __future__ import annotations

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
    def list_runs(self, limit: int = 50) -> list[dict[str, Any]]:
        return RUNS[:limit]

    def get_run(self, run_id: int) -> dict[str, Any] | None:
        return next((r for r in RUNS if r["id"] == run_id), None)


def fake_store_module() -> types.ModuleType:
    """A stand-in `tokometer.store` module whose `open_store()` returns a `FakeStore`."""
    module = types.ModuleType("tokometer.store")
    module.open_store = lambda path=None: FakeStore()  # type: ignore[attr-defined]
    return module
