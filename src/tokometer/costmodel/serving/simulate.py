"""Drive replicas through a workload: arrivals, routing, closed-loop users, and the result.

With one replica the loop alternates "admit every arrival up to the replica's clock" and "run one
step". With several, the replica furthest behind in time steps next, and an arrival is routed only
once every busy replica has reached its time (round-robin, or least outstanding requests), so the
router sees each replica's state at the moment of arrival. Closed-loop users send their next
request `think_s` after the previous one finished (a heap of pending arrivals).

The loop always ends: every request is completed or refused with a reason (`policies`), and a
replica that steps `stall_limit(workload)` times in a row without running or refusing anything
raises `SimulationStalled`. `observe`, for tests, is told of every step and every request a replica
is given (`invariants.InvariantChecker`); without it the loop pays nothing.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from tokometer.costmodel.serving.conversations import Book
from tokometer.costmodel.serving.cost import StepCost
from tokometer.costmodel.serving.engine import Replica, StepRecord
from tokometer.costmodel.serving.policies import TOO_LONG_FOR_MODEL, kv_rule
from tokometer.costmodel.serving.prefix_cache import Content
from tokometer.costmodel.serving.request import Request
from tokometer.costmodel.serving.speculation import Speculation
from tokometer.costmodel.serving.stats import StreamStat, Summary
from tokometer.costmodel.serving.workload import Workload, open_loop
from tokometer.domain.serving_specs import SchedulerPolicy
from tokometer.domain.specs import _Plain
from tokometer.errors import InputError

ROUTERS = ("round-robin", "least-outstanding")
CHECK_EVERY = 256  # event-loop passes between calls of a caller's `check` (cheap next to 256 steps)
MAX_REQUESTS = 10_000_000  # a run simulates about 10^5 requests per second; beyond this, refuse


@dataclass(frozen=True, slots=True)
class ServingResult(_Plain):
    """What a simulated serving run measured: throughput, latencies, queueing, KV and why."""

    requests: int
    completed: int
    rejected: int
    duration_s: float
    req_per_s: float
    tput_out_tok_s: float
    tput_in_tok_s: float
    tput_total_tok_s: float
    ttft_s: Summary
    tpot_s: Summary
    itl_s: Summary
    e2e_s: Summary
    queue_s: Summary
    goodput_share: float | None
    goodput_req_per_s: float | None
    mean_batch: float
    mean_kv_utilisation: float
    kv_capacity_tokens: float
    preemptions: int
    steps: int
    time_prefill_s: float
    time_decode_s: float
    time_idle_s: float
    bound_s: dict[str, float]
    batch_over_time: tuple[tuple[float, float], ...]
    kv_over_time: tuple[tuple[float, float], ...]
    replicas: int
    rejected_by_reason: dict[str, int]  # why each rejected request could never run
    truncated: int  # requests the engine cut short (llama.cpp stops when a slot's context is full)
    prefix_hit_share: float | None = None  # share of admitted prompt tokens the prefix cache served
    prefix_evicted_tokens: int = 0  # cached idle KV tokens evicted to make room

    @property
    def binding(self) -> str:
        """The resource that bound the most step time."""
        return max(self.bound_s, key=lambda k: self.bound_s[k]) if self.bound_s else "none"


class _Users:
    """Closed-loop users: `concurrency` of them, each sends again `think_s` after a finish."""

    def __init__(self, workload: Workload, rng: random.Random) -> None:
        self.workload = workload
        self.rng = rng
        self.left = workload.num_requests
        self.heap: list[float] = []
        for _ in range(min(workload.concurrency or 1, self.left)):
            heapq.heappush(self.heap, 0.0)
        self.left -= len(self.heap)

    def on_finish(self, now: float) -> None:
        if self.left > 0:
            self.left -= 1
            heapq.heappush(self.heap, now + self.workload.think_s)



LAST = Content(())  # "the content of the request popped last" (a sentinel)


class _Arrivals:
    """The run's requests in time order, from closed-loop users or an open-loop stream, and what a
    request that never runs (too long, or refused) gives back: its user, who then thinks and sends again."""

    content: Content | None = None  # what the request popped last shares (`_SharedArrivals`)
    on_done: Callable[[Request, float], None] | None = None  # called with each finished request

    def __init__(self, workload: Workload, rng: random.Random, stream: Workload | None = None) -> None:
        self.workload = workload
        self.rng = rng
        self.users = _Users(workload, rng) if workload.arrival == "closed" else None
        self._stream: Iterator[tuple[float, int, int]] | None = (
            open_loop(stream or workload, rng) if self.users is None else None)
        self._next = next(self._stream, None) if self._stream is not None else None

    @property
    def on_finish(self) -> Callable[[float], None] | None:
        """The callback a replica calls when a request finishes (closed loop only)."""
        return self.users.on_finish if self.users is not None else None

    def next_s(self) -> float:
        """When the next request arrives; infinity once there are none."""
        if self.users is not None:
            return self.users.heap[0] if self.users.heap else math.inf
        return self._next[0] if self._next is not None else math.inf

    def pop(self) -> tuple[float, int, int]:
        """The next request: (arrival s, prompt tokens, output tokens)."""
        if self.users is not None:
            t = heapq.heappop(self.users.heap)
            return t, self.workload.prompt.sample(self.rng), self.workload.output.sample(self.rng)
        assert self._next is not None and self._stream is not None
        out = self._next
        self._next = next(self._stream, None)
        return out

    def dropped(self, now: float, content: Content | None = None) -> None:
        """A request that will never run: its user (closed loop) is free again at `now`."""
        if self.users is not None:
            self.users.on_finish(now)

    def submit(
        self, target: Replica, now: float, arrival: float, prompt: int, output: int, *,
        ready: float | None = None, cached: int = 0, then_output: int = 0, content: Content | None = None,
    ) -> None:
        """`target.submit(...)` with the same arguments; a refused request frees its user at `now`."""
        before = target.rejected
        target.submit(arrival, prompt, output, ready=ready, cached=cached, then_output=then_output)
        if target.rejected > before:
            self.dropped(now)


LAST = Content(())  # "the content of the request popped last" (a sentinel)


class _SharedArrivals(_Arrivals):
    """Arrivals of a workload whose prompts share content (`Workload.shares_prefixes`), through a
    `conversations.Book`: each request popped carries its `content` (for the prefix cache), and a
    conversation's next turn arrives from the book's heap once its answer is in (`on_done`)."""

    def __init__(self, workload: Workload, rng: random.Random) -> None:
        self.book = Book(workload, rng)
        super().__init__(workload, rng, self.book.starts())
        self.book.users = self.users
        if self.book.turns > 1:
            self.on_done = self._answered

    @property
    def on_finish(self) -> Callable[[float], None] | None:
        """Closed loop without conversations only: with them, a user goes on from `on_done`."""
        return None if self.book.turns > 1 else super().on_finish

    def _answered(self, req: Request, now: float) -> None:
        if not self.book.answered(req.content, req.output, now) and self.users is not None:
            self.users.on_finish(now)

    def next_s(self) -> float:
        t = _Arrivals.next_s(self)  # not super(): it runs twice an event
        heap = self.book.heap
        return heap[0][0] if heap and heap[0][0] < t else t

    def pop(self) -> tuple[float, int, int]:
        """The next request, its content in `self.content`: a conversation's next turn, or a new request."""
        heap = self.book.heap
        if heap and heap[0][0] <= _Arrivals.next_s(self):
            t, _, p, o, self.content = heapq.heappop(heap)
            return t, p, o
        t, p, o = _Arrivals.pop(self)
        prompt, self.content = self.book.dress(p)
        return t, prompt, o

    def dropped(self, now: float, content: Content | None = LAST) -> None:
        """A request that will never run (default: the one popped last): its conversation goes on,
        or its user (closed loop) is free again at `now`."""
        if not self.book.answered(self.content if content is LAST else content, 0, now):
            super().dropped(now)

    def submit(
        self, target: Replica, now: float, arrival: float, prompt: int, output: int, *,
        ready: float | None = None, cached: int = 0, then_output: int = 0, content: Content | None = LAST,
    ) -> None:
        """`target.submit(...)` with the request's content (default: the one popped last)."""
        before = target.rejected
        content = self.content if content is LAST else content
        target.submit(arrival, prompt, output, ready=ready, cached=cached, then_output=then_output, content=content)
        if target.rejected > before:
            self.dropped(now, content)


def make_arrivals(workload: Workload, rng: random.Random) -> _Arrivals:
    """The arrivals of `workload`: shared-content bookkeeping only when its prompts share content."""
    return _SharedArrivals(workload, rng) if workload.shares_prefixes else _Arrivals(workload, rng)


def request_lag_s(policy: SchedulerPolicy) -> float:
    """The serving stack's latency outside the forward passes (`SchedulerPolicy.request_latency_ms`), in
    seconds. Charged once per request where it enters the simulator: a request the scheduler has at `t`
    was sent by its client at `t - lag` (its `arrival`, from which TTFT and E2E count); queueing counts
    from `t`, so the scheduler sees the same arrivals as without it and every TTFT and E2E is `lag` longer.

    A closed-loop user's next request is not held back by `lag` (it reaches the scheduler when its
    predecessor finishes, as before): with fixed lengths the simulated closed loop phase-locks, and any
    delay there, a 1 ms `think_s` as much as `lag`, moves whole prefill chunks in front of every request
    (VLLM-FP8KV, Llama 3.1 8B on an H100, 8 users of 20k/2k tokens: median TTFT 824 -> 1,099 ms at
    1 ms), which real clients' jitter does not show. The cost: a closed loop's duration misses `lag` per
    request cycle (0.3 % of a 10 s request at 30 ms)."""
    return policy.request_latency_ms / 1000.0


class Router:
    """Which replica of `pool` takes the next request: each in turn (round-robin) or the one with the
    fewest requests outstanding (least-outstanding)."""

    def __init__(self, kind: str, pool: list[Replica]) -> None:
        self.kind = kind
        self.pool = pool
        self.turn = 0

    def pick(self) -> Replica:
        pool = self.pool
        if len(pool) == 1:
            return pool[0]
        if self.kind == "round-robin":
            self.turn += 1
            return pool[(self.turn - 1) % len(pool)]
        return min(pool, key=lambda r: r.outstanding)


def busiest_behind(pool: list[Replica]) -> Replica | None:
    """The busy replica furthest behind in time: it steps next (None when all are idle)."""
    rep = None
    for r in pool:
        if r.busy and (rep is None or r.clock < rep.clock):
            rep = r
    return rep


def describe(workload: Workload) -> str:
    """The workload in one line, for an error message."""
    w = workload
    lengths = f"prompt {w.prompt.kind} mean {w.prompt.mean:g}, output {w.output.kind} mean {w.output.mean:g}"
    if w.arrival == "trace":
        return f"a trace of {len(w.trace):,} requests"
    if w.arrival == "closed":
        how = f"{w.concurrency} closed-loop users"
    elif w.arrival == "offline":
        how = "offline"
    else:
        how = f"{w.arrival} at {w.rate_per_s or 0:g} req/s"
    return f"{w.num_requests:,} requests, {how}, {lengths}"


def stall_limit(workload: Workload) -> int:
    """Empty steps in a row a replica may take before `SimulationStalled`: 64 + the workload's requests.

    A working scheduler never takes one (every step computes a token or refuses a request), so the
    limit only has to be finite; scaling it with the workload keeps it above any transient a future
    rule could have (at most one empty pass per request waiting), and it costs nothing until hit.
    """
    return 64 + workload.total_requests


class Observer(Protocol):
    """What a test watches (`invariants.InvariantChecker`): each step, and each request a replica is given."""

    def stepped(self, rep: Replica) -> None: ...

    def submitted(self, rep: Replica, prompt: int, output: int) -> None: ...


def watch(pool: list[Replica], workload: Workload, observe: Observer | None) -> None:
    """Name the workload in each replica's stall error; with `observe`, tell it of every step and
    every request submitted (wrapping the replica's methods, so a run without it pays nothing)."""
    limit, text = stall_limit(workload), describe(workload)
    for rep in pool:
        rep.stall_limit = limit
        rep.workload_text = text
        if observe is not None:
            rep.step = _after_step(rep, observe)  # type: ignore[method-assign]
            rep.submit = _on_submit(rep, observe)  # type: ignore[method-assign]


def _after_step(rep: Replica, observe: Observer) -> Callable[[], None]:
    step = rep.step

    def checked() -> None:
        step()
        observe.stepped(rep)

    return checked


def _on_submit(rep: Replica, observe: Observer) -> Callable[..., None]:
    submit = rep.submit

    def seen(arrival: float, prompt: int, output: int, **kwargs: Any) -> None:
        observe.submitted(rep, prompt, output)
        submit(arrival, prompt, output, **kwargs)

    return seen


def context_limit(policy: SchedulerPolicy, max_context_tokens: int | None) -> float:
    """The prompt + output beyond which a request is refused before routing (the model's context
    length); infinite for an engine that cuts such a request short instead (llama.cpp)."""
    if not max_context_tokens or kv_rule(policy).truncates_at_context:
        return math.inf
    return max_context_tokens


def simulate(
    cost: StepCost,
    policy: SchedulerPolicy,
    kv_capacity_tokens: float,
    workload: Workload,
    *,
    replicas: int = 1,
    router: str = "round-robin",
    seed: int = 0,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    max_context_tokens: int | None = None,
    record: list[StepRecord] | None = None,
    observe: Observer | None = None,
    check: Callable[[int], None] | None = None,
    spec: Speculation | None = None,
) -> ServingResult:
    """Run `workload` through `replicas` copies of one engine; deterministic for a given `seed`.

    `spec`: speculative decoding in every replica (`speculation.py`).

    `check`, when given, is called every `CHECK_EVERY` passes of the event loop with the number of
    requests routed so far; it may raise to stop the run (a caller's time limit or progress bar).
    """
    if router not in ROUTERS:
        raise InputError(f"unknown router {router!r}: use {', '.join(ROUTERS)}")
    if isinstance(replicas, bool) or replicas < 1:
        raise InputError(f"--replicas must be a whole number, 1 or more, got {replicas!r}")
    if workload.total_requests > MAX_REQUESTS:
        raise InputError(
            f"{workload.total_requests:,} requests is more than the simulator takes in one run "
            f"({MAX_REQUESTS:,}, about two minutes); steady-state figures settle within 10^4-10^5 requests"
        )
    lag = request_lag_s(policy)
    arrivals = make_arrivals(workload, random.Random(seed))
    pool = [
        Replica(
            cost, policy, kv_capacity_tokens, on_finish=arrivals.on_finish, on_done=arrivals.on_done,
            slo_ttft_s=slo_ttft_s, slo_tpot_s=slo_tpot_s, record=record if replicas == 1 else None, spec=spec,
        )
        for _ in range(replicas)
    ]
    watch(pool, workload, observe)
    route = Router(router, pool)
    too_long = 0
    limit = context_limit(policy, max_context_tokens)
    if replicas == 1:
        if type(arrivals) is _Arrivals and arrivals.users is None:
            too_long = _one_open_loop(pool[0], arrivals, limit, check, lag)
        else:
            too_long = _one_replica(pool[0], arrivals, limit, check, lag)
        return _result(pool, workload, too_long, kv_capacity_tokens)
    passes = routed = 0
    while True:
        if check is not None:
            passes += 1
            if passes % CHECK_EVERY == 0:
                check(routed)
        t_next = arrivals.next_s()
        rep = busiest_behind(pool)
        if rep is not None and rep.clock < t_next:
            rep.step()
            continue
        if t_next == math.inf:
            break
        # route one arrival
        t, p, o = arrivals.pop()
        routed += 1
        if p + o > limit:
            too_long += 1
            arrivals.dropped(t)
            continue
        arrivals.submit(route.pick(), t, t - lag, p, o, ready=t)
    return _result(pool, workload, too_long, kv_capacity_tokens)


def _one_replica(rep: Replica, arrivals: _Arrivals, limit: float, check: Callable[[int], None] | None, lag: float) -> int:
    """`simulate`'s loop for one replica: the same events, in the same order, and the same `check` calls,
    without the router and the pool scan; `lag` is `request_lag_s`. Returns the requests too long for the model."""
    step = rep.step  # bound once: `watch` may have wrapped it for an observer
    next_s, pop, submit, dropped = arrivals.next_s, arrivals.pop, arrivals.submit, arrivals.dropped
    too_long = passes = routed = 0
    while True:
        if check is not None:
            passes += 1
            if passes % CHECK_EVERY == 0:
                check(routed)
        t_next = next_s()  # a closed-loop user or a conversation's next turn may appear after any step
        if rep.clock < t_next and rep.busy:
            step()
            continue
        if t_next == math.inf:
            break
        t, p, o = pop()
        routed += 1
        if p + o > limit:
            too_long += 1
            dropped(t)
            continue
        submit(rep, t, t - lag, p, o, ready=t)
    return too_long


def _one_open_loop(
    rep: Replica, arrivals: _Arrivals, limit: float, check: Callable[[int], None] | None, lag: float
) -> int:
    """`simulate`'s loop for its most common run, specialised: one replica, an open-loop stream without
    shared content. The same steps and submissions in the same order, and the same `check` calls (an
    open-loop request that never runs frees no user, so `dropped` and the refusal check are no-ops),
    without the router, the pool scan and the arrivals' method calls per event. Returns the requests
    too long for the model."""
    stream = arrivals._stream
    assert stream is not None
    nxt = arrivals._next
    step = rep.step  # bound once: `watch` may have wrapped it for an observer
    too_long = passes = routed = 0
    t_next = nxt[0] if nxt is not None else math.inf
    while True:
        if check is not None:
            passes += 1
            if passes % CHECK_EVERY == 0:
                check(routed)
        if rep.clock < t_next and rep.busy:
            step()
            continue
        if nxt is None:
            break
        t, p, o = nxt
        nxt = next(stream, None)
        t_next = nxt[0] if nxt is not None else math.inf
        routed += 1
        if p + o > limit:
            too_long += 1
            continue
        if lag:
            rep.submit(t - lag, p, o, ready=t)  # sent `lag` before the scheduler has it (`request_lag_s`)
        else:
            rep.submit(t, p, o)
    arrivals._next = None
    return too_long


def _merged(pool: list[Replica], name: str) -> StreamStat:
    out = StreamStat()
    for r in pool:
        out.merge(getattr(r, name))
    return out


def _result(
    pool: list[Replica], workload: Workload, too_long: int, capacity: float, *, workers: list[Replica] | None = None
) -> ServingResult:
    """Merge the replicas' statistics; `pool` finishes requests, `workers` (default: pool) did the steps.

    Disaggregated serving passes the decode pool as `pool` (where requests finish and stream) and
    both pools as `workers` (time, steps, bounds, preemptions, batch and KV use).
    """
    workers = pool if workers is None else workers
    completed = sum(r.completed for r in pool)
    reasons = {TOO_LONG_FOR_MODEL: too_long} if too_long else {}
    for r in workers:
        for reason, n in r.refused.items():
            reasons[reason] = reasons.get(reason, 0) + n
    start = min((r.first_arrival for r in workers), default=0.0)
    start = 0.0 if start == math.inf else start
    end = max((r.last_finish for r in pool), default=0.0)
    duration = max(end - start, 0.0)
    out = sum(r.tokens_out for r in pool)
    tin = sum(r.tokens_in for r in pool)

    def rate(x: float) -> float:
        return x / duration if duration > 0 else 0.0

    busy = sum(r.busy_s for r in workers)
    good = sum(r.good for r in pool)
    bound = {k: sum(r.bound_s[k] for r in workers) for k in ("memory", "compute", "overhead")}
    trace = pool[0]
    return ServingResult(
        requests=workload.total_requests,
        completed=completed,
        rejected=too_long + sum(r.rejected for r in workers),
        duration_s=duration,
        req_per_s=rate(completed),
        tput_out_tok_s=rate(out),
        tput_in_tok_s=rate(tin),
        tput_total_tok_s=rate(out + tin),
        ttft_s=_merged(pool, "ttft").summary(),
        tpot_s=_merged(pool, "tpot").summary(),
        itl_s=_merged(pool, "itl").summary(),
        e2e_s=_merged(pool, "e2e").summary(),
        queue_s=_merged(workers, "queue").summary(),
        goodput_share=good / completed if completed else None,
        goodput_req_per_s=rate(good) if completed else None,
        mean_batch=sum(r.batch_time for r in workers) / busy if busy else 0.0,
        mean_kv_utilisation=(sum(r.kv_time for r in workers) / busy / capacity) if busy and capacity else 0.0,
        kv_capacity_tokens=capacity,
        preemptions=sum(r.preemptions for r in workers),
        steps=sum(r.steps for r in workers),
        time_prefill_s=sum(r.prefill_s for r in workers),
        time_decode_s=sum(r.decode_s for r in workers),
        time_idle_s=max(0.0, duration * len(workers) - busy),
        bound_s=bound,
        batch_over_time=tuple(trace.batch_trace.points),
        kv_over_time=tuple(trace.kv_trace.points),
        replicas=len(workers),
        rejected_by_reason=dict(sorted(reasons.items())),
        truncated=sum(r.truncated for r in workers),
        prefix_hit_share=(sum(r.hit_admitted for r in workers) / admitted) if (admitted := sum(r.prompt_admitted for r in workers)) else None,
        prefix_evicted_tokens=sum(r.pcache.evicted_tokens for r in workers),
    )
