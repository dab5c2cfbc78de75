"""A run's plan, read from its config alone, before any request is sent.

`BenchConfig` is everything that defines a run. What follows from it without a server lives here
too: the mode, the checks on what a user typed, the time bound of one request and of the whole
run, how many requests the progress bar counts to, and the labels of each mode's levels and keys
of its timed rounds. The runner and `bench.distributed` both read those names (the one labels its
requests and notes when each round began, the other splits a plan into workers' shares and joins
their rounds again by key), so each rule is written once, here. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tokometer.bench.lengths import LengthRange, length_range
from tokometer.bench.trace import TraceRequest
from tokometer.domain.runrecord import RunMode
from tokometer.errors import InputError


@dataclass(frozen=True)
class BenchConfig:
    """Everything that defines a run (the API key is used, never stored or printed)."""

    url: str
    model: str | None = None
    protocol: str = "auto"
    runs: int = 3
    warmup: int = 1
    max_tokens: int = 200
    prompt_tokens: int = 1024
    depths: tuple[int, ...] = ()
    concurrency: tuple[int, ...] = ()
    rate_rps: float | None = None
    duration_s: float | None = None
    requests: int | None = None
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    stall_timeout_s: float = 60.0  # a long prompt's wait for its first byte gets prompt / 20 tok/s if longer
    request_timeout_s: float | None = None  # None: derived from the request (`request_bound_s`)
    deadline_s: float | None = None  # None: derived from the plan of the run (`deadline_bound_s`)
    ignore_eos: bool | None = None  # None: send it where the server is known to support it
    seed: int | None = None
    api_key: str | None = field(default=None, repr=False)
    trace: tuple[TraceRequest, ...] = field(default=(), repr=False)
    trace_name: str | None = None
    level_names: tuple[str, ...] = ()  # a worker's labels for its levels: the whole run's, not its share
    input_len: int | None = None  # the random workload (`bench.lengths`): prompt tokens per request, around this
    output_len: int | None = None  # tokens to generate per request, around this (replaces max_tokens)
    range_ratio: float = 0.0  # lengths uniform in [L (1 - R), L (1 + R)], as vLLM's random dataset

    @property
    def random_workload(self) -> bool:
        """Whether the requests of --concurrency and --rate take drawn lengths (`--input-len`, `--output-len`)."""
        return self.input_len is not None or self.output_len is not None

    @property
    def input_range(self) -> LengthRange | None:
        """The prompt lengths drawn, or None: the short fixed prompt."""
        return None if self.input_len is None else length_range(self.input_len, self.range_ratio, at_least=1)

    @property
    def output_range(self) -> LengthRange:
        """The output lengths drawn (`--max-tokens` for every request without --output-len)."""
        if self.output_len is None:
            return LengthRange(self.max_tokens, self.max_tokens)
        return length_range(self.output_len, self.range_ratio, at_least=1)

    @property
    def mode(self) -> RunMode:
        if self.trace:
            return "trace"
        if self.depths:
            return "depth"
        if self.concurrency:
            return "concurrency"
        if self.rate_rps is not None:
            return "rate"
        return "speed"

    def validate(self) -> None:
        chosen = [name for name, on in (("--depth", bool(self.depths)), ("--concurrency", bool(self.concurrency)), ("--rate", self.rate_rps is not None), ("--trace", bool(self.trace))) if on]
        if len(chosen) > 1:
            raise InputError(f"choose one of {', '.join(chosen)}, not several")
        for name, value in (("--runs", self.runs), ("--max-tokens", self.max_tokens)):
            if value < 1:
                raise InputError(f"{name} must be at least 1, got {value}")
        for name, value in (("--warmup", self.warmup), ("--prompt-tokens", self.prompt_tokens)):
            if value < 0:
                raise InputError(f"{name} must be zero or more, got {value}")
        if any(d < 0 for d in self.depths):
            raise InputError("--depth values must be zero or more")
        if any(c < 1 for c in self.concurrency):
            raise InputError("--concurrency values must be at least 1")
        if max(self.concurrency, default=1) > 4096:
            raise InputError("--concurrency above 4096 is not supported")
        for name, number in (
            ("--rate", self.rate_rps),
            ("--duration", self.duration_s),
            ("--slo-ttft", self.slo_ttft_ms),
            ("--slo-tpot", self.slo_tpot_ms),
            ("--timeout", self.stall_timeout_s),
            ("--request-timeout", self.request_timeout_s),
        ):
            if number is not None and not number > 0:
                raise InputError(f"{name} must be a positive number, got {number!r}")
        if self.requests is not None and self.requests < 1:
            raise InputError(f"--requests must be at least 1, got {self.requests}")
        if self.duration_s is not None and self.rate_rps is None:
            raise InputError("--duration needs --rate")
        if self.deadline_s is not None and not self.deadline_s > 0:
            raise InputError(f"--deadline must be a positive number, got {self.deadline_s!r}")
        self._validate_lengths()

    def _validate_lengths(self) -> None:
        for name, length in (("--input-len", self.input_len), ("--output-len", self.output_len)):
            if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 1):
                raise InputError(f"{name} must be a whole number of tokens, 1 or more, got {length!r}")
        ratio = self.range_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0.0 <= ratio < 1.0:
            raise InputError(f"--range-ratio must be at least 0 and below 1 (as vLLM's --random-range-ratio), got {ratio!r}")
        if ratio and not self.random_workload:
            raise InputError("--range-ratio spreads --input-len and --output-len: give one of them")
        if self.random_workload and self.mode not in ("concurrency", "rate"):
            raise InputError("--input-len and --output-len shape the requests of --concurrency and --rate; "
                             "use --prompt-tokens and --max-tokens otherwise")

    def request_bound_s(self, prompt_tokens: int = 0, max_tokens: int | None = None) -> float:
        """Seconds one request may take: `--request-timeout`, else a floor on the server's speed.

        Default: 60 s + prompt / 20 tok/s + output / 2 tok/s, so only a server slower than a
        20 tok/s prefill and a 2 tok/s decode (or one that stalls) is cut off.
        """
        if self.request_timeout_s is not None:
            return self.request_timeout_s
        out = self.output_range.high if max_tokens is None else max_tokens
        return 60.0 + prompt_tokens / 20.0 + out / 2.0

    def deadline_bound_s(self) -> float:
        """Seconds the whole run may take: `--deadline`, else the plan's requests at their bound.

        Requests sent one after another each get `request_bound_s`; a concurrency round is one
        slot; open-loop arrivals get their duration plus one request's bound.
        """
        if self.deadline_s is not None:
            return self.deadline_s
        warm = self.warmup * self.request_bound_s(0, min(self.max_tokens, 32))
        if self.mode == "speed":
            slots = self.runs * self.request_bound_s()
            if self.prompt_tokens > 0:
                slots += self.runs * self.request_bound_s(self.prompt_tokens, 4)
        elif self.mode == "depth":
            slots = sum(self.runs * self.request_bound_s(d) for d in self.depths)
        elif self.mode == "concurrency":
            longest = self.request_bound_s(self.input_range.high if self.input_range else 0)
            slots = sum(len(level_rounds(self, i)) for i in range(len(self.concurrency))) * longest
        elif self.mode == "trace":
            longest = max(self.request_bound_s(r.prompt_tokens, r.output_tokens) for r in self.trace)
            slots = self.trace[-1].arrival_s + longest
        else:
            duration = self.duration_s or (60.0 if self.requests is None else self.requests / (self.rate_rps or 1.0))
            slots = duration + self.request_bound_s(self.input_range.high if self.input_range else 0)
        if self.requests is not None and self.mode not in ("rate", "concurrency"):
            slots = min(slots, (self.requests + 1) * self.request_bound_s(max(self.depths, default=self.prompt_tokens)))
        return warm + slots + 30.0  # + detection and the prompt-count pass

    def to_dict(self) -> dict[str, Any]:
        data = self._to_dict()
        if self.random_workload:  # only then, so runs without it keep their shape
            data["random_workload"] = {"input_len": self.input_len, "output_len": self.output_len, "range_ratio": self.range_ratio}
        return data

    def _to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "model": self.model,
            "protocol": self.protocol,
            "mode": self.mode,
            "runs": self.runs,
            "warmup": self.warmup,
            "max_tokens": self.max_tokens,
            "prompt_tokens": self.prompt_tokens,
            "depths": list(self.depths),
            "concurrency": list(self.concurrency),
            "rate_rps": self.rate_rps,
            "duration_s": self.duration_s,
            "requests": self.requests,
            "slo_ttft_ms": self.slo_ttft_ms,
            "slo_tpot_ms": self.slo_tpot_ms,
            "stall_timeout_s": self.stall_timeout_s,
            "request_timeout_s": self.request_timeout_s,
            "deadline_s": self.deadline_bound_s(),
            "ignore_eos": self.ignore_eos,
            "seed": self.seed,
            "trace": {"file": self.trace_name, "requests": len(self.trace), "span_s": self.trace[-1].arrival_s} if self.trace else None,
            "temperature": 0.0,
            "authenticated": self.api_key is not None,
        }


def planned_requests(config: BenchConfig) -> int | None:
    """Requests the run will send, cold ones included (None: an open-ended rate run)."""
    mode = config.mode
    if mode == "speed":
        total = config.runs * (2 if config.prompt_tokens > 0 else 1)
    elif mode == "depth":
        total = config.runs * len(config.depths)
    elif mode == "concurrency":
        total = sum(sum(level_rounds(config, i)) for i in range(len(config.concurrency)))
    elif mode == "trace":
        total = len(config.trace)
    else:
        total = config.requests or 0
        if not total:
            return None
    if config.requests is not None and mode != "concurrency":  # concurrency: N at every level
        total = min(total, config.requests)
    return total + config.warmup


def level_rounds(config: BenchConfig, index: int) -> list[int]:
    """The streams this runner sends in each timed round of concurrency level `index`.

    Without `--requests`: `runs` rounds of the level's c streams. With `--requests N`: N requests at
    every level, as `vllm bench serve --num-prompts` and guidellm count them: N // c full rounds and
    a last round of the remaining N % c streams (left out of the level's aggregate, since fewer
    streams decode together). A worker of a split run (`level_names` give the whole run's level)
    sends its share of whole rounds only: ceil(N / c) rounds, so every worker meets every barrier.
    """
    local = config.concurrency[index]
    if config.requests is None:
        return [local] * config.runs
    name = level_label(config, index)
    whole = int(name.partition("=")[2]) if name.startswith("concurrency=") else local
    full, rest = divmod(config.requests, whole)
    rounds = [local] * full
    if rest:
        rounds.append(rest if whole == local else local)
    return rounds


def concurrency_label(streams: int) -> str:
    """A concurrency level's label: its streams in the whole run (a worker runs a share of them)."""
    return f"concurrency={streams}"


def rate_label(rate_rps: float) -> str:
    """A rate run's label: the whole run's arrivals per second (a worker runs a share of them)."""
    return f"rate={float(rate_rps)}"


def level_label(config: BenchConfig, index: int) -> str:
    """The label of level `index` of a concurrency or rate run: the name a worker was given for
    it (`level_names`), else the label of its own level."""
    if index < len(config.level_names):
        return config.level_names[index]
    if config.mode == "rate":
        assert config.rate_rps is not None
        return rate_label(config.rate_rps)
    return concurrency_label(config.concurrency[index])


def round_key(level_index: int, round_index: int) -> str:
    """The key of one timed concurrency round, where every worker waits and notes its start."""
    return f"level{level_index}/round{round_index}"


__all__ = ["BenchConfig", "concurrency_label", "level_label", "level_rounds", "planned_requests", "rate_label", "round_key"]
