"""The speculative decoding a published serving row ran, read from its launch flags and notes.

Sources print it in their engine's own words; this reads them into the simulator's `spec_method`,
`spec_tokens` and `spec_acceptance` (`usecases.simulate.deploy`):

- vLLM `--speculative-config {"method": "mtp", "num_speculative_tokens": 1}`;
- SGLang `--speculative-algorithm NEXTN|EAGLE|EAGLE3|NGRAM --speculative-num-steps N
  --speculative-eagle-topk 1`: NEXTN and EAGLE on a model with MTP layers are its MTP (SGLang runs
  DeepSeek's NextN head through its EAGLE worker), EAGLE3 an EAGLE-3 head; the chain drafts
  `num-steps` tokens. A tree (`--speculative-eagle-topk` above 1, `num-draft-tokens` verified as a
  tree) is not what the scheduler verifies (one chain of `k`), so such rows keep a reason;
- InferenceX's API field `spec_method=mtp`, or a post's "MTP": the method, the draft count unstated.

The acceptance is the source's when it prints SGLang's mean accept length `L` (accepted tokens per
verify pass, the bonus token included): the per-token `a` with E(a, k) = L (`speculation.expected_tokens`).
Otherwise the method's default in `speculation.METHODS` stands, and so does its draft count when the
source does not state one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tokometer.costmodel.serving.speculation import expected_tokens

_ALGORITHM = re.compile(r"--speculative-algo(?:rithm)?[ =]+([A-Za-z0-9_]+)")
_STEPS = re.compile(r"--speculative-num-steps[ =]+(\d+)")
_TOPK = re.compile(r"--speculative-eagle-topk[ =]+(\d+)")
_VLLM_METHOD = re.compile(r"\"?method\"?\s*:\s*\"?([A-Za-z0-9_]+)")
_VLLM_TOKENS = re.compile(r"\"?num_speculative_tokens\"?\s*:\s*(\d+)")
_API_METHOD = re.compile(r"\bspec_method=([A-Za-z0-9_]+)")
_ACCEPT_LENGTH = re.compile(r"accept length printed:\s*([\d.]+)", re.IGNORECASE)
_MTP_WORD = re.compile(r"\bspeculative:\s*MTP\b", re.IGNORECASE)
SGLANG_ALGORITHMS = {"nextn": "mtp", "eagle": "mtp", "eagle3": "eagle3", "ngram": "ngram", "standalone": "draft"}
VLLM_METHODS = {"mtp": "mtp", "deepseek_mtp": "mtp", "eagle3": "eagle3", "ngram": "ngram", "draft_model": "draft"}


@dataclass(frozen=True, slots=True)
class SpecSetting:
    """What a row states of its speculative decoding: the method, the drafts per pass and the
    acceptance (None: not stated, the method's default applies), or why it cannot be simulated."""

    method: str | None
    draft_tokens: int | None = None
    acceptance: float | None = None
    reason: str | None = None
    launch_printed: bool = False  # the engine's launch flags were read (its defaults then apply)

    @property
    def tokens_per_pass(self) -> float:
        """E(a, k): the tokens a verify pass keeps per request, with the method's defaults where unstated."""
        from tokometer.costmodel.serving.speculation import METHODS

        if self.method is None or self.method not in METHODS:
            return 1.0
        known = METHODS[self.method]
        k = self.draft_tokens if self.draft_tokens is not None else known.draft_tokens
        return expected_tokens(self.acceptance if self.acceptance is not None else known.acceptance, k)

    def deploy_kwargs(self) -> dict[str, object]:
        """The `deploy` keywords it sets (the ones it states)."""
        kw: dict[str, object] = {"spec_method": self.method}
        if self.draft_tokens is not None:
            kw["spec_tokens"] = self.draft_tokens
        if self.acceptance is not None:
            kw["spec_acceptance"] = self.acceptance
        return kw


def acceptance_for_length(accept_length: float, draft_tokens: int) -> float:
    """The per-token acceptance `a` whose E(a, k) = `accept_length` (bisection; E rises with `a`),
    clamped to [0, 1] when the printed length lies outside [1, k + 1]."""
    if accept_length <= 1.0:
        return 0.0
    if accept_length >= draft_tokens + 1:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if expected_tokens(mid, draft_tokens) < accept_length else (lo, mid)
    return (lo + hi) / 2.0


def read_speculation(text: str) -> SpecSetting:
    """The speculative decoding `text` (a row's launch command and notes) states."""
    method: str | None = None
    k: int | None = None
    algo = _ALGORITHM.search(text)
    vllm = _VLLM_TOKENS.search(text)
    if algo is not None:
        word = algo.group(1).lower()
        method = SGLANG_ALGORITHMS.get(word)
        if method is None:
            return SpecSetting(None, reason=f"speculative algorithm {algo.group(1)!r} is not one the scheduler models")
        topk = _TOPK.search(text)
        if topk is not None and int(topk.group(1)) > 1:
            return SpecSetting(method, reason=(
                f"tree speculation (--speculative-eagle-topk {topk.group(1)}: drafts verified as a tree) not modelled; "
                "the scheduler verifies one chain of drafts"))
        steps = _STEPS.search(text)
        k = int(steps.group(1)) if steps is not None else None
    elif vllm is not None:
        m = _VLLM_METHOD.search(text)
        method = VLLM_METHODS.get(m.group(1).lower()) if m is not None else None
        if method is None:
            return SpecSetting(None, reason="speculative method of the --speculative-config not read")
        k = int(vllm.group(1))
    else:
        api = _API_METHOD.search(text)
        if api is not None:
            method = VLLM_METHODS.get(api.group(1).lower())
        elif _MTP_WORD.search(text):
            method = "mtp"
        if method is None:
            return SpecSetting(None, reason="speculative decoding whose method the source does not state")
    accept = _ACCEPT_LENGTH.search(text)
    a = None
    if accept is not None:
        from tokometer.costmodel.serving.speculation import METHODS

        a = acceptance_for_length(float(accept.group(1)), k if k is not None else METHODS[method].draft_tokens)
    return SpecSetting(method, k, a, launch_printed=algo is not None or vllm is not None)
