"""Fit the efficiency model on measured rows (`tokometer calibrate`), and cross-validate it.

Decode (docs/PHYSICS.md section 4), for a single memory-bound stream, is linear in its unknowns:

    t_step = X_w / eta_bw(quantized?) + X_kv / eta_kv + s_dec * X_s + k_alu * Y + n_layers * tau_layer + tau_step,
    X_w = weight bytes / BW,  X_kv = KV-cache bytes / BW,  X_s = scores / BW,  Y = weights / fp32 peak

where BW is min(datasheet, N_units * b_unit) (Little's law: the bytes a device's compute units keep in
flight; `specs.stream_bandwidth_share`, the function prediction uses); b_unit enters through min(), so
it is profiled over a grid, each candidate a linear fit. So
each group (engine / backend / hardware class) is fitted by weighted least squares on
relative error (each row divided by its measured time), with a weak ridge toward the engine's
documented defaults so small groups stay sane, and bounds eta <= 1, tau >= 0. Prefill is linear too:

    t_prefill - overheads = G_matmul / eta_max + (G_matmul / T) * T_half / eta_max + G_attention / eta_att

with G = FLOPs / datasheet peak. Groups with too few rows borrow the engine-wide fit, then the default.
"""

from __future__ import annotations

import math
import tomllib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from tokometer.catalog.efficiency import ANY, GroupKey
from tokometer.costmodel.layout import IDEAL
from tokometer.costmodel.roofline import (
    alu_peak_tflops,
    decode_score_elements,
    prefill_score_elements,
)
from tokometer.errors import TokometerError
from tokometer.specs import Efficiency, stream_bandwidth_share
from tokometer.units import GB
from tokometer.usecases.validation import (
    Case,
    CaseResult,
    case_request,
    predict_case,
    resolve_case_hardware,
)

MIN_TG_ROWS = 6
MIN_PP_ROWS = 6
RIDGE = 0.5  # weight of the prior: half of one row of relative error, whatever the row count


@dataclass(frozen=True)
class Features:
    case: Case
    group: str
    engine_id: str
    backend: str
    hardware_id: str
    prior: Efficiency
    t_measured_s: float
    memory_s: float = 0.0  # weight bytes / datasheet bandwidth
    kv_s: float = 0.0  # KV-cache bytes read and written / datasheet bandwidth
    alu_s: float = 0.0  # weights multiplied / fp32 shader peak: seconds per ALU op per weight
    decode_score_s: float = 0.0  # decode attention scores / datasheet bandwidth: seconds per byte per score
    ecc_s: float = 0.0  # (weight + KV bytes) / datasheet bandwidth on a card with inline ECC, else 0
    quantized: bool = False
    n_layers: int = 0
    matmul_s: float = 0.0  # matmul FLOPs / datasheet peak
    attention_s: float = 0.0
    score_s: float = 0.0  # attention scores / datasheet bandwidth: seconds per byte moved per score
    prompt_tokens: int = 0
    n_chunks: int = 1
    bandwidth_gb_per_s: float = 0.0  # datasheet
    stream_units: float | None = None  # `HardwareSpec.stream_units`: SMs / CUs / GPU cores (Apple's at their clock), the N of N * b_unit

    @property
    def chunk_tokens(self) -> float:
        """Tokens one prefill matmul sees: the prompt, or the engine's chunk of it."""
        return self.prompt_tokens / max(1, self.n_chunks)


def _unit(prior: Efficiency) -> Efficiency:
    """eta = 1 and no fixed costs, with the engine's prefill chunking: the physics alone."""
    return replace(IDEAL, prefill_chunk_tokens=prior.prefill_chunk_tokens)


def features(case: Case) -> Features | None:
    """Physics at 100 % efficiency for one usable row (single device, unflagged, tg or pp)."""
    from tokometer.catalog import engine_catalog
    from tokometer.catalog.efficiency import efficiency_for, group_key
    from tokometer.usecases.estimate import estimate

    if case.flag or case.n_devices != 1 or case.batch != 1 or case.metric not in ("tg", "pp"):
        return None
    try:
        hardware = resolve_case_hardware(case)
        request = case_request(case, hardware)
        engine = engine_catalog().get(request.engine or "llama-cpp")
        backend = request.backend or hardware.backend
        prior = _default(engine.id)
        est = estimate(request, efficiency=_unit(efficiency_for(engine, hardware, backend)))
    except TokometerError:
        return None
    base = dict(
        case=case,
        group=group_key(engine, hardware, backend),
        engine_id=engine.based_on or engine.id,
        backend=backend,
        hardware_id=hardware.id,
        prior=prior,
        quantized=est.quantized,
        n_layers=est.model.n_layers,
        bandwidth_gb_per_s=hardware.memory_bandwidth_gb_per_s,
        stream_units=hardware.stream_units,
    )
    if case.metric == "tg":
        bw = hardware.memory_bandwidth_gb_per_s * GB
        alu_peak = alu_peak_tflops(hardware)
        return Features(
            t_measured_s=1.0 / case.value,
            memory_s=est.step.weight_bytes / bw,
            kv_s=(est.step.kv_read_bytes + est.step.kv_write_bytes) / bw,
            alu_s=est.model.matmul_params_per_token() / (alu_peak * 1e12) if alu_peak else 0.0,
            decode_score_s=decode_score_elements(est.model, est.step.depth_tokens) / bw,
            ecc_s=(est.step.weight_bytes + est.step.kv_read_bytes + est.step.kv_write_bytes) / bw if hardware.inline_ecc else 0.0,
            **base,  # type: ignore[arg-type]
        )
    if est.prefill is None or not est.peak.tflops or (est.peak.note and not est.peak.derived):
        return None  # a fallback peak (fp32 for a tensor-core GPU) would bias the fit; a derived one is a peak
    peak = est.peak.tflops * 1e12
    return Features(
        t_measured_s=case.prompt_tokens / case.value,
        matmul_s=est.prefill.matmul_flops / peak,
        attention_s=est.prefill.attention_flops / peak,
        score_s=prefill_score_elements(est.model, case.prompt_tokens) / (hardware.memory_bandwidth_gb_per_s * GB),
        prompt_tokens=case.prompt_tokens,
        n_chunks=est.prefill.n_chunks,
        **base,  # type: ignore[arg-type]
    )


def _default(engine_id: str) -> Efficiency:
    from tokometer.catalog import engine_catalog

    return engine_catalog().get(engine_id).efficiency


def _bounded_lstsq(
    rows: list[list[float]], target: list[float], prior: list[float], lower: list[float], scales: list[float | None] | None = None
) -> list[float]:
    """min sum (A x - b)^2 + RIDGE * sum ((x - prior)/scale)^2, with x >= lower (active set).

    `scales`: how far each unknown may stray from its prior at the cost of one row (default |prior|).
    """
    import numpy as np

    a = np.asarray(rows, dtype=float)
    b = np.asarray(target, dtype=float)
    p = np.asarray(prior, dtype=float)
    scale = np.maximum(np.abs(p), 1e-9)
    for i, given in enumerate(scales or []):
        if given is not None:
            scale[i] = given
    fixed: dict[int, float] = {}
    for _ in range(len(prior) + 1):
        free = [i for i in range(len(prior)) if i not in fixed]
        rhs = b - (a[:, list(fixed)] @ np.array(list(fixed.values())) if fixed else 0.0)
        weight = math.sqrt(RIDGE)
        reg_a = np.diag(weight / scale[free])
        reg_b = weight * p[free] / scale[free]
        full_a = np.vstack([a[:, free], reg_a])
        full_b = np.concatenate([rhs, reg_b])
        sol, *_ = np.linalg.lstsq(full_a, full_b, rcond=None)
        x = np.array(p, copy=True)
        x[free] = sol
        for i, v in fixed.items():
            x[i] = v
        violated = [i for i in free if x[i] < lower[i]]
        if not violated:
            return [float(v) for v in x]
        for i in violated:
            fixed[i] = lower[i]
    return [float(max(v, lo)) for v, lo in zip(x, lower, strict=True)]


ALU_PRIOR_FLOPS_PER_WEIGHT = 2.0  # one FMA per weight (dequant extra is what the fit finds)
ALU_PRIOR_SCALE = 20.0  # a weak pull: k_alu is set by the devices' ALU-to-bandwidth spread, not the prior
SCORE_PRIOR_BYTES = 100.0  # fp32 score traffic plus some K/V re-reads per query head
ECC_PRIOR = 0.1  # inline ECC: 1 check byte per 16-32 data bytes plus read-modify-write turnarounds
ECC_PRIOR_SCALE = 0.2
SCORE_PRIOR_SCALE = 1000.0  # weak: anything from a fused kernel (0) to no reuse at all (~530 B) is plausible


def stream_scale(f: Features, unit_bandwidth_gb_per_s: float | None) -> float:
    """1 / `stream_bandwidth_share`: how much longer the row's stream takes than at the datasheet bandwidth.

    The inverse of the share prediction folds into its eta's (`Efficiency.for_hardware`), from the
    same function, so the fitted b_unit means the same on both sides.
    """
    return 1.0 / stream_bandwidth_share(f.stream_units, f.bandwidth_gb_per_s, unit_bandwidth_gb_per_s)


def _limited(f: Features, unit_bandwidth_gb_per_s: float | None) -> Features:
    """The row's stream features (weights, KV, scores) at the Little's-law bandwidth N * b_unit."""
    scale = stream_scale(f, unit_bandwidth_gb_per_s)
    if scale == 1.0:
        return f
    return replace(f, memory_s=f.memory_s * scale, kv_s=f.kv_s * scale, decode_score_s=f.decode_score_s * scale)


# b_unit candidates (GB/s per SM / CU / GPU core), 10 % apart from 2 to 60, and None (no limit)
UNIT_LIMIT_COST = 0.01  # a limit must explain more than one row's 10 % error (0.1^2) to be kept
UNIT_BANDWIDTH_GRID: tuple[float | None, ...] = (None, *(round(2.0 * 1.1**i, 3) for i in range(36)))


def fit_decode(
    rows: list[Features], prior: Efficiency, units: tuple[float | None, ...] | None = None
) -> dict[str, float | None]:
    """The decode fit at the b_unit that explains the rows best (a profile over `UNIT_BANDWIDTH_GRID`).

    b_unit enters as min(), not linearly, so each candidate is a linear fit of its own; the one
    with the least relative error wins, and a limit must beat no limit (None) by `UNIT_LIMIT_COST`
    (the ridge's pull toward the engine's default, which has none). A candidate at or above
    every row's BW / N limits nothing, so it is the same fit as None and is skipped. `units`:
    the candidates to try instead (one, to refit with b_unit held).
    """
    grid = units if units is not None else tuple(u for u in UNIT_BANDWIDTH_GRID if u is None or _limits_any(rows, u))
    best: tuple[float, dict[str, float | None]] | None = None
    for unit in grid:
        fitted, loss = _fit_decode_linear(rows, prior, [stream_scale(f, unit) for f in rows])
        loss += 0.0 if unit is None else UNIT_LIMIT_COST
        if best is None or loss < best[0] * (1.0 - 1e-9):
            best = (loss, {**fitted, "unit_bandwidth_gb_per_s": unit})
    assert best is not None
    return best[1]


def _limits_any(rows: list[Features], unit_bandwidth_gb_per_s: float) -> bool:
    """Whether b_unit holds any row's stream below its datasheet bandwidth (else its fit is None's)."""
    return any(stream_scale(f, unit_bandwidth_gb_per_s) > 1.0 for f in rows)


def _fit_decode_linear(rows: list[Features], prior: Efficiency, scales: list[float]) -> tuple[dict[str, float], float]:
    """The linear decode fit with each row's stream terms stretched by its `stream_scale`; and its
    sum of squared relative errors (the ridge left out)."""
    has_plain = any(not f.quantized for f in rows)
    has_quant = any(f.quantized for f in rows)
    has_kv = any(f.kv_s > 0 for f in rows)
    has_alu = any(f.alu_s > 0 for f in rows)
    q_prior = prior.quantized_bandwidth_fraction or prior.bandwidth_fraction
    kv_prior = prior.kv_bandwidth_fraction or prior.bandwidth_fraction
    a = [
        [
            (0.0 if f.quantized else f.memory_s * k) / f.t_measured_s,
            (f.memory_s * k if f.quantized else 0.0) / f.t_measured_s,
            f.kv_s * k / f.t_measured_s,
            f.alu_s / f.t_measured_s,
            f.decode_score_s * k / f.t_measured_s,
            f.ecc_s / f.t_measured_s,
            f.n_layers * 1e-6 / f.t_measured_s,
            1e-6 / f.t_measured_s,
        ]
        for f, k in zip(rows, scales, strict=True)
    ]
    x = _bounded_lstsq(
        a,
        [1.0] * len(rows),
        [
            1.0 / prior.bandwidth_fraction,
            1.0 / q_prior,
            1.0 / kv_prior,
            prior.decode_alu_flops_per_weight or ALU_PRIOR_FLOPS_PER_WEIGHT,
            prior.decode_score_bytes or SCORE_PRIOR_BYTES,
            prior.inline_ecc_overhead or ECC_PRIOR,
            prior.layer_overhead_us,
            prior.step_overhead_us,
        ],
        [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [None, None, None, ALU_PRIOR_SCALE, SCORE_PRIOR_SCALE, ECC_PRIOR_SCALE, None, None],
    )
    has_ecc = any(f.ecc_s > 0 for f in rows)
    has_depth = any(f.decode_score_s > 0 for f in rows)
    loss = sum((sum(c * v for c, v in zip(row, x, strict=True)) - 1.0) ** 2 for row in a)
    return {
        "bandwidth_fraction": 1.0 / x[0] if has_plain else prior.bandwidth_fraction,
        "quantized_bandwidth_fraction": 1.0 / x[1] if has_quant else q_prior,
        "kv_bandwidth_fraction": 1.0 / x[2] if has_kv else kv_prior,
        "decode_alu_flops_per_weight": x[3] if has_alu else prior.decode_alu_flops_per_weight,
        "decode_score_bytes": x[4] if has_depth else prior.decode_score_bytes,
        "inline_ecc_overhead": x[5] if has_ecc else prior.inline_ecc_overhead,
        "layer_overhead_us": x[6],
        "step_overhead_us": x[7],
    }, loss


def fit_prefill(rows: list[Features], prior: Efficiency, decode: dict[str, float]) -> dict[str, float]:
    def overhead(f: Features) -> float:
        return f.n_chunks * (f.n_layers * decode["layer_overhead_us"] + decode["step_overhead_us"]) * 1e-6

    usable = [f for f in rows if f.t_measured_s > overhead(f)]
    if not usable:
        return {}
    has_plain = any(not f.quantized for f in usable)
    has_quant = any(f.quantized for f in usable)
    a = [
        [
            (0.0 if f.quantized else f.matmul_s) / f.t_measured_s,
            (f.matmul_s if f.quantized else 0.0) / f.t_measured_s,
            f.matmul_s / f.chunk_tokens / f.t_measured_s,
            f.attention_s / f.t_measured_s,
            f.score_s / f.t_measured_s,
        ]
        for f in usable
    ]
    target = [(f.t_measured_s - overhead(f)) / f.t_measured_s for f in usable]
    u0 = 1.0 / prior.prefill_efficiency_max
    uq0 = 1.0 / (prior.quantized_prefill_efficiency_max or prior.prefill_efficiency_max)
    w0 = 1.0 / (prior.prefill_attention_fraction or prior.prefill_efficiency_max)
    # the T_half term is shared: eta(T) = eta_max * T / (T + T_half), with v = T_half / eta_max(plain);
    # the score term's coefficient is the bytes moved per score (0 and held there for fused kernels)
    x = _bounded_lstsq(
        a,
        target,
        [u0, uq0, prior.prefill_half_tokens * u0, w0, prior.attention_score_bytes],
        [1.0, 1.0, 0.0, 1.0, 0.0],
    )
    eta_plain = 1.0 / x[0] if has_plain else prior.prefill_efficiency_max
    eta_quant = 1.0 / x[1] if has_quant else eta_plain
    return {
        "prefill_efficiency_max": eta_plain,
        "quantized_prefill_efficiency_max": eta_quant,
        "prefill_half_tokens": x[2] / x[0],
        "prefill_attention_fraction": 1.0 / x[3],
        "attention_score_bytes": x[4],
    }


def _predicted_time(f: Features, eff: Efficiency) -> float:
    if f.case.metric == "tg":
        f = _limited(f, eff.unit_bandwidth_gb_per_s)
        return (
            f.memory_s / eff.bandwidth_fraction_for(f.quantized)
            + f.kv_s / eff.kv_fraction_for(f.quantized)
            + f.alu_s * eff.decode_alu_flops_per_weight
            + f.decode_score_s * eff.decode_score_bytes
            + f.ecc_s * eff.inline_ecc_overhead
            + (f.n_layers * eff.layer_overhead_us + eff.step_overhead_us) * 1e-6
        )
    eta = eff.prefill_max_for(f.quantized) * f.chunk_tokens / (f.chunk_tokens + eff.prefill_half_tokens)
    eta_att = eff.prefill_attention_fraction or eff.prefill_efficiency_max
    score = f.score_s * eff.attention_score_bytes
    return f.matmul_s / eta + f.attention_s / eta_att + score + f.n_chunks * (f.n_layers * eff.layer_overhead_us + eff.step_overhead_us) * 1e-6


def _log_sd(rows: list[Features], eff: Efficiency) -> float | None:
    logs = [math.log(_predicted_time(f, eff) / f.t_measured_s) for f in rows]
    if len(logs) < 3:
        return None
    return band_sd(logs)


def band_sd(log_errors: list[float]) -> float:
    """The log-space spread whose +-Z_80 band (the named 80 % z value) holds 80 % of these errors.

    Errors are heavy-tailed (a few chips realise far less than their class), so the RMS would give
    a band that holds fewer than 80 % of them; the 80th percentile of |error| holds exactly 80 %.
    """
    from tokometer.costmodel.roofline import Z_80
    from tokometer.usecases.validation import percentile

    return percentile([abs(v) for v in log_errors], 0.8) / Z_80


def fit_one(
    tg: list[Features], pp: list[Features], prior: Efficiency, source: str, units: tuple[float | None, ...] | None = None
) -> Efficiency:
    decode = fit_decode(tg, prior, units) if len(tg) >= MIN_TG_ROWS else {}
    base = replace(prior, **decode) if decode else prior  # type: ignore[arg-type]
    pre = fit_prefill(pp, base, {"layer_overhead_us": base.layer_overhead_us, "step_overhead_us": base.step_overhead_us}) if len(pp) >= MIN_PP_ROWS else {}
    eff = replace(base, **pre, source=source)  # type: ignore[arg-type]
    sd_tg = _log_sd(tg, eff)
    sd_pp = _log_sd(pp, eff)
    return replace(
        eff,
        residual_log_sd=max(sd_tg, 0.05) if sd_tg is not None else prior.residual_log_sd,
        prefill_residual_log_sd=max(sd_pp, 0.05) if sd_pp is not None else prior.prefill_residual_log_sd,
    )


def fit_table(
    feats: Iterable[Features], source: str = "fitted", held: dict[str, Efficiency] | None = None
) -> dict[str, Efficiency]:
    """Fit every group key and its engine-wide fallbacks; `held`: keep each key's b_unit from this table."""
    by_key: dict[str, list[Features]] = defaultdict(list)
    for f in feats:
        for key in _keys(f.group):
            by_key[key].append(f)
    table: dict[str, Efficiency] = {}
    for key, rows in sorted(by_key.items()):
        tg = [f for f in rows if f.case.metric == "tg"]
        pp = [f for f in rows if f.case.metric == "pp"]
        if len(tg) < MIN_TG_ROWS and len(pp) < MIN_PP_ROWS:
            continue
        units = (held[key].unit_bandwidth_gb_per_s,) if held is not None and key in held else None
        if GroupKey.parse(key).hardware_class == ANY:
            # b_unit belongs to one class of memory system; a fallback entry serves devices of other
            # classes (CPUs, ROCm, Vulkan) and keeps the terms that need no unit count
            units = (None,)
        table[key] = fit_one(tg, pp, rows[0].prior, source, units)
    return table


def lookup(table: dict[str, Efficiency], group: str) -> Efficiency | None:
    for key in GroupKey.parse(group).fallbacks():
        if key in table:
            return table[key]
    return None


def _keys(group: str) -> tuple[str, ...]:
    engine, backend, _ = GroupKey.parse(group)
    return (group, str(GroupKey(engine, backend, ANY)), str(GroupKey(engine, ANY, ANY)))


def fit_with_bands(feats: list[Features], source: str = "fitted") -> dict[str, Efficiency]:
    """Fit a table, then size each entry's 80 % band from errors on hardware the fit did not see.

    The band an unseen device gets must come from unseen devices: each training device is
    predicted (in closed form, from its features) by a fit without it, and the band of every
    entry holds 80 % of those out-of-sample errors. The inner fits keep the table's b_unit (its
    profile search costs one fit per candidate) and refit the linear terms.
    """
    table = fit_table(feats, source=source)
    errors: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"tg": [], "pp": []})
    for hw_id in sorted({f.hardware_id for f in feats}):
        held_out = [f for f in feats if f.hardware_id == hw_id]
        inner = fit_table([f for f in feats if f.hardware_id != hw_id], held=table)
        for f in held_out:
            eff = lookup(inner, f.group)
            if eff is None:
                continue
            error = math.log(_predicted_time(f, eff) / f.t_measured_s)
            for key in _keys(f.group):
                errors[key][f.case.metric].append(error)
    for key, eff in list(table.items()):
        found = errors.get(key)
        if not found:
            continue
        changes: dict[str, float] = {}
        if len(found["tg"]) >= 3:
            changes["residual_log_sd"] = max(0.05, band_sd(found["tg"]))
        if len(found["pp"]) >= 3:
            changes["prefill_residual_log_sd"] = max(0.05, band_sd(found["pp"]))
        table[key] = replace(eff, **changes)  # type: ignore[arg-type]
    return table


def case_group(case: Case) -> str | None:
    """The efficiency group (engine/backend/hardware class) a row is predicted with, any device count."""
    from tokometer.catalog import engine_catalog
    from tokometer.catalog.efficiency import group_key

    try:
        hardware = resolve_case_hardware(case)
        request = case_request(case, hardware)
        engine = engine_catalog().get(request.engine or "llama-cpp")
    except TokometerError:
        return None
    return group_key(engine, hardware, request.backend or hardware.backend)


def case_source(case: Case) -> str:
    """The publication a row comes from (`source_id`), the unit leave-one-source-out holds out."""
    return case.text("source_id") or "(no source_id)"


def _case_hardware_id(case: Case) -> str | None:
    try:
        return resolve_case_hardware(case).id
    except TokometerError:
        return None


def cross_validate(
    cases: list[Case],
    fold_of: Callable[[Case], str | None],
    fit: Callable[..., dict[str, Efficiency]] = fit_with_bands,
    only: list[Case] | None = None,
) -> list[CaseResult]:
    """Each row is predicted by a table fitted without any row of its fold (bands included).

    `fold_of` names what is held out (a device, a source); every row is predicted that way,
    single- and multi-device alike, so no figure is in-sample. `only`: predict just these cases
    (the fits still use every usable row of `cases`).
    """
    feats = [(c, features(c)) for c in cases]
    usable = [(fold_of(c), f) for c, f in feats if f is not None]
    folds: dict[str, dict[str, Efficiency]] = {}
    results = []
    for case in cases if only is None else only:
        fold = fold_of(case)
        group = case_group(case)
        if fold is None or group is None:
            results.append(predict_case(case))
            continue
        if fold not in folds:
            folds[fold] = fit([f for k, f in usable if k != fold], source=f"fit without {fold}")
        results.append(predict_case(case, efficiency=lookup(folds[fold], group), strict=True))
    return results


def leave_one_hardware_out(
    cases: list[Case],
    fit: Callable[..., dict[str, Efficiency]] = fit_with_bands,
    only: list[Case] | None = None,
) -> list[CaseResult]:
    """Each device is predicted by a table fitted without any of its rows (multi-device rows too)."""
    return cross_validate(cases, _case_hardware_id, fit=fit, only=only)


def leave_one_source_out(
    cases: list[Case],
    fit: Callable[..., dict[str, Efficiency]] = fit_with_bands,
    only: list[Case] | None = None,
) -> list[CaseResult]:
    """Each publication is predicted by a table fitted on the others only."""
    return cross_validate(cases, case_source, fit=fit, only=only)


def write_table(path: Path, table: dict[str, Efficiency], meta: dict[str, Any], counts: dict[str, tuple[int, int, list[str]]]) -> None:
    lines = [
        "# Fitted efficiency per engine/backend/hardware-class (docs/PHYSICS.md section 4).",
        "# Written by `tokometer calibrate`; do not edit by hand: rerun it.",
    ]
    for key, value in meta.items():
        lines.append(f"{key} = {_toml_value(value)}")
    lines.append("")
    for key, eff in table.items():
        n_tg, n_pp, hardware = counts.get(key, (0, 0, []))
        lines.append(f'[entries."{key}"]')
        for name in (
            "bandwidth_fraction",
            "quantized_bandwidth_fraction",
            "layer_overhead_us",
            "step_overhead_us",
            "prefill_efficiency_max",
            "quantized_prefill_efficiency_max",
            "prefill_half_tokens",
            "prefill_attention_fraction",
            "prefill_chunk_tokens",
            "attention_score_bytes",
            "prefill_batch_tokens",
            "decode_compute_fraction",
            "kv_bandwidth_fraction",
            "decode_alu_flops_per_weight",
            "decode_score_bytes",
            "inline_ecc_overhead",
            "unit_bandwidth_gb_per_s",
            "residual_log_sd",
            "prefill_residual_log_sd",
        ):
            value = getattr(eff, name)
            if value is not None:
                lines.append(f"{name} = {_toml_value(round(value, 6) if isinstance(value, float) else value)}")
        lines.append(f"source = {_toml_value(eff.source)}")
        lines.append(f"n_rows = {n_tg}")
        lines.append(f"n_prefill_rows = {n_pp}")
        lines.append(f"hardware_seen = {_toml_value(sorted(hardware))}")
        lines.append("")
    text = "\n".join(lines)
    tomllib.loads(text)
    path.write_text(text, encoding="utf-8")


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)


def calibrate(
    cases: list[Case], data_label: str, progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> tuple[dict[str, Efficiency], dict[str, Any], dict[str, tuple[int, int, list[str]]]]:
    """Fit on every usable row; interval widths come from leave-one-hardware-out residuals.
    `progress` wraps the loop that reads the rows' features (a bar)."""
    feats = [f for f in (features(c) for c in (progress(cases) if progress else cases)) if f is not None]
    table = fit_with_bands(feats, source=f"fitted {date.today().isoformat()} on {data_label}")
    counts: dict[str, tuple[int, int, list[str]]] = {}
    for key in table:
        rows = [f for f in feats if _matches(f.group, key)]
        counts[key] = (
            sum(f.case.metric == "tg" for f in rows),
            sum(f.case.metric == "pp" for f in rows),
            sorted({f.hardware_id for f in rows}),
        )
    meta: dict[str, Any] = {
        "fitted_on": date.today().isoformat(),
        "data": data_label,
        "method": "weighted least squares on relative time error, ridge toward engine defaults; "
        "80 % bands from the 80th percentile of |log error| on hardware left out of the fit",
    }
    multi = multi_device_spread(cases)
    if multi is not None:
        meta["multi_device_residual_log_sd"] = round(multi, 6)
    multi_pp = multi_device_spread(cases, "pp")
    if multi_pp is not None:
        meta["multi_device_prefill_residual_log_sd"] = round(multi_pp, 6)
    return table, meta, counts


def multi_device_spread(cases: list[Case], metric: str = "tg") -> float | None:
    """Band for multi-device decode (`tg`) or prefill (`pp`): errors of the parallelism model on
    hardware left out of the fit.

    Several devices add what one device's fit cannot see (link latency, split imbalance, how far a
    pipeline overlaps), so their band is sized on their own out-of-sample errors, not borrowed from
    single-device rows.
    """
    multi = [c for c in cases if c.metric == metric and c.n_devices > 1 and not c.flag]
    if len(multi) < MIN_TG_ROWS:
        return None
    results = leave_one_hardware_out(cases, only=multi)
    errors = [math.log(r.predicted / r.case.value) for r in results if r.scored and r.predicted]
    return max(0.05, band_sd(errors)) if len(errors) >= MIN_TG_ROWS else None


def _matches(group: str, key: str) -> bool:
    return GroupKey.parse(group).matches(GroupKey.parse(key))
