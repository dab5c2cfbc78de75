"""Workloads for the serving simulator: request lengths and arrival processes. Pure and seeded.

- Lengths: fixed, uniform (inclusive), normal (rounded, at least 1), lognormal (given its median
  and sigma of log), or an empirical list sampled with replacement.
- Arrivals: offline (everything at t = 0), request rate (Poisson, constant, or gamma with a
  burstiness factor: shape = burstiness, mean gap 1/rate; burstiness 1 is Poisson, below 1 burstier,
  as in vLLM's `benchmark_serving --burstiness`), closed-loop concurrency (N users, each sends its
  next request `think_s` after its previous one finished), and trace replay (given times).
- Shared prefixes, for the prefix cache (`conversations`, `prefix_cache`): a share of requests
  starts with one of N system prompts; conversations of T turns, each turn's prompt the history so
  far plus new user text (`prompt` is then the new text per turn); a trace's prefix and
  conversation ids (`trace_content`).

Requests are produced lazily, so the number simulated does not bound memory.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tokometer.domain.specs import _Plain
from tokometer.errors import InputError

MAX_SHARED = 1_000_000  # bound on system prompt tokens, prompts and turns (a typo, not a workload)
LENGTH_KINDS = ("fixed", "uniform", "normal", "lognormal", "empirical")
ARRIVAL_KINDS = ("offline", "poisson", "constant", "gamma", "closed", "trace")


@dataclass(frozen=True, slots=True)
class LengthDist(_Plain):
    """A token-length distribution; `a`, `b` are (value), (low, high), (mean, sd) or (median, sigma)."""

    kind: str = "fixed"
    a: float = 0.0
    b: float = 0.0
    values: tuple[int, ...] = ()
    max_tokens: int | None = None  # samples are capped here (benchmark scripts filter long ShareGPT turns)

    def __post_init__(self) -> None:
        if self.kind not in LENGTH_KINDS:
            raise InputError(f"unknown length distribution {self.kind!r}: use {', '.join(LENGTH_KINDS)}")
        numbers = (self.a, self.b)
        if any(not math.isfinite(x) for x in numbers):
            raise InputError(f"length distribution {self.kind}: parameters must be finite numbers")
        if self.kind == "fixed" and self.a < 1:
            raise InputError(f"a fixed length must be at least 1 token, got {self.a:g}")
        if self.kind == "uniform" and not (1 <= self.a <= self.b):
            raise InputError(f"uniform lengths need 1 <= low <= high, got {self.a:g}..{self.b:g}")
        if self.kind in ("normal", "lognormal") and (self.a < 1 or self.b < 0):
            raise InputError(f"{self.kind} lengths need a centre >= 1 and a spread >= 0")
        if self.kind == "empirical" and (not self.values or min(self.values) < 1):
            raise InputError("an empirical length list needs at least one length, each >= 1")

    @property
    def mean(self) -> float:
        if self.kind == "fixed":
            return self.a
        if self.kind == "uniform":
            return (self.a + self.b) / 2.0
        if self.kind == "normal":
            return self.a
        if self.kind == "lognormal":
            return self.a * math.exp(self.b * self.b / 2.0)
        return sum(self.values) / len(self.values)

    def sample(self, rng: random.Random) -> int:
        value = self._draw(rng)
        return value if self.max_tokens is None or value <= self.max_tokens else self.max_tokens

    def _draw(self, rng: random.Random) -> int:
        kind = self.kind
        if kind == "fixed":
            return int(self.a)
        if kind == "uniform":
            return rng.randint(int(self.a), int(self.b))
        if kind == "normal":
            return max(1, int(round(rng.gauss(self.a, self.b))))
        if kind == "lognormal":
            return max(1, int(round(self.a * math.exp(rng.gauss(0.0, self.b)))))
        return self.values[rng.randrange(len(self.values))]


def fixed(tokens: int) -> LengthDist:
    return LengthDist("fixed", float(tokens))


@dataclass(frozen=True, slots=True)
class Workload(_Plain):
    """What arrives: `num_requests` requests whose lengths follow `prompt`/`output`, by `arrival`.

    `rate_per_s` for poisson/constant/gamma, `burstiness` for gamma, `concurrency` and `think_s` for
    closed loop, `trace` for replay: (arrival_s, prompt_tokens, output_tokens), times non-decreasing.
    """

    arrival: str = "offline"
    num_requests: int = 1000
    prompt: LengthDist = LengthDist("fixed", 512.0)
    output: LengthDist = LengthDist("fixed", 128.0)
    rate_per_s: float | None = None
    burstiness: float = 1.0
    concurrency: int | None = None
    think_s: float = 0.0
    trace: tuple[tuple[float, int, int], ...] = ()
    system_prompt_tokens: int = 0  # a shared system prompt's length (and a trace prefix's default)
    system_prompt_share: float = 0.0  # share of requests (of conversations) that start with one
    system_prompts: int = 1  # distinct system prompts, each as likely
    turns: int = 1  # requests per conversation; the next turn goes `think_s` after an answer
    trace_content: tuple[tuple[str, int, str], ...] = ()  # per trace row: (prefix id, prefix tokens, conversation id)

    def __post_init__(self) -> None:
        if self.arrival not in ARRIVAL_KINDS:
            raise InputError(f"unknown arrival process {self.arrival!r}: use {', '.join(ARRIVAL_KINDS)}")
        if self.arrival != "trace" and (isinstance(self.num_requests, bool) or self.num_requests < 1):
            raise InputError(f"the number of requests must be at least 1, got {self.num_requests!r}")
        if self.arrival in ("poisson", "constant", "gamma"):
            rate = self.rate_per_s
            if rate is None or not (rate > 0) or not math.isfinite(rate):
                raise InputError(f"--rate must be a positive number of requests per second, got {rate!r}")
        if self.arrival == "gamma" and not (self.burstiness > 0 and math.isfinite(self.burstiness)):
            raise InputError(f"burstiness must be a positive number, got {self.burstiness!r}")
        if self.arrival == "closed" and (self.concurrency is None or self.concurrency < 1):
            raise InputError(f"--concurrency must be a whole number of users, 1 or more, got {self.concurrency!r}")
        if not (self.think_s >= 0 and math.isfinite(self.think_s)):
            raise InputError(f"think time must be zero or more seconds, got {self.think_s!r}")
        if self.arrival == "trace":
            check_trace(self.trace)
        self._check_shared()

    def _check_shared(self) -> None:
        """The shared-prefix fields: whole numbers in range, a share in [0, 1], a trace's ids row by row."""
        for name, low in (("system_prompt_tokens", 0), ("system_prompts", 1), ("turns", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low or value > MAX_SHARED:
                flag = "--" + name.replace("_tokens", "").replace("_", "-")
                raise InputError(f"{flag} must be a whole number from {low} to {MAX_SHARED:,}, got {value!r}")
        share = self.system_prompt_share
        if not (isinstance(share, int | float) and 0.0 <= share <= 1.0):
            raise InputError(f"--system-prompt-share must be from 0 to 1, got {share!r}")
        if share > 0 and self.system_prompt_tokens == 0:
            raise InputError("--system-prompt-share needs --system-prompt TOKENS (the shared prompt's length)")
        if self.turns > 1 and self.arrival == "trace":
            raise InputError("--turns does not apply to a trace: give its rows a conversation_id column")
        if self.trace_content and len(self.trace_content) != len(self.trace):
            raise InputError(f"the trace has {len(self.trace)} rows but {len(self.trace_content)} prefix/conversation ids")

    @property
    def shares_prefixes(self) -> bool:
        """Whether requests share prompt content (a system prompt, conversation history, trace ids)."""
        return (self.system_prompt_share > 0 and self.system_prompt_tokens > 0) or self.turns > 1 or any(
            pid or cid for pid, _, cid in self.trace_content)

    @property
    def total_requests(self) -> int:
        return len(self.trace) if self.arrival == "trace" else self.num_requests


def check_trace(trace: Sequence[tuple[float, int, int]]) -> None:
    """Times finite, >= 0 and non-decreasing; lengths >= 1 prompt token (0 allowed) and >= 1 output."""
    if not trace:
        raise InputError("the trace has no requests")
    last = 0.0
    for i, (t, p, o) in enumerate(trace, start=1):
        if not math.isfinite(t) or t < 0:
            raise InputError(f"trace request {i}: arrival time must be zero or more seconds, got {t!r}")
        if t < last:
            raise InputError(f"trace request {i}: arrival time {t:g} s is before the previous one ({last:g} s)")
        if p < 0 or o < 1:
            raise InputError(f"trace request {i}: needs prompt tokens >= 0 and output tokens >= 1, got {p}, {o}")
        last = t


def open_loop(workload: Workload, rng: random.Random) -> Iterator[tuple[float, int, int]]:
    """(arrival_s, prompt, output) in time order, for every arrival process but closed loop."""
    kind = workload.arrival
    if kind == "trace":
        yield from workload.trace
        return
    prompt, output = workload.prompt, workload.output
    rate = workload.rate_per_s or 0.0
    shape = workload.burstiness
    t = 0.0
    # a fixed length draws nothing from `rng`: sample it once (the simulator's hot loop pulls from here)
    p_fixed = prompt.sample(rng) if prompt.kind == "fixed" else 0
    o_fixed = output.sample(rng) if output.kind == "fixed" else 0
    expovariate = rng.expovariate
    for _ in range(workload.num_requests):
        yield t, p_fixed or prompt.sample(rng), o_fixed or output.sample(rng)
        if kind == "poisson":
            t += expovariate(rate)
        elif kind == "constant":
            t += 1.0 / rate
        elif kind == "gamma":
            t += rng.gammavariate(shape, 1.0 / (rate * shape))
