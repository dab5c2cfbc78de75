"""A `bench --concurrency` run as points of the serving frontier, measured and predicted.

The field compares serving setups on two axes (SemiAnalysis InferenceMAX, `simulate --frontier`):

- output tokens/s per GPU: the level's output tokens over its span (vLLM `benchmark_serving`'s
  `output_throughput`: all output tokens / (last token - first request sent)) over the server's GPUs,
  `bench --gpus N` (default 1, stated in the output). `total_tok_s_per_gpu` adds the prompt tokens, as
  InferenceMAX's `tput_per_gpu` does (its issue #293 notes the dashboard shows input plus output);
- output tokens/s per user: the median over the level's requests of (N - 1) / (tN - t1), i.e.
  1 / TPOT with vLLM's TPOT = (E2EL - TTFT) / (output tokens - 1); InferenceMAX's `median_intvty`
  is the same 1 / TPOT. It leaves out the wait for the first token, reported beside it (median TTFT).

With a model and `--hw`, the serving simulator (`usecases.frontier`) runs the same workload (the
level's median prompt, its mean output, closed loops of c users) on the server's layout, TP over the
`--gpus`, with the engine given, else the server's, else vLLM's scheduler (flagged as assumed), at
each measured concurrency and at the powers of two from 1 to 1024; the run keeps those points and
their Pareto set, and each level its predicted figures at its own concurrency.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tokometer.domain.runrecord import LevelFrontier
from tokometer.errors import InputError, TokometerError

PER_USER = "median over requests of (N - 1) / (tN - t1) = 1 / TPOT (vLLM benchmark_serving's TPOT; InferenceMAX's median_intvty)"
PER_GPU = "output tokens / (last token - first request sent) / GPUs (vLLM's output_throughput per GPU)"
PREDICTED_PER_USER = "1 / mean TPOT of the simulated closed loop (usecases.frontier)"
PREDICTED_GRID = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _median(stats: Any) -> float | None:
    return stats.get("median") if isinstance(stats, Mapping) else None


def measured(level: Mapping[str, Any], requests: Sequence[Mapping[str, Any]], gpus: int) -> LevelFrontier:
    """One concurrency level's frontier figures from its summary and its request rows."""
    summary = level.get("summary") or {}
    output_tok_s = summary.get("output_throughput_tps")
    duration = summary.get("duration_s")
    mine = [r for r in requests if r.get("label") == level.get("label") and r.get("phase") == "concurrency" and r.get("ok")]
    prompts = [r.get("prompt_tokens") for r in mine]
    total = None
    if output_tok_s is not None and duration and mine and all(isinstance(p, int) for p in prompts):
        total = (output_tok_s * duration + sum(p for p in prompts if isinstance(p, int))) / duration / gpus
    return LevelFrontier(
        gpus=gpus,
        output_tok_s=output_tok_s,
        tok_s_per_gpu=None if output_tok_s is None else output_tok_s / gpus,
        tok_s_per_user=_median(summary.get("decode_tps")),
        ttft_ms=_median(summary.get("ttft_ms")),
        total_tok_s_per_gpu=total,
    )


def _workload(levels: Sequence[Mapping[str, Any]], config: Mapping[str, Any]) -> tuple[int, int]:
    """(prompt, output) tokens for the simulator: the random workload's targets, else the levels' medians and means."""
    random = config.get("random_workload") or {}
    prompts: list[float] = [float(s["prompt_tokens"]) for lv in levels if (s := lv.get("summary") or {}).get("prompt_tokens")]
    outputs: list[float] = [float(s["output_tokens"]["mean"]) for lv in levels
                            if isinstance((s := lv.get("summary") or {}).get("output_tokens"), Mapping) and s["output_tokens"].get("mean")]
    prompt = float(random.get("input_len") or (sorted(prompts)[len(prompts) // 2] if prompts else 512))
    output = float(random.get("output_len") or (sum(outputs) / len(outputs) if outputs else int(config.get("max_tokens") or 200)))
    return max(1, round(prompt)), max(1, round(output))


def predicted(run: Mapping[str, Any], model: Any, options: Mapping[str, Any], gpus: int) -> dict[str, Any]:
    """The simulated frontier of the server's layout for the run's workload (raises TokometerError)."""
    from tokometer.usecases.bench_bridge import choose_engine
    from tokometer.usecases.frontier import frontier

    levels = [lv for lv in run.get("levels") or [] if "concurrency" in lv]
    prompt, output = _workload(levels, run.get("config") or {})
    engine, assumed = choose_engine(options.get("engine"), (run.get("server") or {}).get("engine"))
    measured_c = [int(lv["concurrency"]) for lv in levels]
    grid = sorted(set(PREDICTED_GRID) | set(measured_c))
    front = frontier(model, hardware=[str(options["hw"])], quants=[options.get("quant")], engine=engine, prompt=prompt,
                     output=output, concurrencies=grid, layouts=[(gpus, 1, 1)], seed=int((run.get("config") or {}).get("seed") or 0))
    points = [{"concurrency": p.concurrency, "tok_s_per_gpu": p.tok_s_per_gpu, "tok_s_per_user": p.tok_s_per_user,
               "ttft_ms": (p.result.ttft_s.mean or 0.0) * 1e3, "on_frontier": p.on_frontier} for p in front.points]
    first = front.points[0]
    return {"model": str(model) if model is not None else None, "hardware": first.hardware, "quant": first.quant, "engine": engine,
            "engine_assumed": assumed, "layout": first.layout, "gpus": first.gpus, "prompt_tokens": prompt, "output_tokens": output,
            "tok_s_per_user": PREDICTED_PER_USER, "points": points, "skipped": dict(front.skipped)}


def check_gpus(gpus: object) -> None:
    """`--gpus` is a whole number of GPUs, 1 or more (checked before anything is measured)."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise InputError(f"--gpus must be a whole number of GPUs, 1 or more, got {gpus!r}")


def attach_frontier(run: dict[str, Any], gpus: int, model: Any, options: Mapping[str, Any], notes: list[str]) -> None:
    """Add `frontier` to every concurrency level of a run dict and to the run; with `model` and `options["hw"]`,
    the predicted figures too (a model or layout the simulator refuses becomes a note)."""
    check_gpus(gpus)
    levels = [lv for lv in run.get("levels") or [] if "concurrency" in lv]
    if not levels:
        return
    requests = run.get("requests") or []
    figures = {lv["label"]: measured(lv, requests, gpus) for lv in levels}
    block: dict[str, Any] = {"gpus": gpus, "tok_s_per_gpu": PER_GPU, "tok_s_per_user": PER_USER, "predicted": None}
    if model is not None and options.get("hw"):
        try:
            block["predicted"] = predicted(run, model, options, gpus)
        except (TokometerError, OSError, ValueError) as exc:
            notes.append(f"no predicted frontier: {exc}")
    guide = block["predicted"]
    by_c = {p["concurrency"]: p for p in guide["points"]} if guide else {}
    for lv in levels:
        point = by_c.get(int(lv["concurrency"]))
        figure = figures[lv["label"]]
        if point is not None:
            figure = LevelFrontier(**{**figure.to_dict(), "predicted_tok_s_per_gpu": point["tok_s_per_gpu"],
                                      "predicted_tok_s_per_user": point["tok_s_per_user"], "predicted_ttft_ms": point["ttft_ms"]})
        lv["frontier"] = figure.to_dict()
    run["frontier"] = block


__all__ = ["PER_GPU", "PER_USER", "attach_frontier", "check_gpus", "measured", "predicted"]
