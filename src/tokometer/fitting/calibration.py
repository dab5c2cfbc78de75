"""Fit the efficiency model on measured rows (`tokometer calibrate`): the decode and prefill fits per group.

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

with G = FLOPs / datasheet peak, eta_max and T_half each fitted apart for plain and block-quantized weights. Groups with too few rows borrow the engine-wide fit, then the default.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from tokometer.catalog.efficiency import ANY, FAMILY_OFFSETS_KEY, UNSEEN_KEYS, GroupKey
from tokometer.domain.families import family_scaled
from tokometer.domain.specs import Efficiency
from tokometer.fitting.bands import band_sd, grouped_band_sd
from tokometer.fitting.families_fit import family_offsets
from tokometer.fitting.features import (
    Features,
    int32_limited,
    int32_scale,
    kv_cap_time_s,
    predicted_time,
    stream_scale,
)
from tokometer.fitting.lstsq import RIDGE, robust_lstsq
from tokometer.fitting.shrinkage import LevelPrior, level_prior
from tokometer.fitting.splits import group_k_fold

MIN_TG_ROWS = 6
MIN_PP_ROWS = 6

# The most of the datasheet bandwidth a weight or KV stream can realise (docs/PHYSICS.md section 4,
# "A stream's ceiling"): the best copy kernels read 89-90 % (this project's probe on an H200: 4,270 of
# 4,800 GB/s; H100 SXM ~3.0 of 3.35 TB/s), and a read-only stream saves the write turnarounds, a few
# points more at most. Fitted fractions at 1.0 were the fit pushing other terms' error into eta.
ETA_MAX = 0.95
ALU_PRIOR_FLOPS_PER_WEIGHT = 2.0  # one FMA per weight (dequant extra is what the fit finds)
ALU_PRIOR_SCALE = 20.0  # a weak pull: k_alu is set by the devices' ALU-to-bandwidth spread, not the prior
SCORE_PRIOR_BYTES = 100.0  # fp32 score traffic plus some K/V re-reads per query head
ECC_PRIOR = 0.1  # inline ECC: 1 check byte per 16-32 data bytes plus read-modify-write turnarounds
ECC_PRIOR_SCALE = 0.2
SCORE_PRIOR_SCALE = 1000.0  # weak: anything from a fused kernel (0) to no reuse at all (~530 B) is plausible
# KV-cache reads are contiguous streams like weight reads, and split-KV decode kernels (Flash-Decoding,
# Dao et al. 2023; llama.cpp's FA kernels) spread them over every SM, so they reach the same share of the
# bandwidth as the weights: the KV fraction is pinned near the weights' (1/eta within +-0.02 costs one row).
# Left free, the published rows at depth (harnesses that time decode after real prompts) pulled it to
# 0.43 on GDDR GPUs and put 64k-context decode at 27 % of empty-context speed, below the seeds' third.
KV_PRIOR_SCALE = 0.02
# tau_expert (us per routed expert per MoE layer, `roofline.expert_dispatch_time_s`): prior 0, the term must
# be earned by the rows; weak (50 us from it costs one row of relative error): anything from 0 (fused, graph-
# captured expert kernels) to a few Metal or CUDA dispatches per expert (tens of us) is plausible
EXPERT_PRIOR_US = 0.0
EXPERT_PRIOR_SCALE_US = 50.0


# b_unit candidates (GB/s per SM / CU / GPU core), 10 % apart from 2 to 60, and None (no limit)
UNIT_LIMIT_COST = 0.01  # a limit must explain more than one row's 10 % error (0.1^2) to be kept
UNIT_BANDWIDTH_GRID: tuple[float | None, ...] = (None, *(round(2.0 * 1.1**i, 3) for i in range(36)))


def fit_decode(
    rows: list[Features], prior: Efficiency, units: tuple[float | None, ...] | None = None, ridge: float = RIDGE
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
        fitted, loss = _fit_decode_linear(rows, prior, [stream_scale(f, unit) for f in rows], ridge)
        loss += 0.0 if unit is None else UNIT_LIMIT_COST
        if best is None or loss < best[0] * (1.0 - 1e-9):
            best = (loss, {**fitted, "unit_bandwidth_gb_per_s": unit})
    assert best is not None
    return best[1]


def _limits_any(rows: list[Features], unit_bandwidth_gb_per_s: float) -> bool:
    """Whether b_unit holds any row's stream below its datasheet bandwidth (else its fit is None's)."""
    return any(stream_scale(f, unit_bandwidth_gb_per_s) > 1.0 for f in rows)


def _fit_decode_linear(
    rows: list[Features], prior: Efficiency, scales: list[float], ridge: float = RIDGE
) -> tuple[dict[str, float], float]:
    """The linear decode fit with each row's stream terms stretched by its `stream_scale`; and its
    sum of squared relative errors (the ridge left out)."""
    has_plain = any(not f.quantized for f in rows)
    has_quant = any(f.quantized for f in rows)
    has_alu = any(f.alu_s > 0 for f in rows)
    q_prior = prior.quantized_bandwidth_fraction or prior.bandwidth_fraction
    kv_prior = prior.bandwidth_fraction  # the weights' streaming share (KV_PRIOR_SCALE)
    # rows whose KV stream the engine's cap C_kv holds below eta_kv (at the prior) read it at the cap: a known
    # time, moved to the target, not a column of eta_kv (`features.predicted_time` takes the max of the two)
    capped = [
        t if t > f.kv_s * k / kv_prior else 0.0
        for f, k in zip(rows, scales, strict=True)
        for t in (kv_cap_time_s(f, prior.kv_stream_gb_per_s),)
    ]
    has_kv = any(f.kv_s > 0 and not c for f, c in zip(rows, capped, strict=True))
    a = [
        [
            (0.0 if f.quantized else f.memory_s * k) / f.t_measured_s,
            (f.memory_s * k if f.quantized else 0.0) / f.t_measured_s,
            (0.0 if c else f.kv_s * k) / f.t_measured_s,
            f.alu_s / f.t_measured_s,
            f.decode_score_s * k / f.t_measured_s,
            f.ecc_s / f.t_measured_s,
            f.n_layers * 1e-6 / f.t_measured_s,
            1e-6 / f.t_measured_s,
            f.expert_s / f.t_measured_s,
        ]
        for f, k, c in zip(rows, scales, capped, strict=True)
    ]
    x, loss = robust_lstsq(
        a,
        [1.0 - c / f.t_measured_s for f, c in zip(rows, capped, strict=True)],
        [
            1.0 / prior.bandwidth_fraction,
            1.0 / q_prior,
            1.0 / kv_prior,
            prior.decode_alu_flops_per_weight or ALU_PRIOR_FLOPS_PER_WEIGHT,
            prior.decode_score_bytes or SCORE_PRIOR_BYTES,
            prior.inline_ecc_overhead or ECC_PRIOR,
            prior.layer_overhead_us,
            prior.step_overhead_us,
            prior.expert_overhead_us or EXPERT_PRIOR_US,
        ],
        [1.0 / ETA_MAX, 1.0 / ETA_MAX, 1.0 / ETA_MAX, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [None, None, KV_PRIOR_SCALE, ALU_PRIOR_SCALE, SCORE_PRIOR_SCALE, ECC_PRIOR_SCALE, None, None, EXPERT_PRIOR_SCALE_US],
        ridge,
    )
    has_ecc = any(f.ecc_s > 0 for f in rows)
    has_depth = any(f.decode_score_s > 0 for f in rows)
    has_moe = any(f.expert_s > 0 for f in rows)
    return {
        "bandwidth_fraction": 1.0 / x[0] if has_plain else prior.bandwidth_fraction,
        "quantized_bandwidth_fraction": 1.0 / x[1] if has_quant else q_prior,
        "kv_bandwidth_fraction": 1.0 / x[2] if has_kv else kv_prior,
        "decode_alu_flops_per_weight": x[3] if has_alu else prior.decode_alu_flops_per_weight,
        "decode_score_bytes": x[4] if has_depth else prior.decode_score_bytes,
        "inline_ecc_overhead": x[5] if has_ecc else prior.inline_ecc_overhead,
        "layer_overhead_us": x[6],
        "step_overhead_us": x[7],
        "expert_overhead_us": x[8] if has_moe else prior.expert_overhead_us,
    }, loss


# how far T_half may move from its prior at the cost of one row: at least 128 tokens (a matrix tile's
# width), so a parent whose fit found no half-saturation length (T_half at its bound 0) does not pin its
# children there (a prior of 0 would otherwise be a zero-width ridge)
HALF_TOKENS_SCALE = 128.0


def fit_prefill(rows: list[Features], prior: Efficiency, decode: dict[str, float], ridge: float = RIDGE) -> dict[str, float]:
    """The prefill fit (eta_plain, eta_quant, T_half, eta_attention, score bytes) with `decode`'s fixed costs."""
    return _fit_prefill(rows, prior, decode, ridge)[0]


def _fit_prefill(
    rows: list[Features], prior: Efficiency, decode: dict[str, float], ridge: float = RIDGE
) -> tuple[dict[str, float], float]:
    """`fit_prefill` and its Huber loss at `lstsq.PROFILE_HUBER_CUT` (the ridge left out), for the INT32 profile."""
    def overhead(f: Features) -> float:
        fixed = (f.n_layers * decode["layer_overhead_us"] + decode["step_overhead_us"]) * 1e-6
        return f.n_chunks * (fixed + f.expert_s * decode.get("expert_overhead_us", 0.0))

    usable = [f for f in rows if f.t_measured_s > overhead(f)]
    if not usable:
        return {}, 0.0
    has_plain = any(not f.quantized for f in usable)
    has_quant = any(f.quantized for f in usable)
    u0 = 1.0 / prior.prefill_efficiency_max
    uq0 = 1.0 / (prior.quantized_prefill_efficiency_max or prior.prefill_efficiency_max)
    w0 = 1.0 / (prior.prefill_attention_fraction or prior.prefill_efficiency_max)
    half0 = prior.prefill_half_tokens
    target = [(f.t_measured_s - overhead(f)) / f.t_measured_s for f in usable]
    # eta(T) = eta_max * T / (T + T_half) with one T_half (in tokens) for plain and block-quantized weights, as
    # the estimate reads it (`roofline.prefill_matmul_time`): a quantized row's half term is T_half / eta_quant,
    # so with v = T_half / eta_plain (the coefficient of the half-tokens column) its column carries
    # r = eta_plain / eta_quant, taken from the previous pass (bilinear in T_half and 1/eta: passes until r settles).
    # A shared v read as T_half / eta_plain for every row had quantized prompts charged T_half / eta_plain in the
    # fit and T_half / eta_quant in the estimate (an Arc BF16 row moving eta_plain 8x moved every quantized
    # prompt's predicted time with it). The score term's coefficient is the bytes moved per score.
    ratio = uq0 / u0
    x: list[float] = []
    for _ in range(HALF_TOKENS_PASSES):
        a = [
            [
                (0.0 if f.quantized else f.matmul_s) / f.t_measured_s,
                (f.matmul_s if f.quantized else 0.0) / f.t_measured_s,
                f.half_tokens_column * (ratio if f.quantized else 1.0) / f.t_measured_s,
                f.attention_s / f.t_measured_s,
                f.score_s / f.t_measured_s,
            ]
            for f in usable
        ]
        x, loss = robust_lstsq(
            a,
            target,
            [u0, uq0, half0 * u0, w0, prior.attention_score_bytes],
            [1.0, 1.0, 0.0, 1.0, 0.0],
            [None, None, max(half0, HALF_TOKENS_SCALE) * u0, None, None],
            ridge,
        )
        settled = abs(x[1] / x[0] - ratio) <= HALF_TOKENS_TOLERANCE * ratio
        ratio = x[1] / x[0]
        if settled:
            break
    eta_plain = 1.0 / x[0] if has_plain else prior.prefill_efficiency_max
    eta_quant = 1.0 / x[1] if has_quant else eta_plain
    return {
        "prefill_efficiency_max": eta_plain,
        "quantized_prefill_efficiency_max": eta_quant,
        "prefill_half_tokens": x[2] / x[0],
        "prefill_attention_fraction": 1.0 / x[3],
        "attention_score_bytes": x[4],
    }, loss


# K candidates (FP16 tensor FLOPs per INT32 operation, `Efficiency.int32_flop_per_op`), 15 % apart from 4 to
# 37, and None (no bound): from a dequantizing kernel that spends a few INT32 ops per MMA FLOP's worth of
# weights to one whose unpacking hides behind the tensor rate on every catalogued device (A100's tensor rate is
# 16x its INT32 rate, Orin's 16x, Hopper's mma.sync path 15x; docs/PHYSICS.md section 4, "the INT32 bound")
INT32_GRID: tuple[float | None, ...] = (None, *(round(4.0 * 1.15**i, 3) for i in range(17)))
INT32_LIMIT_COST = UNIT_LIMIT_COST  # a bound must explain more than one row's 10 % error, as b_unit must


def fit_int32(
    rows: list[Features], prior: Efficiency, decode: dict[str, float], ridge: float = RIDGE,
    candidates: tuple[float | None, ...] = INT32_GRID,
) -> tuple[float | None, dict[str, float]]:
    """The INT32 bound K that explains the engine's prompt rows best, and the prefill fit at it.

    K enters as min(peak, K x INT32 rate) (`roofline.int32_cap`), not linearly, so each of `candidates`
    is a prefill fit of its own on the rows priced at its peak (`features.int32_limited`); a bound must
    beat none by `INT32_LIMIT_COST`. Among several candidates, one that bounds no row is the same fit as
    None and is skipped; a single one (a K held while bands are sized) is fitted as it is.
    """
    grid = candidates
    if len(candidates) > 1:
        grid = tuple(k for k in candidates if k is None or any(int32_scale(f, k) > 1.0 for f in rows))
    best: tuple[float, float | None, dict[str, float]] | None = None
    for k in grid:
        fitted, loss = _fit_prefill([int32_limited(f, k) for f in rows], prior, decode, ridge)
        loss += 0.0 if k is None else INT32_LIMIT_COST
        if best is None or loss < best[0] * (1.0 - 1e-9):
            best = (loss, k, fitted)
    assert best is not None
    return best[1], best[2]


HALF_TOKENS_PASSES = 20  # at most this many passes of the shared-T_half prefill fit (`fit_prefill`)
HALF_TOKENS_TOLERANCE = 1e-3  # until eta_plain / eta_quant moves less than this share between passes


def _log_sd(rows: list[Features], eff: Efficiency) -> float | None:
    logs = [math.log(predicted_time(f, eff) / f.t_measured_s) for f in rows]
    if len(logs) < 3:
        return None
    return band_sd(logs)


def fit_one(
    tg: list[Features],
    pp: list[Features],
    prior: Efficiency,
    source: str,
    units: tuple[float | None, ...] | None = None,
    ridges: tuple[float, float] = (RIDGE, RIDGE),
    int32s: tuple[float | None, ...] | None = None,
) -> Efficiency:
    """One group's decode then prefill fit, each ridged toward `prior` with `ridges` (decode, prefill).

    `int32s`: the INT32 bounds K to profile (`fit_int32`; the grid where None is passed is not searched:
    the group keeps its prior's K and its prompt rows are priced at the peak that K leaves)."""
    decode = fit_decode(tg, prior, units, ridges[0]) if len(tg) >= MIN_TG_ROWS else {}
    base = replace(prior, **decode) if decode else prior  # type: ignore[arg-type]
    overheads = {
        "layer_overhead_us": base.layer_overhead_us,
        "step_overhead_us": base.step_overhead_us,
        "expert_overhead_us": base.expert_overhead_us,
    }
    int32 = prior.int32_flop_per_op
    pre: dict[str, float] = {}
    if len(pp) >= MIN_PP_ROWS:
        if int32s is not None:
            int32, pre = fit_int32(pp, base, overheads, ridges[1], int32s)
        else:
            pre = fit_prefill([int32_limited(f, int32) for f in pp], base, overheads, ridges[1])
    eff = replace(base, **pre, int32_flop_per_op=int32, source=source)  # type: ignore[arg-type]
    sd_tg = _log_sd(tg, eff)
    sd_pp = _log_sd(pp, eff)
    return replace(
        eff,
        residual_log_sd=max(sd_tg, 0.05) if sd_tg is not None else prior.residual_log_sd,
        prefill_residual_log_sd=max(sd_pp, 0.05) if sd_pp is not None else prior.prefill_residual_log_sd,
    )


def fit_table(
    feats: Iterable[Features],
    source: str = "fitted",
    held: dict[str, Efficiency] | None = None,
    priors: dict[int, tuple[LevelPrior, LevelPrior]] | None = None,
) -> dict[str, Efficiency]:
    """Fit every group key level by level, each shrunk toward its parent (`shrinkage`).

    Levels: the engine (`engine/*/*`, parent: its documented default in engines.toml), the backend
    (`engine/backend/*`, parent: the engine's fit), the hardware class (`engine/backend/class`,
    parent: the backend's fit); an engine fitted apart (`own_fit` in engines.toml) has the fit of the engine it
    is based on as its parent at the top. Each level's pull toward the parent is estimated from the data
    (`shrinkage.level_prior` on the log errors of the parent's prediction of each group's rows), so
    a thin group keeps its parent's values and a thick one its own. `held`: keep each key's b_unit;
    `priors`: filled with each level's (decode, prefill) `LevelPrior`.
    """
    by_key: dict[str, list[Features]] = defaultdict(list)
    for f in feats:
        for key in _keys(f.group):
            by_key[key].append(f)
    table: dict[str, Efficiency] = {}
    for level in range(3):
        keys = sorted(k for k in by_key if _level(k) == level)
        # engines fitted apart (`own_fit`) come after the engines they are shrunk toward, with their own pull
        apart = [k for k in keys if _engine_parent_key(k) is not None]
        _fit_level(by_key, [k for k in keys if k not in apart], level, table, source, held, priors)
        if apart:
            _fit_level(by_key, apart, level, table, source, held, None)
    return table


def _fit_level(
    by_key: dict[str, list[Features]],
    keys: list[str],
    level: int,
    table: dict[str, Efficiency],
    source: str,
    held: dict[str, Efficiency] | None,
    priors: dict[int, tuple[LevelPrior, LevelPrior]] | None,
) -> None:
    """Fit `keys` (all of one level) into `table`, each shrunk toward its parent entry."""
    parents = {k: _parent(k, table, by_key[k][0].prior) for k in keys}
    # a group that is its parent's only child has its parent's rows: it says nothing of the spread
    informative = [k for k in keys if level == 0 or len(by_key[k]) < len(by_key[_parent_key(k)])]
    # a class level holds two kinds of groups: memory systems (gddr, hbm, unified...) and, where a
    # vendor's backend spans GPU generations, architecture families; each kind's spread around the
    # backend is its own (the gap between two GPU generations is not the gap between memory systems)
    kind_priors = kind_level_priors(
        {k: (_log_errors(by_key[k], parents[k], "tg"), _log_errors(by_key[k], parents[k], "pp")) for k in informative}
    )
    tg_prior, pp_prior = kind_priors["memory"]
    if priors is not None:
        priors[level] = (tg_prior, pp_prior)
    for key in keys:
        tg_prior, pp_prior = kind_priors.get(_class_kind(key), kind_priors["memory"])
        tg = [f for f in by_key[key] if f.case.metric == "tg"]
        pp = [f for f in by_key[key] if f.case.metric == "pp"]
        if len(tg) < MIN_TG_ROWS and len(pp) < MIN_PP_ROWS:
            continue
        units = (held[key].unit_bandwidth_gb_per_s,) if held is not None and key in held else None
        if GroupKey.parse(key).hardware_class == ANY:
            # b_unit belongs to one class of memory system; a fallback entry serves devices of other
            # classes (CPUs, ROCm, Vulkan) and keeps the terms that need no unit count
            units = (None,)
        # K is the engine's kernels' property, not a device class's: profiled once at the engine level, where the
        # prompt rows include INT32-bound devices; every level below, and an engine fitted apart, keeps its parent's
        int32s = None
        if level == 0 and _engine_parent_key(key) is None and any(f.int32_tflops > 0 for f in pp):
            int32s = (held[key].int32_flop_per_op,) if held is not None and key in held else INT32_GRID
        table[key] = fit_one(tg, pp, parents[key], source, units, (tg_prior.ridge, pp_prior.ridge), int32s)


def kind_level_priors(
    errors: dict[str, tuple[list[float], list[float]]],
) -> dict[str, tuple[LevelPrior, LevelPrior]]:
    """(decode, prefill) `LevelPrior` per kind of group (`_class_kind`: "memory" always present,
    "architecture" where such groups exist), each estimated from its own kind's groups only:
    `errors` maps a group key to its rows' log errors under the parent, (tg, pp)."""
    kinds = {key: _class_kind(key) for key in errors}
    return {
        kind: (
            level_prior({k: v[0] for k, v in errors.items() if kinds[k] == kind}),
            level_prior({k: v[1] for k, v in errors.items() if kinds[k] == kind}),
        )
        for kind in sorted({"memory", *kinds.values()})
    }


def _class_kind(key: str) -> str:
    """"architecture" for a class that names a GPU architecture family (`domain.specs.ARCH_CLASSES`),
    else "memory" (the memory-system classes, and the engine and backend levels)."""
    from tokometer.domain.specs import ARCH_CLASSES

    return "architecture" if GroupKey.parse(key).hardware_class in ARCH_CLASSES else "memory"


def _engine_parent_key(key: str) -> str | None:
    """`parent/*/*` for an engine-level key of an engine fitted apart (`own_fit`), else None."""
    from tokometer.catalog.efficiency import parent_fit_engine_id

    engine, backend, hardware_class = GroupKey.parse(key)
    if backend != ANY or hardware_class != ANY:
        return None
    parent = parent_fit_engine_id(engine)
    return str(GroupKey(parent, ANY, ANY)) if parent is not None else None


def _level(key: str) -> int:
    """0 for `engine/*/*`, 1 for `engine/backend/*`, 2 for `engine/backend/class`."""
    _, backend, hardware_class = GroupKey.parse(key)
    return 0 if backend == ANY else (1 if hardware_class == ANY else 2)


def _parent_key(key: str) -> str:
    """The key one level up (`engine/backend/*` for a class, `engine/*/*` for a backend)."""
    engine, backend, _ = GroupKey.parse(key)
    return str(GroupKey(engine, backend, ANY) if _level(key) == 2 else GroupKey(engine, ANY, ANY))


def _parent(key: str, table: dict[str, Efficiency], default: Efficiency) -> Efficiency:
    """The fitted entry one level up (the engine's default at the top, or where the parents were too thin)."""
    engine, backend, _ = GroupKey.parse(key)
    level = _level(key)
    ups = [str(GroupKey(engine, backend, ANY))] if level == 2 else []
    ups += [str(GroupKey(engine, ANY, ANY))] if level >= 1 else []
    ups += [k] if level == 0 and (k := _engine_parent_key(key)) is not None else []
    return next((table[k] for k in ups if k in table), default)


def _log_errors(rows: list[Features], parent: Efficiency, metric: str) -> list[float]:
    return [math.log(predicted_time(f, parent) / f.t_measured_s) for f in rows if f.case.metric == metric]


def lookup(table: dict[str, Efficiency], group: str) -> Efficiency | None:
    """The entry a group reads: its own keys most specific first, then (an engine fitted apart) its parent's."""
    found = GroupKey.parse(group)
    for key in found.fallbacks():
        if key in table:
            return table[key]
    parent = _engine_parent_key(str(GroupKey(found.engine, ANY, ANY)))
    if parent is not None:
        return lookup(table, str(GroupKey(GroupKey.parse(parent).engine, found.backend, found.hardware_class)))
    return None


def _keys(group: str) -> tuple[str, ...]:
    engine, backend, _ = GroupKey.parse(group)
    return (group, str(GroupKey(engine, backend, ANY)), str(GroupKey(engine, ANY, ANY)))


LEVEL_NAMES = ("engine", "backend", "class")  # `fit_table`'s levels, top down
# devices and sources are held out in this many folds each to size the bands (leave-one-out where
# there are fewer): 2 x 10 inner fits per table, so a cross-validation of 50 sources stays minutes
BAND_FOLDS = 10


def fit_with_bands(
    feats: list[Features], source: str = "fitted", meta: dict[str, Any] | None = None
) -> dict[str, Efficiency]:
    """Fit a table, then size each entry's 80 % band from errors on rows the fit did not see.

    The band a user gets must come from what is new to the fit where the user stands: each training
    device and each training source is predicted (in closed form, from its features) by a fit
    without it (devices and sources dealt into `BAND_FOLDS` folds each, `splits.group_k_fold`), and the band of every entry is the wider of the two that hold 80 % of those
    out-of-sample errors (`bands.grouped_band_sd`). The inner fits keep the table's b_unit (its
    profile search costs one fit per candidate) and refit the linear terms. `meta`: filled with
    the spread of an unseen group around its parent per level (meta keys of
    `catalog.efficiency.UNSEEN_KEYS`), which widens a borrowed entry's band, and the architecture
    families' offsets (`FAMILY_OFFSETS_KEY`, `fitting.families_fit`), which `efficiency_for` applies.
    """
    priors: dict[int, tuple[LevelPrior, LevelPrior]] = {}
    table = fit_table(feats, source=source, priors=priors)
    offsets = family_offsets(feats, functools.partial(lookup, table), _source_of)
    if meta is not None:
        for level, (tg_prior, pp_prior) in priors.items():
            meta[UNSEEN_KEYS["tg"][LEVEL_NAMES[level]]] = round(tg_prior.tau, 6)
            meta[UNSEEN_KEYS["pp"][LEVEL_NAMES[level]]] = round(pp_prior.tau, 6)
        meta[FAMILY_OFFSETS_KEY] = offsets
    errors: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: {"tg": defaultdict(list), "pp": defaultdict(list)}
    )
    for split, group_of in (("hardware", _hardware_of), ("source", _source_of)):
        for fold in group_k_fold(feats, group_of, BAND_FOLDS):
            inner = fit_table(list(fold.train), held=table)
            inner_offsets = family_offsets(list(fold.train), functools.partial(lookup, inner), _source_of)
            for f in fold.test:
                eff = lookup(inner, f.group)
                if eff is None:
                    continue
                eff = family_scaled(eff, inner_offsets, f.family)
                error = math.log(predicted_time(f, eff) / f.t_measured_s)
                for key in _keys(f.group):
                    errors[key][f.case.metric][split].append(error)
    for key, eff in list(table.items()):
        found = errors.get(key)
        if not found:
            continue
        changes: dict[str, float] = {}
        sd_tg = grouped_band_sd(found["tg"])
        sd_pp = grouped_band_sd(found["pp"])
        if sd_tg is not None:
            changes["residual_log_sd"] = sd_tg
        if sd_pp is not None:
            changes["prefill_residual_log_sd"] = sd_pp
        table[key] = replace(eff, **changes)  # type: ignore[arg-type]
    return _with_engines_seen(table, feats)


def _with_engines_seen(table: dict[str, Efficiency], feats: list[Features]) -> dict[str, Efficiency]:
    """Each entry with the engines whose rows trained it (`Efficiency.engines_seen`): an engine pooled with
    its parent but never measured (held out, or without a source) reads the entry with a widened band."""
    by_group: dict[str, set[str]] = defaultdict(set)
    for f in feats:
        if f.row_engine:
            by_group[f.group].add(f.row_engine)
    out = {}
    for key, eff in table.items():
        seen = set().union(*(engines for group, engines in by_group.items() if matches(group, key)))
        out[key] = replace(eff, engines_seen=tuple(sorted(seen))) if seen else eff
    return out


def _hardware_of(f: Features) -> str:
    return f.hardware_id


def _source_of(f: Features) -> str:
    return f.case.text("source_id") or "(no source_id)"


def matches(group: str, key: str) -> bool:
    return GroupKey.parse(group).matches(GroupKey.parse(key))
