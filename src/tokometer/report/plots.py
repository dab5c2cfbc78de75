"""Figures of the levers: decode vs context, vs batch, a roofline with the operating points, and the
offload curve (`estimate --plot`); tok/s across a sweep (`sweep --plot`).

matplotlib is a dependency of the package, so `pip install tokometer` plots; it is imported inside
the functions, with the non-interactive Agg backend, so the quick CLI path never pays its ~0.3 s
import. An install without it (`--no-deps`, a distro package) gets one line naming the fix.
The file format follows the suffix: .png, .svg or .pdf.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokometer.domain.units import GB, TFLOP
from tokometer.errors import InputError
from tokometer.usecases.curves import batch_points, context_points, offload_points

if TYPE_CHECKING:
    from tokometer.usecases.estimate import Estimate
    from tokometer.usecases.sweep import SweepResult

FORMATS = (".png", ".svg", ".pdf")


def _pyplot(path: str | Path) -> tuple[Any, Path]:
    target = Path(path)
    if target.suffix.lower() not in FORMATS:
        raise InputError(f"--plot file must end in {', '.join(FORMATS)}, got {target.name!r}")
    if not target.parent.exists():
        raise InputError(f"--plot: folder {str(target.parent)!r} does not exist")
    try:
        import matplotlib
    except ImportError as exc:
        raise InputError(
            "--plot needs matplotlib, which is missing from this Python environment: "
            "pip install matplotlib (or reinstall tokometer with its dependencies)"
        ) from exc

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt, target


def plot_estimate(e: Estimate, path: str | Path) -> Path:
    """Four panels: context, batch, roofline, offload."""
    plt, target = _pyplot(path)
    fig, axes = plt.subplots(2, 2, figsize=(13, 9.5))
    fig.suptitle(f"{e.model.name} · {e.quant.name if e.quant else 'file'} · {e.hardware.name} · {e.engine.name}")
    _context_panel(axes[0][0], e)
    _batch_panel(axes[0][1], e)
    _roofline_panel(axes[1][0], e)
    _offload_panel(axes[1][1], e)
    fig.tight_layout()
    fig.savefig(target)
    plt.close(fig)
    return target


def _context_panel(ax: Any, e: Estimate) -> None:
    points = context_points(e)
    x = [p.depth_tokens for p in points]
    ax.plot(x, [p.estimate_tok_s for p in points], "o-", label="estimate")
    ax.plot(x, [p.roofline_tok_s for p in points], "s--", label="roofline with KV (eta = 1, no fixed costs)")
    ax.plot(x, [p.ceiling_tok_s for p in points], ":", color="grey", label="ceiling (weights only)")
    out = [p for p in points if not p.fits]
    if out:
        ax.scatter([p.depth_tokens for p in out], [p.estimate_tok_s for p in out], s=90, facecolors="none",
                   edgecolors="red", label="KV does not fit")
    ax.axvline(e.step.depth_tokens, color="k", lw=0.6)
    ax.set_xscale("symlog", linthresh=1024)
    ax.set_xlim(left=0)
    ax.set_xlabel(f"context depth, tokens ({e.kv_dtype.id} KV)")
    ax.set_ylabel("decode tok/s per stream")
    ax.set_title("decode vs context")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)


def _batch_panel(ax: Any, e: Estimate) -> None:
    points = batch_points(e)
    x = [p.batch for p in points]
    ax.plot(x, [p.aggregate_tok_s for p in points], "o-", label="aggregate")
    ax.plot(x, [p.per_stream_tok_s for p in points], "o-", label="per stream")
    ax.plot(x, [p.ceiling_aggregate_tok_s for p in points], ":", color="C0", label="aggregate ceiling")
    ridge = e.ridge_batch
    if ridge:
        ax.axvline(ridge, color="red", lw=0.8, ls="--", label=f"ridge point ~ batch {ridge:,.0f}")
    out = [p for p in points if not p.fits]
    if out:
        ax.axvspan(out[0].batch, x[-1], color="grey", alpha=0.15, label="KV does not fit")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(f"batch (streams) at {e.step.depth_tokens:,.0f} tokens")
    ax.set_ylabel("decode tok/s")
    ax.set_title("decode vs batch")
    ax.legend(fontsize=8)


def _roofline_panel(ax: Any, e: Estimate) -> None:
    import numpy as np

    bw = e.hardware.memory_bandwidth_gb_per_s * GB * e.layout_setup.layout.tp
    peak = e.peak.tflops * TFLOP * e.layout_setup.layout.tp if e.peak.tflops else None
    points = batch_points(e)
    intensity = [p.flops_per_step / (p.weight_bytes_per_step + p.kv_bytes_per_step) for p in points]
    achieved = [p.flops_per_step * p.per_stream_tok_s for p in points]  # one step per 1/per-stream seconds
    low = min(intensity) / 4
    high = max(max(intensity) * 4, (peak / bw * 4) if peak else 1.0)
    xs = np.geomspace(low, high, 200)
    roof = xs * bw if peak is None else np.minimum(xs * bw, peak)
    ax.plot(xs, roof / TFLOP, color="k", label="roofline (datasheet)")
    ax.scatter(intensity, [a / TFLOP for a in achieved], c="C1", zorder=3, label="estimate at batch 1, 2, 4...")
    for p, i, a in zip(points, intensity, achieved, strict=True):
        if p.batch in (1, e.step.batch, points[-1].batch):
            ax.annotate(f"B={p.batch}", (i, a / TFLOP), fontsize=7, xytext=(3, 3), textcoords="offset points")
    if peak:
        ax.axvline(peak / bw, color="red", lw=0.8, ls="--", label=f"ridge {peak / bw:,.0f} FLOP/byte")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity, FLOP per byte read")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("roofline")
    ax.legend(fontsize=8)


def _offload_panel(ax: Any, e: Estimate) -> None:
    points = offload_points(e)
    ax.set_title("CPU offload")
    if not points:
        ax.text(0.5, 0.5, "offload does not apply here", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    x = [p.gpu_layers for p in points]
    ax.plot(x, [p.estimate_tok_s for p in points], "o-", ms=3, label="estimate")
    ax.plot(x, [p.ceiling_tok_s for p in points], ":", label="ceiling")
    gpu = points[-1].estimate_tok_s
    cpu = points[0].estimate_tok_s
    ax.plot([0, x[-1]], [cpu, gpu], "--", color="grey", lw=0.8, label="linear blend (what it is not)")
    fitting = [p.gpu_layers for p in points if p.fits]
    if fitting:
        ax.axvline(max(fitting), color="red", lw=0.8, ls="--", label=f"most layers that fit: {max(fitting)}")
    if e.offload is not None:
        ax.axvline(e.offload.offload.gpu_layers, color="k", lw=0.6)
    ax.set_xlabel(f"layers on the GPU (of {x[-1]}), the rest in system RAM")
    ax.set_ylabel("decode tok/s")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)


def plot_sweep(result: SweepResult, path: str | Path, max_series: int = 24) -> Path:
    """tok/s vs context (several contexts), else aggregate vs batch, else one bar per setup."""
    import numpy as np

    plt, target = _pyplot(path)
    shape = result.shape
    est = 1.0 / np.broadcast_to(result.grid.time_s, shape)
    fig, ax = plt.subplots(figsize=(10, 6.5))
    series = [(m, h, q) for m in range(shape[0]) for h in range(shape[1]) for q in range(shape[2])][:max_series]

    def label(m: int, h: int, q: int) -> str:
        return f"{result.models[m].id or result.models[m].name} · {result.hardware[h].id} · {result.quants[q].id}"

    if shape[3] > 1:
        for m, h, q in series:
            ax.plot(result.contexts, est[m, h, q, :, 0], "o-", label=label(m, h, q))
        ax.set_xscale("symlog", linthresh=1024)
        ax.set_xlim(left=0)
        ax.set_xlabel("context depth, tokens")
        ax.set_ylabel(f"decode tok/s per stream (batch {result.batches[0]})")
    elif shape[4] > 1:
        batches = np.asarray(result.batches, dtype=float)
        for m, h, q in series:
            ax.plot(batches, est[m, h, q, 0, :] * batches, "o-", label=label(m, h, q))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(f"batch at {result.contexts[0]:,} tokens")
        ax.set_ylabel("aggregate decode tok/s")
    else:
        values = [est[m, h, q, 0, 0] for m, h, q in series]
        ax.barh([label(m, h, q) for m, h, q in series], values)
        ax.set_xlabel("decode tok/s per stream")
    if shape[3] > 1 or shape[4] > 1:
        ax.legend(fontsize=7)
    ax.set_title(f"tokometer sweep: {result.size:,} setups")
    fig.tight_layout()
    fig.savefig(target)
    plt.close(fig)
    return target
