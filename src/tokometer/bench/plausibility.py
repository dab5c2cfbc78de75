"""Is a measured request physically possible? Checks that keep impossible numbers out of the stats.

A server can send well-typed values that still cannot be true. These checks look at one request's
own evidence and name what disagrees; `client.build_record` then fails that request with kind
`implausible`, so its numbers never enter a summary as good ones (they stay stored, with the reason):

- token count vs bytes: each generated token arrives as at least some bytes of text, so a count
  above `TOKENS_PER_CHAR` x (characters received) + `TOKEN_SLACK` is refused (a count of 10^6 over
  20 short events; hidden reasoning tokens look the same and make decode speed meaningless too);
- token count vs `max_tokens`: more than twice the tokens the request allowed, plus slack;
- timings out of order: an event before the request was sent, events out of order, a running
  token count that goes down.

The run-level check against the stated hardware's ceiling is in `grading` (`above-ceiling`);
`MAX_STREAM_TOK_S` catches a speed no hardware reaches when no hardware was stated.
"""

from __future__ import annotations

from collections.abc import Sequence

TOKENS_PER_CHAR = 2.0  # generous: a token is at least half a character of text on average
TOKEN_SLACK = 16  # special tokens with no text (BOS/EOS, template markers)
MAX_STREAM_TOK_S = 50_000.0  # single-stream decode; the fastest public systems are ~100x below


def implausible(
    *,
    t0_s: float,
    t_headers_s: float | None,
    event_times_s: Sequence[float],
    event_tokens: Sequence[int] | None,
    output_tokens: int | None,
    output_tokens_source: str,
    text_chars: int,
    max_tokens: int | None,
) -> str | None:
    """Why this request's numbers cannot be true, or None when nothing disagrees."""
    if t_headers_s is not None and t_headers_s < t0_s:
        return "non-monotonic timings: the response arrived before the request was sent"
    if event_times_s and event_times_s[0] < t0_s:
        return "non-monotonic timings: a token arrived before the request was sent"
    if any(later < earlier for earlier, later in zip(event_times_s, event_times_s[1:], strict=False)):
        return "non-monotonic timings: token events arrived out of order"
    if event_tokens is not None and any(step < 0 for step in event_tokens):
        return "non-monotonic counts: the server's running token count went down"
    if output_tokens is None or output_tokens_source == "events":
        return None
    text_bound = TOKENS_PER_CHAR * text_chars + TOKEN_SLACK
    if output_tokens > max(text_bound, len(event_times_s)):
        return (
            f"the server counted {output_tokens:,} output tokens but only {text_chars:,} characters of text "
            "arrived (a wrong count, or hidden reasoning tokens)"
        )
    if max_tokens is not None and output_tokens > 2 * max_tokens + TOKEN_SLACK:
        return f"the server counted {output_tokens:,} output tokens for a request of max_tokens={max_tokens}"
    return None


def implausible_speed(decode_tok_s: float | None) -> str | None:
    """A single-stream decode speed no hardware reaches, or None."""
    if decode_tok_s is not None and decode_tok_s > MAX_STREAM_TOK_S:
        return f"{decode_tok_s:,.0f} tok/s for one stream is beyond any hardware (over {MAX_STREAM_TOK_S:,.0f})"
    return None
