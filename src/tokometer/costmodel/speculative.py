"""Speculative decoding: a small draft proposes k tokens, the target verifies them in one pass.

Expected tokens per target pass `E = (1 - a**(k+1)) / (1 - a)` for acceptance `a` (Leviathan, Kalman
& Matias 2023, "Fast Inference from Transformers via Speculative Decoding", eq. 1); one pass costs
`k * t_draft + t_verify(k + 1)`, so per-stream speed is `E / t_pass` (docs/PHYSICS.md, section 7).
"""

from __future__ import annotations

from dataclasses import dataclass

from tokometer.costmodel.layout import Setup
from tokometer.domain.specs import _Plain
from tokometer.errors import InputError


def tokens_per_pass(acceptance: float, draft_tokens: int) -> float:
    """Expected tokens per target pass: `(1 - a**(k+1)) / (1 - a)` (k+1 when every draft is accepted)."""
    check_speculation(acceptance, draft_tokens)
    a = acceptance
    return (1.0 - a ** (draft_tokens + 1)) / (1.0 - a)


def check_speculation(acceptance: float, draft_tokens: int) -> None:
    if not (0.0 <= acceptance < 1.0):
        raise InputError(f"{{acceptance}} must be in [0, 1), got {acceptance!r}", field="acceptance")
    if not (isinstance(draft_tokens, int) and 1 <= draft_tokens <= 64):
        raise InputError(f"{{draft_tokens}} must be an integer from 1 to 64, got {draft_tokens!r}", field="draft_tokens")


@dataclass(frozen=True, slots=True)
class Speculation(_Plain):
    acceptance: float
    draft_tokens: int
    tokens_per_pass: float
    draft_step_time_s: float
    verify_time_s: float
    pass_time_s: float
    tok_s: float
    ceiling_tok_s: float
    baseline_tok_s: float
    speedup: float
    break_even_acceptance: float | None  # below it, drafting costs more than it saves


def speculate(
    target: Setup,
    draft: Setup,
    *,
    acceptance: float,
    draft_tokens: int,
    batch: int = 1,
    depth_tokens: float = 0.0,
) -> Speculation:
    """Per-stream speed with a draft: E tokens per pass of `k * t_draft + t_verify(k + 1)` seconds.

    Verification is one target step over k+1 tokens per stream: the weights once, the KV cache once.
    """
    expected = tokens_per_pass(acceptance, draft_tokens)
    t_draft = draft.step(batch, depth_tokens).time_s
    t_verify = target.step(batch, depth_tokens, tokens_per_stream=draft_tokens + 1).time_s
    t_pass = draft_tokens * t_draft + t_verify
    baseline = target.step(batch, depth_tokens).time_s
    ideal_t, ideal_d = target.ideal(), draft.ideal()
    ceiling_pass = draft_tokens * ideal_d.step(batch, depth_tokens).time_s + ideal_t.step(
        batch, depth_tokens, tokens_per_stream=draft_tokens + 1
    ).time_s
    return Speculation(
        acceptance=acceptance,
        draft_tokens=draft_tokens,
        tokens_per_pass=expected,
        draft_step_time_s=t_draft,
        verify_time_s=t_verify,
        pass_time_s=t_pass,
        tok_s=expected / t_pass,
        ceiling_tok_s=expected / ceiling_pass,
        baseline_tok_s=1.0 / baseline,
        speedup=expected * baseline / t_pass,
        break_even_acceptance=_break_even(t_pass / baseline, draft_tokens),
    )


def _break_even(cost_ratio: float, draft_tokens: int) -> float | None:
    """Acceptance at which E(a) equals the pass's cost in plain steps (E rises with a)."""
    if cost_ratio <= 1.0:
        return 0.0
    if cost_ratio >= draft_tokens + 1:
        return None
    low, high = 0.0, 1.0 - 1e-12
    for _ in range(60):
        mid = (low + high) / 2
        if (1.0 - mid ** (draft_tokens + 1)) / (1.0 - mid) < cost_ratio:
            low = mid
        else:
            high = mid
    return (low + high) / 2


