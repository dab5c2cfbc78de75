"""How a decode speed feels to a reader: the one reading verdict (docs/PHYSICS.md, section 5).

People read about 5-10 tokens/s; below about 3 tokens/s a streamed answer feels broken. A stable code
(broken, slow, reading, fast) that pages translate, and its English words.
"""

from __future__ import annotations

from typing import Literal

ReadingCode = Literal["broken", "slow", "reading", "fast"]
READING_SPEED_TOK_S = (5.0, 10.0)
BROKEN_STREAM_TOK_S = 3.0


def reading_verdict_code(tok_s: float) -> ReadingCode:
    """The verdict for a per-stream decode speed; `reading_verdict` words it."""
    if tok_s < BROKEN_STREAM_TOK_S:
        return "broken"
    if tok_s < READING_SPEED_TOK_S[0]:
        return "slow"
    if tok_s < READING_SPEED_TOK_S[1]:
        return "reading"
    return "fast"


READING_VERDICTS: dict[ReadingCode, str] = {
    "broken": "too slow: below about 3 tok/s a streamed answer feels broken",
    "slow": "slower than reading speed (5-10 tok/s): usable, but you will wait",
    "reading": "about reading speed (5-10 tok/s)",
    "fast": "faster than you can read",
}


def reading_verdict(tok_s: float) -> str:
    return READING_VERDICTS[reading_verdict_code(tok_s)]
