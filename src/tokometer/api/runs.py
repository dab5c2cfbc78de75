"""`tokometer.list_runs`, `show_run`, `compare_runs`, `export_runs`, `import_runs`, `delete_run` and
`runs_path`: the stored benchmark runs (`tokometer runs ...`), each a frozen result with the verb's JSON.

The runs database is `$TOKOMETER_HOME/runs.db` (`tokometer.store`); each function opens it, reads or
writes, and closes it. An unknown run id is an `InputError`-family `RunNotFound`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokometer.api.result import JsonResult, dumps
from tokometer.errors import InputError

if TYPE_CHECKING:
    from tokometer.domain.runrecord import ListedRun, RunRecord

COMPARE_HEADER = ("id", "started_at", "url", "model", "hardware", "mode", "source")


@dataclass(frozen=True)
class RunList(JsonResult):
    """The most recent runs, newest first (`runs`: one line each, no requests)."""

    runs: tuple[ListedRun, ...]

    def to_dict(self) -> dict[str, Any]:
        """`{"runs": [run, ...]}`; `to_json()` prints the list itself, as `tokometer runs list --json`."""
        return {"runs": [r.to_dict() for r in self.runs]}

    def to_json(self) -> str:
        """The text `tokometer runs list --json` prints (a JSON list)."""
        return dumps(self.to_dict()["runs"])


def list_runs(*, limit: int = 20, model: str | None = None, offset: int = 0) -> RunList:
    """The most recent stored runs, newest first (`tokometer runs list`); `model` keeps one served model."""
    from tokometer.store import open_store

    if limit < 1:
        raise InputError(f"limit must be 1 or more, got {limit}", field="limit")
    with open_store() as store:
        return RunList(tuple(store.list_runs(limit=limit, model=model, offset=offset)))


@dataclass(frozen=True)
class StoredRun(JsonResult):
    """One stored run in full (`run`); with `requests`, its requests (or one page of them)."""

    run: RunRecord
    requests: bool = False
    requests_total: int | None = None  # how many requests the run holds, when a page was asked for

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer runs show --json` shape (`--requests`: with every request)."""
        return self.run.to_dict(stored=True, requests=self.requests)


def show_run(run_id: int, *, requests: bool = False, requests_limit: int | None = None, requests_offset: int = 0) -> StoredRun:
    """One run in full: summary, levels, prediction, grade, flags (`tokometer runs show`).

    A run whose process was killed mid-run gets its summary recomputed from the requests it stored.
    `requests=True` adds its requests; `requests_limit`/`requests_offset` page them (a run can hold
    10^5), and the result's `requests_total` says how many there are.
    """
    from tokometer.store import open_store

    with open_store() as store:
        if requests_limit is None:
            from tokometer.usecases.benchmark import load_run

            return StoredRun(load_run(store, run_id, with_requests=requests), requests)
        run = store.get_run(run_id, requests_limit=requests_limit, requests_offset=requests_offset)
        total = store.count_requests(run_id)
        if run.is_incomplete:  # killed mid-run: summarise everything it stored, show the page
            from tokometer.usecases.benchmark import load_run

            whole = load_run(store, run_id, with_requests=False)
            run = run.with_(summary=whole.summary, notes=whole.notes)
    return StoredRun(run, True, total)


@dataclass(frozen=True)
class RunComparison(JsonResult):
    """Runs side by side (`runs`), with each one's change against the first (`rows`)."""

    runs: tuple[RunRecord, ...]

    def rows(self) -> list[dict[str, Any]]:
        """One row per compared figure, each run's value and its change against the first."""
        from tokometer.report.bench import compare_table

        return compare_table(self.runs)

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer runs compare --json` shape."""
        return {"runs": [{k: getattr(r, k) for k in COMPARE_HEADER} for r in self.runs], "rows": self.rows()}


def compare_runs(run_ids: Sequence[int]) -> RunComparison:
    """Two or more stored runs side by side (`tokometer runs compare`)."""
    from tokometer.store import open_store

    if len(run_ids) < 2:
        raise InputError("give at least two run ids to compare", field="run_ids")
    with open_store() as store:
        return RunComparison(tuple(store.get_runs(list(run_ids), with_requests=False)))


@dataclass(frozen=True)
class RunExport(JsonResult):
    """Runs in full (timestamps included), to write as JSON or CSV."""

    runs: tuple[RunRecord, ...]

    def to_dict(self) -> dict[str, Any]:
        """`{"runs": [run, ...]}`; `to_json()` prints the list, as `tokometer runs export --json`."""
        return {"runs": [r.to_dict(stored=True) for r in self.runs]}

    def to_json(self) -> str:
        """The text `tokometer runs export --json` prints (a JSON list)."""
        return dumps(self.to_dict()["runs"])

    def to_csv(self, *, requests: bool = False) -> str:
        """`tokometer runs export --format csv`: one row per run, or per request with `requests`."""
        from tokometer.report.bench import to_csv

        return to_csv(self.runs, requests=requests)


def export_runs(run_ids: Sequence[int] = (), *, limit: int = 1000, requests: bool = True) -> RunExport:
    """The runs `run_ids` (none: the `limit` most recent) in full (`tokometer runs export`).

    `requests=False` leaves out the per-request rows (a per-run CSV needs none).
    """
    from tokometer.store import open_store

    with open_store() as store:
        ids = list(run_ids) or [r.id for r in store.list_runs(limit=limit)]
        return RunExport(tuple(store.get_runs(ids, with_requests=requests)))


@dataclass(frozen=True)
class ImportedRuns(JsonResult):
    """What `import_runs` stored: one entry per run (`id`, `file`, `source`, `model`, `requests`)."""

    imported: tuple[Mapping[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        """`{"imported": [...]}`; `to_json()` prints the list, as `tokometer runs import --json`."""
        return {"imported": [dict(i) for i in self.imported]}

    def to_json(self) -> str:
        """The text `tokometer runs import --json` prints (a JSON list)."""
        return dumps(self.to_dict()["imported"])


def import_runs(files: Sequence[str | Path]) -> ImportedRuns:
    """Store `llama-bench -o json`, `vllm bench serve` JSON or tokometer exports (`tokometer runs import`).

    Every file is read before anything is stored, so a bad file stores nothing.
    """
    from tokometer.bench.grading import grade
    from tokometer.bench.importers import import_file
    from tokometer.store import open_store

    loaded = []
    for path in map(Path, files):
        for run in import_file(path):
            run.setdefault("grading", grade(run.get("summary") or {}, None))
            loaded.append((path, run))
    imported = []
    with open_store() as store:
        for path, run in loaded:
            run_id = store.save_run(run)
            imported.append({"id": run_id, "file": str(path), "source": run.get("source"), "model": run.get("model"),
                             "requests": len(run.get("requests") or [])})
    return ImportedRuns(tuple(imported))


def delete_run(run_id: int) -> None:
    """Delete one stored run and its requests (`tokometer runs delete --yes`); an unknown id is refused."""
    from tokometer.store import open_store

    with open_store() as store:
        store.get_run(run_id, with_requests=False)
        store.delete_run(run_id)


@dataclass(frozen=True)
class RunsPath(JsonResult):
    """Where the runs database lives, and whether it exists yet."""

    path: Path
    exists: bool

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer runs path --json` shape."""
        return {"path": str(self.path), "exists": self.exists}


def runs_path() -> RunsPath:
    """Where the runs database lives (`tokometer runs path`): `$TOKOMETER_HOME/runs.db`."""
    from tokometer.store import default_path

    path = default_path()
    return RunsPath(path, path.exists())
