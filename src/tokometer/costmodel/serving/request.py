"""One request in flight through a replica: what it asked for and where it stands.

`engine.Replica` creates one per request and mutates it step by step (slots only, no properties: the
simulator's inner loop reads these fields millions of times); the KV rules (`policies.py`) and the
prefix cache (`prefix_cache.py`) read it through their own protocols.
"""

from __future__ import annotations

from tokometer.costmodel.serving.prefix_cache import Content


class Request:
    """One request in flight; mutable, slots only (the simulator creates one per request)."""

    __slots__ = (
        "admitted", "arrival", "booked", "cached", "content", "done", "finish_k", "first", "generated", "held", "hit",
        "join_k", "nsegs", "output", "prompt", "ready", "slot", "then_output", "todo",
    )

    def __init__(self, arrival: float, prompt: int, output: int, ready: float | None = None) -> None:
        self.arrival = arrival  # when the client sent it (TTFT and E2E count from here)
        self.ready = arrival if ready is None else ready  # when this replica can have it (queueing counts from here)
        self.cached = 0  # prompt tokens whose K/V arrived with the request (disaggregated decode pool)
        self.then_output = 0  # output the decode pool will generate (disaggregated prefill pool)
        self.prompt = prompt  # tokens to (re)compute before the next token
        self.output = output
        self.todo = prompt  # prompt tokens still to prefill
        self.done = 0  # prompt tokens already prefilled
        self.generated = 0
        self.first = -1.0
        self.admitted = -1.0
        self.join_k = 0
        self.finish_k = -1
        self.booked = 0.0  # tokens the engine's rule reserved for it while it runs
        self.content: Content | None = None  # what its prompt shares with others (prefix caching)
        self.hit = 0  # prompt tokens the prefix cache serves at admission
        self.held = 0  # prompt tokens running requests already hold in KV (counted once)
        self.nsegs = 0  # shared segments it holds in the prefix cache while it runs
        self.slot = -1  # llama.cpp: the slot it runs in
