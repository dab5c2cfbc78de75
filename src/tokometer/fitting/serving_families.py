"""Serving accuracy per family on the compiled 2025-26 serving rows (`calibration_data/serving_published/`).

The published serving sources (InferenceX, GPUStack's performance lab, the SGLang cookbook, vLLM
recipes, LMSYS and vLLM blog posts; `SOURCES_sev.md`) are scored through the simulator with the
shipped serving fit, which is fitted on `calibration_data/serving.csv` alone: none of these sources
is in it, so every row is predicted with its whole publication held out (leave-one-source-out by
construction). Rows are grouped by what decides their physics:

- model: dense or MoE (the catalog architecture the row's checkpoint resolves to);
- weight format: BF16, FP8, FP4 (NVFP4 or MXFP4), INT4;
- device family: Ampere, Hopper, Blackwell (NVIDIA), Instinct (AMD);

and by metric class: throughput (`tput_out`, `tput_total`, `tput_in`, `req_per_s`, whatever their
denominator), TTFT (mean and median), ITL/TPOT (mean and median, and tokens/s per user, 1 / TPOT).
Tails (p90/p99, min/max) and end-to-end latency are left out of the classes: the issue's targets
name throughput, TTFT and ITL/TPOT. Every row not scored keeps its reason (`unscored`).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from tokometer.errors import InputError
from tokometer.fitting.quantity import read_quantity
from tokometer.fitting.serving_runs import RowResult, Run

CLASSES = ("throughput", "ttft", "itl")
CLASS_NAMES = {"throughput": "throughput", "ttft": "TTFT", "itl": "ITL/TPOT"}
TARGETS = {"throughput": 0.15, "ttft": 0.25, "itl": 0.20}  # issue 29: MoE serving, leave-one-source-out medians
_LATENCY = re.compile(r"^(ttft|tpot|itl)(?:_(?:ms|s|ns|us))?(?:_(mean|avg|median|p50))?$")


def published_paths() -> list[Path]:
    """The compiled serving files, in name order."""
    folder = Path(str(resources.files("tokometer") / "calibration_data" / "serving_published"))
    return sorted(folder.glob("*.csv"))


def metric_class(metric: str) -> str | None:
    """`throughput`, `ttft` or `itl` for the metrics the targets name (means and medians), else None."""
    try:  # the throughput grammar `quantity` reads, any replica/GPU/node count of it
        quantity = read_quantity(metric)
    except InputError:
        quantity = None
    if quantity is not None:
        if quantity.per != "user":
            return "throughput"
        return "itl" if quantity.kind == "output_tokens" else None  # one user's output tokens/s: 1 / TPOT
    m = _LATENCY.match(metric)
    if m is None:
        return None
    return "ttft" if m.group(1) == "ttft" else "itl"


@dataclass(frozen=True)
class Family:
    model: str  # dense | MoE
    weights: str  # BF16 | FP8 | FP4 | INT4 | other
    device: str  # Ampere | Hopper | Blackwell | Instinct | other


_FORMATS = {"bf16": "BF16", "fp16": "BF16", "fp8": "FP8", "nvfp4": "FP4", "mxfp4": "FP4", "awq-int4": "INT4", "gptq-int4": "INT4",
            "int4-experts-g32": "INT4"}


def family(run: Run) -> Family | None:
    """The family of a planned run (None when the run was not planned)."""
    kw = run.deploy_kwargs
    if not kw:
        return None
    model, hw = kw["model"], kw["hw"]
    if (hw.vendor or "").lower() == "amd":
        device = "Instinct"
    elif hw.id.startswith(("b200", "b300", "gb200", "gb300")):
        device = "Blackwell"
    elif hw.id.startswith(("h100", "h200", "h20", "h800", "gh200")):
        device = "Hopper"
    elif hw.id.startswith("a100"):
        device = "Ampere"
    else:
        device = "other"
    return Family("MoE" if model.is_moe else "dense", _FORMATS.get(kw["quant"], "other"), device)


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def family_report(results: Sequence[RowResult], runs: Sequence[Run]) -> dict[str, Any]:
    """Median absolute error per (group, metric class): groups `all`, `dense`, `MoE`, and `MoE` (and
    `dense`) by weight format and by device family; plus per source, and the unscored reasons."""
    fam = {r.row_id: family(run) for run in runs for r in run.rows}
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    origin: dict[tuple[str, str], list[str]] = defaultdict(list)  # each group row's publication
    sources: dict[tuple[str, str], list[float]] = defaultdict(list)
    unscored: Counter[str] = Counter()
    scored = 0
    for res in results:
        if res.reason is not None or res.ape is None:
            unscored[res.reason or "no prediction"] += 1
            continue
        scored += 1
        cls = metric_class(res.row.metric)
        f = fam.get(res.row.row_id)
        if cls is None or f is None:
            continue
        for key in ("all", f.model, f"{f.model} {f.weights}", f"{f.model} {f.device}"):
            groups[key, cls].append(res.ape)
            origin[key, cls].append(res.row.source)
        sources[res.row.source, cls].append(res.ape)
    return {
        "rows": len(results),
        "scored": scored,
        "groups": {f"{g}|{c}": {"n": len(v), "median_ape": _median(v), "publications": len(set(origin[g, c])),
                                "median_ape_per_publication": _per_publication_median(v, origin[g, c])}
                   for (g, c), v in sorted(groups.items())},
        "sources": {f"{s}|{c}": {"n": len(v), "median_ape": _median(v)} for (s, c), v in sorted(sources.items())},
        "unscored": dict(unscored.most_common()),
    }


def _per_publication_median(apes: list[float], sources: list[str]) -> float | None:
    """The median with every publication weighing the same (each row 1 / its publication's rows)."""
    from tokometer.fitting.families import publication_weights, weighted_quantile

    return weighted_quantile(apes, publication_weights(sources), 0.5)


def validate_published(paths: Sequence[Path] | None = None, *, time_limit_s: float | None = None) -> dict[str, Any]:
    """Score every compiled serving file with the shipped serving fit (`family_report` of the rows)."""
    from tokometer.catalog.serving import serving_efficiency
    from tokometer.fitting.serving_runs import DEFAULT_TIME_LIMIT_S, group_runs, read_rows
    from tokometer.fitting.serving_validate import predict

    runs: list[Run] = []
    results: list[RowResult] = []
    for path in paths if paths is not None else published_paths():
        rows, bad = read_rows(path)
        file_runs = group_runs(rows)
        runs += file_runs
        results += predict(file_runs, serving_efficiency, naive=False,
                           time_limit_s=DEFAULT_TIME_LIMIT_S if time_limit_s is None else time_limit_s) + bad
    return family_report(results, runs)
