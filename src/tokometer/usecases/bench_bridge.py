"""The bench bridge: a measured rate or concurrency level graded against the serving simulator.

A `tokometer bench --rate R` level is the simulator's Poisson workload at R requests/s with as
many requests as were sent; a `--concurrency N` level is one round of N requests sent together
(the runner waits for the round to finish before the next), which is the simulator's offline
workload of N requests. Prompt and output lengths are the level's measured means (the server's
own token counts). The deployment is the user's model, --hw, -q, --tp and engine (the one given,
else the one the server named, else vLLM's scheduler, flagged as assumed).

Each figure is compared as `error = predicted / measured - 1`: output tok/s and requests/s over
the level, TTFT and TPOT at p50, p90 and p99 (ms).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokometer.costmodel.serving import ServingResult, Workload, fixed
from tokometer.domain.runrecord import MetricCheck, RunSummary, SimulatedGrade
from tokometer.errors import TokometerError, UnknownEntryError

DEFAULT_ENGINE = "vllm"
LEVEL_KINDS = ("rate", "concurrency")


def level_workload(kind: str, value: float, summary: RunSummary, max_tokens: int, seed: int = 0) -> Workload:
    """The simulator's workload for one measured level (see the module docstring)."""
    prompt = max(1, round(summary.prompt_tokens or 1))
    out_mean = summary.output_tokens.mean if summary.output_tokens.mean is not None else max_tokens
    output = max(1, round(out_mean))
    if kind == "rate":
        n = max(1, summary.requests_total or summary.requests_ok or 1)
        return Workload("poisson", n, fixed(prompt), fixed(output), rate_per_s=float(value))
    return Workload("offline", max(1, int(value)), fixed(prompt), fixed(output))


def compare(summary: RunSummary, result: ServingResult) -> dict[str, MetricCheck]:
    """Measured level vs simulated run, keyed by `runrecord.SIMULATED_METRICS`."""
    through = summary.throughput

    def ms(value: float | None) -> float | None:
        return None if value is None else value * 1e3

    checks = {
        "tput_out_tok_s": MetricCheck(through.output_throughput_tps if through else None, result.tput_out_tok_s),
        "req_per_s": MetricCheck(through.request_throughput_rps if through else None, result.req_per_s),
    }
    for name, measured, simulated in (("ttft", summary.ttft_ms, result.ttft_s), ("tpot", summary.tpot_ms, result.tpot_s)):
        checks[f"{name}_ms_p50"] = MetricCheck(measured.median, ms(simulated.p50))
        checks[f"{name}_ms_p90"] = MetricCheck(measured.p90, ms(simulated.p90))
        checks[f"{name}_ms_p99"] = MetricCheck(measured.p99, ms(simulated.p99))
    return checks


def choose_engine(given: str | None, server_engine: str | None) -> tuple[str, bool]:
    """(serving engine id, assumed?): the user's --engine, else the server's, else vLLM's scheduler."""
    from tokometer.catalog.serving import serving_engine

    for name in (given, server_engine):
        if not name:
            continue
        try:
            return serving_engine("llama-cpp" if name == "ollama" else name).id, False
        except UnknownEntryError:
            if name == given:
                raise
    return DEFAULT_ENGINE, True


def simulate_levels(
    run: dict[str, Any], model: str, options: Mapping[str, Any], notes: list[str]
) -> None:
    """Attach `simulation` to every rate and concurrency level of a run dict; a failure becomes a note."""
    from tokometer.usecases.simulate import deploy
    from tokometer.usecases.simulate import run as simulate_run

    levels = [lv for lv in run.get("levels") or [] if any(k in lv for k in LEVEL_KINDS)]
    if not levels:
        return
    hw = options.get("hw")
    if not hw:
        notes.append("no serving simulation: it needs --hw (a catalog id or `local`), not a bare --bandwidth")
        return
    config = run.get("config") or {}
    seed = int(config.get("seed") or 0)
    max_tokens = int(config.get("max_tokens") or 200)
    try:
        engine, assumed = choose_engine(options.get("engine"), (run.get("server") or {}).get("engine"))
        dep = deploy(
            model, hw, quant=options.get("quant"), engine=engine, tp=int(options.get("tp") or 1),
            pp=int(options.get("pp") or 1), kv_dtype=options.get("kv_dtype"),
        )
    except (TokometerError, OSError, ValueError) as exc:
        notes.append(f"no serving simulation: {exc}")
        return
    for level in levels:
        kind = "rate" if "rate" in level else "concurrency"
        summary = RunSummary.from_dict(level.get("summary") or {})
        try:
            value = float(level[kind])
            if not value > 0 or value == float("inf") or not summary.requests_ok:
                continue
            workload = level_workload(kind, value, summary, max_tokens, seed)
            result = simulate_run(dep, workload, seed=seed)
        except (TokometerError, ValueError, TypeError) as exc:
            notes.append(f"{level.get('label')}: no serving simulation: {exc}")
            continue
        level["simulation"] = SimulatedGrade(
            engine=engine,
            engine_assumed=assumed,
            workload={"arrival": workload.arrival, kind: level[kind], "num_requests": workload.num_requests,
                      "prompt_tokens": round(workload.prompt.a), "output_tokens": round(workload.output.a), "seed": seed},
            metrics=compare(summary, result),
            deployment=dep.label,
        ).to_dict()


__all__ = ["choose_engine", "compare", "level_workload", "simulate_levels"]
