"""`tokometer.feel`: the same answer streamed at several token rates, as a timing plan (`tokometer feel`,
the web's `/api/feel`). The limits below bound what a caller may ask, the web's checks included."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokometer.api.result import JsonResult
from tokometer.usecases.feel import (
    DEFAULT_RATES_TOK_S,
    LANGUAGES,
    MAX_FEEL_SECONDS,
    MAX_RATE_TOK_S,
    MAX_RATES,
)

__all__ = ["DEFAULT_RATES_TOK_S", "LANGUAGES", "MAX_FEEL_SECONDS", "MAX_RATES", "MAX_RATE_TOK_S", "FeelPlan", "feel"]


@dataclass(frozen=True)
class FeelPlan(JsonResult):
    """Per rate, when the answer is complete and how much of it shows after `seconds` (`plan`), and the
    text's token pieces (`tokens`), which the web page streams."""

    plan: Mapping[str, Any]
    tokens: tuple[str, ...]
    text: str

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer feel --json` shape (without the token pieces)."""
        return dict(self.plan)

    def with_tokens(self) -> dict[str, Any]:
        """`to_dict()` and the token pieces, as `/api/feel` answers."""
        return {**self.plan, "tokens": list(self.tokens)}


def feel(
    rates: str | Sequence[float] = DEFAULT_RATES_TOK_S,
    *,
    text: str | None = None,
    lang: str = "en",
    seconds: float = 10.0,
) -> FeelPlan:
    """The timing table of one answer at each of `rates` (tok/s, "2,5,10" or numbers; at most `MAX_RATES`).

    `text` replaces the shipped sample answer in `lang` (en, fr); `seconds` is how long the stream is
    watched (the "shown after" column). Each lane carries the reading verdict of its rate.
    """
    from tokometer.usecases.feel import feel_plan, parse_rates, sample_text

    body = text if text is not None and text.strip() else sample_text(lang)
    plan = feel_plan(body, parse_rates(rates), seconds, None if text is not None and text.strip() else lang, with_tokens=True)
    tokens = tuple(plan.pop("tokens"))
    return FeelPlan(plan, tokens, body)
