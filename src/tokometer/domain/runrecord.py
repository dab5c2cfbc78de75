"""A benchmark run as a typed value: what the runner produces, the store keeps and the views read.

It lives at the bottom of the house, next to `specs`, because three layers share it: `bench`
builds it, `store` writes and reads it, `usecases`, `report` and `web` show it; none of them may
import another for it (the store does not import the bench). It is plain data: no I/O, no
formulas. The closed sets (status, mode, phase, failure kind, source) are `Literal` types, so a
misspelt status is a type error rather than a run that no view recognises.

The summary (`RunSummary`, its statistics `Stats`) and the levels (`Level`) are typed too, and so is
a row of `runs list` (`ListedRun`): the store reads these back and hands them to the CLI, the web and
the report. Each type's `to_dict()` writes the JSON object it was read from, key for key and in the
same order (the golden tests compare `bench --json` and `runs show --json` byte for byte); a key this
version does not know (a newer export) is kept in `extra` and written after the known ones.

The request rows stay JSON objects (`RequestRow`): their shape is `bench.client.RequestRecord.to_dict`,
and they are kept verbatim so every metric can be recomputed from the stored timestamps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, cast, get_args

RunStatus = Literal["complete", "interrupted", "deadline", "failed", "incomplete"]
RunMode = Literal["speed", "depth", "concurrency", "rate", "trace"]
Phase = Literal["cold", "decode", "ttft", "depth", "concurrency", "rate", "trace", "combined"]
FailureKind = Literal[
    "connect", "dropped", "empty", "html", "http", "implausible", "imported", "invalid", "line-too-long", "malformed",
    "overrun", "redirect", "server-error", "stall", "timeout", "too-large", "truncated",
]
RunSource = Literal["tokometer", "llama-bench", "vllm-bench", "tokometer-export"]
RequestRow = dict[str, Any]
# where a request's output token count came from: the server's usage, llama.cpp timings, Ollama's
# eval_count, one token per stream event, or an imported llama-bench row
TokenSource = Literal["usage", "timings", "eval_count", "events", "llama-bench"]
LevelKind = Literal["depth", "concurrency", "rate"]

RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
FAILURE_KINDS: tuple[str, ...] = get_args(FailureKind)
TOKEN_SOURCES: tuple[str, ...] = get_args(TokenSource)
LEVEL_KINDS: tuple[str, ...] = get_args(LevelKind)


def _known(data: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in names}


@dataclass(frozen=True)
class Stats:
    """Median first, then mean, sample std, min, max, p90, p99 of one metric over n samples.

    Values keep the type they were computed with (an int median of token counts stays an int).
    """

    n: int = 0
    median: float | None = None
    mean: float | None = None
    std: float | None = None
    min: float | None = None
    max: float | None = None
    p90: float | None = None
    p99: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Stats:
        if not isinstance(data, Mapping):
            return cls()
        names = tuple(f.name for f in fields(cls))
        return cls(**{k: data[k] for k in names if k in data})


_STATS_KEYS = (
    "decode_tps", "ttft_ms", "prefill_tps", "tpot_ms", "itl_ms", "e2el_ms", "output_tps", "output_tokens",
    "server_decode_tps", "server_reported_decode_tps", "server_prefill_ms",
)


@dataclass(frozen=True)
class Throughput:
    """Over the whole measured span: present when at least one request succeeded (or from an import)."""

    duration_s: float | None
    output_throughput_tps: float | None
    request_throughput_rps: float | None


@dataclass(frozen=True)
class Goodput:
    """Requests per second meeting every SLO: present when the run set an SLO."""

    goodput_rps: float | None
    good_requests: int
    slo_ttft_ms: float | None
    slo_tpot_ms: float | None


@dataclass(frozen=True)
class RunSummary:
    """What a run (or one level) measured; `bench.summary.summarize_records` writes its JSON shape."""

    requests_ok: int = 0
    requests_failed: int = 0
    requests_total: int = 0
    cold_requests: int = 0
    decode_tps: Stats = Stats()
    decode_spread_fraction: float | None = None
    ttft_ms: Stats = Stats()
    ttft_prompt_tokens: float | None = None
    prefill_tps: Stats = Stats()
    tpot_ms: Stats = Stats()
    itl_ms: Stats = Stats()
    e2el_ms: Stats = Stats()
    output_tps: Stats = Stats()
    output_tokens: Stats = Stats()
    prompt_tokens: float | None = None
    cached_tokens_max: int = 0
    output_tokens_source: TokenSource | None = None
    server_decode_tps: Stats = Stats()
    server_reported_decode_tps: Stats = Stats()
    server_prefill_ms: Stats = Stats()
    client_server_gap_fraction: float | None = None
    cold_ttft_ms: float | None = None
    ended_early: int = 0
    finish_reasons: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)  # failure kind -> count
    first_error: str | None = None
    throughput: Throughput | None = None
    goodput: Goodput | None = None
    aggregate_tps: Stats | None = None  # concurrency levels and imports: all streams together
    extra: dict[str, Any] = field(default_factory=dict)  # keys this version does not know, kept as read

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("throughput", "goodput", "aggregate_tps", "extra"):
                continue
            data[f.name] = value.to_dict() if isinstance(value, Stats) else value
        if self.throughput is not None:
            data |= {f.name: getattr(self.throughput, f.name) for f in fields(Throughput)}
        if self.goodput is not None:
            data["goodput_rps"] = self.goodput.goodput_rps
            data["good_requests"] = self.goodput.good_requests
            data["slo"] = {"ttft_ms": self.goodput.slo_ttft_ms, "tpot_ms": self.goodput.slo_tpot_ms}
        if self.aggregate_tps is not None:
            data["aggregate_tps"] = self.aggregate_tps.to_dict()
        return data | self.extra

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSummary:
        """From the JSON shape; an unknown token source is an error, unknown keys go to `extra`."""
        source = data.get("output_tokens_source")
        if source is not None and source not in TOKEN_SOURCES:
            raise ValueError(f"unknown output token source {source!r} (known: {', '.join(TOKEN_SOURCES)})")
        plain = tuple(f.name for f in fields(cls) if f.name not in ("throughput", "goodput", "aggregate_tps", "extra"))
        values: dict[str, Any] = {k: data[k] for k in plain if k in data}
        for key in _STATS_KEYS:
            if key in values:
                values[key] = Stats.from_dict(values[key])
        values["finish_reasons"] = dict(data.get("finish_reasons") or {})
        values["errors"] = dict(data.get("errors") or {})
        through = ("duration_s", "output_throughput_tps", "request_throughput_rps")
        if any(k in data for k in through):
            values["throughput"] = Throughput(*(data.get(k) for k in through))
        good = ("goodput_rps", "good_requests", "slo")
        if any(k in data for k in good):
            slo = data.get("slo") or {}
            values["goodput"] = Goodput(data.get("goodput_rps"), int(data.get("good_requests") or 0), slo.get("ttft_ms"), slo.get("tpot_ms"))
        if "aggregate_tps" in data:
            values["aggregate_tps"] = Stats.from_dict(data["aggregate_tps"])
        values["extra"] = _known(data, (*plain, *through, *good, "aggregate_tps"))
        return cls(**values)


def _summary(data: Any) -> RunSummary | None:
    """An empty or missing summary (a run that has not finished) is None; it is written as `{}`."""
    return RunSummary.from_dict(data) if isinstance(data, Mapping) and data else None


SIMULATED_METRICS: tuple[str, ...] = (
    "tput_out_tok_s", "req_per_s", "ttft_ms_p50", "ttft_ms_p90", "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p90", "tpot_ms_p99",
)


@dataclass(frozen=True)
class MetricCheck:
    """One measured figure beside the simulator's: `error_fraction = predicted / measured - 1`."""

    measured: float | None
    predicted: float | None

    @property
    def error_fraction(self) -> float | None:
        if self.measured is None or self.predicted is None or self.measured <= 0:
            return None
        return self.predicted / self.measured - 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"measured": self.measured, "predicted": self.predicted, "error_fraction": self.error_fraction}

    @classmethod
    def from_dict(cls, data: Any) -> MetricCheck:
        data = data if isinstance(data, Mapping) else {}
        return cls(data.get("measured"), data.get("predicted"))


@dataclass(frozen=True)
class SimulatedGrade:
    """A rate or concurrency level against the serving simulator run on the same workload.

    `workload` is what was simulated (arrival, rate or concurrency, requests, prompt and output
    tokens, seed); `engine` the scheduler used (`engine_assumed` when the server did not say and the
    user gave no --engine); `metrics` are keyed by `SIMULATED_METRICS`.
    """

    engine: str
    engine_assumed: bool
    workload: dict[str, Any]
    metrics: dict[str, MetricCheck]
    deployment: str = ""

    @property
    def median_abs_error(self) -> float | None:
        errors = sorted(abs(e) for m in self.metrics.values() if (e := m.error_fraction) is not None)
        if not errors:
            return None
        mid = len(errors) // 2
        return errors[mid] if len(errors) % 2 else (errors[mid - 1] + errors[mid]) / 2.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "engine_assumed": self.engine_assumed,
            "deployment": self.deployment,
            "workload": dict(self.workload),
            "metrics": {k: m.to_dict() for k, m in self.metrics.items()},
            "median_abs_error": self.median_abs_error,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SimulatedGrade:
        metrics = data.get("metrics") or {}
        return cls(
            engine=str(data.get("engine") or ""),
            engine_assumed=bool(data.get("engine_assumed")),
            workload=dict(data.get("workload") or {}),
            metrics={str(k): MetricCheck.from_dict(v) for k, v in metrics.items()},
            deployment=str(data.get("deployment") or ""),
        )


@dataclass(frozen=True)
class LevelFrontier:
    """A concurrency level as a point of the serving frontier (`usecases.bench_frontier`), measured and,
    when the model and hardware are known, predicted by the serving simulator for the same workload.

    `tok_s_per_gpu`: the level's output tokens/s over the server's `gpus`; `tok_s_per_user`: the median
    over its requests of (N - 1) / (tN - t1), i.e. 1 / TPOT; `ttft_ms`: the median TTFT. The
    `predicted_*` figures are the simulator's at the same concurrency (per user: 1 / mean TPOT).
    """

    gpus: int
    output_tok_s: float | None
    tok_s_per_gpu: float | None
    tok_s_per_user: float | None
    ttft_ms: float | None
    total_tok_s_per_gpu: float | None = None  # input and output tokens, as InferenceMAX's tput_per_gpu
    predicted_tok_s_per_gpu: float | None = None
    predicted_tok_s_per_user: float | None = None
    predicted_ttft_ms: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LevelFrontier:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Level:
    """One level of a depth, concurrency or rate run: its summary, and once graded its prediction."""

    label: str  # "concurrency=4", "depth=4096", "rate=2.5"
    kind: LevelKind
    value: int | float | str  # the number after `=` (`rate=inf` keeps the word)
    summary: RunSummary | None
    prediction: dict[str, Any] | None = None  # the prediction's headline (`bench.grading.prediction_headline`)
    grading: dict[str, Any] | None = None
    simulation: SimulatedGrade | None = None  # rate and concurrency levels: the serving simulator's view
    extra: dict[str, Any] = field(default_factory=dict)
    frontier: LevelFrontier | None = None  # concurrency levels: the frontier's two axes, measured (and predicted)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "label": self.label,
            self.kind: self.value,
            "summary": self.summary.to_dict() if self.summary is not None else {},
        }
        if self.prediction is not None:
            data["prediction"] = self.prediction
        if self.grading is not None:
            data["grading"] = self.grading
        if self.simulation is not None:
            data["simulation"] = self.simulation.to_dict()
        if self.frontier is not None:
            data["frontier"] = self.frontier.to_dict()
        return data | self.extra

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Level:
        label = str(data.get("label") or "")
        kind = next((k for k in LEVEL_KINDS if k in data), label.partition("=")[0])
        if kind not in LEVEL_KINDS:
            raise ValueError(f"unknown level {label!r} (known: {', '.join(LEVEL_KINDS)})")
        return cls(
            label=label,
            kind=cast(LevelKind, kind),
            value=data.get(kind, label.partition("=")[2]),
            summary=_summary(data.get("summary")),
            prediction=data.get("prediction"),
            grading=data.get("grading"),
            simulation=SimulatedGrade.from_dict(data["simulation"]) if isinstance(data.get("simulation"), Mapping) else None,
            extra=_known(data, ("label", kind, "summary", "prediction", "grading", "simulation", "frontier")),
            frontier=LevelFrontier.from_dict(data["frontier"]) if isinstance(data.get("frontier"), Mapping) else None,
        )


@dataclass(frozen=True)
class RunRecord:
    """One run: header, configuration, server identity, summary, prediction, grade, requests."""

    started_at: str  # fields in the order of `tokometer bench --json`, which this shape keeps
    finished_at: str | None = None
    status: RunStatus = "complete"
    url: str | None = None
    model: str | None = None
    mode: str = "speed"  # RunMode for tokometer runs; importers keep the tool's own word
    protocol: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    server: dict[str, Any] | None = None
    summary: RunSummary | None = None  # None until the run finishes (written as `{}`)
    levels: tuple[Level, ...] = ()
    notes: tuple[str, ...] = ()
    definitions: dict[str, str] = field(default_factory=dict)  # the metric formulas, for readers of the JSON
    requests: tuple[RequestRow, ...] = ()
    prediction: dict[str, Any] | None = None
    hardware: str | None = None
    grading: dict[str, Any] | None = None
    source: str = "tokometer"
    id: int | None = None
    tokometer_version: str | None = None  # set on stored runs only
    # concurrency runs: the server's GPUs, the axes' definitions and, with a model and --hw, the predicted
    # frontier (`usecases.bench_frontier.attach_frontier`); absent from the JSON when None
    frontier: dict[str, Any] | None = None

    def with_(self, **changes: Any) -> RunRecord:
        return replace(self, **changes)

    @property
    def is_incomplete(self) -> bool:
        return self.status == "incomplete"

    def to_dict(self, *, stored: bool = False, requests: bool = True) -> dict[str, Any]:
        """The one JSON shape of a run: `bench --json` and exports; `stored=True` is `runs show --json`
        and the web's run detail, which lead with the columns `runs list` shows (id first) and carry
        no metric definitions. `requests=False` leaves the request rows out."""
        data: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        data["summary"] = self.summary.to_dict() if self.summary is not None else {}
        data["levels"] = [level.to_dict() for level in self.levels]
        data["notes"] = list(self.notes)
        data["requests"] = list(self.requests)
        if stored:
            data = {k: data[k] for k in _STORED_ORDER} | ({"frontier": self.frontier} if self.frontier is not None else {})
        elif self.tokometer_version is None:
            del data["tokometer_version"]
        if self.frontier is None:
            data.pop("frontier", None)
        if not requests:
            del data["requests"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        """From the JSON shape (unknown keys are ignored; a bad status or level is an error)."""
        status = data.get("status") or "complete"
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r} (known: {', '.join(RUN_STATUSES)})")
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["status"] = status
        values["mode"] = str(data.get("mode") or "speed")
        values["source"] = str(data.get("source") or "tokometer")
        values["notes"] = tuple(str(n) for n in data.get("notes") or ())
        values["requests"] = tuple(dict(r) for r in data.get("requests") or ())
        values["config"] = dict(data.get("config") or {})
        values["summary"] = _summary(data.get("summary"))
        values["levels"] = tuple(Level.from_dict(level) for level in data.get("levels") or ())
        values["definitions"] = dict(data.get("definitions") or {})
        return cls(**values)


_LISTED = ("id", "started_at", "finished_at", "status", "source", "url", "model", "hardware", "mode", "protocol", "summary", "prediction", "grading")
_STORED_ORDER = (*_LISTED, "config", "server", "levels", "notes", "tokometer_version", "requests")


@dataclass(frozen=True)
class ListedRun:
    """One row of `runs list`: the header, summary, prediction headline (no full estimate) and grade."""

    id: int
    started_at: str
    finished_at: str | None
    status: RunStatus
    source: str
    url: str | None
    model: str | None
    hardware: str | None
    mode: str
    protocol: str | None
    summary: RunSummary | None
    prediction: dict[str, Any] | None
    grading: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["summary"] = self.summary.to_dict() if self.summary is not None else {}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ListedRun:
        status = data.get("status") or "complete"
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r} (known: {', '.join(RUN_STATUSES)})")
        values: dict[str, Any] = {k: data.get(k) for k in _LISTED}
        values["status"] = status
        values["summary"] = _summary(data.get("summary"))
        return cls(**values)


__all__ = [
    "FAILURE_KINDS", "LEVEL_KINDS", "RUN_STATUSES", "TOKEN_SOURCES", "FailureKind", "Goodput", "Level", "LevelFrontier", "LevelKind",
    "ListedRun", "MetricCheck", "Phase", "RequestRow", "RunMode", "RunRecord", "RunSource", "RunStatus", "RunSummary",
    "SIMULATED_METRICS", "SimulatedGrade", "Stats", "Throughput", "TokenSource",
]
