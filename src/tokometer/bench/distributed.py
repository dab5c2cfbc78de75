"""One benchmark from several load generators: local processes (`--workers N`) or Ray (`--ray`).

When one client machine cannot hold the streams (thousands of them against a cluster), the run
is split: every worker runs an ordinary `Runner` on its share (`plan_shares`: the streams of each
`--concurrency` level, the arrivals of `--rate` or of a `--trace`), on its own clock. Clocks on
different machines are not comparable, so only two things cross between processes: a barrier
before every timed round (a `multiprocessing` barrier, or a Ray actor), and durations. Each
worker notes its own clock when a barrier releases it; `merge` re-bases every worker's times on
that instant, placed on the first worker's timeline:

    t_merged = release_0[round] + (t_worker - release_worker[round])

so a request keeps its exact durations (TTFT, decode, gaps) and starts where it started relative
to its round. The skew left is the barrier's release spread (milliseconds on one host or LAN),
which only touches cross-worker windows such as the aggregate throughput, never per-request
figures. Every worker writes each request into the live run as it completes, like a single
process, and the merged run then replaces the live rows. Local workers open the database
themselves; Ray workers may run on other machines, so they send their rows (built in a thread,
off the timed event loop, in batches of up to 64) to a small Ray actor pinned to the
coordinator's node, which writes them with the same `RunWriter`. A coordinator killed mid-run
leaves every row the actor committed, as an `incomplete` run.

Ray is optional (`pip install tokometer[ray]`); `--ray` alone starts a local head bound to
127.0.0.1, `--ray ADDRESS` joins a cluster whose nodes have tokometer installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import replace
from typing import Any, Protocol

import httpx

from tokometer.bench.client import Exchange, RequestRecord
from tokometer.bench.detect import Endpoint, detect
from tokometer.bench.plan import concurrency_label, rate_label, round_key
from tokometer.bench.runner import STOP_SIGNALS, BenchConfig, BenchResult, Runner
from tokometer.domain.heldbatch import STOP, HeldQueue, stopped
from tokometer.domain.runrecord import RunStatus
from tokometer.errors import BenchError, InputError

Barrier = Callable[[str], Awaitable[None]]


class RequestSink(Protocol):
    """Where a worker puts each finished request (the use-case's live-run writer)."""

    def put(self, make_row: Callable[[], Mapping[str, Any]]) -> None: ...
    def quiet(self, idle: bool) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


SinkFactory = Callable[[], RequestSink]  # picklable: called inside each worker process


def plan_shares(config: BenchConfig, workers: int) -> list[BenchConfig]:
    """Each worker's part of the run; their union is the whole run."""
    if workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")
    mode = config.mode
    if mode in ("speed", "depth"):
        raise InputError("--workers and --ray split concurrent streams: use them with --concurrency, --rate or --trace")
    shares = []
    for i in range(workers):
        seed = None if config.seed is None else config.seed + i
        if mode == "concurrency":
            if min(config.concurrency) < workers:
                raise InputError(f"every --concurrency level must be at least --workers ({workers}); got {min(config.concurrency)}")
            levels = tuple(c // workers + (1 if i < c % workers else 0) for c in config.concurrency)
            names = tuple(concurrency_label(c) for c in config.concurrency)
            shares.append(replace(config, concurrency=levels, level_names=names, seed=seed))
        elif mode == "rate":
            assert config.rate_rps is not None
            requests = None if config.requests is None else config.requests // workers + (1 if i < config.requests % workers else 0)
            if requests == 0:
                raise InputError(f"--requests {config.requests} is fewer than --workers {workers}")
            shares.append(replace(config, rate_rps=config.rate_rps / workers, requests=requests, level_names=(rate_label(config.rate_rps),), seed=seed))
        else:
            part = config.trace[i::workers]
            if not part:
                raise InputError(f"the trace has {len(config.trace)} requests, fewer than --workers {workers}")
            shares.append(replace(config, trace=part, seed=seed))
    return shares


def _round_key(record: RequestRecord, config: BenchConfig) -> str | None:
    if record.phase == "concurrency":
        names = [concurrency_label(c) for c in config.concurrency]
        return round_key(names.index(record.label), record.group) if record.label in names else None
    if record.phase in ("rate", "trace"):
        return record.phase
    return None


def _shift(record: RequestRecord, offset_s: float) -> RequestRecord:
    return replace(
        record,
        t0=record.t0 + offset_s,
        t_headers=None if record.t_headers is None else record.t_headers + offset_s,
        t_end=None if record.t_end is None else record.t_end + offset_s,
        event_times=tuple(t + offset_s for t in record.event_times),
    )


def merge(config: BenchConfig, results: list[BenchResult], backend: str) -> BenchResult:
    """One run from the workers' results, times re-based on each round's barrier (see the module)."""
    if not results:
        raise BenchError("no worker returned a result")
    base = results[0].sync_times
    records: list[RequestRecord] = []
    for result in results:
        first = next(iter(result.sync_times), None)
        for record in result.records:
            key = _round_key(record, config)
            if key is None or key not in result.sync_times or key not in base:
                key = first  # cold runs: placed by the first round's barrier
            offset = base[key] - result.sync_times[key] if key is not None and key in base else 0.0
            records.append(_shift(record, offset))
    records.sort(key=lambda r: r.t0)
    records = [replace(r, seq=i) for i, r in enumerate(records)]
    statuses = {r.status for r in results}
    status: RunStatus = "interrupted" if "interrupted" in statuses else "deadline" if "deadline" in statuses else "complete"
    if status == "complete" and not any(r.ok and r.phase != "cold" for r in records):
        status = "failed"
    notes: list[str] = []
    for result in results:
        notes += [n for n in result.notes if n not in notes]
    notes.append(f"measured by {len(results)} {backend} workers; times re-based on each timed round's barrier")
    return BenchResult(
        config=config,
        endpoint=results[0].endpoint,
        records=tuple(records),
        status=status,
        started_at=min(r.started_at for r in results),
        finished_at=max(r.finished_at for r in results),
        notes=tuple(notes),
        tokens_per_word=results[0].tokens_per_word,
        ignore_eos=results[0].ignore_eos,
        stopped_by=next((r.stopped_by for r in results if r.stopped_by), None),
        sync_times=dict(base),
    )


# --- local processes ---------------------------------------------------------------------------


def _local_worker(config: BenchConfig, barrier: Any, timeout_s: float, sink: SinkFactory | None) -> BenchResult:
    """One worker process: its share of the run, each request written to the live run as it ends."""

    async def wait(key: str) -> None:
        await asyncio.get_running_loop().run_in_executor(None, barrier.wait, timeout_s)

    return _run_share(config, wait, sink() if sink is not None else None)


def _run_share(config: BenchConfig, wait: Barrier, writer: RequestSink | None) -> BenchResult:
    """Run one worker's share at the shared barrier, each finished request handed to `writer`."""
    if writer is None:
        return Runner(config, barrier=wait).run()
    live = writer

    def keep(exchange: Exchange) -> None:
        live.put(lambda: exchange.record().to_dict())

    try:
        return Runner(config, barrier=wait, on_exchange=keep, settle=live.flush, on_quiet=live.quiet).run()
    finally:
        live.close()


def run_local(config: BenchConfig, workers: int, sink: SinkFactory | None = None) -> BenchResult:
    """The run on `workers` local processes (spawned: no state shared but the barrier).

    With `sink` (a picklable factory of the live run's writer), every worker writes its requests
    as they complete, so a coordinator killed mid-run still leaves them stored (as `incomplete`).
    """
    shares = plan_shares(config, workers)
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        barrier = manager.Barrier(workers)
        futures = [pool.submit(_local_worker, share, barrier, config.deadline_bound_s(), sink) for share in shares]
        with _forward_stop_signals(pool):
            results = [_collect(f) for f in futures]
    return merge(config, results, "local-process")


def _collect(future: Future[BenchResult]) -> BenchResult:
    """A worker's result. Ctrl-C reaches the workers too (one process group): they stop like a
    single run does and return what they measured, so the coordinator keeps waiting for it."""
    while True:
        try:
            return future.result()
        except KeyboardInterrupt:
            continue
        except Exception as exc:  # a worker that died: one line, not its traceback
            raise BenchError(f"a benchmark worker failed: {type(exc).__name__}: {exc}") from None


@contextlib.contextmanager
def _forward_stop_signals(pool: ProcessPoolExecutor) -> Iterator[None]:
    """SIGTERM and SIGHUP to the coordinator stop the workers like Ctrl-C (they return their part)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def forward(signum: int, frame: object) -> None:
        for process in list(getattr(pool, "_processes", {}).values()):
            with contextlib.suppress(OSError):
                os.kill(process.pid, signum)

    previous = {signum: signal.signal(signum, forward) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


# --- Ray ---------------------------------------------------------------------------------------


class _BarrierActor:
    """A Ray actor that releases everyone waiting on a key once `parties` have arrived."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived: dict[str, int] = {}
        self.events: dict[str, asyncio.Event] = {}

    async def wait(self, key: str) -> None:
        event = self.events.setdefault(key, asyncio.Event())
        self.arrived[key] = self.arrived.get(key, 0) + 1
        if self.arrived[key] >= self.parties:
            event.set()
        await event.wait()


class _RunSinkActor:
    """A Ray actor on the coordinator's node: writes the workers' rows into the live run's database."""

    def __init__(self, live: SinkFactory) -> None:
        self.writer = live()

    def put(self, rows: list[dict[str, Any]]) -> int:
        for row in rows:
            self.writer.put(functools.partial(dict, row))
        return len(rows)

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class _RaySink:
    """A Ray worker's end of the live run: rows are built in a thread (parsing stays off the event
    loop that stamps other streams' bytes) and sent to the actor in batches, each acknowledged."""

    def __init__(self, actor: Any, ray: Any) -> None:
        self.actor = actor
        self.ray = ray
        self.error: str | None = None
        self._held = HeldQueue()
        self._thread = threading.Thread(target=self._loop, name="tokometer-ray-sink", daemon=True)
        self._thread.start()

    def put(self, make_row: Callable[[], Mapping[str, Any]]) -> None:
        self._held.put(make_row)

    def quiet(self, idle: bool) -> None:
        """Hold the parsing while requests are in flight, as `store.writer.RunWriter.quiet` does."""
        self._held.quiet(idle)

    def flush(self) -> None:
        """Return once every row queued so far is in the database."""
        self._held.release()
        self._held.queue.join()
        with contextlib.suppress(Exception):
            self.ray.get(self.actor.flush.remote())

    def close(self) -> None:
        self._held.stop()
        self._thread.join(60.0)

    def _loop(self) -> None:
        stop = False
        while not stop:
            items = self._held.next_batch()  # the same bounded hold as RunWriter
            stop = stopped(items)
            try:
                rows = [dict(item()) for item in items if item is not STOP and callable(item)]
                if rows:
                    self.ray.get(self.actor.put.remote(rows))
            except Exception as exc:  # keep measuring; the merged run still carries every request
                self.error = f"{type(exc).__name__}: {exc}"
            finally:
                self._held.done(items)


def _ray_worker(config: BenchConfig, barrier: Any, sink: Any) -> BenchResult:
    async def wait(key: str) -> None:
        await barrier.wait.remote(key)

    return _run_share(config, wait, _RaySink(sink, _ray()) if sink is not None else None)


def _ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise InputError("--ray needs Ray: pip install 'tokometer[ray]'") from None


def run_ray(config: BenchConfig, workers: int, address: str, sink: SinkFactory | None = None) -> BenchResult:
    """The run on `workers` Ray tasks: a local head on 127.0.0.1 (`address` "local") or a cluster.

    With `sink` (the live run's writer factory), an actor pinned to this node writes every request
    the workers send as it completes."""
    ray = _ray()
    shares = plan_shares(config, workers)
    started_here = not ray.is_initialized()
    if started_here:
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        if address == "local":
            ray.init(num_cpus=max(workers, os.cpu_count() or 1), _node_ip_address="127.0.0.1", **options)
        else:
            try:
                ray.init(address=address, **options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise BenchError(f"cannot join the Ray cluster at {address}: {exc}") from None
    try:
        barrier = ray.remote(num_cpus=0)(_BarrierActor).remote(workers)
        writer = None
        if sink is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
            writer = ray.remote(num_cpus=0, scheduling_strategy=here)(_RunSinkActor).remote(sink)
        task = ray.remote(num_cpus=1, max_retries=0)(_ray_worker)
        refs = [task.remote(share, barrier, writer) for share in shares]
        try:
            results = ray.get(refs, timeout=config.deadline_bound_s() + 120.0)
        except Exception as exc:
            raise BenchError(f"a Ray benchmark worker failed: {type(exc).__name__}: {str(exc).strip().splitlines()[-1][:300]}") from None
        finally:
            if writer is not None:
                with contextlib.suppress(Exception):
                    ray.get(writer.close.remote(), timeout=60.0)
    finally:
        if started_here:
            ray.shutdown()
    return merge(config, list(results), "Ray")


class DistributedRunner:
    """What `usecases.benchmark` runs instead of a `Runner` when the load is split."""

    def __init__(
        self,
        config: BenchConfig,
        *,
        workers: int,
        ray_address: str | None,
        on_start: Callable[[Endpoint], object] | None = None,
        **_: Any,
    ) -> None:
        plan_shares(config, workers)  # refuse a bad split before anything starts
        self.config = config
        self.workers = workers
        self.ray_address = ray_address
        self.on_start = on_start

    def run(self) -> BenchResult:
        """Store the header first (the coordinator detects the server itself), so the workers, local
        or on Ray, write each request into the live run as it completes; then merge."""
        sink = None
        if self.on_start is not None:
            started = self.on_start(asyncio.run(_detect(self.config)))
            sink = started if callable(started) else None
        if self.ray_address is not None:
            return run_ray(self.config, self.workers, self.ray_address, sink)
        return run_local(self.config, self.workers, sink)


async def _detect(config: BenchConfig) -> Endpoint:
    async with httpx.AsyncClient(headers={"user-agent": "tokometer-bench"}) as client:
        return await detect(client, config.url, protocol=config.protocol, model=config.model)


def distributed_runner(config: BenchConfig, workers: int, ray_address: str | None) -> Callable[..., DistributedRunner]:
    """A runner factory for `usecases.benchmark.benchmark(..., runner=...)`."""
    plan_shares(config, workers)

    def make(config: BenchConfig, **options: Any) -> DistributedRunner:
        return DistributedRunner(config, workers=workers, ray_address=ray_address, **options)

    return make


__all__ = ["DistributedRunner", "distributed_runner", "merge", "plan_shares", "run_local", "run_ray"]
