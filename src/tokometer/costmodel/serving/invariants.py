"""What must hold after every step of a serving simulation, checked from outside (tests only).

`InvariantChecker` is passed as `simulate(..., observe=checker)`: it is told of each request a
replica is given and called with the replica after each step, and walks the replica's requests (O(running + waiting) per step, which is why production
runs never pay for it). After every step:

- time never goes backwards, and the replica's running sums (sequences, decodes, depth, KV in use,
  booked tokens, remaining output) equal what its requests add up to;
- 0 <= KV in use <= capacity, booked tokens <= capacity, running sequences <= max_num_seqs;
- with a prefix cache, a segment that running requests share counts once in KV in use, each
  segment's holders are the running requests that hold it, and KV in use + the idle cached KV
  fits in the capacity (`check_prefix_cache`);
- tokens balance: output tokens emitted = output of the completed requests + what the running and
  the requeued requests have generated so far.

At the end (`finish`): every request ended completed or rejected, every replica is idle, every
emitted token belongs to a completed request, nothing was dropped by the empty-engine safety net,
preemptions <= the output tokens (each readmission emits a new token) and the steps stay within
the bound every step must respect (each carries a prompt or an output token):

    steps <= prompt + output tokens submitted + preemptions * (largest prompt + output)
"""

from __future__ import annotations

from tokometer.costmodel.serving.engine import Replica
from tokometer.costmodel.serving.policies import UNSERVABLE
from tokometer.costmodel.serving.prefix_cache import BlockPrefixCache, SlotPromptCache
from tokometer.costmodel.serving.request import Request
from tokometer.costmodel.serving.simulate import ServingResult

TOL = 1e-6


class InvariantError(AssertionError):
    """An invariant of the simulator failed: a bug in the engine or a rule."""


class InvariantChecker:
    """Call after every step (`observe=`); then `finish(result)`. Counts the steps it saw."""

    def __init__(self) -> None:
        self.clock: dict[int, float] = {}
        self.replicas: dict[int, Replica] = {}
        self.given: dict[int, int] = {}  # prompt + output tokens each replica was given
        self.largest: dict[int, int] = {}
        self.steps = 0

    def submitted(self, rep: Replica, prompt: int, output: int) -> None:
        key = id(rep)
        self.replicas[key] = rep
        size = max(1, prompt) + output
        self.given[key] = self.given.get(key, 0) + size
        self.largest[key] = max(self.largest.get(key, 0), size)

    def stepped(self, rep: Replica) -> None:
        self.steps += 1
        key = id(rep)
        self.replicas[key] = rep
        last = self.clock.get(key, 0.0)
        if rep.clock < last:
            raise InvariantError(f"time went backwards: {rep.clock!r} after {last!r}")
        self.clock[key] = rep.clock
        check_replica(rep)

    def finish(self, result: ServingResult) -> None:
        """The end of a run: every request completed or rejected, within the step bound."""
        if result.completed + result.rejected != result.requests:
            raise InvariantError(
                f"{result.requests} requests but {result.completed} completed + {result.rejected} rejected")
        if sum(result.rejected_by_reason.values()) != result.rejected:
            raise InvariantError(f"rejections {result.rejected} without a reason each: {result.rejected_by_reason}")
        if UNSERVABLE in result.rejected_by_reason:
            raise InvariantError("a request passed its engine's refusal rule but an empty engine could not admit it")
        for key, rep in self.replicas.items():
            if rep.busy or rep.n_running or rep.kv_used > TOL or rep.reserved > TOL or rep.owed - rep.n_dec * rep.k:
                raise InvariantError(f"a replica ended busy: {state(rep)}")
            if rep.tokens_out != rep.output_done:
                raise InvariantError(f"{rep.tokens_out} tokens emitted but completed requests asked for {rep.output_done}")
            submitted = self.given.get(key, 0)
            if rep.preemptions > submitted:
                raise InvariantError(f"{rep.preemptions} preemptions for {submitted} submitted tokens")
            bound = submitted + rep.preemptions * self.largest.get(key, 0)
            if rep.steps > bound:
                raise InvariantError(f"{rep.steps} steps, beyond the bound {bound}: {state(rep)}")


def state(rep: Replica) -> str:
    return (f"t={rep.clock:.6f} running={rep.n_running} decoding={rep.n_dec} prefilling={len(rep.prefilling)} "
            f"waiting={len(rep.waiting)} kv={rep.kv_used:.1f}/{rep.capacity:.1f} reserved={rep.reserved:.1f} "
            f"rule={rep.rule.name}")


def check_replica(rep: Replica) -> None:
    """The per-step invariants of one replica (see the module docstring)."""
    running = [r for r in rep.order if r.finish_k >= 0 or r.todo > 0]
    decoding = [r for r in running if r.finish_k >= 0]
    prefilling = [r for r in running if r.finish_k < 0]
    where = state(rep)
    if len(running) != rep.n_running or len(decoding) != rep.n_dec or len(prefilling) != len(rep.prefilling):
        raise InvariantError(f"running counts disagree with the requests ({len(running)}, {len(decoding)}): {where}")
    if rep.n_running > rep.policy.max_num_seqs:
        raise InvariantError(f"{rep.n_running} running, above max_num_seqs {rep.policy.max_num_seqs}: {where}")
    k = rep.k
    depth = sum(r.prompt + (k - r.join_k) for r in decoding)
    kv = depth + sum(r.prompt for r in prefilling) + rep.frag * len(running) - check_prefix_cache(rep, running)
    booked = sum(r.booked for r in running)
    owed = sum(r.finish_k for r in decoding) + sum(r.output - r.generated for r in prefilling)
    scale = max(1.0, rep.capacity)
    if abs(depth - rep.depth_sum) > TOL * scale or abs(kv - rep.kv_used) > TOL * scale:
        raise InvariantError(f"KV sums drifted: depth {depth} vs {rep.depth_sum}, kv {kv} vs {rep.kv_used}: {where}")
    if abs(booked - rep.reserved) > TOL * scale or owed != rep.owed:
        raise InvariantError(f"bookings drifted: booked {booked} vs {rep.reserved}, owed {owed} vs {rep.owed}: {where}")
    if rep.kv_used < -TOL or rep.kv_used > rep.capacity * (1 + TOL) + TOL:
        raise InvariantError(f"KV in use outside [0, capacity]: {where}")
    if rep.reserved > rep.capacity * (1 + TOL) + TOL:
        raise InvariantError(f"more KV booked than the cache holds: {where}")
    if any(r.finish_k - k != r.output - rep.generated_of(r) or rep.generated_of(r) >= r.output for r in decoding):
        raise InvariantError(f"a decoding request is set to end anywhere but at its output: {where}")
    if any(r.generated >= r.output for r in prefilling) or any(r.generated >= r.output for r in rep.waiting):
        raise InvariantError(f"a request waits or prefills with its output already generated: {where}")
    generated = sum(rep.generated_of(r) for r in running) + sum(r.generated for r in rep.waiting)
    if rep.tokens_out != rep.output_done + generated:
        raise InvariantError(
            f"tokens do not balance: {rep.tokens_out} emitted, {rep.output_done} completed + {generated} in flight: {where}")


def check_prefix_cache(rep: Replica, running: list[Request]) -> float:
    """The prefix cache agrees with the running requests; returns the KV tokens that sharing saves
    (each request's held segments, less each distinct held segment once)."""
    cache = rep.pcache
    where = state(rep)
    if isinstance(cache, SlotPromptCache):
        slots = [r.slot for r in running if r.slot >= 0]
        if len(set(slots)) != len(slots) or set(slots) & set(cache.free) or len(slots) + len(cache.free) != len(cache.content):
            raise InvariantError(f"llama.cpp slots disagree: running in {sorted(slots)}, free {sorted(cache.free)}: {where}")
        return 0.0
    if not isinstance(cache, BlockPrefixCache):
        if any(r.nsegs for r in running):
            raise InvariantError(f"a request holds prefix segments without a cache: {where}")
        return 0.0
    holders: dict[object, int] = {}
    sizes: dict[object, int] = {}
    each = 0
    for r in running:
        if r.nsegs:
            assert r.content is not None
            for key, tokens in r.content.segs[: r.nsegs]:
                holders[key] = holders.get(key, 0) + 1
                sizes[key] = tokens
                each += tokens
    held = {key: n for key, n in cache.refs.items() if n}
    if held != holders:
        raise InvariantError(f"prefix-cache holds disagree with the running requests: {held} vs {holders}: {where}")
    if any(cache.refs.get(key) != 0 for key in cache.idle) or abs(sum(cache.idle.values()) - cache.idle_tokens) > TOL:
        raise InvariantError(f"idle cached segments disagree with their count: {where}")
    if len(cache.refs) != len(held) + len(cache.idle):
        raise InvariantError(f"a cached segment is neither held nor idle: {where}")
    if rep.kv_used + cache.idle_tokens > rep.capacity * (1 + TOL) + TOL:
        raise InvariantError(f"KV in use + idle cached KV ({cache.idle_tokens}) exceed the capacity: {where}")
    return float(each - sum(sizes.values()))
