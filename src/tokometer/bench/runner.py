"""Run a benchmark: detect the server, drop a cold run, then measure in one of five modes.

- `speed` (default): the seed's "measure yourself": `runs` generations of `max_tokens` from a
  short prompt (decode speed), then `runs` long-prompt requests (TTFT, prefill speed).
- `depth`: decode speed at each context depth (`--depth 0,4096,16384`).
- `concurrency`: for each level c, `runs` rounds of c simultaneous streams; per-stream speed and
  the aggregate while all c decode together (`--concurrency 1,2,4`).
- `rate`: open-loop Poisson arrivals at R requests/s for a duration; goodput under SLOs.
- `trace`: replay a trace's arrival times, prompt and output lengths (`bench.trace`).

What a config asks for (mode, checks, bounds, level labels) is read in `bench.plan`, the order
and timing of each mode's requests live in `bench.schedule`, and prompt counts from a server's
tokenizer in `bench.prompt_counts`; this module detects the server, opens the connections, sends
and records each request, and turns signals and the deadline into the run's status.

Several processes or machines can share one run (`bench.distributed`): each runs a `Runner` on
its share of the streams, waits at `barrier` before every timed round, and its times are re-based
on that instant when the runs merge.

`--requests N` caps the measured requests of a run, except under `--concurrency`, where every
level sends N (as `vllm bench serve --num-prompts` and guidellm count them). Ctrl-C, SIGTERM and SIGHUP stop the run and
keep everything that completed (status `interrupted`); `on_exchange` hands each finished request
to the caller as it ends (the use-case writes it to SQLite at once, so even SIGKILL loses nothing
that completed). Each concurrent stream gets its own client and keep-alive
connection, opened before the timed part: httpcore's shared pool scans every connection for every
queued request, which at a 256-stream burst costs more CPU than the streams themselves.
Chunk parsing waits until a batch of streams is over, so it never delays another stream's bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import signal
import ssl
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from tokometer.bench import prompts, wire
from tokometer.bench.client import Clock, Exchange, RequestRecord, send_streaming
from tokometer.bench.detect import Endpoint, detect
from tokometer.bench.metrics import DEFINITIONS
from tokometer.bench.plan import BenchConfig, planned_requests
from tokometer.bench.prompt_counts import PromptCounter
from tokometer.bench.protocols import GenerationRequest
from tokometer.bench.schedule import LanePool, Progress, Schedule, Sender, Stop
from tokometer.bench.summary import summarize_levels, summarize_records
from tokometer.bench.wire import Lane
from tokometer.errors import BenchError
from tokometer.runrecord import Phase, RunRecord, RunStatus

COLD_MAX_TOKENS = 32
LONG_PROMPT_TOKENS = 2048  # from here, the wait for the first byte may exceed --timeout (prompt / 20 tok/s)
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@dataclass(frozen=True)
class BenchResult:
    config: BenchConfig
    endpoint: Endpoint | None
    records: tuple[RequestRecord, ...]
    status: RunStatus
    started_at: str
    finished_at: str
    notes: tuple[str, ...] = ()
    tokens_per_word: float | None = None
    ignore_eos: bool = False
    stopped_by: int | None = None  # the signal number that stopped the run (Ctrl-C: SIGINT)
    sync_times: dict[str, float] = field(default_factory=dict)  # when each timed round began (own clock)

    def summary(self) -> dict[str, Any]:
        return summarize_records(self.records, slo_ttft_ms=self.config.slo_ttft_ms, slo_tpot_ms=self.config.slo_tpot_ms)

    def levels(self) -> list[dict[str, Any]]:
        return summarize_levels(self.records, slo_ttft_ms=self.config.slo_ttft_ms, slo_tpot_ms=self.config.slo_tpot_ms)

    def to_dict(self) -> dict[str, Any]:
        ep = self.endpoint
        config = self.config.to_dict()
        config["ignore_eos_sent"] = self.ignore_eos
        config["tokens_per_word"] = self.tokens_per_word
        return {
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "status": self.status,
            "url": self.config.url,
            "model": ep.model if ep else self.config.model,
            "mode": self.config.mode,
            "protocol": ep.protocol.name if ep else None,
            "config": config,
            "server": ep.to_dict() if ep else None,
            "summary": self.summary(),
            "levels": self.levels(),
            "notes": list(self.notes),
            "definitions": DEFINITIONS,
            "requests": [r.to_dict() for r in self.records],
        }

    def to_record(self) -> RunRecord:
        return RunRecord.from_dict({**self.to_dict(), "source": "tokometer"})


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _shared_ssl_context() -> ssl.SSLContext:
    try:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    except ImportError:  # pragma: no cover - httpx depends on certifi
        return ssl.create_default_context()


class Runner:
    """One benchmark run. `transport` and `clock` are injectable (MockTransport, fake clocks)."""

    def __init__(
        self,
        config: BenchConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Clock = time.perf_counter,
        progress: Progress | None = None,
        now: Callable[[], str] = _utc_now,
        on_start: Callable[[Endpoint], object] | None = None,
        on_exchange: Callable[[Exchange], None] | None = None,
        barrier: Callable[[str], Awaitable[None]] | None = None,
        settle: Callable[[], None] | None = None,
        on_quiet: Callable[[bool], None] | None = None,
    ) -> None:
        config.validate()
        self.settle = settle  # blocking; run before each timed round (the caller's writer drains)
        self.barrier = barrier
        self.sync_times: dict[str, float] = {}
        self.on_start = on_start
        self.on_exchange = on_exchange
        self.stopped_by: int | None = None
        self.deadline_hit = False
        self.config = config
        self.transport = transport
        self.clock = clock
        self.progress = progress
        self.now = now
        self.endpoint: Endpoint | None = None
        self.exchanges: list[Exchange] = []
        self.notes: list[str] = []
        self.rng = random.Random(config.seed)
        self.tokens_per_word = 1.0
        self.tokens_per_word_measured: float | None = None
        self.ignore_eos = False
        self._seq = 0
        self._measured = 0
        self._total = planned_requests(config)
        self._ssl: ssl.SSLContext | None = None
        self._prompts = PromptCounter()
        self._lanes = LanePool(self._lane, on_quiet)  # open-loop modes: lanes between requests
        self.use_wire = False

    # --- public --------------------------------------------------------------------------------

    def run(self) -> BenchResult:
        started = self.now()
        status: RunStatus = "complete"
        gc_was_enabled = gc.isenabled()
        try:
            asyncio.run(self._main())
        except KeyboardInterrupt:
            status = "interrupted"
            self.stopped_by = signal.SIGINT
            self.notes.append("interrupted: the requests completed before Ctrl-C are kept")
        except asyncio.CancelledError:
            if self.stopped_by is None:
                raise
            status = "interrupted"
            name = signal.Signals(self.stopped_by).name
            self.notes.append(f"interrupted by {name}: the requests completed before it are kept")
        finally:  # _main pauses the garbage collector while it measures
            gc.unfreeze()
            if gc_was_enabled:
                gc.enable()
        records = tuple(self._prompts.fill(ex.record()) for ex in self.exchanges)
        measured_ok = [r for r in records if r.phase != "cold" and r.ok]
        if self.deadline_hit:
            status = "deadline"
        if status == "complete" and not measured_ok:
            status = "failed"
        return BenchResult(
            config=self.config,
            endpoint=self.endpoint,
            records=records,
            status=status,
            started_at=started,
            finished_at=self.now(),
            notes=tuple(self.notes),
            tokens_per_word=self.tokens_per_word_measured,
            ignore_eos=self.ignore_eos,
            stopped_by=self.stopped_by,
            sync_times=dict(self.sync_times),
        )

    # --- plumbing ------------------------------------------------------------------------------

    def _client(self, connections: int | None = 1) -> httpx.AsyncClient:
        headers = {"user-agent": "tokometer-bench"}
        if self.config.api_key:
            headers["authorization"] = f"Bearer {self.config.api_key}"
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        if self.transport is not None:
            return httpx.AsyncClient(transport=self.transport, headers=headers, limits=limits)
        if self._ssl is None:
            self._ssl = _shared_ssl_context()
        return httpx.AsyncClient(headers=headers, limits=limits, verify=self._ssl)

    def _lane(self) -> Lane:
        headers = {"User-Agent": "tokometer-bench"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        assert self.endpoint is not None
        if self._ssl is None and self.endpoint.request_url.startswith("https"):
            self._ssl = _shared_ssl_context()
        return Lane(self.endpoint.request_url, self.clock, headers, self._ssl)

    def _tick(self, label: str) -> None:
        if self.progress is not None:
            self.progress(len(self.exchanges), self._total, label)

    async def _send(
        self,
        client: Sender,
        phase: Phase,
        label: str,
        prompt: str,
        max_tokens: int,
        *,
        cache_prompt: bool = True,
        group: int = 0,
    ) -> Exchange:
        if phase != "cold":
            # --requests caps the run, except in concurrency mode, where it is N at every level (the schedule's count)
            if self.config.requests is not None and phase != "concurrency" and self._measured >= self.config.requests:
                raise Stop
            self._measured += 1
        if phase in ("decode", "ttft", "depth"):  # one request at a time: nothing else may run meanwhile
            await self._settle()
        ep = self.endpoint
        assert ep is not None
        extra: dict[str, Any] = {}
        if ep.supports_continuous_usage and ep.protocol.base == "openai":
            extra["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
        request = GenerationRequest(
            prompt=prompt,
            max_tokens=max_tokens,
            model=ep.model,
            ignore_eos=self.ignore_eos,
            seed=self.config.seed if self.config.seed is not None else 0,
            cache_prompt=cache_prompt,
            extra=extra,
        )
        seq = self._seq
        self._seq += 1
        prompt_guess = int(1.5 * len(prompt.split()))  # tokens, generously (bounds only)
        stall_s = self.config.stall_timeout_s if prompt_guess < LONG_PROMPT_TOKENS else max(self.config.stall_timeout_s, prompt_guess / 20.0)
        total_s = self.config.request_bound_s(prompt_guess, max_tokens)
        if isinstance(client, Lane):
            exchange = await client.send(
                ep.request_url, ep.protocol, ep.protocol.body(request), seq=seq, phase=phase, label=label,
                stall_timeout_s=stall_s, total_timeout_s=total_s, max_tokens=max_tokens, ignore_eos=self.ignore_eos, group=group,
            )  # fmt: skip
        else:
            exchange = await send_streaming(
                client, ep.request_url, ep.protocol, ep.protocol.body(request), seq=seq, phase=phase, label=label,
                clock=self.clock, stall_timeout_s=stall_s, total_timeout_s=total_s, max_tokens=max_tokens,
                ignore_eos=self.ignore_eos, group=group,
            )  # fmt: skip
        self.exchanges.append(exchange)
        if self.on_exchange is not None:
            self.on_exchange(exchange)
        self._tick(label or phase)
        return exchange

    # --- the run -------------------------------------------------------------------------------

    def _catch_stop_signals(self) -> Callable[[], None]:
        """SIGTERM and SIGHUP cancel the run like Ctrl-C (main thread only); returns the undo."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def stop(signum: int) -> None:
            if self.stopped_by is None:
                self.stopped_by = signum
                task.cancel()

        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, stop, signum)

        def undo() -> None:
            for signum in STOP_SIGNALS:
                loop.remove_signal_handler(signum)

        return undo

    async def _main(self) -> None:
        undo = self._catch_stop_signals()
        deadline_s = self.config.deadline_bound_s()
        try:
            async with asyncio.timeout(deadline_s):
                await self._measure()
        except TimeoutError:
            self.deadline_hit = True
            self.notes.append(f"stopped at the run's deadline of {deadline_s:g} s (--deadline): the requests completed before it are kept")
        finally:
            undo()

    async def _measure(self) -> None:
        cfg = self.config
        async with self._client(8) as probe:
            self.endpoint = await detect(probe, cfg.url, protocol=cfg.protocol, model=cfg.model)
        ep = self.endpoint
        if self.on_start is not None:
            self.on_start(ep)
        self.ignore_eos = ep.supports_ignore_eos if cfg.ignore_eos is None else cfg.ignore_eos
        if not self.ignore_eos and ep.protocol.name != "ollama":
            self.notes.append("ignore_eos not sent (server not known to support it): outputs may end early")
        if ep.protocol.name == "ollama":
            self.notes.append("Ollama has no ignore_eos: outputs may end before --max-tokens")
        n_clients = max(cfg.concurrency) if cfg.mode == "concurrency" else 1
        pool = cfg.mode == "rate"
        self.aux = self._client(8)
        self.use_wire = self.transport is None and wire.usable(ep.request_url)
        clients: list[Sender] = []
        for _ in range(n_clients):
            clients.append(self._lane() if self.use_wire else self._client(None if pool else 1))
        gc.collect()
        gc.freeze()
        gc_was_enabled = gc.isenabled()
        gc.disable()  # no collector pauses inside the timed part (vLLM freezes its heap too)
        try:
            await self._warmup(clients[0])
            if n_clients > 1:
                await asyncio.gather(*(self._open(c) for c in clients[1:]))
            progress = self.progress if self._total is None else None  # a rate run with no planned count
            schedule = Schedule(cfg, self.rng, self.tokens_per_word, self._send, self._sync, self._lanes, progress)
            await schedule.run(clients)
        except Stop:
            self.notes.append(f"stopped after --requests {cfg.requests}")
        try:
            await self._prompts.count_unreported(self.aux, ep, self.exchanges)
        finally:
            gc.unfreeze()
            if gc_was_enabled:
                gc.enable()
            for lane in [c for c in clients if isinstance(c, Lane)] + self._lanes.idle:
                lane.close()
            await asyncio.gather(*(c.aclose() for c in [*clients, self.aux] if isinstance(c, httpx.AsyncClient)), return_exceptions=True)

    async def _open(self, client: Sender) -> None:
        """Open a keep-alive connection before the timed part (any answer will do)."""
        assert self.endpoint is not None
        if isinstance(client, Lane):
            with contextlib.suppress(OSError, TimeoutError):
                await client.open(10.0)
            return
        try:
            await client.get(self.endpoint.root + "/", timeout=10.0)
        except httpx.HTTPError:
            pass

    async def _warmup(self, client: Sender) -> None:
        """Cold runs (dropped from statistics); also settle the protocol and tokens per word."""
        ep = self.endpoint
        assert ep is not None
        for i in range(self.config.warmup):
            prompt = prompts.long_prompt(prompts.CALIBRATION_WORDS, self.rng)
            cold_tokens = min(self.config.max_tokens, COLD_MAX_TOKENS)
            exchange = await self._send(client, "cold", "cold", prompt, cold_tokens)
            if i == 0 and exchange.failure and exchange.failure[0] == "http":
                retried = await self._retry_cold(client, exchange, prompt, cold_tokens)
                exchange = retried or exchange
            record = exchange.record()
            prompt_tokens = record.prompt_tokens
            if prompt_tokens is None and record.ok:
                prompt_tokens = await self._prompts.count(self.aux, ep, prompt, exchange.seq)
            if record.ok and prompt_tokens and self.tokens_per_word_measured is None:
                ratio = prompt_tokens / max(1, len(prompt.split()))
                self.tokens_per_word_measured = ratio
                self.tokens_per_word = min(4.0, max(0.5, ratio))

    async def _retry_cold(self, client: Sender, failed: Exchange, prompt: str, max_tokens: int) -> Exchange | None:
        ep = self.endpoint
        assert ep is not None and failed.failure is not None
        message = failed.failure[1].lower()
        if failed.status_code in (404, 405) and ep.protocol.name == "openai-completions" and not ep.fixed:
            self.endpoint = ep.with_protocol("openai-chat")
            self.notes.append("no /completions endpoint: switched to chat completions")
            retried = await self._send(client, "cold", "cold", prompt, max_tokens)
            if retried.status_code in (404, 405):
                raise BenchError(
                    f"{ep.url} does not answer as an LLM server: {ep.request_url} and "
                    f"{self.endpoint.request_url} both gave HTTP {retried.status_code} (pass the full endpoint URL or --protocol)"
                )
            return retried
        if failed.status_code == 400 and self.ignore_eos and "ignore_eos" in message:
            self.ignore_eos = False
            self.notes.append("the server rejected ignore_eos: sent without it")
            return await self._send(client, "cold", "cold", prompt, max_tokens)
        if failed.status_code in (401, 403):
            raise BenchError(f"{ep.request_url} refused the request ({failed.failure[1][:120]}); set an API key with --api-key or TOKOMETER_API_KEY")
        if failed.status_code == 404 and ep.model and "model" in message:
            raise BenchError(f"the server does not know model {ep.model!r}: {failed.failure[1][:160]}")
        return None

    async def _settle(self) -> None:
        if self.settle is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.settle)

    async def _sync(self, key: str) -> None:
        """Let the caller settle, wait for the other workers (distributed runs), then note this
        worker's own start instant."""
        await self._settle()
        if self.barrier is not None:
            await self.barrier(key)
        self.sync_times[key] = self.clock()


def run_benchmark(config: BenchConfig, **kwargs: Any) -> BenchResult:
    """Convenience wrapper: `Runner(config, **kwargs).run()`."""
    return Runner(config, **kwargs).run()


__all__ = ["BenchConfig", "BenchResult", "Progress", "Runner", "run_benchmark"]
