"""Fit the serving efficiency per engine on published serving data, reproducibly.

Parameters per engine (`ServingEfficiency`): the batched-compute efficiency curve
`eta_c(T) = f_max * T / (T + T_half)`, the plateau `q_max` of prompt tokens' GEMM efficiency, the
fixed cost of one engine step and the cost of each sequence that emits a token in a step. They are
fitted on the
offline and static-batch rows (`tput_out`, and `ttft_*_mean` of static batches), whose schedules do
not depend on step times: every request is there at t = 0, so which tokens each step carries is
fixed by the scheduler and the KV cache alone. Each such run is simulated once with recording; a
step's time under other parameters is then

    t = max(weights_s, (decode_gemm_s * (T + T_half) / f_max + prefill_gemm_s * (T + Q_half) / q_max) / T)
        + max(kv_s, attention_s / f_max) + fixed_s + step_overhead + sequence_overhead * S

and the run's throughput and mean TTFT follow in numpy. Runs of up to 256 consecutive steps carrying
the same numbers of tokens and prompt tokens are kept as one block with their mean bytes and FLOPs (a
step that emits first tokens closes its block), which keeps the fit to seconds. The loss is the sum
of squared log errors; a coarse grid over four parameters with `q_max` at its prior, a line search
over `q_max` at that best and the coarse grid again under it, then a finer grid over all five around
the best, moved until it stays put (deterministic: same data, same values). A pooled entry `*` fitted on every engine's rows serves engines without data of their own
(fewer than 8 rows); it leaves `q_max` to each setup's single-stream prefill physics
(`Efficiency.prefill_max_for`; `Q_half` is always its `prefill_half_tokens`), so an engine whose
source is held out predicts its prompts from physics, not from another engine's serving fit.
Leave-one-source-out cross-validation refits without each source and scores it with what remains
(`validate_serving(loso=True)`, which `tokometer validate` calls on a file with serving columns).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from tokometer.costmodel.serving import ServingEfficiency
from tokometer.usecases.serving_validate import (
    METRIC,
    UNIT_S,
    RowResult,
    Run,
    deploy_run,
    group_runs,
    predict,
    read_rows,
    report,
    sized_workload,
)

PRIOR = ServingEfficiency()
GRID_F = tuple(round(0.15 + 0.05 * i, 2) for i in range(18))  # 0.15 .. 1.0
GRID_HALF = (0.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0)
GRID_OVERHEAD_US = tuple(float(x) for x in range(0, 15001, 250))
GRID_SEQUENCE_US = tuple(float(x) for x in range(0, 61, 2))  # per emitting sequence per step
MIN_ENGINE_ROWS = 8  # fewer rows than this: the engine uses the pooled entry (2 rows would fit anything)
CHUNK = 64  # candidates evaluated together (bounds memory: CHUNK x blocks per run)
FINE_ROUNDS = 4  # moves of the finer grid at most
BLOCK_STEPS = 256  # consecutive steps of equal size are evaluated as one block (their mean bytes and FLOPs)


@dataclass
class Recording:
    """One offline/static run's steps under the prior, and the rows it is scored on."""

    engine: str
    source: str
    tokens: np.ndarray  # per block of steps: tokens each step carries
    steps: np.ndarray  # steps in the block
    weights_s: np.ndarray  # mean per step: weight bytes / bandwidth
    decode_gemm_s: np.ndarray  # mean per step: decode tokens' linear-layer FLOPs / peak (efficiency 1)
    prefill_gemm_s: np.ndarray  # mean per step: prompt tokens' linear-layer FLOPs / peak (efficiency 1)
    kv_s: np.ndarray  # mean per step: KV bytes / bandwidth
    attention_s: np.ndarray  # mean per step: attention FLOPs / peak
    fixed_s: np.ndarray  # whole block: per-layer launches and communication (not the engine step overhead)
    out_tokens: float
    first_tokens: np.ndarray
    emitting: np.ndarray  # whole block: sequences that emitted a token (decodes + first tokens)
    targets: list[tuple[str, float]]  # ("tput_out", tok/s) or ("ttft_mean", s)
    prefill_max: float  # single-stream prefill plateau of this run's setup (the prior of q_max)
    prefill_half: float  # single-stream prefill half-efficiency tokens (Q_half)

    def gemm(self, f: Any, half: Any, q: Any) -> Any:
        """Seconds of each block's GEMMs per step; arguments are scalars or column vectors of candidates."""
        t = self.tokens
        return (self.decode_gemm_s * (t + half) / f + self.prefill_gemm_s * (t + self.prefill_half) / q) / t

    def predict(self, eff: ServingEfficiency) -> dict[str, float]:
        f = eff.compute_fraction_max
        q = eff.prefill_fraction_max or self.prefill_max
        per = np.maximum(self.weights_s, self.gemm(f, eff.compute_half_tokens, q))
        per = per + np.maximum(self.kv_s, self.attention_s / f)
        t = self.steps * (per + eff.step_overhead_us * 1e-6) + self.fixed_s + self.emitting * eff.sequence_overhead_us * 1e-6
        total = float(t.sum())
        out = {"tput_out": self.out_tokens / total if total > 0 else math.nan}
        n_first = float(self.first_tokens.sum())
        if n_first:
            out["ttft_mean"] = float((np.cumsum(t) * self.first_tokens).sum() / n_first)
        return out


def _blocks(tokens: np.ndarray, firsts: np.ndarray, prompt: np.ndarray, limit: int = BLOCK_STEPS) -> np.ndarray:
    """Start indices of blocks of consecutive steps with the same token and prompt-token counts, at most
    `limit` long; a step that emits first tokens ends its block (so TTFTs are counted at the right time)."""
    edges = (np.diff(tokens) != 0) | (np.diff(prompt) != 0)
    change = np.union1d(np.flatnonzero(edges) + 1, np.flatnonzero(firsts[:-1] > 0) + 1)
    starts = [0]
    for edge in [*change.tolist(), len(tokens)]:
        last = starts[-1]
        while edge - last > limit:
            last += limit
            starts.append(last)
        if edge < len(tokens):
            starts.append(edge)
    return np.array(starts, dtype=np.int64)


def record_run(run: Run) -> Recording | None:
    from tokometer.costmodel.serving import simulate

    targets: list[tuple[str, float]] = []
    for row in run.rows:
        if row.metric == "tput_out":
            targets.append(("tput_out", row.value))
        m = METRIC.match(row.metric)
        if m and m.group(1) == "ttft" and m.group(3) == "mean" and run.rows[0].scenario == "static-batch":
            targets.append(("ttft_mean", row.value * UNIT_S[m.group(2)]))
    if not targets or run.reason is not None or run.workload is None:
        return None
    dep = deploy_run(run, PRIOR)
    steps: list[tuple[float, float, float, int, int]] = []
    simulate(dep.cost, dep.policy, dep.kv_capacity_tokens, sized_workload(run, dep), record=steps,
             max_context_tokens=dep.max_context_tokens)
    if not steps:
        return None
    a = np.array(steps, dtype=float)  # tokens, KV tokens read, attention pairs, decodes, first tokens
    tokens = a[:, 0]
    prompt = tokens - a[:, 3]
    c = dep.cost
    routed = c.routed_bytes * (1.0 - (1.0 - c.experts_k_over_e) ** tokens) if c.routed_bytes else 0.0
    weights_s = (c.weight_fixed_bytes + c.embedding_row_bytes * tokens + routed) / c.bandwidth_bytes_per_s
    kv_s = c.kv_token_bytes * (a[:, 1] + tokens) / c.bandwidth_bytes_per_s
    peak = c.peak_flops or math.inf
    decode_gemm_s = c.matmul_flops_per_token * a[:, 3] / peak
    prefill_gemm_s = c.matmul_flops_per_token * prompt / peak
    attention_s = c.attention_flops_per_pair * a[:, 2] / peak
    fixed = (c.overhead_s - PRIOR.step_overhead_us * 1e-6) + c.comm_s(tokens)
    starts = _blocks(tokens, a[:, 4], prompt)
    n = np.diff(np.append(starts, len(tokens))).astype(float)
    return Recording(
        engine=run.engine, source=run.source, tokens=tokens[starts], steps=n,
        weights_s=np.add.reduceat(weights_s, starts) / n, decode_gemm_s=np.add.reduceat(decode_gemm_s, starts) / n,
        prefill_gemm_s=np.add.reduceat(prefill_gemm_s, starts) / n,
        kv_s=np.add.reduceat(kv_s, starts) / n, attention_s=np.add.reduceat(attention_s, starts) / n,
        fixed_s=np.add.reduceat(fixed, starts), out_tokens=float(a[:, 3].sum() + a[:, 4].sum()),
        first_tokens=np.add.reduceat(a[:, 4], starts), emitting=np.add.reduceat(a[:, 3] + a[:, 4], starts),
        targets=targets, prefill_max=c.prefill_fraction_max, prefill_half=c.prefill_half_tokens,
    )


def loss(recs: Sequence[Recording], eff: ServingEfficiency) -> float:
    total = 0.0
    for rec in recs:
        pred = rec.predict(eff)
        for name, measured in rec.targets:
            value = pred.get(name)
            if value is None or not (value > 0):
                total += 25.0
            else:
                total += math.log(value / measured) ** 2
    return total


def losses(
    recs: Sequence[Recording], f: np.ndarray, half: np.ndarray, overhead_us: np.ndarray, sequence_us: np.ndarray,
    prefill: np.ndarray | None = None,
) -> np.ndarray:
    """`loss` for many candidates at once (arrays of equal length), broadcast over each run's blocks;
    `prefill` holds each candidate's q_max, NaN (or None for all) meaning each run's single-stream prior."""
    q_all = np.full(len(f), np.nan) if prefill is None else prefill
    if len(f) > CHUNK:
        return np.concatenate([
            losses(recs, f[i : i + CHUNK], half[i : i + CHUNK], overhead_us[i : i + CHUNK], sequence_us[i : i + CHUNK],
                   q_all[i : i + CHUNK])
            for i in range(0, len(f), CHUNK)
        ])
    total = np.zeros(len(f))
    f_, h_, o_, s_ = f[:, None], half[:, None], overhead_us[:, None] * 1e-6, sequence_us[:, None] * 1e-6
    for rec in recs:
        q_ = np.where(np.isnan(q_all), rec.prefill_max, q_all)[:, None]
        per = np.maximum(rec.weights_s, rec.gemm(f_, h_, q_))
        per = per + np.maximum(rec.kv_s, rec.attention_s / f_)
        t = rec.steps * (per + o_) + rec.fixed_s + rec.emitting * s_
        pred = {"tput_out": rec.out_tokens / t.sum(axis=1)}
        n_first = float(rec.first_tokens.sum())
        if n_first:
            pred["ttft_mean"] = (np.cumsum(t, axis=1) * rec.first_tokens).sum(axis=1) / n_first
        for name, measured in rec.targets:
            value = pred.get(name)
            if value is None:
                total += 25.0
            else:
                total += np.log(np.maximum(value, 1e-30) / measured) ** 2
    return total


def _near(grid: Sequence[float], value: float, steps: int) -> list[float]:
    """`value`'s grid point and `steps` points either side of it."""
    i = min(range(len(grid)), key=lambda k: abs(grid[k] - value))
    return list(grid[max(0, i - steps) : i + steps + 1])


def fit(recs: Sequence[Recording], source: str = "fitted", *, prefill: bool = True) -> ServingEfficiency:
    """A coarse grid over (f_max, T_half, step overhead, sequence overhead) with q_max at its prior, a
    line search over q_max (`prefill`) and the coarse grid again under it, then a finer grid over all
    five around the best, moved to its own best until it stays put; deterministic.
    `prefill=False` leaves q_max to each setup's single-stream prefill physics (the pooled entry)."""
    best = replace(PRIOR, source=source)
    if not recs:
        return best

    def search(
        fs: Sequence[float], hs: Sequence[float], os_: Sequence[float], ss: Sequence[float], qs: Sequence[float]
    ) -> tuple[float, float, float, float, float]:
        f, h, o, s, q = (a.ravel() for a in np.meshgrid(fs, hs, os_, ss, qs, indexing="ij"))
        i = int(np.argmin(losses(recs, f, h, o, s, q)))
        return float(f[i]), float(h[i]), float(o[i]), float(s[i]), float(q[i])

    coarse = (GRID_F[::2], GRID_HALF, GRID_OVERHEAD_US[::6], GRID_SEQUENCE_US[::5])
    f0, h0, o0, s0, q0 = search(*coarse, [math.nan])
    if prefill:  # the prompts' plateau at that best, then the coarse grid again under it
        _, _, _, _, q0 = search([f0], [h0], [o0], [s0], GRID_F)
        f0, h0, o0, s0, q0 = search(*coarse, [q0])
    point = (f0, h0, o0, s0, q0)
    for _ in range(FINE_ROUNDS):  # the finer grid, moved to its best until it stays put
        f0, h0, o0, s0, q0 = point
        nearby = search(
            _near(GRID_F, f0, 1), _near(GRID_HALF, h0, 1), _near(GRID_OVERHEAD_US, o0, 4), _near(GRID_SEQUENCE_US, s0, 3),
            _near(GRID_F, q0, 1) if prefill else [math.nan],
        )
        if nearby == point:
            break
        point = nearby
    f1, h1, o1, s1, q1 = point
    return replace(
        best, compute_fraction_max=f1, compute_half_tokens=h1, step_overhead_us=o1, sequence_overhead_us=s1,
        prefill_fraction_max=None if math.isnan(q1) else q1,
    )


def fit_table(recs: Sequence[Recording]) -> dict[str, ServingEfficiency]:
    engines = sorted({r.engine for r in recs})
    table: dict[str, ServingEfficiency] = {}
    for e in engines:
        mine = [r for r in recs if r.engine == e]
        if sum(len(r.targets) for r in mine) >= MIN_ENGINE_ROWS:
            table[e] = fit(mine, f"fitted on {e} rows")
    table["*"] = fit(recs, "pooled fit over every engine's rows", prefill=False)
    return table


def lookup(table: dict[str, ServingEfficiency]) -> Callable[[str], ServingEfficiency]:
    return lambda engine: table.get(engine) or table["*"]


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def table_json(table: dict[str, ServingEfficiency], recs: Sequence[Recording], data: Path) -> dict[str, Any]:
    entries = {}
    for key, eff in table.items():
        mine = [r for r in recs if key == "*" or r.engine == key]
        entries[key] = {
            "compute_fraction_max": eff.compute_fraction_max,
            "compute_half_tokens": eff.compute_half_tokens,
            "step_overhead_us": eff.step_overhead_us,
            "sequence_overhead_us": eff.sequence_overhead_us,
            "prefill_fraction_max": eff.prefill_fraction_max,
            "n_runs": len(mine),
            "n_rows": sum(len(r.targets) for r in mine),
            "rms_log_error": round(math.sqrt(loss(mine, eff) / max(1, sum(len(r.targets) for r in mine))), 4),
        }
    return {
        "data": "calibration_data/serving.csv",
        "data_sha256": file_sha256(data),
        "method": "tokometer.usecases.serving_fit: offline and static-batch runs (tput_out; static ttft mean), "
        "squared log error, coarse grid over four parameters, a line search over the prefill plateau (per engine; "
        "the pooled entry keeps single-stream prefill physics), then a finer grid around the best",
        "entries": entries,
    }


def recordings(path: Path) -> tuple[list[Run], list[Recording]]:
    rows, _ = read_rows(path)
    runs = group_runs(rows)
    recs = [r for r in (record_run(run) for run in runs) if r is not None]
    return runs, recs


def calibrate_serving(path: Path, out: Path | None = None) -> dict[str, Any]:
    """Fit every engine and the pooled entry; write the JSON table when `out` is given."""
    _, recs = recordings(path)
    table = fit_table(recs)
    data = table_json(table, recs, path)
    if out is not None:
        out.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return data


def leave_one_source_out(runs: Sequence[Run], recs: Sequence[Recording]) -> list[RowResult]:
    """Fit without each source, predict that source's rows with what remains (its engine falls back to `*`)."""
    out: list[RowResult] = []
    for source in sorted({run.source for run in runs}):
        table = fit_table([r for r in recs if r.source != source])
        held = [run for run in runs if run.source == source]
        out += predict(held, lookup(table), naive=False)
    return out


def validate_serving(path: str | Path, *, loso: bool = False) -> dict[str, Any]:
    """Predict every serving row through the simulator; `loso` adds leave-one-source-out scores.

    The report: `metrics.<metric>.{n,scored,median_ape,p90_ape,within_15,naive_median_ape}`, the
    same per scenario, `unpredictable` rows with their reasons, and `results` row by row.
    """
    from tokometer.catalog.serving import serving_efficiency

    parsed, bad = read_rows(path)
    runs = group_runs(parsed)
    rep = report(predict(runs, serving_efficiency) + bad)
    if loso:
        recs = [r for r in (record_run(run) for run in runs) if r is not None]
        cv = report(leave_one_source_out(runs, recs))
        rep["loso"] = {"metrics": cv["metrics"], "scenarios": cv["scenarios"]}
    return rep
