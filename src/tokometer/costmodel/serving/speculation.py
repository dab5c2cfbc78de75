"""Speculative decoding inside the serving scheduler: draft k tokens, verify them in one target pass.

Each decode pass of a replica that speculates (vLLM `--speculative-config`, SGLang
`--speculative-algorithm`, TensorRT-LLM `speculative_config`, llama.cpp `--model-draft`):

- every decoding request drafts `k` tokens: `k` sequential forwards of the drafter over the batch's
  `B` sequences (a draft model: its own weights and KV; an MTP head or an EAGLE-3 head: one layer of
  the target's shape plus the LM head; n-gram prompt lookup: a CPU search, charged nothing);
- the target verifies them in ONE forward over `B * (k + 1)` tokens: the weights are read once and
  the KV once, but the GEMMs carry `k + 1` times the tokens, and each verified token attends to its
  depth plus the drafts before it. At small B the pass stays memory-bound and costs about what a plain
  step does; at large B the GEMMs are compute-bound and the pass costs up to `k + 1` plain steps:
  speculation helps at low concurrency and hurts at high;
- each request advances by the expected accepted tokens per pass (Leviathan, Kalman & Matias 2023,
  "Fast Inference from Transformers via Speculative Decoding", eq. 1):

      E(a, k) = 1 + a + a^2 + ... + a^k = (1 - a^(k+1)) / (1 - a)      (k + 1 at a = 1)

  with `a` the chance that each drafted token is accepted (given the ones before it were).

The expectation, not a per-request sample: the replica keeps O(1) running sums over its decoding
requests (it never walks them per step), which needs every decode to advance by the same count in a
pass. So a pass advances all of them by `d` tokens, `d` = floor(carry + E) with the fraction carried
to the next pass (`advance`): over any run of passes the tokens per pass average E exactly, and the
throughput, TPOT and ITL means follow; what is lost is the spread of accepted lengths between
requests (the TPOT tail of an unlucky request). A request with fewer than `d` tokens left emits what
it has left and ends (`decode_growth` counts exactly what the pass adds to the KV cache, so the
invariants' token totals still balance). The engine's decode counter `Replica.k` then counts tokens
per decoding request (it jumps by `d` each pass) rather than passes, so SGLang's new-token ratio, which
decays per decode count (`policies.SglangRetraction`), decays per token under speculation.

ITL under speculation is per token: a pass delivers `d` tokens per stream in one chunk, recorded as
`d` gaps of `pass_time / d` (the mean gap a token waits, as TPOT counts it); the chunk interval is the
pass time. The drafter's KV (a draft model's, or the head's one layer) grows with each token the
target keeps, so it is charged per context token (`kv_capacity_with_draft`); the transient slots of
rejected drafts are not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from tokometer.costmodel.serving.cost import StepCost
from tokometer.costmodel.serving.stats import StreamStat
from tokometer.domain.specs import _Plain
from tokometer.errors import InputError

if TYPE_CHECKING:
    from tokometer.costmodel.layout import Setup


class Replica(Protocol):
    """What speculation reads of, and sets on, a replica (`engine.Replica`)."""

    n_dec: int
    k: int  # tokens each decoding request has advanced since the start (it jumps by `grow` a pass)
    grow: int  # tokens the next pass advances each decode by
    spec_carry: float  # the fraction of E not yet advanced
    spec_tokens: float  # E

    depth_sum: float
    kv_used: float
    tokens_out: int
    pause_s: float

    buckets: dict[int, list[Any]]  # requests by the `k` they end at, each with its `finish_k` (stale ones skipped)

    @property
    def itl(self) -> StreamStat: ...

    def end_decode(self, req: Any, now: float) -> None: ...  # (Any: the replica takes its own request type back)


MAX_DRAFT_TOKENS = 16  # engines take a handful (vLLM docs use 1-5; EAGLE-3's chains reach 7-8)


@dataclass(frozen=True, slots=True)
class SpecMethod(_Plain):
    """A way to draft tokens, with its default acceptance per drafted token and where that comes from."""

    name: str
    drafter: str  # "model" (a second model), "head" (one layer of the target's shape + LM head), "free"
    acceptance: float
    draft_tokens: int
    source: str


METHODS: dict[str, SpecMethod] = {m.name: m for m in (
    SpecMethod(
        "mtp", "head", 0.85, 1,
        "DeepSeek-V3 Technical Report (DeepSeek-AI, arXiv:2412.19437, section 5.4.3): 'the acceptance rate "
        "of the second token prediction ranges between 85% and 90%' with its one MTP module; 0.85, the low "
        "end, per drafted token",
    ),
    SpecMethod(
        "eagle3", "head", 0.65, 3,
        "EAGLE-3 (Li et al., arXiv:2503.01840) public head yuhuili/EAGLE3-LLaMA3.1-Instruct-8B: mean accepted "
        "length 2.77 on MT-bench at temperature 1 with K = 7 (huggingface.co/nebius/EAGLE3-Llama-3.3-70B-Instruct, "
        "comparison table); E(a, 7) = 2.77 gives a = 0.65 per drafted token (chat; code and maths accept more)",
    ),
    SpecMethod(
        "draft", "model", 0.7, 3,
        "Leviathan, Kalman & Matias 2023 (arXiv:2211.17192, table 3): acceptance of about 0.6-0.8 for draft "
        "models 10-100x smaller than the target; 0.7, the middle (a stated default: it depends on the pair)",
    ),
    SpecMethod(
        "ngram", "free", 0.3, 3,
        "stated default, not published: prompt lookup accepts much on tasks that copy the prompt "
        "(summaries, code edits) and little on open chat; give --spec-acceptance for your workload",
    ),
)}

# Methods each engine's server runs (documented flags): vLLM `--speculative-config` method
# draft_model/eagle3/mtp/ngram; SGLang `--speculative-algorithm` STANDALONE/EAGLE3/NEXTN(EAGLE)/NGRAM;
# TensorRT-LLM `speculative_config` decoding_type DraftTarget/Eagle3/MTP/NGram; llama.cpp
# `llama-server --model-draft`. LMDeploy's and static batching's are not known to tokometer.
ENGINE_METHODS: dict[str, tuple[str, ...]] = {
    "vllm": ("draft", "mtp", "eagle3", "ngram"),
    "sglang": ("draft", "mtp", "eagle3", "ngram"),
    "tensorrt-llm": ("draft", "mtp", "eagle3", "ngram"),
    "llama-cpp": ("draft",),
}



@dataclass(frozen=True, slots=True)
class Speculation(_Plain):
    """Speculative decoding as a replica runs it: `draft_tokens` drafted per pass, each accepted with
    `acceptance`; `draft_cost` is one drafter forward (None: n-gram, free)."""

    method: str
    draft_tokens: int
    acceptance: float
    draft_cost: StepCost | None
    draft_model: str | None = None
    source: str = ""

    @property
    def tokens_per_pass(self) -> float:
        """E(a, k) = (1 - a^(k+1)) / (1 - a): expected tokens a request keeps per target pass."""
        return expected_tokens(self.acceptance, self.draft_tokens)

    def summary(self) -> dict[str, object]:
        """What `--json` shows of it (the drafter's coefficients are internal)."""
        return {"method": self.method, "draft_tokens": self.draft_tokens, "acceptance": self.acceptance,
                "tokens_per_pass": self.tokens_per_pass, "draft_model": self.draft_model, "source": self.source}


def expected_tokens(acceptance: float, draft_tokens: int) -> float:
    """1 + a + ... + a^k: the bonus token plus each draft kept while all before it were."""
    a = acceptance
    return float(draft_tokens + 1) if a >= 1.0 else (1.0 - a ** (draft_tokens + 1)) / (1.0 - a)


def check_speculation(engine: str, method: str, draft_tokens: int, acceptance: float, model_id: str | None,
                      draft_model: str | None, *, static: bool = False, scheduler_steps: int = 1, mtp_layers: int = 0) -> None:
    """Refuse a combination no engine runs, or a value out of range, with an `InputError` naming it."""
    if method not in METHODS:
        raise InputError(f"--spec-method must be one of {', '.join(METHODS)}, got {method!r}", field="spec_method")
    supported = () if static else ENGINE_METHODS.get(engine, ())
    if method not in supported:
        runs = f"it runs {', '.join(supported)}" if supported else "it has no speculative decoding that tokometer knows"
        raise InputError(f"--spec-method {method}: the {engine} engine does not serve it ({runs})", field="spec_method")
    if isinstance(draft_tokens, bool) or not isinstance(draft_tokens, int) or not 1 <= draft_tokens <= MAX_DRAFT_TOKENS:
        raise InputError(f"--spec-tokens must be a whole number from 1 to {MAX_DRAFT_TOKENS}, got {draft_tokens!r}",
                         field="spec_tokens")
    if isinstance(acceptance, bool) or not isinstance(acceptance, int | float) or not 0.0 <= acceptance <= 1.0:
        raise InputError(f"--spec-acceptance must be from 0 to 1 (the chance each drafted token is kept), got {acceptance!r}",
                         field="spec_acceptance")
    if method == "draft" and not draft_model:
        raise InputError("--spec-method draft needs --draft-model NAME (a smaller model with the same tokenizer)",
                         field="draft_model")
    if method != "draft" and draft_model:
        raise InputError(f"--draft-model goes with --spec-method draft, not {method}", field="draft_model")
    if method == "mtp" and mtp_layers < 1:
        raise InputError(f"--spec-method mtp needs a model published with MTP layers (its config's num_nextn_predict_layers, "
                         f"mtp_num_hidden_layers or num_mtp_modules), and {model_id or 'this model'} has none", field="spec_method")
    if scheduler_steps > 1:
        raise InputError("speculative decoding does not combine with --scheduler-steps above 1 (vLLM refuses it too)",
                         field="scheduler_steps")


def head_cost(target: StepCost, setup: Setup) -> StepCost:
    """One forward of an MTP or EAGLE-3 head: one layer of the target's shape plus its LM head.

    DeepSeek-V3's MTP module is one transformer block, a projection and the shared output head
    (arXiv:2412.19437, section 2.2); an EAGLE-3 head is one decoder layer fed fused target features and
    its own (smaller-vocabulary) head, taken here as the target's. So every per-layer term of the
    target's step (dense and routed weights, KV, FLOPs, launches, collectives) is divided by the layer
    count, and the LM head is read and multiplied in full.
    """
    model, layers = setup.model, max(1, setup.model.n_layers)
    tp = setup.layout.tp
    head = (setup.weights.embedding if model.tied_embeddings else setup.weights.lm_head) / tp
    head_flops = 2.0 * (model.params.embedding if model.tied_embeddings else model.params.lm_head) / (
        tp * setup.layout.dp * setup.layout.pp)
    head_flops = min(head_flops, target.matmul_flops_per_token)
    return replace(
        target,
        weight_fixed_bytes=head + max(0.0, target.weight_fixed_bytes - head) / layers,
        routed_bytes=target.routed_bytes / layers,
        kv_token_bytes=target.kv_token_bytes / layers,
        matmul_flops_per_token=head_flops + (target.matmul_flops_per_token - head_flops) / layers,
        attention_flops_per_pair=target.attention_flops_per_pair / layers,
        overhead_s=target.overhead_s / layers,
        sequence_overhead_s=0.0,
        comm_fixed_s=target.comm_fixed_s / layers,
        comm_per_token_s=target.comm_per_token_s / layers,
        comm_bulk_fixed_s=target.comm_bulk_fixed_s / layers,
        comm_bulk_per_token_s=target.comm_bulk_per_token_s / layers,
        moe_comm_fixed_s=target.moe_comm_fixed_s / layers,
        moe_comm_per_token_s=target.moe_comm_per_token_s / layers,
        expert_flops_per_token=target.expert_flops_per_token / layers,
    )


def head_weight_bytes(setup: Setup) -> float:
    """Extra weights an MTP/EAGLE-3 head holds on the replica: one layer's share of the body."""
    w = setup.weights
    return (w.dense + w.routed_experts) / max(1, setup.model.n_layers)


def kv_capacity_with_draft(capacity_tokens: float, target_token_bytes: float, draft_token_bytes: float,
                           draft_weight_bytes: float) -> float:
    """Context tokens the cache holds once the drafter takes its weights and its KV per token.

    The free bytes `capacity * target_token_bytes` lose the drafter's weights, and each context token
    then costs the target's and the drafter's KV: `(free - W_draft) / (kv_target + kv_draft)`.
    """
    if target_token_bytes <= 0 or not math.isfinite(capacity_tokens):
        return capacity_tokens
    free = capacity_tokens * target_token_bytes - draft_weight_bytes
    return max(0.0, free / (target_token_bytes + draft_token_bytes))


def draft_time_s(spec: Speculation, decodes: int, depth_tokens: float, prompt_tokens: float,
                 prompt_kv_tokens: float, prompt_pairs: float) -> tuple[float, float]:
    """(memory-bound seconds, seconds) of the drafter's work in one step.

    Decodes: `k` sequential drafter forwards over the `decodes` sequences at their depth. Prompt tokens
    of the step: one drafter forward over them too (a draft model or head keeps its own KV of the prompt).
    """
    cost = spec.draft_cost
    if cost is None:
        return 0.0, 0.0
    memory = total = 0.0
    if decodes:
        m, t = _roof(cost, decodes, depth_tokens, depth_tokens, 0.0)
        memory, total = m * spec.draft_tokens, t * spec.draft_tokens
    if prompt_tokens:
        m, t = _roof(cost, prompt_tokens, prompt_kv_tokens, prompt_pairs, prompt_tokens)
        memory, total = memory + m, total + t
    return memory, total


def _roof(cost: StepCost, tokens: float, kv_read: float, pairs: float, prefill: float) -> tuple[float, float]:
    weights, matmul, kv, attention, fixed = cost.split(tokens, kv_read, pairs, 0.0, prefill)
    memory = (weights if weights >= matmul else 0.0) + (kv if kv >= attention else 0.0)
    return memory, max(weights, matmul) + max(kv, attention) + fixed


def decode_growth(rep: Replica) -> int:
    """KV tokens the decodes add in the next pass: `rep.grow` each, but a request with fewer left
    than that (its `finish_k` within the pass) only what it has left."""
    grow = rep.grow
    total = rep.n_dec * grow
    k = rep.k
    buckets = rep.buckets
    for j in range(1, grow):
        bucket = buckets.get(k + j)
        if bucket:
            for req in bucket:
                if req.finish_k == k + j:
                    total -= grow - j
    return total


def advance(rep: Replica) -> None:
    """After a pass that advanced the decodes by `rep.grow`: carry the fraction, set the next pass's count."""
    carry = rep.spec_carry + rep.spec_tokens - rep.grow
    rep.spec_carry = carry
    rep.grow = int(carry + rep.spec_tokens + 1e-9)


def emit(rep: Replica, need: int, dt_s: float, now: float) -> None:
    """After a verify pass of `dt_s`: every decode advances by `rep.grow` tokens (`need` in all, those near
    their end stopping at their output), tokens reach the client as `grow` gaps of `dt / grow`, and the
    requests whose output ends within the pass finish (`end_decode`)."""
    grow = rep.grow
    start = rep.k
    rep.k = start + grow
    rep.depth_sum += need
    rep.kv_used += need
    rep.tokens_out += need
    rep.itl.add((dt_s + rep.pause_s) / grow, need)
    rep.pause_s = 0.0
    advance(rep)
    buckets = rep.buckets
    for key in range(start + 1, start + grow + 1):
        bucket = buckets.pop(key, None)
        if bucket:
            for req in bucket:
                if req.finish_k == key:
                    rep.end_decode(req, now)
