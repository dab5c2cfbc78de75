"""Grade a measurement against its prediction: share of the ceiling realised, MBU, MFU, and flags.

Nobody else reports a measured speed as a fraction of the physical ceiling (benchmarkers.md,
(c)). docs/PHYSICS.md section 8:

    MBU = measured decode bytes/s / datasheet bandwidth
        = aggregate decode tok/s * bytes read per token / (memory_bandwidth_gb_per_s * 1e9)
    MFU (prefill) = prefill tok/s * prefill FLOPs per prompt token / (peak TFLOP/s * 1e12)

A measurement above the ceiling is a finding, not a success: a wrong spec, a prompt-cache hit,
speculative decoding or mis-counted tokens. Far below the estimate points at offload, a CPU
fallback or throttling. MBU, MFU and where a speed sits are `costmodel.utilisation`'s rules (the ones
`tokometer utilization` and the web use); this module applies them to a summary and the estimate's
JSON shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokometer.bench.plausibility import implausible_speed
from tokometer.costmodel.utilisation import mbu, mfu, placement
from tokometer.domain.units import GB, TFLOP

CLIENT_SERVER_GAP = 0.10  # client vs server decode disagreement worth a flag
HIGH_SPREAD = 0.20  # (max - min) / median across runs


def _median(summary: Mapping[str, Any], key: str) -> float | None:
    value = summary.get(key)
    if isinstance(value, Mapping):
        median = value.get("median")
        return float(median) if isinstance(median, int | float) else None
    return None


def _flag(code: str, message: str, severity: str = "warning") -> dict[str, str]:
    return {"code": code, "severity": severity, "message": message}


def validity_flags(summary: Mapping[str, Any]) -> list[dict[str, str]]:
    """Checks on the measurement itself, with or without a prediction."""
    flags = []
    failed = int(summary.get("requests_failed") or 0)
    total = int(summary.get("requests_total") or 0)
    if failed:
        kinds = ", ".join(f"{k} x{v}" for k, v in (summary.get("errors") or {}).items())
        flags.append(_flag("failures", f"{failed} of {total} requests failed ({kinds}): {summary.get('first_error')}"))
    implausible_count = int((summary.get("errors") or {}).get("implausible") or 0)
    if implausible_count:
        flags.append(_flag("implausible", f"{implausible_count} request(s) reported numbers that cannot be true; they are kept out of the statistics (see the requests)", "error"))
    fastest = (summary.get("decode_tps") or {}).get("max")
    why = implausible_speed(fastest if isinstance(fastest, int | float) else None)
    if why is not None:
        flags.append(_flag("implausible-speed", why, "error"))
    gap = summary.get("client_server_gap_fraction")
    if isinstance(gap, int | float) and abs(gap) > CLIENT_SERVER_GAP:
        client = _median(summary, "decode_tps")
        server = _median(summary, "server_decode_tps")
        flags.append(
            _flag(
                "client-server-gap",
                f"the client measured {client:.1f} tok/s but the server reports {server:.1f} tok/s ({gap:+.0%}): "
                "network, detokenization or SSE batching sit between them"
                if client and server
                else f"client and server decode speeds disagree by {gap:+.0%}",
            )
        )
    cached = int(summary.get("cached_tokens_max") or 0)
    if cached:
        flags.append(_flag("cache-hit", f"the server reused up to {cached} cached prompt tokens: TTFT and prefill look better than they are"))
    early = int(summary.get("ended_early") or 0)
    if early:
        reasons = ", ".join(f"{k}" for k in (summary.get("finish_reasons") or {}) if k != "length")
        flags.append(
            _flag(
                "ended-early",
                f"{early} requests stopped before the requested length (finish_reason {reasons or '?'}): "
                "the server may not honour ignore_eos; decode speed is still valid",
                "info",
            )
        )
    if summary.get("output_tokens_source") == "events":
        flags.append(
            _flag(
                "counted-events",
                "the server sent no token counts: output tokens were counted as stream events (one token per event assumed)",
                "info",
            )
        )
    spread = summary.get("decode_spread_fraction")
    if isinstance(spread, int | float) and spread > HIGH_SPREAD:
        flags.append(_flag("high-spread", f"repeated runs disagree by {spread:.0%} of the median: is something else using the machine?"))
    return flags


def grade(
    summary: Mapping[str, Any],
    prediction: Mapping[str, Any] | None,
    *,
    batch: int = 1,
) -> dict[str, Any]:
    """Compare a (level's) summary with an `Estimate.to_dict()`; flags even without a prediction."""
    flags = validity_flags(summary)
    result: dict[str, Any] = {"flags": flags}
    measured = _median(summary, "decode_tps")
    if not prediction or measured is None:
        result["verdict"] = "no prediction to grade against" if measured is not None else "no successful measurement"
        return result
    decode = prediction["decode"]
    hardware = prediction.get("hardware") or {}
    ceiling = float(decode["ceiling_tok_s"])
    estimate = float(decode["estimate_tok_s"])
    band = decode.get("interval_tok_s") or {}
    low, high = band.get("low"), band.get("high")
    aggregate = _median(summary, "aggregate_tps") if batch > 1 else measured
    aggregate = aggregate if aggregate is not None else measured * batch
    bandwidth = hardware.get("memory_bandwidth_gb_per_s")
    bytes_per_token = decode.get("bytes_per_token")
    achieved_bytes_per_s = aggregate * bytes_per_token if bytes_per_token else None
    realised = measured / ceiling if ceiling else None
    result.update(
        {
            "batch": batch,
            "measured_decode_tps": measured,
            "measured_aggregate_tps": aggregate,
            "ceiling_tok_s": ceiling,
            "estimate_tok_s": estimate,
            "interval_tok_s": {"low": low, "high": high},
            "realised_fraction": realised,
            "vs_estimate": measured / estimate if estimate else None,
            "within_interval": (low is not None and high is not None and low <= measured <= high),
            "achieved_bandwidth_gb_per_s": achieved_bytes_per_s / GB if achieved_bytes_per_s else None,
            "mbu": mbu(achieved_bytes_per_s, bandwidth) if achieved_bytes_per_s and bandwidth else None,
        }
    )
    pre = prediction.get("prefill") or {}
    prefill_tps = _median(summary, "prefill_tps")
    peak = hardware.get("peak_tflops")
    if prefill_tps and pre.get("flops") and pre.get("prompt_tokens"):
        flops_per_s = prefill_tps * float(pre["flops"]) / float(pre["prompt_tokens"])
        result["achieved_prefill_tflops"] = flops_per_s / TFLOP
        result["mfu_prefill"] = mfu(flops_per_s, peak)
        result["predicted_prefill_tps"] = pre.get("tok_s")
    if prefill_tps:
        flags[:0] = _prefill_grade(prefill_tps, pre, result, lone=batch == 1)
    placed = placement(
        measured, ceiling_tok_s=ceiling, estimate_tok_s=estimate, band_low_tok_s=low, band_high_tok_s=high
    )
    if placed == "above-ceiling":
        flags.insert(
            0,
            _flag(
                "above-ceiling",
                f"{measured:.1f} tok/s is {realised:.0%} of the physical ceiling ({ceiling:.1f} tok/s): check the spec "
                "(model, quantization, hardware), a prompt-cache hit, speculative decoding or mis-counted tokens",
                "error",
            ),
        )
    elif placed == "far-below":
        flags.insert(
            0,
            _flag(
                "far-below",
                f"{measured:.1f} tok/s is only {measured / estimate:.0%} of the estimate ({estimate:.1f} tok/s): look for "
                + (
                    "fewer threads than physical cores, another process using the cores or the memory bandwidth, "
                    "or a build without the CPU's vector extensions"
                    if hardware.get("kind") == "cpu"
                    else "layers offloaded to the CPU, a CPU fallback, thermal or power throttling, or another job on "
                    "the device"
                ),
                "error",
            ),
        )
    elif placed == "below-band":
        flags.insert(0, _flag("below-range", f"below the predicted range ({low:.1f}-{high:.1f} tok/s)", "info"))
    where = "inside" if result["within_interval"] else ("above" if high is not None and measured > high else "below")
    result["verdict"] = (
        f"{realised:.0%} of the physical ceiling ({ceiling:,.1f} tok/s); {where} the predicted range"
        + (f" ({low:,.1f}-{high:,.1f} tok/s)" if low is not None and high is not None else "")
    )
    return result


def _prefill_grade(measured: float, pre: Mapping[str, Any], result: dict[str, Any], lone: bool) -> list[dict[str, str]]:
    """Measured prefill against the prediction's roofline and 80 % band (`prefill.ceiling_tok_s`,
    `prefill.interval_tok_s`; a prediction stored before they existed has neither and gets no prefill flag).
    Above the roofline is a finding at any concurrency (queueing only slows a prompt): the prompt at the
    datasheet peak cannot be beaten, so part of it was not computed (a prompt-cache hit the server did not
    report) or fewer tokens were sent than counted. The band is a lone prompt's (`lone`: one request at a
    time); with several in flight a prompt also waits for the others, so it is not compared."""
    ceiling = pre.get("ceiling_tok_s")
    band = pre.get("interval_tok_s") or {}
    low, high = band.get("low"), band.get("high")
    if isinstance(ceiling, int | float):
        result["prefill_ceiling_tok_s"] = ceiling
    if not (lone and isinstance(low, int | float) and isinstance(high, int | float)):
        low = high = None  # no band to compare: a stored prediction without one, or several requests in flight
    else:
        result["prefill_interval_tok_s"] = {"low": low, "high": high}
        result["prefill_within_interval"] = low <= measured <= high
    if isinstance(ceiling, int | float) and measured > ceiling:
        return [
            _flag(
                "prefill-above-ceiling",
                f"prefill at {measured:,.0f} tok/s is {measured / ceiling:.0%} of the prompt's roofline ({ceiling:,.0f} "
                "tok/s at the datasheet peak): part of the prompt was not computed (a prompt-cache hit the server did "
                "not report, prompts repeated across requests) or fewer prompt tokens were sent than counted",
                "error",
            )
        ]
    if low is not None and measured < low:
        return [_flag("prefill-below-range", f"prefill below the predicted range ({low:,.0f}-{high:,.0f} tok/s)", "info")]
    return []


def prediction_headline(estimate: Mapping[str, Any]) -> dict[str, Any]:
    """What a stored run keeps at the top of its prediction (the full estimate rides along)."""
    decode = estimate["decode"]
    return {
        "ceiling_tok_s": decode["ceiling_tok_s"],
        "estimate_tok_s": decode["estimate_tok_s"],
        "interval_tok_s": decode.get("interval_tok_s"),
        "bytes_per_token": decode.get("bytes_per_token"),
        "batch": decode.get("batch"),
        "depth_tokens": decode.get("depth_tokens"),
        "prefill_tok_s": (estimate.get("prefill") or {}).get("tok_s"),
        "ttft_s": (estimate.get("prefill") or {}).get("ttft_s"),
        "model": (estimate.get("model") or {}).get("name"),
        "quant": (estimate.get("model") or {}).get("quant"),
        "hardware": (estimate.get("hardware") or {}).get("id"),
        "hardware_name": (estimate.get("hardware") or {}).get("name"),
        "memory_bandwidth_gb_per_s": (estimate.get("hardware") or {}).get("memory_bandwidth_gb_per_s"),
        "engine": (estimate.get("engine") or {}).get("id"),
    }
