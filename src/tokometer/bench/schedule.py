"""Timed-round scheduling: when, and how many at once, each mode sends its measured requests.

The runner owns the connections, the sending, the records and the run's limits; `Schedule` owns
only the order and timing of each mode's requests, so the five shapes of load read side by side:

- `speed`, `depth`: one request at a time (the runner lets nothing else run while one is timed);
- `concurrency`: closed loop, `runs` rounds of c simultaneous streams (with `--requests N`, N
  requests at every level: `plan.level_rounds`), one client per stream,
  each round behind `sync` (the caller's writer settles; in a distributed run every worker waits
  at the barrier, then notes its own start instant under the round's key);
- `rate`: open loop, Poisson arrivals at R requests/s until the duration or `--requests` ends;
- `trace`: open loop, each request at its recorded arrival time, with its prompt and output lengths.

Open-loop requests share one httpx pool or, with the wire client, take an idle keep-alive lane
from `LanePool` (opening one when none is idle); the pool tells the caller when no request is in
flight, so its writer parses finished streams in the gaps rather than beside timed ones. Prompts
and arrival gaps come from the run's seeded generator in a fixed order, so a seed repeats them.
With `--input-len`/`--output-len` (`bench.lengths`), each concurrency or rate request draws its prompt
and output lengths from that generator too, before its prompt.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import httpx

from tokometer.bench import prompts
from tokometer.bench.client import Exchange
from tokometer.bench.plan import BenchConfig, level_label, level_rounds, round_key
from tokometer.bench.wire import Lane
from tokometer.domain.runrecord import Phase

TTFT_MAX_TOKENS = 4
DEFAULT_RATE_DURATION_S = 60.0
Progress = Callable[[int, int | None, str], None]
Sender = httpx.AsyncClient | Lane  # the wire client where it can be used, else httpx


class Stop(Exception):
    """The --requests cap was reached."""


class Send(Protocol):
    """The runner's sender: one request, timed and recorded; raises `Stop` at the --requests cap."""

    def __call__(
        self, client: Sender, phase: Phase, label: str, prompt: str, max_tokens: int, *, cache_prompt: bool = True, group: int = 0
    ) -> Awaitable[Exchange]: ...


class LanePool:
    """The open-loop modes' keep-alive lanes between requests, and the count of requests in flight."""

    def __init__(self, open_lane: Callable[[], Lane], on_quiet: Callable[[bool], None] | None = None) -> None:
        self.open_lane = open_lane
        # told True when no request is in flight, False when one starts, so the caller's
        # writer parses finished streams in the gaps rather than beside timed ones
        self.on_quiet = on_quiet
        self.idle: list[Lane] = []
        self.in_flight = 0

    def take(self) -> Lane:
        """An idle lane, else a new one; the request on it counts as in flight."""
        lane = self.idle.pop() if self.idle else self.open_lane()
        self._busy(+1)
        return lane

    def give_back(self, lane: Lane) -> None:
        """The request on `lane` is over: keep the lane if its connection is still open."""
        self._busy(-1)
        if lane.connected:
            self.idle.append(lane)
        else:
            lane.close()

    def _busy(self, change: int) -> None:
        """Count requests in flight; tell `on_quiet` when the count leaves or reaches zero."""
        self.in_flight += change
        if self.on_quiet is not None and self.in_flight == (0 if change < 0 else 1):
            self.on_quiet(self.in_flight == 0)


@dataclass(frozen=True)
class Schedule:
    """One run's measured requests, sent in its mode's order and timing."""

    config: BenchConfig
    rng: random.Random  # the run's seeded generator (the cold runs drew from it first)
    tokens_per_word: float  # from the cold run: long prompts are sized in words with it
    send: Send
    sync: Callable[[str], Awaitable[None]]  # before each timed round, with the round's key
    lanes: LanePool
    progress: Progress | None = None  # a rate run with no planned count: told the share of its duration gone

    async def run(self, clients: list[Sender]) -> None:
        """The mode's requests: one client per concurrent stream, else all on `clients[0]`."""
        mode = self.config.mode
        if mode == "speed":
            await self._speed(clients[0])
        elif mode == "depth":
            await self._depth(clients[0])
        elif mode == "concurrency":
            await self._concurrency(clients)
        elif mode == "trace":
            await self._trace(clients[0])
        else:
            await self._rate(clients[0])

    async def _speed(self, client: Sender) -> None:
        cfg = self.config
        for _ in range(cfg.runs):
            await self.send(client, "decode", "", prompts.short_prompt(self.rng), cfg.max_tokens)
        if cfg.prompt_tokens > 0:
            for _ in range(cfg.runs):
                prompt = prompts.long_prompt(cfg.prompt_tokens, self.rng, self.tokens_per_word)
                await self.send(client, "ttft", "", prompt, TTFT_MAX_TOKENS, cache_prompt=False)

    async def _depth(self, client: Sender) -> None:
        cfg = self.config
        for depth in cfg.depths:
            for _ in range(cfg.runs):
                if depth == 0:
                    prompt = prompts.short_prompt(self.rng)
                else:
                    prompt = prompts.long_prompt(depth, self.rng, self.tokens_per_word)
                await self.send(client, "depth", f"depth={depth}", prompt, cfg.max_tokens, cache_prompt=False)

    async def _concurrency(self, clients: list[Sender]) -> None:
        cfg = self.config
        for index in range(len(cfg.concurrency)):
            label = level_label(cfg, index)
            for round_index, streams in enumerate(level_rounds(cfg, index)):
                await self.sync(round_key(index, round_index))
                drawn = [self._request() for _ in range(streams)]
                batch = [
                    self.send(clients[i], "concurrency", label, prompt, out, group=round_index)
                    for i, (prompt, out) in enumerate(drawn)
                ]
                results = await asyncio.gather(*batch, return_exceptions=True)
                if any(isinstance(r, Stop) for r in results):
                    raise Stop
                for r in results:
                    if isinstance(r, BaseException):
                        raise r

    def _request(self) -> tuple[str, int]:
        """One concurrency or rate request's prompt and output tokens: the short prompt and --max-tokens,
        or lengths drawn from the random workload's ranges (output first, then the prompt)."""
        cfg = self.config
        out = cfg.output_range.draw(self.rng)
        wanted = cfg.input_range
        if wanted is None:
            return prompts.short_prompt(self.rng), out
        return prompts.sized_prompt(wanted.draw(self.rng), self.rng, self.tokens_per_word), out

    async def _pooled(self, shared: Sender, label: str, prompt: str, max_tokens: int | None = None, phase: Phase = "rate") -> Exchange:
        """One open-loop request: httpx shares its pool; the wire client takes an idle lane or opens one."""
        out = self.config.max_tokens if max_tokens is None else max_tokens
        if not isinstance(shared, Lane):
            return await self.send(shared, phase, label, prompt, out, cache_prompt=phase != "trace")
        lane = self.lanes.take()
        try:
            return await self.send(lane, phase, label, prompt, out, cache_prompt=phase != "trace")
        finally:
            self.lanes.give_back(lane)

    async def _rate(self, client: Sender) -> None:
        cfg = self.config
        assert cfg.rate_rps is not None
        duration = cfg.duration_s or (None if cfg.requests else DEFAULT_RATE_DURATION_S)
        label = level_label(cfg, 0)
        await self.sync("rate")
        loop = asyncio.get_running_loop()
        start = loop.time()
        arrival = start
        tasks: list[asyncio.Task[Exchange]] = []
        sent = 0
        while True:
            arrival += self.rng.expovariate(cfg.rate_rps)
            if duration is not None and arrival - start > duration:
                break
            if cfg.requests is not None and sent >= cfg.requests:
                break
            delay = arrival - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            prompt, out = self._request()
            tasks.append(asyncio.create_task(self._pooled(client, label, prompt, out)))
            sent += 1
            if self.progress is not None and duration:
                self.progress(int(100 * (loop.time() - start) / duration), 100, "rate")
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _trace(self, client: Sender) -> None:
        """Replay the trace: each request at its arrival time, with its prompt and output lengths."""
        cfg = self.config
        await self.sync("trace")
        loop = asyncio.get_running_loop()
        start = loop.time()
        tasks: list[asyncio.Task[Exchange]] = []
        for item in cfg.trace:
            delay = start + item.arrival_s - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            prompt = prompts.long_prompt(item.prompt_tokens, self.rng, self.tokens_per_word) if item.prompt_tokens > 64 else prompts.short_prompt(self.rng)
            tasks.append(asyncio.create_task(self._pooled(client, "trace", prompt, item.output_tokens, phase="trace")))
        if tasks:
            results = await asyncio.gather(*tasks, return_exceptions=True)
            if any(isinstance(r, Stop) for r in results):
                raise Stop


__all__ = ["DEFAULT_RATE_DURATION_S", "TTFT_MAX_TOKENS", "LanePool", "Progress", "Schedule", "Send", "Sender", "Stop"]
