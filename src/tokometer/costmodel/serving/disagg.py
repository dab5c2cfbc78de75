"""Disaggregated serving: a prefill pool and a decode pool, the prompt's KV moved over a link (pure).

As in DistServe and vLLM's disaggregated-prefill proxy: a request goes to a prefill replica, which
computes its whole prompt (output 1, its token is discarded); the prompt's K/V then crosses the link
to a decode replica,

    t_transfer = link_latency_s + prompt_tokens * kv_bytes_per_token / link_bytes_per_s

and the decode replica, holding all but the last prompt token's K/V, computes that last token (a
one-token step at the prompt's depth), streams the first token and decodes the rest. So

    TTFT = prefill queue + prefill + t_transfer + decode queue + one decode-pool step

and decode steps never carry prefill chunks (the point of disaggregation: TPOT without prefill
interference, paid for with the transfer and with two pools sized separately).

Event order: the busy replica furthest behind in time steps next (either pool) unless an arrival
or a finished transfer is due first; arrivals go to the prefill pool, transfers to the decode pool,
each by the router. Statistics of streaming (TTFT, TPOT, ITL, E2E, goodput, throughput) come from
the decode pool; time, steps, bounds and queueing from both.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from tokometer.costmodel.serving.cost import StepCost
from tokometer.costmodel.serving.engine import Replica
from tokometer.costmodel.serving.prefix_cache import Content
from tokometer.costmodel.serving.request import Request
from tokometer.costmodel.serving.simulate import (
    CHECK_EVERY,
    MAX_REQUESTS,
    ROUTERS,
    Observer,
    Router,
    ServingResult,
    _result,
    busiest_behind,
    context_limit,
    make_arrivals,
    request_lag_s,
    watch,
)
from tokometer.costmodel.serving.speculation import Speculation
from tokometer.costmodel.serving.workload import Workload
from tokometer.domain.serving_specs import SchedulerPolicy
from tokometer.domain.specs import _Plain
from tokometer.errors import InputError


@dataclass(frozen=True, slots=True)
class Disagg(_Plain):
    """Pool sizes and the KV link between them."""

    prefill_replicas: int
    decode_replicas: int
    kv_bytes_per_token: float  # K+V of one prompt token, the whole replica's
    link_bytes_per_s: float  # effective, per direction
    link_latency_s: float

    def __post_init__(self) -> None:
        for name in ("prefill_replicas", "decode_replicas"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"--disagg needs at least one {name.split('_')[0]} replica, got {value!r}")
        if not (self.link_bytes_per_s > 0 and math.isfinite(self.link_bytes_per_s)):
            raise InputError(f"the KV link bandwidth must be positive, got {self.link_bytes_per_s!r} B/s")
        if not (self.kv_bytes_per_token >= 0 and self.link_latency_s >= 0):
            raise InputError("KV bytes per token and link latency must be zero or more")

    def transfer_s(self, prompt_tokens: int) -> float:
        """`latency + prompt_tokens * kv_bytes_per_token / link_bytes_per_s`, seconds."""
        return self.link_latency_s + prompt_tokens * self.kv_bytes_per_token / self.link_bytes_per_s


@dataclass(frozen=True, slots=True)
class Pool(_Plain):
    """The decode pool's replica when it is laid out apart from the prefill pool (TP8/EP8 behind TP4
    prefill workers): its step cost, its scheduler, its KV capacity in tokens, and the speculative
    decoding it runs (MTP on the decode workers; a prefill worker emits one token, nothing to draft)."""

    cost: StepCost
    policy: SchedulerPolicy
    kv_capacity_tokens: float
    spec: Speculation | None = None


def parse_disagg(text: str) -> tuple[int, int]:
    """`P:D` (prefill replicas : decode replicas), both whole numbers >= 1."""
    parts = text.strip().split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        p, d = int(parts[0]), int(parts[1])
    except ValueError:
        raise InputError(f"--disagg takes P:D, prefill and decode replicas (e.g. 1:3), got {text!r}") from None
    if p < 1 or d < 1:
        raise InputError(f"--disagg needs at least one replica in each pool, got {text!r}")
    return p, d


def simulate_disagg(
    cost: StepCost,
    policy: SchedulerPolicy,
    kv_capacity_tokens: float,
    workload: Workload,
    disagg: Disagg,
    *,
    router: str = "round-robin",
    seed: int = 0,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    max_context_tokens: int | None = None,
    observe: Observer | None = None,
    decode_pool: Pool | None = None,
    check: Callable[[int], None] | None = None,
) -> ServingResult:
    """Run `workload` through a prefill pool and a decode pool of one engine; deterministic per `seed`.
    `cost`, `policy` and `kv_capacity_tokens` are the prefill replica's, and the decode replica's too
    unless `decode_pool` gives the decode pool its own layout. `check(requests routed)` is called every
    `CHECK_EVERY` passes of the event loop, as in `simulate`: a caller's time limit or progress bar."""
    if router not in ROUTERS:
        raise InputError(f"unknown router {router!r}: use {', '.join(ROUTERS)}")
    if workload.total_requests > MAX_REQUESTS:
        raise InputError(f"{workload.total_requests:,} requests is more than the simulator takes in one run ({MAX_REQUESTS:,})")
    lag = request_lag_s(policy)  # the front end is in front of the prefill pool
    arrivals = make_arrivals(workload, random.Random(seed))
    transfers: list[tuple[float, int, float, int, int, Content | None]] = []  # (ready, order, arrival, prompt, output, content)
    order = 0

    def handoff(req: Request, now: float) -> None:
        nonlocal order
        order += 1
        heapq.heappush(transfers, (now + disagg.transfer_s(req.prompt), order, req.arrival, req.prompt, req.then_output,
                                   req.content))

    prefill = [Replica(cost, policy, kv_capacity_tokens, on_done=handoff) for _ in range(disagg.prefill_replicas)]
    dec = decode_pool if decode_pool is not None else Pool(cost, policy, kv_capacity_tokens)
    if dec.cost.eager_prefill_s:  # the decode pool gets the KV and runs the first token in its captured decode
        dec = replace(dec, cost=replace(dec.cost, eager_prefill_s=0.0))
    decode = [
        Replica(dec.cost, dec.policy, dec.kv_capacity_tokens, on_finish=arrivals.on_finish, on_done=arrivals.on_done,
                slo_ttft_s=slo_ttft_s, slo_tpot_s=slo_tpot_s, spec=dec.spec)
        for _ in range(disagg.decode_replicas)
    ]
    workers = prefill + decode
    watch(workers, workload, observe)
    to_prefill, to_decode = Router(router, prefill), Router(router, decode)
    too_long = 0
    limit = min(context_limit(policy, max_context_tokens), context_limit(dec.policy, max_context_tokens))

    passes = routed = 0
    while True:
        if check is not None:
            passes += 1
            if passes % CHECK_EVERY == 0:
                check(routed)
        t_arrive = arrivals.next_s()
        t_ready = transfers[0][0] if transfers else math.inf
        rep = busiest_behind(workers)
        if rep is not None and rep.clock < min(t_arrive, t_ready):
            rep.step()
            continue
        if t_ready == math.inf and t_arrive == math.inf:
            break
        if t_ready <= t_arrive:
            ready, _, arrival, p, o, content = heapq.heappop(transfers)
            arrivals.submit(to_decode.pick(), ready, arrival, p, o, ready=ready, cached=p - 1, content=content)
            continue
        t, p, o = arrivals.pop()
        routed += 1
        if p + o > limit:
            too_long += 1
            arrivals.dropped(t)
            continue
        arrivals.submit(to_prefill.pick(), t, t - lag, p, 1, ready=t, then_output=o)
    return _result(decode, workload, too_long, dec.kv_capacity_tokens, workers=workers)
