"""Speed feel: the same answer streamed at several token rates (docs/PHYSICS.md, section 5).

Shared by the web page (`/feel`, through `/api/feel`) and the terminal (`tokometer feel`): a tiny
pseudo-tokenizer, the sample answers, the timing plan, and a side-by-side terminal animation.
Pure except `animate`, whose clock, sleep and output stream are parameters.

Token counts are approximate on purpose: a word is one token, a long word one token per six
characters, each punctuation mark one token (about 1.3 tokens per English word, close to BPE).
"""

from __future__ import annotations

import math
import re
import shutil
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from tokometer.errors import InputError
from tokometer.usecases.reading import (
    BROKEN_STREAM_TOK_S,
    READING_SPEED_TOK_S,
    reading_verdict,
    reading_verdict_code,
)

SAMPLES_DIR = Path(__file__).parent / "static" / "feel"
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


def render_plan(plan: dict[str, Any]) -> str:
    """The timing table as plain text (what `tokometer feel --no-animate` prints)."""
    from tokometer.report.text import num, table

    seconds = plan["seconds"]
    rows = [
        [
            f"{num(lane['rate_tok_s'])} tok/s",
            f"{lane['finish_s']:,.1f} s",
            f"{lane['tokens_after']:,} tokens / {lane['words_after']:,} words",
            lane["verdict"],
        ]
        for lane in plan["lanes"]
    ]
    head = (
        f"the same answer ({plan['text_tokens']:,} tokens, {plan['text_words']:,} words) at each rate; "
        f"people read about {READING_SPEED_TOK_S[0]:g}-{READING_SPEED_TOK_S[1]:g} tok/s, "
        f"below about {BROKEN_STREAM_TOK_S:g} tok/s streaming feels broken"
    )
    header = ["rate", "whole answer in", f"shown after {seconds:g} s", "feel"]
    return head + "\n\n" + table(rows, header)


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for paragraph in text.split("\n"):
        lines.extend(textwrap.wrap(paragraph, width) or [""])
    return lines


def frame_lines(tokens: Sequence[str], lanes: Sequence[Lane], t_s: float, width: int, height: int) -> list[str]:
    """One frame of the side-by-side columns: a header row, then the last `height` lines of each lane."""
    gap = " | "
    col = max(8, (width - len(gap) * (len(lanes) - 1)) // len(lanes))
    columns = []
    for lane in lanes:
        shown = lane.shown(t_s)
        body = _wrap("".join(tokens[:shown]).strip(), col)
        if shown < lane.total_tokens:
            body[-1] = (body[-1] + "_")[:col]
        columns.append(body[-height:])
    rows = max(len(c) for c in columns)
    header = gap.join(f"{f'{lane.rate_tok_s:g} tok/s ({reading_verdict_code(lane.rate_tok_s)})':<{col}}"[:col] for lane in lanes)
    lines = [header.rstrip(), gap.join("-" * col for _ in lanes)]
    for i in range(rows):
        lines.append(gap.join(f"{(c[i] if i < len(c) else ''):<{col}}" for c in columns).rstrip())
    return lines


def ticker_line(tokens: Sequence[str], lanes: Sequence[Lane], t_s: float, width: int) -> str:
    """One line for a dumb terminal: the tail of each lane, side by side, redrawn with a carriage return."""
    gap = " | "
    col = max(8, (width - 1 - len(gap) * (len(lanes) - 1)) // len(lanes))
    cells = []
    for lane in lanes:
        text = " ".join("".join(tokens[: lane.shown(t_s)]).split())
        label = f"{lane.rate_tok_s:g}/s "
        room = col - len(label)
        cells.append((label + text[-room:] if room > 0 else label)[:col].ljust(col))
    return gap.join(cells)


def animate(
    text: str,
    rates: Sequence[float],
    seconds: float,
    out: TextIO,
    *,
    ansi: bool = True,
    size: tuple[int, int] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    fps: float = 20.0,
) -> float:
    """Stream `text` at every rate side by side for `seconds` (or until every lane is done).

    With `ansi`, columns are redrawn in place (cursor-up and erase-line escapes only); without it
    (a dumb terminal) one ticker line is redrawn with a carriage return. Returns the seconds shown.
    """
    tokens = tokenize(text)
    lanes = [Lane(rate, len(tokens)) for rate in rates]
    columns, lines = size or shutil.get_terminal_size((100, 24))
    width = max(40, min(columns, 200))
    height = max(3, min(lines - 4, 30))
    end_s = min(seconds, max(lane.finish_s for lane in lanes))
    start = clock()
    drawn = 0
    t_s = 0.0
    while True:
        t_s = min(clock() - start, end_s)
        if ansi:
            frame = frame_lines(tokens, lanes, t_s, width, height)
            footer = f"t = {t_s:5.1f} s of {end_s:.1f} s   (Ctrl-C stops)"
            up = f"\x1b[{drawn}A\r" if drawn else ""
            out.write(up + "".join(f"\x1b[2K{line}\n" for line in [*frame, footer]) + "\x1b[J")
            drawn = len(frame) + 1
        else:
            out.write("\r" + ticker_line(tokens, lanes, t_s, width))
        out.flush()
        if t_s >= end_s:
            break
        sleep(1.0 / fps)
    if not ansi:
        out.write("\n")
    return t_s
