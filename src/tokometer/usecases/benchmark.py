"""Benchmark a server, predict, grade and save: the use-case `tokometer bench` and the web share.

    outcome = benchmark(config, Predictor(model, options, to_json=estimate_json), save=True)

Requests are written to the runs database as they complete (`store.writer.RunWriter`), so a run
killed by any signal stays in the database as `incomplete` with what was measured; `load_run`
recomputes such a run's summary from its stored requests. Predicting and grading happen after the
timed part: a prediction never delays a measurement.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokometer.bench.client import Exchange, RequestRecord
from tokometer.bench.detect import Endpoint
from tokometer.bench.runner import BenchConfig, BenchResult, Progress, Runner
from tokometer.bench.summary import summarize_records
from tokometer.domain.runrecord import RunRecord, RunSummary
from tokometer.errors import InputError
from tokometer.store import RunStore, StoreError, default_path
from tokometer.store.writer import RunWriter
from tokometer.usecases.request import mean_decode_depth

if TYPE_CHECKING:
    from tokometer.usecases.estimate import Estimate


class Predictor:
    """Predictions for the measured workload (batch, depth), from the user's model and hardware.

    Grading reads the estimate's one JSON shape; that shape belongs to the report layer above this
    one, so the entry point hands its serialiser in (`report.json.estimate_json`).
    """

    def __init__(
        self, model: str | None, options: dict[str, Any], to_json: Callable[[Estimate], dict[str, Any]]
    ) -> None:
        self.model = model
        self.options = {k: v for k, v in options.items() if v is not None}
        self.to_json = to_json

    @property
    def wanted(self) -> bool:
        return bool(self.options.get("hw") or self.options.get("bandwidth_gb_per_s"))

    def check_hardware(self) -> None:
        from tokometer.usecases.resolve import require_local_profile

        hw = self.options.get("hw")
        require_local_profile(str(hw) if hw else None)

    def estimate(self, model: str | None = None, **workload: Any) -> dict[str, Any]:
        from tokometer.usecases.estimate import estimate

        name = model or self.model
        return self.to_json(estimate(name, **self.options, **workload))


def predict_and_grade(run: dict[str, Any], predictor: Predictor, served_model: str | None, notes: list[str], gpus: int = 1) -> None:
    """Attach `prediction`, `grading` and `hardware` to a run dict (levels graded one by one); the serving
    simulation of rate and concurrency levels runs TP over the server's `gpus` (`bench --gpus`)."""
    from tokometer.bench.grading import grade, prediction_headline
    from tokometer.errors import TokometerError

    summary = run["summary"]
    config = run["config"]
    max_tokens = int(config.get("max_tokens") or 200)
    run.setdefault("prediction", None)
    run.setdefault("hardware", None)
    if not predictor.wanted:
        run["grading"] = grade(summary, None)
        return
    model = predictor.model
    guessed = model is None and not predictor.options.get("params_b")
    if guessed:
        if not served_model:
            notes.append("no prediction: the server named no model; pass --predict-model")
            run["grading"] = grade(summary, None)
            return
        model = served_model
    prompt = int(summary.get("ttft_prompt_tokens") or summary.get("prompt_tokens") or 512)
    depth = int(mean_decode_depth(summary.get("prompt_tokens") or 0, max_tokens))
    try:
        full = predictor.estimate(model, prompt_tokens=prompt, output_tokens=max_tokens, context_tokens=depth, batch=1)
    except (TokometerError, OSError, ValueError) as exc:
        if not guessed:
            raise
        notes.append(f"no prediction: the server's model {served_model!r} is not one tokometer knows ({exc}); pass --predict-model")
        run["grading"] = grade(summary, None)
        return
    run["prediction"] = {**prediction_headline(full), "estimate": full}
    run["hardware"] = full["hardware"]["id"]
    mode = run.get("mode")
    run["grading"] = grade(summary, full if mode == "speed" else None)
    for level in run.get("levels") or []:
        level_summary = level["summary"]
        level_depth = int(mean_decode_depth(level_summary.get("prompt_tokens") or 0, max_tokens))
        if "concurrency" in level:
            batch = int(level["concurrency"])
        elif "depth" in level:
            batch = 1
        else:
            level["grading"] = grade(level_summary, None)
            continue
        level_full = predictor.estimate(model, prompt_tokens=max(1, int(level_summary.get("prompt_tokens") or prompt)), output_tokens=max_tokens, context_tokens=level_depth, batch=batch)
        level["prediction"] = prediction_headline(level_full)
        level["grading"] = grade(level_summary, level_full, batch=batch)
    if mode in ("concurrency", "depth") and run.get("levels"):  # the headline is the first level
        run["grading"] = dict(run["levels"][0]["grading"])
    if mode in ("concurrency", "rate") and model:
        from tokometer.usecases.bench_bridge import simulate_levels

        simulate_levels(run, model, {"tp": gpus, **predictor.options}, notes)


def _frontier_model(run: dict[str, Any], predictor: Predictor, served_model: str | None) -> str | None:
    """The model the predicted frontier simulates: the one the run was predicted for (a named model only)."""
    if run.get("prediction") is None:
        return None
    return predictor.model or (None if predictor.options.get("params_b") else served_model)


@dataclass
class BenchOutcome:
    """A finished (or interrupted) benchmark: the runner's result, the stored run dict and its id."""

    result: BenchResult
    run: RunRecord
    run_id: int | None
    store_error: str | None = None
    store_reason: str | None = None  # why the run is not (fully) in the database, in words ("the disk is full")
    saved_to: Path | None = None  # where the whole run was written instead (`tokometer runs import` stores it)


@dataclass(frozen=True)
class LiveRun:
    """A picklable handle on a live run: called in a worker process, it opens a writer to it."""

    path: Path
    run_id: int

    def __call__(self) -> RunWriter:
        return RunWriter(self.path, run_id=self.run_id)


def _row(exchange: Exchange) -> Callable[[], dict[str, Any]]:
    return lambda: exchange.record().to_dict()


def benchmark(
    config: BenchConfig,
    predictor: Predictor,
    *,
    save: bool = True,
    progress: Progress | None = None,
    runner: Callable[..., Any] = Runner,
    gpus: int = 1,
    **runner_options: Any,
) -> BenchOutcome:
    """Run the benchmark, writing each request as it completes; then predict, grade and finish the run.

    `gpus`: the server's GPUs, which a concurrency run's throughput per GPU divides by (`bench_frontier`)."""
    from tokometer.usecases.bench_frontier import attach_frontier, check_gpus

    check_gpus(gpus)
    if predictor.wanted:
        predictor.check_hardware()
    elif predictor.model:
        raise InputError("--predict-model needs --hw (a catalog id, or `local` after `tokometer probe`) or --bandwidth")
    writer: RunWriter | None = None
    failures: list[StoreError] = []
    started = datetime.now(UTC).isoformat(timespec="seconds")

    def on_start(endpoint: Endpoint) -> LiveRun | None:
        """Store the run's header; returns a way for other processes to add to it."""
        nonlocal writer
        if not save:
            return None
        header = RunRecord(
            started_at=started,
            status="incomplete",
            mode=config.mode,
            url=config.url,
            model=endpoint.model,
            protocol=endpoint.protocol.name,
            config=config.to_dict(),
            server=endpoint.to_dict(),
        )
        try:
            writer = RunWriter(default_path(), header)
        except StoreError as exc:  # measure anyway: the result goes to a file at the end
            failures.append(exc)
            return None
        return LiveRun(writer.path, writer.run_id)

    def on_exchange(exchange: Exchange) -> None:
        if writer is not None:
            writer.put(_row(exchange))

    def settle() -> None:
        if writer is not None:
            writer.flush()

    def on_quiet(idle: bool) -> None:
        if writer is not None:
            writer.quiet(idle)

    bench_runner = runner(
        config, progress=progress, on_start=on_start, on_exchange=on_exchange, settle=settle, on_quiet=on_quiet, **runner_options
    )
    try:
        result = bench_runner.run()
    finally:
        if writer is not None:
            writer.close()
    shape = result.to_dict()
    if result.endpoint is not None:
        predict_and_grade(shape, predictor, result.endpoint.model, shape["notes"], gpus)
        if shape.get("mode") == "concurrency":
            attach_frontier(shape, gpus, _frontier_model(shape, predictor, result.endpoint.model), predictor.options, shape["notes"])
    run = RunRecord.from_dict({**shape, "source": "tokometer"})
    run_id = writer.run_id if writer is not None else None
    store_error = writer.error if writer is not None else None
    if writer is not None:
        try:
            with RunStore(writer.path) as store:
                store.finish_run(writer.run_id, run)
        except StoreError as exc:
            failures.append(exc)
    if not failures or result.endpoint is None:
        return BenchOutcome(result=result, run=run.with_(id=run_id), run_id=run_id, store_error=store_error)
    # Nothing measured is lost: the database refused the run, so the whole run goes to a file
    failure = failures[-1]
    return BenchOutcome(
        result=result, run=run, run_id=None, store_error=str(failure), store_reason=failure.reason,
        saved_to=save_fallback(run, started),
    )


def save_fallback(run: RunRecord, started: str, folders: Sequence[Path] | None = None) -> Path | None:
    """Write the whole run (requests included, `runs export` JSON) to the first folder that takes it:
    the current directory, else the temporary folder. None when neither does."""
    import tempfile

    from tokometer.domain.jsontext import to_json

    name = "tokometer-run-" + "".join(c if c.isalnum() else "-" for c in started).strip("-") + ".json"
    text = to_json(run.to_dict())
    for folder in folders if folders is not None else (Path.cwd(), Path(tempfile.gettempdir())):
        path = folder / name
        try:
            with open(path, "x", encoding="utf-8") as handle:
                handle.write(text)
            return path
        except FileExistsError:
            path = folder / f"{path.stem}-{os.getpid()}.json"
            try:
                path.write_text(text, encoding="utf-8")
                return path
            except OSError:
                continue
        except OSError:
            continue
    return None


def recompute(store: RunStore, run_id: int) -> RunSummary | None:
    """A stored run's summary recomputed from its timestamps (equals the stored one for tokometer runs)."""
    return _summary_of(store.get_run(run_id))


def _summary_of(run: RunRecord) -> RunSummary | None:
    records = [RequestRecord.from_dict(r) for r in run.requests if "t0_s" in r]
    summary = summarize_records(records, slo_ttft_ms=run.config.get("slo_ttft_ms"), slo_tpot_ms=run.config.get("slo_tpot_ms"))
    return RunSummary.from_dict(summary)


def load_run(store: RunStore, run_id: int, *, with_requests: bool = True) -> RunRecord:
    """One stored run; a run left `incomplete` (its process was killed) gets its summary recomputed."""
    run = store.get_run(run_id, with_requests=True)
    if run.is_incomplete:
        note = f"incomplete: the benchmark process ended without finishing; {len(run.requests)} request(s) were stored before it did"
        run = run.with_(summary=_summary_of(run), notes=(*run.notes, note))
    return run if with_requests else run.with_(requests=())


__all__ = ["BenchOutcome", "Predictor", "benchmark", "load_run", "predict_and_grade", "recompute"]
