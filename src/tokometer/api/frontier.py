"""`tokometer.frontier`: the predicted serving frontier, tokens/s per GPU against tokens/s per user
(`tokometer simulate --frontier`, `plan --frontier`, the web serving page's frontier chart)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokometer.api.result import JsonResult
from tokometer.errors import InputError

if TYPE_CHECKING:
    from tokometer.usecases.frontier import Frontier


@dataclass(frozen=True)
class FrontierResult(JsonResult):
    """Every simulated (hardware, format, layout, concurrency) point (`frontier.points`) and the Pareto
    set among them (`frontier.pareto`), with the workload they were simulated on."""

    frontier: Frontier
    prompt: int
    output: int

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer simulate --frontier --json` (and `plan --frontier --json`) shape."""
        return self.frontier.to_dict()


def _tokens(name: str, value: int | str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InputError(f"--frontier takes a fixed {name} length in tokens, got {value!r}", field=name.lstrip("-")) from None


def frontier(
    model: str,
    hw: str | Sequence[str],
    *,
    quant: str | Sequence[str] | None = None,
    engine: str = "vllm",
    tp: int = 1,
    dp: int = 1,
    ep: int = 1,
    overlap: bool = False,
    prompt: int | str = 1024,
    output: int | str = 1024,
    concurrencies: str | Sequence[int] | None = None,
    seed: int = 0,
    spec_method: str | None = None,
    spec_tokens: int | None = None,
    spec_acceptance: float | None = None,
    draft_model: str | None = None,
) -> FrontierResult:
    """Simulate closed loops of users at each concurrency on every layout that fits, and mark the Pareto
    set of (tokens/s per GPU, tokens/s per user = 1 / mean TPOT), each point with its TTFT.

    `hw`/`quant`: one name, a comma-separated string or a list (`quant=None`: the model's own format);
    `tp`/`dp`/`ep` other than 1 fix one layout, else TP 1-8 and, for a MoE model, DP x EP are tried;
    `concurrencies` "1,8,64" or a list (default 1, 2, 4 ... 1024); `prompt`/`output` fixed token counts.
    `spec_method` (draft, mtp, eagle3, ngram; with `spec_tokens`, `spec_acceptance`, `draft_model`):
    every layout is also simulated with speculative decoding, its points labelled with the method.
    """
    from tokometer.api.serving import names
    from tokometer.usecases.frontier import frontier as run_frontier
    from tokometer.usecases.frontier import parse_concurrencies

    hardware = names(hw)
    if not hardware:
        raise InputError("name the hardware (hw) to draw a frontier on", field="hw")
    users = concurrencies if concurrencies is None or isinstance(concurrencies, str) else ",".join(str(c) for c in concurrencies)
    lengths = _tokens("--prompt", prompt), _tokens("--output", output)
    layouts = None if (tp, dp, ep) == (1, 1, 1) else [(tp, dp, ep)]
    given = {"spec_tokens": spec_tokens, "spec_acceptance": spec_acceptance, "draft_model": draft_model}
    if spec_method is None and any(v is not None for v in given.values()):
        raise InputError("--spec-tokens, --spec-acceptance and --draft-model go with --spec-method", field="spec_method")
    spec = {"spec_method": spec_method, **given} if spec_method is not None else None
    front = run_frontier(model, hardware=hardware, quants=names(quant) or (None,), engine=engine, prompt=lengths[0],
                         output=lengths[1], concurrencies=parse_concurrencies(users), layouts=layouts, overlap=overlap, seed=seed,
                         spec=spec)
    return FrontierResult(front, lengths[0], lengths[1])
