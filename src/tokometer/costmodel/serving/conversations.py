"""What each request's prompt shares with others: system prompts, conversation turns, trace ids (pure).

`Book` dresses the requests a workload draws with their `prefix_cache.Content`, and sends a
conversation's next turn when its answer arrives:

- system prompts: a request (a conversation's first turn) starts, with probability
  `system_prompt_share`, with one of `system_prompts` shared prompts of `system_prompt_tokens`,
  chosen uniformly; its prompt is that plus its own text (`Workload.prompt`);
- conversations (`turns` T > 1): turn j's prompt is the history (system prompt, every earlier
  question and answer) plus new user text drawn from `Workload.prompt`; it is sent `think_s` after
  turn j-1's answer (or its refusal: the user asks again). Open-loop arrivals start conversations at
  rate / T, so the offered load stays `rate` requests per second; closed-loop users go on to a new
  conversation after their last turn. The run still has `num_requests` requests in all;
- a trace's `prefix_id` (rows with the same id share their first `prefix_tokens`, or
  `system_prompt_tokens` when that column is absent) and `conversation_id` (a row continues the
  previous row of its conversation when its prompt holds that row's prompt and answer).

Segment keys are tuples naming the content up to their end: ("s", k, tokens) for system prompt k,
("u", conversation, chain, turn) and ("a", conversation, chain, turn) for a question and its answer.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import replace
from typing import Protocol

from tokometer.costmodel.serving.prefix_cache import Content, Segment
from tokometer.costmodel.serving.workload import Workload


class Users(Protocol):
    """Closed-loop users (`simulate._Users`): requests still to send."""

    left: int


class Conversation:
    """One conversation's history so far; mutable, slots only."""

    __slots__ = ("id", "segs", "tokens", "turn")

    def __init__(self, ident: int, segs: list[Segment], tokens: int) -> None:
        self.id = ident
        self.segs = segs  # what the next turn's prompt starts with
        self.tokens = tokens
        self.turn = 1


class Book:
    """Content for every request of `workload`, and the conversations' next turns (`heap`)."""

    def __init__(self, workload: Workload, rng: random.Random) -> None:
        self.workload = workload
        self.rng = random.Random(rng.getrandbits(64))  # its own streams: which requests share, which prompt,
        self.which = random.Random(rng.getrandbits(64))  # so the same requests share whatever the count
        self.ident = 0
        self.order = 0
        self.heap: list[tuple[float, int, int, int, Content]] = []  # (time, order, prompt, output, content)
        w = workload
        self.turns = w.turns
        self.share = w.system_prompt_share if w.system_prompt_tokens else 0.0
        self.left: int | None = None  # next turns still allowed (open loop); closed loop counts users' requests
        self.users: Users | None = None  # closed loop: the users, whose `left` counts requests to send
        self.trace = trace_contents(w) if w.arrival == "trace" else []
        self.row = 0

    def starts(self) -> Workload:
        """The open-loop stream of first turns: ceil(n / T) conversations at rate / T (the rest are next turns)."""
        w = self.workload
        if self.turns == 1 or w.arrival in ("closed", "trace"):
            return w
        starts = math.ceil(w.num_requests / self.turns)
        self.left = w.num_requests - starts
        rate = w.rate_per_s / self.turns if w.rate_per_s else w.rate_per_s
        return replace(w, num_requests=starts, rate_per_s=rate)

    def dress(self, prompt: int) -> tuple[int, Content | None]:
        """A new request (a trace row, or a conversation's first turn) with `prompt` tokens of its own."""
        if self.trace:
            content = self.trace[self.row]
            self.row += 1
            return prompt, content
        segs: list[Segment] = []
        if self.share and (self.share >= 1.0 or self.rng.random() < self.share):
            n = self.workload.system_prompts
            k = self.which.randrange(n) if n > 1 else 0
            tokens = self.workload.system_prompt_tokens
            segs.append((("s", k, tokens), tokens))
        head = sum(t for _, t in segs)
        if self.turns == 1:
            return head + prompt, (Content(tuple(segs)) if segs else None)
        self.ident += 1
        conv = Conversation(self.ident, segs, head)
        return head + prompt, self._turn(conv, prompt)

    def _turn(self, conv: Conversation, user: int) -> Content:
        """The content of `conv`'s current turn, whose new text is `user` tokens."""
        if conv.turn >= self.turns:  # the last turn: nothing reuses its question or answer
            return Content(tuple(conv.segs), None, conv)
        question = (("u", conv.id, 0, conv.turn), user)
        conv.segs.append(question)
        conv.tokens += user
        return Content(tuple(conv.segs), ("a", conv.id, 0, conv.turn), conv)

    def answered(self, content: Content | None, output: int, now: float) -> bool:
        """`content`'s request ended at `now` with `output` tokens (0: refused): queue its
        conversation's next turn, if it has one and the run has requests left. True if queued."""
        if content is None or content.conv is None or not isinstance(content.conv, Conversation):
            return False
        conv = content.conv
        if conv.turn >= self.turns or not self._take():
            return False
        if content.answer is not None and output > 0:
            conv.segs.append((content.answer, output))
            conv.tokens += output
        conv.turn += 1
        w = self.workload
        user, out = w.prompt.sample(self.rng), w.output.sample(self.rng)
        prompt = conv.tokens + user
        self.order += 1
        heapq.heappush(self.heap, (now + w.think_s, self.order, prompt, out, self._turn(conv, user)))
        return True

    def _take(self) -> bool:
        if self.users is not None:  # closed loop: the users' count of requests left
            if self.users.left <= 0:
                return False
            self.users.left -= 1
            return True
        if self.left is None or self.left <= 0:
            return False
        self.left -= 1
        return True


def trace_contents(workload: Workload) -> list[Content | None]:
    """The content of each trace row from its (prefix id, prefix tokens, conversation id)."""
    ids = workload.trace_content
    if not ids:
        return [None] * len(workload.trace)
    out: list[Content | None] = []
    history: dict[str, tuple[list[Segment], int, int]] = {}  # conversation -> (segments, tokens, chain)
    last: dict[str, int] = {}  # conversation -> its latest row
    chains = 0
    for i, ((_, prompt, output), (pid, ptokens, cid)) in enumerate(zip(workload.trace, ids, strict=True)):
        segs: list[Segment] = []
        if pid:
            tokens = min(ptokens or workload.system_prompt_tokens, prompt)
            if tokens > 0:
                segs.append((("p", pid, tokens), tokens))
        if not cid:
            out.append(Content(tuple(segs)) if segs else None)
            continue
        seen = history.get(cid)
        if seen is not None and seen[1] <= prompt:
            segs, held, chain = list(seen[0]), seen[1], seen[2]
        else:  # a new conversation, or a row that does not hold the last one's history: a new chain
            chains += 1
            held, chain = sum(t for _, t in segs), chains
        turn = len(segs)
        if prompt > held:
            segs.append((("u", cid, chain, turn), prompt - held))
        answer = ("a", cid, chain, turn)
        out.append(Content(tuple(segs), answer))
        history[cid] = ([*segs, (answer, output)], prompt + output, chain)
        last[cid] = i
    for i in last.values():  # a conversation's last row: nothing reuses its answer
        content = out[i]
        if content is not None:
            content.answer = None
    return out
