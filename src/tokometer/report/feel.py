"""Speed feel in a terminal: the timing table as text and the side-by-side animation (`tokometer feel`).

The plan itself (tokens, lanes, verdicts) is `usecases.feel`; this module only draws it. `animate`
takes its clock, sleep and output stream as parameters, so tests run it without waiting.
"""

from __future__ import annotations

import shutil
import textwrap
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from tokometer.usecases.feel import Lane, tokenize
from tokometer.usecases.reading import (
    BROKEN_STREAM_TOK_S,
    READING_SPEED_TOK_S,
    reading_verdict_code,
)


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
