"""Prefix caching decided by content: which prompt tokens an engine finds already in its KV (pure).

A request's prompt is described by `Content.segs`: its leading segments that another request can
share (a system prompt, a conversation's earlier turns), each a `(key, tokens)` pair whose key names
that segment's content *and everything before it* (as vLLM's block hashes chain over the prefix and
a radix-tree path does), so two prompts share KV exactly as far as their keys agree. Tokens past
the segments (a one-off question) are the request's own.

`BlockPrefixCache` (vLLM, SGLang, TensorRT-LLM): a segment computed by an admitted request stays in
the KV pool; running requests that share it hold one copy (`refs`), counted once in the replica's
`kv_used`. When no request holds it, it sits in `idle`, still reusable but free to the scheduler
(vLLM counts cached free blocks as free), and idle segments are evicted least recently released
first, deepest first (vLLM frees a request's blocks tail first), whenever the free KV
(capacity - kv_used) no longer holds them: the hit rate falls under load and with a small cache.
A hit is the longest run of resident leading segments, in whole blocks of the engine's size
(SGLang's radix tree: page 1, every token), at most the prompt less one token (the engine computes
the last token to sample from it); those tokens skip prefill.

`SlotPromptCache` (llama.cpp server): each slot keeps the tokens of the last request it served; a
new request takes the free slot whose content shares the longest prefix with its prompt (when that
share of the prompt passes `--slot-prompt-similarity`), else the least recently used free slot, and
reuses the common prefix. Nothing is shared across slots, so only the same slot reuses.

`FixedShare`: no cache; each prompt skips `prefix_cache_hit_fraction` of its tokens (the simple
`--prefix-cache-hit` override, which wins over the content model when given), or none (an engine
without prefix caching by default: LMDeploy, static batches).

Simplifications: a segment is cached or evicted whole (an engine evicts block by block, so a
partly evicted segment still hits its first blocks here as a miss); a request registers its
segments when admitted (vLLM v1 caches a block's hash when the block is scheduled); a request's
one-off text and the last turn's answer are never cached (nothing can reuse them; in an engine
they are idle blocks evicted before older shared ones, as they are released deepest first).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Protocol

Segment = tuple[Hashable, int]  # (key naming the content up to here, tokens)


class Content:
    """What a request's prompt is made of, as far as a cache can share it; mutable, slots only.

    `segs`: leading shareable segments; `answer`: the key under which its answer is cached when
    it finishes (a conversation that goes on), else None; `conv`: the conversation it belongs to
    (`conversations.Conversation`), for the next turn.
    """

    __slots__ = ("answer", "conv", "segs")

    def __init__(self, segs: tuple[Segment, ...], answer: Hashable | None = None, conv: object = None) -> None:
        self.segs = segs
        self.answer = answer
        self.conv = conv


class Request(Protocol):
    """What a cache reads of and writes on a request (`request.Request`)."""

    prompt: int
    output: int
    then_output: int
    content: Content | None
    hit: int  # prompt tokens the cache serves (set by `lookup`)
    held: int  # prompt tokens other running requests already hold in KV (set by `lookup`)
    nsegs: int  # leading segments this request holds (set by `acquire`)
    slot: int


class BlockPrefixCache:
    """Paged KV with automatic prefix caching: shared segments counted once, idle ones evicted LRU."""

    name = "block prefix cache"

    def __init__(self, block_tokens: int) -> None:
        self.block = max(1, int(block_tokens))
        self.refs: dict[Hashable, int] = {}  # resident segment -> running requests holding it
        self.idle: OrderedDict[Hashable, int] = OrderedDict()  # held by none: tokens, least recent first
        self.idle_tokens = 0
        self.evicted_tokens = 0

    def lookup(self, req: Request) -> None:
        """Set `req.hit` and `req.held` for the cache as it is now (nothing changes)."""
        content = req.content
        assert content is not None
        refs = self.refs
        matched = held = 0
        for key, tokens in content.segs:
            n = refs.get(key)
            if n is None:
                break
            matched += tokens
            if n:
                held += tokens
        hit = matched - matched % self.block
        req.hit = hit if hit < req.prompt else req.prompt - 1
        req.held = held

    def acquire(self, req: Request) -> None:
        """Admit `req`: hold its resident leading segments, register the rest (computed now).

        After the first segment that is not resident, the chain is recomputed: its segments are
        registered; one that is resident there (an orphan whose parent was evicted) and all after
        it stay the request's own (vLLM matches only a contiguous run of blocks from the start).
        """
        content = req.content
        assert content is not None
        refs, idle = self.refs, self.idle
        held = 0
        registering = False
        for key, tokens in content.segs:
            n = refs.get(key)
            if n is None:
                registering = True
                refs[key] = 1
            elif registering:
                break
            else:
                if n == 0:
                    del idle[key]
                    self.idle_tokens -= tokens
                refs[key] = n + 1
            held += 1
        req.nsegs = held

    def release(self, req: Request, *, finished: bool) -> int:
        """`req` leaves (finished, or preempted): drop its holds; return the tokens of its segments
        that other running requests still hold (they stay in `kv_used`). A finished turn of a
        conversation that goes on leaves its answer cached, idle (its tokens leave `kv_used`)."""
        content = req.content
        assert content is not None
        refs, idle = self.refs, self.idle
        segs = content.segs
        n = req.nsegs
        if finished and content.answer is not None and n == len(segs) and not req.then_output \
                and content.answer not in refs:
            refs[content.answer] = 0
            idle[content.answer] = req.output
            self.idle_tokens += req.output
        kept = 0
        for i in range(n - 1, -1, -1):  # deepest first: evicted first
            key, tokens = segs[i]
            left = refs[key] - 1
            refs[key] = left
            if left:
                kept += tokens
            else:
                idle[key] = tokens
                self.idle_tokens += tokens
        req.nsegs = 0
        return kept

    def trim(self, free_tokens: float) -> None:
        """Evict idle segments, least recently released first, until they fit in `free_tokens`."""
        idle, refs = self.idle, self.refs
        while self.idle_tokens > free_tokens and idle:
            key, tokens = idle.popitem(last=False)
            del refs[key]
            self.idle_tokens -= tokens
            self.evicted_tokens += tokens


class SlotPromptCache:
    """llama.cpp server: each slot reuses the common prefix of its last request; no sharing."""

    name = "llama.cpp slot prompt cache"
    idle_tokens = 0
    evicted_tokens = 0

    def __init__(self, slots: int, similarity: float) -> None:
        self.content: list[tuple[Segment, ...]] = [() for _ in range(max(1, slots))]
        self.free: list[int] = list(range(max(1, slots)))  # least recently used first
        self.similarity = similarity

    def _best(self, req: Request) -> tuple[int, int]:
        """(slot, common prefix tokens) for `req`: llama.cpp's `get_available_slot`."""
        content = req.content
        assert content is not None
        best, best_lcp = -1, 0
        for slot in self.free:
            lcp = 0
            for (key, tokens), (held, _) in zip(content.segs, self.content[slot], strict=False):
                if key != held:
                    break
                lcp += tokens
            if lcp > best_lcp:
                best, best_lcp = slot, lcp
        if best >= 0 and best_lcp > self.similarity * req.prompt:
            return best, best_lcp
        return (self.free[0], 0) if self.free else (-1, 0)

    def lookup(self, req: Request) -> None:
        _, lcp = self._best(req)
        req.hit = lcp if lcp < req.prompt else req.prompt - 1
        req.held = 0

    def acquire(self, req: Request) -> None:
        slot, _ = self._best(req)
        if slot >= 0:
            self.free.remove(slot)
            self.content[slot] = ()  # overwritten from the first differing token
        req.slot = slot
        req.nsegs = 0

    def release(self, req: Request, *, finished: bool) -> int:
        slot = req.slot
        if slot >= 0:
            content = req.content
            assert content is not None
            segs = content.segs
            if finished and content.answer is not None:
                segs = (*segs, (content.answer, req.output))
            self.content[slot] = segs
            self.free.append(slot)
            req.slot = -1
        return 0

    def trim(self, free_tokens: float) -> None:
        """Slots keep their content in their own reserved KV: nothing to evict."""


class FixedShare:
    """No cache: each prompt skips a fixed share of its tokens (`--prefix-cache-hit`), or none."""

    name = "fixed share"
    idle_tokens = 0
    evicted_tokens = 0

    def __init__(self, fraction: float) -> None:
        self.fraction = fraction

    def lookup(self, req: Request) -> None:
        req.hit = req.prompt - max(1, int(req.prompt * (1.0 - self.fraction))) if self.fraction else 0
        req.held = 0

    def acquire(self, req: Request) -> None:
        req.nsegs = 0

    def release(self, req: Request, *, finished: bool) -> int:
        return 0

    def trim(self, free_tokens: float) -> None:
        """Nothing is kept."""


PrefixCache = BlockPrefixCache | SlotPromptCache | FixedShare
