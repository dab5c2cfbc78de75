"""A `bench --concurrency` run's frontier: the per-level table and the plot of measured points over the
predicted Pareto curve (`usecases.bench_frontier` computes both). matplotlib loads only for `--plot`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tokometer.domain.runrecord import RunRecord
from tokometer.errors import InputError
from tokometer.report.text import num, table


def check_plot_path(path: str | Path) -> Path:
    """The figure's file, checked before anything is measured: a known format in a folder that exists."""
    from tokometer.report.plots import FORMATS

    target = Path(path)
    if target.suffix.lower() not in FORMATS:
        raise InputError(f"--plot file must end in {', '.join(FORMATS)}, got {target.name!r}")
    if not target.parent.exists():
        raise InputError(f"--plot: folder {str(target.parent)!r} does not exist")
    return target


def render_frontier_levels(run: RunRecord) -> str:
    """One row per concurrency level: the two axes and TTFT, measured and (when known) predicted."""
    shown = [lv for lv in run.levels if lv.frontier is not None]
    if not shown:
        return ""
    block = run.frontier or {}
    guide: Mapping[str, Any] | None = block.get("predicted")
    rows = []
    for lv in shown:
        f = lv.frontier
        assert f is not None
        row = [lv.label, num(f.tok_s_per_gpu), num(f.tok_s_per_user), num(f.ttft_ms)]
        if guide:
            row += [num(f.predicted_tok_s_per_gpu), num(f.predicted_tok_s_per_user), num(f.predicted_ttft_ms)]
        rows.append(row)
    head = ["level", "tok/s/GPU", "tok/s/user", "TTFT ms"]
    if guide:
        head += ["predicted tok/s/GPU", "predicted tok/s/user", "predicted TTFT ms"]
    gpus = block.get("gpus") or shown[0].frontier.gpus  # type: ignore[union-attr]
    lines = [f"frontier: tok/s/GPU = output tok/s over {gpus} GPU{'s' if gpus != 1 else ''} (--gpus, default 1); "
             "tok/s/user = median per-request 1 / TPOT", table(rows, head)]
    if guide:
        assumed = " (assumed: pass --engine)" if guide.get("engine_assumed") else ""
        best = [p for p in guide.get("points") or [] if p.get("on_frontier")]
        curve = ", ".join(f"c={p['concurrency']}: {num(p['tok_s_per_gpu'])}/GPU at {num(p['tok_s_per_user'])}/user"
                          for p in sorted(best, key=lambda p: -p["tok_s_per_user"]))
        lines.append(f"predicted: {guide.get('model')} on {guide.get('hardware')} {guide.get('quant')}, {guide.get('layout')}, "
                     f"{guide.get('engine')}{assumed}, {guide.get('prompt_tokens')}-in/{guide.get('output_tokens')}-out")
        lines.append(f"predicted frontier: {curve}")
    return "\n".join(lines)


def plot_bench_frontier(path: str | Path, run: RunRecord) -> Path:
    """Measured levels (tokens/s per user against tokens/s per GPU, labelled with their concurrency) over the
    predicted points and their Pareto curve."""
    shown = [lv for lv in run.levels if lv.frontier is not None and lv.frontier.tok_s_per_gpu is not None
             and lv.frontier.tok_s_per_user is not None]
    if not shown:
        raise InputError("--plot draws a --concurrency run's frontier: no concurrency level was measured")
    from tokometer.report.plots import _pyplot

    plt, target = _pyplot(check_plot_path(path))
    fig, ax = plt.subplots(figsize=(8, 5))
    guide = (run.frontier or {}).get("predicted")
    if guide:
        pts = guide.get("points") or []
        ax.plot([p["tok_s_per_user"] for p in pts], [p["tok_s_per_gpu"] for p in pts], "o", color="0.7", label="predicted points")
        best = sorted((p for p in pts if p.get("on_frontier")), key=lambda p: p["tok_s_per_user"])
        ax.plot([p["tok_s_per_user"] for p in best], [p["tok_s_per_gpu"] for p in best], "k-", linewidth=2,
                label=f"predicted frontier ({guide.get('layout')}, {guide.get('engine')})")
    xs = [lv.frontier.tok_s_per_user for lv in shown]  # type: ignore[union-attr]
    ys = [lv.frontier.tok_s_per_gpu for lv in shown]  # type: ignore[union-attr]
    ax.plot(xs, ys, "s-", color="tab:red", label="measured")
    for lv, x, y in zip(shown, xs, ys, strict=True):
        ax.annotate(f"c={lv.value}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize="small")
    ax.set_xlabel("output tokens/s per user (median 1 / TPOT)")
    ax.set_ylabel(f"output tokens/s per GPU ({shown[0].frontier.gpus} GPU)")  # type: ignore[union-attr]
    ax.set_title(f"{run.model or 'server'}: measured frontier" + (" vs predicted" if guide else ""))
    ax.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(target)
    plt.close(fig)
    return target


__all__ = ["check_plot_path", "plot_bench_frontier", "render_frontier_levels"]
