"""How each engine keeps its KV cache: what it refuses, whom it admits, whom it evicts (pure).

Every engine runs the same step loop (`engine.Replica`); what differs, and what decides whether a
full cache ends in progress or in a spin, is the memory rule. Each rule below is named after the
engine rule it copies, with the source it copies it from:

- `RecomputePreemption` (vLLM): admit while the prompt fits; when the running decodes need more
  blocks than are free, preempt the newest running request by recompute (free its blocks, queue it
  at the front again with its prompt extended by what it generated).
- `LmdeployEviction` (LMDeploy): the same rule in LMDeploy's scheduler.
- `SglangRetraction` (SGLang): admit against `new_token_ratio` x the running requests' remaining
  output; when decode runs out, retract the requests that decoded least (longest prompt first on
  ties) until 20 tokens per remaining request are free, queue them again and raise the ratio,
  which then decays back step by step.
- `GuaranteedNoEvict` (TensorRT-LLM): admit only when every running request's prompt + maximum
  output is reserved, so decode can never run out and nothing is evicted.
- `StaticBatch`: the whole batch is admitted together, each request's prompt + output reserved,
  and no new batch starts until the last one finishes.
- `LlamaCppSlots` (llama.cpp server): `--parallel` slots, each owning `n_ctx / n_parallel` tokens
  of KV; a prompt that fills its slot is refused, and generation stops when the slot is full.

`prefix_cache` picks each engine's prefix cache (vLLM, SGLang and TensorRT-LLM blocks shared and
evicted LRU, llama.cpp's per-slot prompt, none for LMDeploy and static batches), with its sources.

A request that could never run (prompt + output beyond the whole cache, or its slot) is refused
when it arrives, with its reason (`refusal`), so no rule waits on it forever. Each rule's
`admits` and `refusal` agree: whatever `refusal` lets through is admitted by an empty engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from tokometer.costmodel.serving.prefix_cache import (
    BlockPrefixCache,
    FixedShare,
    PrefixCache,
    SlotPromptCache,
)
from tokometer.domain.serving_specs import SchedulerPolicy


class Request(Protocol):
    """What a rule reads of a request (`request.Request`)."""

    prompt: int  # tokens to (re)compute before its next token
    output: int
    generated: int
    held: int  # prompt tokens running requests already hold in KV (a shared prefix, counted once)


class Replica(Protocol):
    """What a rule reads of, and does to, a replica (`engine.Replica`): its KV accounting in tokens."""

    capacity: float
    watermark: float
    frag: float
    kv_used: float
    growing: int  # KV this step's decodes will take
    reserved: float
    n_dec: int
    k: int

    def remaining_output(self) -> int: ...

    def growth(self) -> int: ...  # KV tokens the decodes add next step (n_dec, more under speculation)

    def decoding(self) -> Sequence[Request]: ...

    # a request the replica handed out (Any: the replica takes its own request type back)
    def generated_of(self, req: Any) -> int: ...

    def newest_decoding(self) -> Request: ...

    def preempt(self, req: Any, *, front: bool = True) -> None: ...

# reasons a request is refused, as the result counts them
TOO_BIG_FOR_CACHE = "prompt + output exceed the whole KV cache"
TOO_LONG_FOR_MODEL = "prompt + output exceed the model's context length"
FILLS_SLOT = "the prompt fills a llama.cpp slot's context (n_ctx / --parallel)"
NO_SLOT = "the KV cache holds no whole llama.cpp slot"
UNSERVABLE = "could not be admitted into an empty engine"

# SGLang's constants (python/sglang/global_config.py and srt/managers/scheduler.py; environment
# SGLANG_INIT_NEW_TOKEN_RATIO, SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR, SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS,
# SGLANG_RETRACT_DECODE_STEPS)
SGLANG_INIT_NEW_TOKEN_RATIO = 0.7
SGLANG_MIN_NEW_TOKEN_RATIO = 0.7 * 0.14
SGLANG_NEW_TOKEN_RATIO_DECAY = (SGLANG_INIT_NEW_TOKEN_RATIO - SGLANG_MIN_NEW_TOKEN_RATIO) / 600
SGLANG_RETRACT_DECODE_STEPS = 20


class KvRule:
    """One engine's memory rule; the base admits while the prompt fits and preempts by recompute.

    `reserves` is True for rules that book tokens at admission (`Replica.reserved`), so the cache
    can never overflow during decode.
    """

    name = "recompute preemption"
    reserves = False
    prompt_only = True  # `admits` is the prompt-fits check below, which the engine inlines
    truncates_at_context = False  # True: a request beyond the context is cut short, not refused

    def refusal(self, rep: Replica, prompt: int, output: int) -> str | None:
        """Why a request of `prompt` + `output` tokens can never run on `rep` (None: it can)."""
        if prompt + output + rep.frag > rep.capacity - rep.watermark:
            return TOO_BIG_FOR_CACHE
        return None

    def always_taken(self, rep: Replica) -> float:
        """A prompt + output up to this is never refused nor cut short (the engine skips `refusal`
        and `output_tokens` below it: they run once per request)."""
        return rep.capacity - rep.watermark - rep.frag

    def output_tokens(self, rep: Replica, prompt: int, output: int) -> int:
        """The output the engine will generate (llama.cpp stops when the slot is full)."""
        return output

    def admits(self, rep: Replica, req: Request) -> bool:
        """Whether the waiting `req` fits now: its whole prompt's blocks, above the watermark, once
        this step's decodes have their next token (`rep.growing`: vLLM allocates slots for the
        running requests before it admits waiting ones)."""
        return rep.kv_used + rep.growing + req.prompt - req.held + rep.frag <= rep.capacity - rep.watermark

    def reservation(self, rep: Replica, req: Request) -> float:
        """Tokens booked for `req` while it runs (reserving rules only)."""
        return 0.0

    def make_room(self, rep: Replica) -> None:
        """Decode needs a token per running decode (more under speculation) and they are not free: evict until they are."""
        while rep.n_dec and rep.kv_used + rep.growth() > rep.capacity:
            rep.preempt(rep.newest_decoding())


class RecomputePreemption(KvRule):
    """vLLM: preempt the newest running request by recompute when decode runs out of blocks.

    vllm/v1/core/sched/scheduler.py, `Scheduler.schedule`: when `allocate_slots` fails for a running
    request, `preempted_req = self.running.pop()` (the lowest priority, the last admitted under
    FCFS), its blocks are freed, `num_computed_tokens = 0`, and it goes back to the front of the
    waiting queue (`self.waiting.prepend_request`). Admission (`allocate_slots` for the prompt) keeps
    the 1 % watermark of vLLM V0's `BlockSpaceManager` (vllm/core/block_manager.py). vLLM refuses a
    request whose prompt + max_tokens exceed max_model_len, which it checks at start-up fits in the
    cache (vllm/v1/core/kv_cache_utils.py `check_enough_kv_cache_memory`).
    """


class LmdeployEviction(RecomputePreemption):
    """LMDeploy: when decoding needs blocks that are not free, evict the newest running sequence.

    lmdeploy/pytorch/paging/scheduler.py, `Scheduler._schedule_decoding`: running sequences are
    taken oldest first; when `block_manager.can_append_slot` fails, the last (newest) running
    sequence is evicted (`__evict_for_seq` -> `_set_message_status(..., WAITING)`, its blocks freed
    and recomputed when it is scheduled again). TurboMind's `SequenceManager` keeps the same order.
    """

    name = "LMDeploy eviction"


class SglangRetraction(KvRule):
    """SGLang: admit against new_token_ratio x remaining output; retract when decode runs out.

    Admission (python/sglang/srt/managers/schedule_policy.py, `PrefillAdder`): the running requests
    book `min(max_new_tokens - len(output_ids), 4096) * new_token_ratio` tokens; a new request is
    added while `extend_input_len + min(max_new_tokens, 4096)` fits in what is free minus that.
    Decode (schedule_batch.py `ScheduleBatch.retract_decode`, called from scheduler.py
    `update_running_batch` when `check_decode_mem` fails): sort by (len(output_ids),
    -len(origin_input_ids)) descending and pop from the end, i.e. retract the request that decoded
    least, the longest prompt first on ties, until `retract_decode_steps` (20) tokens per remaining
    request are free; retracted requests go to the back of the waiting queue
    (`_extend_requests_to_queue`; their prompt and output so far are recomputed) and
    `new_token_ratio` becomes
    `min(1, (sum decoded + 20 * remaining) / sum max_new_tokens)`; every decode step without a
    retraction lowers it by `new_token_ratio_decay` down to `min_new_token_ratio`.

    Simplifications: the 4096-token clip of the booking is not applied (outputs count whole, which
    books more for outputs over 4096); requests admitted in the same round book ratio x output, not
    their whole output. SGLang asserts when one request is left and no token is free; here that
    request is retracted too (it can only happen while a chunked prompt holds the rest).
    SGLang refuses a prompt longer than the pool and clips max_new_tokens to it
    (scheduler.py `handle_generate_request`); here prompt + output beyond the pool is refused.
    """

    name = "SGLang retraction"
    prompt_only = False

    def __init__(self) -> None:
        self.ratio_set = SGLANG_INIT_NEW_TOKEN_RATIO  # the ratio at decode step `set_k`
        self.set_k = 0

    def refusal(self, rep: Replica, prompt: int, output: int) -> str | None:
        return TOO_BIG_FOR_CACHE if prompt + output + rep.frag > rep.capacity else None

    def always_taken(self, rep: Replica) -> float:
        return rep.capacity - rep.frag

    def ratio(self, k: int) -> float:
        """new_token_ratio after `k` decode steps: the last value set, decayed per decode step since."""
        r = self.ratio_set - SGLANG_NEW_TOKEN_RATIO_DECAY * (k - self.set_k)
        return r if r > SGLANG_MIN_NEW_TOKEN_RATIO else SGLANG_MIN_NEW_TOKEN_RATIO

    def admits(self, rep: Replica, req: Request) -> bool:
        booked = self.ratio(rep.k) * rep.remaining_output()
        free = rep.capacity - rep.kv_used - rep.growing - booked
        return req.prompt - req.held + req.output - req.generated + rep.frag <= free

    def make_room(self, rep: Replica) -> None:
        first = True
        while rep.n_dec and (first or rep.capacity - rep.kv_used < SGLANG_RETRACT_DECODE_STEPS * rep.n_dec
                             or rep.kv_used + rep.growth() > rep.capacity):
            if rep.n_dec == 1 and rep.kv_used + rep.growth() <= rep.capacity:
                break
            first = False
            victim = min(rep.decoding(), key=lambda r: (rep.generated_of(r), -r.prompt))
            rep.preempt(victim, front=False)
        decoding = list(rep.decoding())
        if decoding:
            decoded = sum(rep.generated_of(r) for r in decoding)
            most = sum(r.output for r in decoding)
            self.ratio_set = min(1.0, (decoded + SGLANG_RETRACT_DECODE_STEPS * len(decoding)) / most)
            self.set_k = rep.k


class GuaranteedNoEvict(KvRule):
    """TensorRT-LLM: the GUARANTEED_NO_EVICT capacity scheduler, so a running request never pauses.

    tensorrt_llm/batch_manager/capacityScheduler.cpp, `GuaranteedNoEvictScheduler`: a request is
    scheduled only if the blocks every scheduled request still needs to completion
    (`getRemainingBlocksToCompletion`: prompt + max_new_tokens) fit in the free blocks; this is the
    default `CapacitySchedulerPolicy` of the executor API and trtllm-serve, and of `trtllm-bench
    throughput` (`--scheduler_policy`, default guaranteed_no_evict), which made the published
    offline tables. A request whose prompt +
    output exceed max_seq_len (sized to fit the cache) is refused at enqueue.
    """

    name = "TensorRT-LLM guaranteed no evict"
    prompt_only = False
    reserves = True

    def refusal(self, rep: Replica, prompt: int, output: int) -> str | None:
        return TOO_BIG_FOR_CACHE if prompt + output + rep.frag > rep.capacity else None

    def always_taken(self, rep: Replica) -> float:
        return rep.capacity - rep.frag

    def reservation(self, rep: Replica, req: Request) -> float:
        return req.prompt + req.output - req.generated + rep.frag

    def admits(self, rep: Replica, req: Request) -> bool:
        return rep.reserved + self.reservation(rep, req) <= rep.capacity


class StaticBatch(GuaranteedNoEvict):
    """Static batching (HF transformers `generate`, early servers): the whole batch is admitted
    together, each sequence's prompt + output booked (the padded batch is allocated for its full
    length), and no new batch starts until its last sequence has finished (`SchedulerPolicy.static`).
    """

    name = "static batch"


class LlamaCppSlots(KvRule):
    """llama.cpp server: `--parallel` slots, each with `n_ctx / n_parallel` tokens of its own KV.

    tools/server/server-context.cpp: `slot.n_ctx = n_ctx_slot`; a task with
    `n_tokens() >= slot.n_ctx` is refused ("request (%d tokens) exceeds the available context size
    (%d tokens), try increasing it", `ERROR_TYPE_EXCEED_CONTEXT_SIZE`); with context shift off (the
    default, common/common.h `ctx_shift = false`) generation stops when
    `slot.prompt.n_tokens() + 1 >= slot.n_ctx` ("stopped due to running out of context capacity"),
    so a request gets at most `n_ctx_slot - prompt` output tokens. A free slot is all a request needs.
    """

    name = "llama.cpp slots"
    prompt_only = False
    reserves = True
    truncates_at_context = True

    def __init__(self, slot_tokens: int) -> None:
        self.slot = slot_tokens

    def refusal(self, rep: Replica, prompt: int, output: int) -> str | None:
        if self.slot > rep.capacity:
            return NO_SLOT
        return FILLS_SLOT if prompt >= self.slot else None

    def always_taken(self, rep: Replica) -> float:
        return -1.0  # every request: the slot decides

    def output_tokens(self, rep: Replica, prompt: int, output: int) -> int:
        return min(output, self.slot - prompt)

    def reservation(self, rep: Replica, req: Request) -> float:
        return float(self.slot)

    def admits(self, rep: Replica, req: Request) -> bool:
        return rep.reserved + self.slot <= rep.capacity


def kv_rule(policy: SchedulerPolicy) -> KvRule:
    """The memory rule of `policy`'s engine (a fresh one: SGLang's keeps state per replica)."""
    if policy.static:
        return StaticBatch()
    if policy.contiguous_context_tokens is not None:
        return LlamaCppSlots(policy.contiguous_context_tokens)
    engine = policy.engine
    if engine == "sglang":
        return SglangRetraction()
    if engine == "tensorrt-llm":
        return GuaranteedNoEvict()
    if engine == "lmdeploy":
        return LmdeployEviction()
    return RecomputePreemption()


# ---------------------------------------------------------------- prefix caching, per engine

# llama.cpp server `--slot-prompt-similarity` (tools/server/README.md: "how much the prompt of a
# request must match the prompt of a slot in order to use that slot (default: 0.10, 0.0 = disabled)")
LLAMA_CPP_SLOT_PROMPT_SIMILARITY = 0.10


def prefix_cache(policy: SchedulerPolicy, kv_capacity_tokens: float) -> PrefixCache:
    """The prefix cache `policy`'s engine keeps by default, at its own granularity (`prefix_cache`).

    - vLLM: automatic prefix caching, on by default in V1 (docs.vllm.ai, "Automatic Prefix Caching"
      and `--enable-prefix-caching`); whole blocks of `block_size` (16) hashed over the prefix, free
      cached blocks evicted LRU (vllm/v1/core/block_pool.py `FreeKVCacheBlockQueue`).
    - SGLang: RadixAttention, on by default (`--disable-radix-cache` turns it off; docs.sglang.ai
      server arguments); `page_size` 1, so every matched token hits; LRU eviction of unreferenced
      leaves (python/sglang/srt/mem_cache/radix_cache.py `evict`).
    - TensorRT-LLM: KV cache block reuse, `KvCacheConfig.enable_block_reuse` (default True in the
      LLM API; nvidia.github.io/TensorRT-LLM "KV cache reuse"), whole blocks of `tokens_per_block`,
      free reusable blocks evicted LRU.
    - llama.cpp server: `cache_prompt` (default true, tools/server/README.md) reuses the common
      prefix of the slot's previous prompt; slot chosen by `--slot-prompt-similarity`, else LRU.
    - LMDeploy: prefix caching is off unless `--enable-prefix-caching` (lmdeploy docs, "prefix
      caching"); static batches keep nothing.

    A `prefix_cache_hit_fraction` above 0 (`--prefix-cache-hit`) is the fixed-share override: it wins.
    """
    hit = policy.prefix_cache_hit_fraction
    if hit or policy.static or policy.engine == "lmdeploy":
        return FixedShare(hit)
    slot = policy.contiguous_context_tokens
    if slot is not None:
        slots = min(policy.max_num_seqs, int(kv_capacity_tokens // slot)) if slot > 0 else policy.max_num_seqs
        return SlotPromptCache(slots, LLAMA_CPP_SLOT_PROMPT_SIMILARITY)
    return BlockPrefixCache(policy.block_size_tokens)
