"""What each web endpoint answers, as plain JSON-ready dicts built from `tokometer.usecases.estimate`.

No HTTP here (that is `app.py`): these functions take checked arguments (see `inputs.py`) and
return data, so tests call them directly.

Curves: every line is the library's one curve builder (`costmodel.curves.decode_curve`): the
roofline's decode steps are the estimate's batching curve (`usecases.curves.batch_points`), and the
Plots page's "bandwidth limit with KV reads" is `usecases.curves.along` at the page's own x values.
`curve()` also calls `estimate` once per x, because its dots carry each x's whole `decode` block (the
80 % band, bytes, times) and memory verdict, which belong to an estimate rather than to a curve.
The panorama calls `estimate` once per device.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import re
from collections.abc import Iterator
from typing import Any

from tokometer import __version__
from tokometer.catalog import engine_catalog, hardware_catalog, model_catalog, quant_catalog
from tokometer.domain.units import GB, TFLOP
from tokometer.errors import InputError, TokometerError, require_non_negative, require_positive
from tokometer.report.json import estimate_json, estimate_sections
from tokometer.usecases.curves import along, batch_points, prefill_bytes_moved
from tokometer.usecases.estimate import estimate
from tokometer.usecases.policy import DEFAULT_HARDWARE, DEFAULT_MODEL, DEFAULT_QUANT
from tokometer.usecases.reading import (
    BROKEN_STREAM_TOK_S,
    READING_SPEED_TOK_S,
    reading_verdict,
    reading_verdict_code,
)
from tokometer.usecases.utilization import mbu, mfu, placement

DEFAULT_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
DEFAULT_OUTPUT_TOKENS = 256  # as `tokometer estimate --output`
DEFAULT_MAX_CONTEXT_TOKENS = 131_072
TIERS_GB = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512)
DEVICE_FIELDS = ("hw", "bandwidth_gb_per_s", "memory_gb", "tflops")


def meta(bench_urls: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "version": __version__,
        "reading_speed_tok_s": list(READING_SPEED_TOK_S),
        "broken_stream_tok_s": BROKEN_STREAM_TOK_S,
        "defaults": {"model": DEFAULT_MODEL, "hw": DEFAULT_HARDWARE, "quant": DEFAULT_QUANT},
        "bench_urls": list(bench_urls),
    }


def model_rows() -> list[dict[str, Any]]:
    """The model presets, as `tokometer models list --json` prints them."""
    rows = []
    for preset in model_catalog():
        spec = preset.spec
        rows.append(
            {
                "id": preset.id,
                "name": preset.name,
                "hf_id": preset.hf_id,
                "architecture": spec.architecture,
                "total_params": spec.total_params,
                "active_params": spec.active_params(),
                "max_context_tokens": spec.max_context_tokens,
                "source": preset.source,
            }
        )
    return rows


def catalog_rows(kind: str) -> list[dict[str, Any]]:
    """`tokometer <kind> list --json` for hardware, models, quants or engines."""
    if kind == "models":
        return model_rows()
    if kind == "hardware":  # `hardware list` sorts by id by default
        return [h.to_dict() for h in sorted(hardware_catalog(), key=lambda h: h.id)]
    catalogs: dict[str, Any] = {"quants": quant_catalog, "engines": engine_catalog}
    return [item.to_dict() for item in catalogs[kind]()]


def hardware_entry(name: str) -> dict[str, Any]:
    """`tokometer hardware show NAME --json`."""
    return hardware_catalog().get(name).to_dict()


def estimate_dict(kwargs: dict[str, Any]) -> dict[str, Any]:
    return estimate_json(estimate(**kwargs))


def _context_values(kwargs: dict[str, Any]) -> list[int]:
    top = DEFAULT_MAX_CONTEXT_TOKENS
    if kwargs.get("model"):
        preset = model_catalog().get(kwargs["model"])
        top = preset.spec.max_context_tokens or top
    values = [0]
    depth = 1024
    while depth < top:
        values.append(depth)
        depth *= 2
    return [*values, top]


def curve(kwargs: dict[str, Any], axis: str, values: list[Any] | None = None) -> dict[str, Any]:
    """Decode speed along one axis: `context` (tokens already cached) or `batch` (streams).

    Each point carries the estimate's whole `decode` block and the memory verdict at that x, and
    `roofline_tok_s`: the bandwidth limit with KV reads, per stream (eta = 1, no fixed costs), from the
    library's one curve builder (`usecases.curves.along`), the line `estimate --plot` draws too.
    """
    keys = {"context": "context_tokens", "batch": "batch"}
    if axis not in keys:
        raise InputError(f"axis must be context or batch, got {axis!r}")
    key = keys[axis]
    if values is None:
        values = _context_values(kwargs) if axis == "context" else list(DEFAULT_BATCHES)
    xs = sorted({int(x) for x in values})
    results = [estimate(**{**kwargs, key: x}) for x in xs]
    lines = along(results[0], "context" if axis == "context" else "batch", xs)  # the one curve builder
    points = []
    for x, result, line in zip(xs, results, lines, strict=True):
        d = estimate_sections(result)  # a point needs no curves
        m = d["memory"]
        points.append(
            {
                "x": x,
                "decode": d["decode"],
                "memory": {"fits": m["fits"], "total_gb": m["total_gb"]},
                "roofline_tok_s": line.roofline_tok_s,
            }
        )
    base = estimate_sections(results[0])
    return {
        "axis": axis,
        "model": base["model"],
        "hardware": base["hardware"],
        "engine": {"id": base["engine"]["id"], "name": base["engine"]["name"]},
        "points": points,
    }


def roofline(kwargs: dict[str, Any], batches: list[Any] | None = None) -> dict[str, Any]:
    """Decode steps at several batch sizes and the prefill, placed on the hardware's roofline.

    Intensity = FLOPs / bytes moved (FLOP/byte); attainable = min(peak, bandwidth x intensity).
    The decode steps are the estimate's batching curve (`batching.curve`) at `batches`.
    """
    result = estimate(**kwargs)
    d = estimate_sections(result)
    bandwidth = d["hardware"]["memory_bandwidth_gb_per_s"] * GB
    peak_tflops = d["hardware"]["peak_tflops"]
    wanted = sorted({int(b) for b in batches}) if batches else list(DEFAULT_BATCHES)
    for b in wanted:
        require_positive("batches", b)
    points = []
    for p in batch_points(result, wanted):
        if p.batch not in wanted:  # the library adds the setup's own batch
            continue
        flops_per_token = p.flops_per_step / p.batch
        points.append(
            {
                "batch": p.batch,
                "intensity_flop_per_byte": p.flops_per_step / (p.weight_bytes_per_step + p.kv_bytes_per_step),
                "achieved_tflops": p.aggregate_tok_s * flops_per_token / TFLOP,
                "ceiling_tflops": p.ceiling_aggregate_tok_s * flops_per_token / TFLOP,
                "bound": p.bound,
                "aggregate_tok_s": p.aggregate_tok_s,
            }
        )
    pre = result.prefill
    prefill_point = None
    if pre is not None:
        bytes_moved = prefill_bytes_moved(result, pre)
        prefill_point = {
            "prompt_tokens": pre.prompt_tokens,
            "intensity_flop_per_byte": pre.flops / bytes_moved,
            "achieved_tflops": pre.flops / pre.time_s / TFLOP,
            "bound": pre.bound,
        }
    return {
        "model": d["model"],
        "hardware": d["hardware"],
        "peak_tflops": peak_tflops,
        "peak_dtype": d["hardware"]["peak_dtype"],
        "bandwidth_gb_per_s": d["hardware"]["memory_bandwidth_gb_per_s"],
        "ridge_flop_per_byte": peak_tflops * TFLOP / bandwidth if peak_tflops else None,
        "ridge_batch": d["decode"]["ridge_batch"],
        "decode": points,
        "prefill": prefill_point,
    }


def utilisation(
    kwargs: dict[str, Any], measured_decode_tok_s: float, measured_prefill_tok_s: float | None = None
) -> dict[str, Any]:
    """MBU and MFU of a measured run (docs/PHYSICS.md section 8), next to the prediction for it.

    `measured_decode_tok_s` is per stream, as benchmarks report it; a step serves `batch` streams:
    MBU = measured tok/s x bytes read per step / datasheet bandwidth;
    MFU = measured tok/s x FLOPs per step / datasheet peak (prefill: FLOPs per prompt token).
    """
    require_positive("measured_decode_tok_s", measured_decode_tok_s)
    require_positive("measured_prefill_tok_s", measured_prefill_tok_s)
    d = estimate_json(estimate(**kwargs))
    dec, hw, pre = d["decode"], d["hardware"], d["prefill"]
    peak_flops = hw["peak_tflops"] * TFLOP if hw["peak_tflops"] else None
    flops_per_step = dec["flops_per_token"] * dec["batch"]
    memory_use = mbu(measured_decode_tok_s * dec["bytes_per_step"], hw["memory_bandwidth_gb_per_s"])
    decode_mfu = mfu(measured_decode_tok_s * flops_per_step, hw["peak_tflops"])
    prefill_mfu = None
    if measured_prefill_tok_s is not None and peak_flops and pre["flops"]:
        prefill_mfu = mfu(measured_prefill_tok_s * (pre["flops"] / pre["prompt_tokens"]), hw["peak_tflops"])
    band = dec["interval_tok_s"]
    notes = []
    code = placement(
        measured_decode_tok_s,
        ceiling_tok_s=dec["ceiling_tok_s"],
        estimate_tok_s=dec["estimate_tok_s"],
        band_low_tok_s=band["low"],
        band_high_tok_s=band["high"],
    )
    if code == "far-below":
        code = "below-band"  # the page words both as slower than predicted, with the same note
    if code == "above-ceiling":
        notes.append(
            "above the ceiling: a finding, not a success - a wrong spec, a cache hit, speculative "
            "decoding or mis-counted tokens"
        )
    elif code == "below-band":
        notes.append(
            "below the 80 % band: look for partial CPU offload, a busy or throttled device, "
            "a deep context or an engine setting"
        )
    if peak_flops is None:
        notes.append(f"{hw['name']} has no published compute peak: MFU cannot be computed")
    return {
        "utilisation": {
            "measured_decode_tok_s": measured_decode_tok_s,
            "measured_prefill_tok_s": measured_prefill_tok_s,
            "mbu": memory_use,
            "decode_mfu": decode_mfu,
            "prefill_mfu": prefill_mfu,
            "measured_over_ceiling": measured_decode_tok_s / dec["ceiling_tok_s"],
            "measured_over_estimate": measured_decode_tok_s / dec["estimate_tok_s"],
            "verdict_code": code,
            "notes": notes,
        },
        "estimate": d,
    }


def latency_at_rate(ttft_ms: float, tok_s: float, output_tokens: int = DEFAULT_OUTPUT_TOKENS) -> dict[str, Any]:
    """End-to-end time of an answer from a time to first token and a decode rate (docs/PHYSICS.md 5).

    E2E = TTFT + (n_out - 1) / rate; reading it takes n_out / (5 to 10 tok/s).
    """
    require_non_negative("ttft_ms", ttft_ms)
    require_positive("output_tokens", output_tokens)
    require_positive("tok_s", tok_s)
    ttft_s = ttft_ms / 1e3
    tpot_s = 1.0 / tok_s
    return {
        "ttft_s": ttft_s,
        "tpot_s": tpot_s,
        "e2e_s": ttft_s + (output_tokens - 1) * tpot_s,
        "output_tokens": output_tokens,
        "tok_s": tok_s,
        "verdict": reading_verdict(tok_s),
        "verdict_code": reading_verdict_code(tok_s),
        "reading_time_s": [output_tokens / READING_SPEED_TOK_S[1], output_tokens / READING_SPEED_TOK_S[0]],
    }


def tier_of(memory_gb: float) -> int | None:
    """The GPU tier (memory size class, GB) a device falls in; None above the largest tier."""
    for tier in TIERS_GB:
        if memory_gb <= tier * 1.02:
            return tier
    return None


def panorama(kwargs: dict[str, Any]) -> dict[str, Any]:
    """One model on every catalog device: ceiling, estimate and memory verdict, with sources."""
    given = [key for key in DEVICE_FIELDS if key in kwargs]
    if given:
        raise InputError(f"the panorama covers every device: drop {given[0]}")
    rows = []
    model: dict[str, Any] | None = None
    for hw in hardware_catalog():
        row: dict[str, Any] = {"hardware": hw.to_dict(), "tier_gb": tier_of(hw.memory_gb)}
        try:
            e = estimate(hw=hw, **kwargs)
        except TokometerError as exc:
            row["error"] = str(exc)
            rows.append(row)
            continue
        model = model or {"id": e.model.id, "name": e.model.name, "weight_bytes": e.weights.total}
        row.update(
            {
                "engine": e.engine.id,
                "ceiling_tok_s": e.ceiling_tok_s,
                "estimate_tok_s": e.estimate_tok_s,
                "interval_tok_s": e.estimate_interval.to_dict(),
                "bound": e.step.bound,
                "fits": e.memory.fits,
                "total_gb": e.memory.total_gb,
                "available_gb": e.memory.available_gb,
            }
        )
        rows.append(row)
    return {"model": model, "tiers_gb": list(TIERS_GB), "rows": rows}


@contextlib.contextmanager
def _store() -> Iterator[Any]:
    """`tokometer.store.open_store()`, closed after use; None while the run store is not installed."""
    try:
        module = importlib.import_module("tokometer.store")
    except ImportError:
        module = None
    opener = getattr(module, "open_store", None)
    if opener is None:
        yield None
        return
    store = opener()
    try:
        yield store
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()


def _ratio(a: Any, b: Any) -> float | None:
    if isinstance(a, int | float) and isinstance(b, int | float) and b and math.isfinite(a / b):
        return float(a / b)
    return None


def runs(limit: int = 50) -> dict[str, Any]:
    """Stored benchmark runs, newest first, each with measured / predicted ratios."""
    with _store() as store:
        if store is None:
            return {"available": False, "runs": []}
        listed = store.list_runs(limit=limit)
    rows = []
    for run in listed:
        prediction = run.prediction or {}
        measured = run.summary.decode_tps.median if run.summary is not None else None
        rows.append(
            {
                **run.to_dict(),
                "measured_over_estimate": _ratio(measured, prediction.get("estimate_tok_s")),
                "measured_over_ceiling": _ratio(measured, prediction.get("ceiling_tok_s")),
            }
        )
    return {"available": True, "runs": rows}


RUN_ID = re.compile(r"[1-9][0-9]{0,17}")  # what a stored run's id looks like (ASCII digits, fits SQLite)


def run_detail(run_id: str, *, requests_limit: int = 200, requests_offset: int = 0) -> dict[str, Any] | None:
    """One stored run with one page of its requests, or None when there is no store or no such run.

    A large imported run can hold 10^5 requests; the page keeps the answer small, and
    `requests_total` says how many there are.
    """
    if not RUN_ID.fullmatch(run_id):
        return None
    with _store() as store:
        if store is None:
            return None
        try:
            run = store.get_run(int(run_id), requests_limit=requests_limit, requests_offset=requests_offset)
            total = store.count_requests(int(run_id))
            if run.is_incomplete:  # killed mid-run: summarise what it stored
                from tokometer.usecases.benchmark import load_run

                whole = load_run(store, int(run_id), with_requests=False)
                run = run.with_(summary=whole.summary, notes=whole.notes)
        except (LookupError, TokometerError):
            return None
    shown = run.to_dict(stored=True)
    return {**shown, "requests_total": total, "requests_offset": requests_offset, "requests_limit": requests_limit}
