"""Speed feel: the same answer streamed at several token rates (docs/PHYSICS.md, section 5).

Shared by the web page (`/feel`, through `/api/feel`) and the terminal (`tokometer feel`), both
through `tokometer.feel`: a tiny pseudo-tokenizer, the sample answers (shipped with the web page's
files) and the timing plan. Pure except `sample_text`, which reads a shipped file; the terminal
animation and the text table are presentation (`report/feel.py`).

Token counts are approximate on purpose: a word is one token, a long word one token per six
characters, each punctuation mark one token (about 1.3 tokens per English word, close to BPE).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokometer.errors import InputError
from tokometer.usecases.reading import (
    BROKEN_STREAM_TOK_S,
    READING_SPEED_TOK_S,
    reading_verdict,
    reading_verdict_code,
)

SAMPLES_DIR = Path(__file__).parents[1] / "web" / "static" / "feel"  # the web page streams the same files
LANGUAGES = ("en", "fr")
DEFAULT_RATES_TOK_S = (2.0, 5.0, 10.0, 30.0, 100.0)
MAX_RATES = 8
MAX_TEXT_CHARS = 20_000
MAX_RATE_TOK_S = 10_000.0
# The sample answers stream in at most a few minutes even at the slowest rate; an hour is more than
# any page shows, and a bound keeps seconds x rate a finite token count.
MAX_FEEL_SECONDS = 3600.0
WORD_PIECE_CHARS = 6

_PIECES = re.compile(r"\s*(?:\w+|[^\w\s])|\s+$")


def tokenize(text: str) -> list[str]:
    """Split `text` into token-sized pieces whose concatenation is `text` exactly."""
    tokens: list[str] = []
    for match in _PIECES.finditer(text):
        piece = match.group(0)
        body = piece.lstrip()
        if len(body) <= WORD_PIECE_CHARS or not body.isalnum():
            tokens.append(piece)
            continue
        space = piece[: len(piece) - len(body)]
        n = math.ceil(len(body) / WORD_PIECE_CHARS)
        size = math.ceil(len(body) / n)
        chunks = [body[i : i + size] for i in range(0, len(body), size)]
        tokens.append(space + chunks[0])
        tokens.extend(chunks[1:])
    return tokens


def sample_text(lang: str = "en") -> str:
    """The shipped sample answer in `lang` (en or fr)."""
    if lang not in LANGUAGES:
        raise InputError(f"lang must be one of {', '.join(LANGUAGES)}, got {lang!r}")
    return (SAMPLES_DIR / f"{lang}.txt").read_text(encoding="utf-8").strip()


def parse_rates(text: str | Sequence[float]) -> list[float]:
    """`"5,20,80"` (or numbers) -> [5.0, 20.0, 80.0]; each rate positive, at most MAX_RATES of them."""
    if not isinstance(text, str | list | tuple):
        raise InputError(f"rates must be a list of numbers or a comma-separated string, got {type(text).__name__}", field="rates")
    items: list[Any] = text.split(",") if isinstance(text, str) else list(text)
    if len(items) > 4 * MAX_RATES:
        raise InputError(f"at most {MAX_RATES} rates side by side, got {len(items)}", field="rates")
    rates: list[float] = []
    for item in items:
        if isinstance(item, str) and not item.strip():
            continue
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise InputError(f"rates must be numbers in tokens per second, got a {type(item).__name__}", field="rates")
        try:
            rate = float(item)
        except (TypeError, ValueError, OverflowError):
            raise InputError(f"rates must be numbers in tokens per second, got {str(item)[:40]!r}", field="rates") from None
        if not (0 < rate <= MAX_RATE_TOK_S):
            raise InputError(f"each rate must be above 0 and at most {MAX_RATE_TOK_S:g} tok/s, got {rate:g}", field="rates")
        rates.append(rate)
    if not rates:
        raise InputError("give at least one rate, e.g. 5,20,80")
    if len(rates) > MAX_RATES:
        raise InputError(f"at most {MAX_RATES} rates side by side, got {len(rates)}")
    return rates


@dataclass(frozen=True)
class Lane:
    """One stream: how many of `total_tokens` are visible `t` seconds after the first token."""

    rate_tok_s: float
    total_tokens: int

    @property
    def finish_s(self) -> float:
        return self.total_tokens / self.rate_tok_s

    def shown(self, t_s: float) -> int:
        return min(self.total_tokens, max(0, int(t_s * self.rate_tok_s + 1e-9)))


def feel_plan(
    text: str, rates: Sequence[float], seconds: float, lang: str | None = None, *, with_tokens: bool = False
) -> dict[str, Any]:
    """The timing table: per rate, when the answer is complete and how much shows after `seconds`.

    `with_tokens` adds the token pieces themselves (what the web page streams).
    """
    if not (0 < seconds <= MAX_FEEL_SECONDS):
        raise InputError(f"seconds must be a positive number of at most {MAX_FEEL_SECONDS:g}, got {seconds!r}", field="seconds")
    if len(text) > MAX_TEXT_CHARS:
        raise InputError(f"text is too long: {len(text):,} characters, at most {MAX_TEXT_CHARS:,}")
    tokens = tokenize(text)
    if not tokens:
        raise InputError("the text is empty")
    lanes = []
    for rate in rates:
        lane = Lane(rate, len(tokens))
        shown = lane.shown(seconds)
        lanes.append(
            {
                "rate_tok_s": rate,
                "finish_s": lane.finish_s,
                "tokens_after": shown,
                "words_after": len("".join(tokens[:shown]).split()),
                "verdict": reading_verdict(rate),
                "verdict_code": reading_verdict_code(rate),
            }
        )
    plan = {
        "lang": lang,
        "text_tokens": len(tokens),
        "text_words": len(text.split()),
        "seconds": seconds,
        "reading_speed_tok_s": list(READING_SPEED_TOK_S),
        "broken_stream_tok_s": BROKEN_STREAM_TOK_S,
        "lanes": lanes,
    }
    return {**plan, "tokens": tokens} if with_tokens else plan
