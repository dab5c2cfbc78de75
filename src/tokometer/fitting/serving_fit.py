"""Fit the serving efficiency per engine on published serving data, reproducibly.

Parameters per engine (`ServingEfficiency`): the batched-compute efficiency curve
`eta_c(T) = f_max * T / (T + T_half)`, the plateau `q_max` of prompt tokens' GEMM efficiency, the
fixed cost of one engine step per layer the device runs and the cost of each sequence that emits a
token in a step. They are fitted on the offline and static-batch rows (`tput_out`, and the
`ttft_*_mean` and `itl_*_p50` of static batches), whose schedules do not depend on step times: every
request is there at t = 0, so which tokens each step carries is fixed by the scheduler and the KV
cache alone. Each such run is simulated once with recording; a step's time under other parameters
is then

    t = max(weights_s, (decode_gemm_s * (T + T_half) / f_max + prefill_gemm_s * (T + Q_half) / q_max) / T)
        + max(kv_s, attention_s / f_max) + fixed_s + L * layer_step_overhead + sequence_overhead * S

and the run's throughput, mean TTFT and median inter-token latency (the decode steps' times, each
weighted by the sequences it decodes, as the simulator counts them) follow in numpy. The median ITL
is what pins the step overhead down: a static batch's decode step is its weights, its KV and its
fixed costs, with no prompt in it, so throughput alone would let a large overhead stand in for
prefill or compute that the fit got wrong. Runs of up to 256 consecutive steps carrying the same
numbers of tokens and prompt tokens are kept as one block with their mean bytes and FLOPs (a step
that emits first tokens closes its block), which keeps the fit to seconds; the ITL median is read
between the blocks' means, each standing at the middle of its share of the decodes.

The loss is the Cauchy loss of each target's log error (scale 0.35: square while small, logarithmic
beyond). Some static-batch TTFTs are 2-4x what any step cost gives (79 ms measured for LMDeploy's
32 x 128-token Llama 2 7B batch, whose prefill is about 20 ms: the benchmark's client threads reach
the engine one after another); under a squared loss those few rows set the per-sequence overhead.
The search: a coarse grid over four parameters with `q_max` at its prior, a line search over `q_max`
at that best and the coarse grid again under it, then a finer grid over all five around the best,
moved until it stays put (deterministic: same data, same values). A pooled entry `*` fitted on
every engine's rows serves engines without data of their own (fewer than 8 rows); it leaves `q_max`
to each setup's single-stream prefill physics (`Efficiency.prefill_max_for`; `Q_half` is always its
`prefill_half_tokens`), so an engine whose source is held out predicts its prompts from physics,
not from another engine's serving fit.
Leave-one-source-out cross-validation refits without each source and scores it with what remains
(`validate_serving(loso=True)`, which `tokometer validate` calls on a file with serving columns).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from tokometer.costmodel.serving import ServingEfficiency
from tokometer.costmodel.serving.engine import StepRecord
from tokometer.fitting.serving_report import report
from tokometer.fitting.serving_runs import (
    DEFAULT_TIME_LIMIT_S,
    METRIC,
    UNIT_S,
    RowResult,
    Run,
    group_runs,
    read_rows,
)
from tokometer.fitting.serving_validate import deploy_run, predict, sized_workload
from tokometer.fitting.time_limit import TimeLimitError, time_limit

PRIOR = ServingEfficiency()
BARE = replace(PRIOR, layer_step_overhead_us=0.0, sequence_overhead_us=0.0)  # records runs without the fitted overheads
GRID_F = tuple(round(0.15 + 0.05 * i, 2) for i in range(18))  # 0.15 .. 1.0
GRID_HALF = (0.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0)
GRID_OVERHEAD_US = tuple(float(x) for x in range(0, 481, 8))  # per layer the device runs, per step
GRID_SEQUENCE_US = tuple(float(x) for x in range(0, 61, 2))  # per emitting sequence per step
MIN_ENGINE_ROWS = 8  # fewer rows than this: the engine uses the pooled entry (2 rows would fit anything)
CHUNK = 64  # candidates evaluated together (bounds memory: CHUNK x blocks per run)
FINE_ROUNDS = 4  # moves of the finer grid at most
BLOCK_STEPS = 256  # consecutive steps of equal size are evaluated as one block (their mean bytes and FLOPs)
ROBUST_LOG = 0.35  # scale of the Cauchy loss, in log error (a factor 1.42)
RECORD_TIME_LIMIT_S = 60.0  # wall time of one recorded run; a run that never ends is left out of the fit
STATIC_TARGETS = {("ttft", "mean"): "ttft_mean", ("itl", "p50"): "itl_p50"}  # static-batch latencies fitted on


@dataclass
class Recording:
    """One offline/static run's steps (recorded without the engine overheads), and the rows it is scored on."""

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
    decodes: np.ndarray  # whole block: sequences decoded (the weight of the block's steps in the ITL median)
    layers: float  # layers the device runs (n_layers / pp): the step overhead is paid per layer
    out_tokens: float
    first_tokens: np.ndarray  # whole block: requests' first tokens (not the next token of a recomputed prompt)
    emitting: np.ndarray  # whole block: sequences that emitted a token (decodes + first tokens)
    targets: list[tuple[str, float]]  # ("tput_out", tok/s), ("ttft_mean", s) or ("itl_p50", s)
    prefill_max: float  # single-stream prefill plateau of this run's setup (the prior of q_max)
    prefill_half: float  # single-stream prefill half-efficiency tokens (Q_half)

    def gemm(self, f: Any, half: Any, q: Any) -> Any:
        """Seconds of each block's GEMMs per step; arguments are scalars or column vectors of candidates."""
        t = self.tokens
        return (self.decode_gemm_s * (t + half) / f + self.prefill_gemm_s * (t + self.prefill_half) / q) / t

    def predictions(
        self, f: np.ndarray, half: np.ndarray, overhead_us: np.ndarray, sequence_us: np.ndarray, q: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Each target's prediction for candidates given as column vectors (one row per candidate)."""
        per = np.maximum(self.weights_s, self.gemm(f, half, q)) + np.maximum(self.kv_s, self.attention_s / f)
        t = self.steps * (per + self.layers * overhead_us * 1e-6) + self.fixed_s + self.emitting * sequence_us * 1e-6
        out = {"tput_out": self.out_tokens / t.sum(axis=1)}
        names = {name for name, _ in self.targets}
        if "ttft_mean" in names and self.first_tokens.sum():
            out["ttft_mean"] = (np.cumsum(t, axis=1) * self.first_tokens).sum(axis=1) / self.first_tokens.sum()
        if "itl_p50" in names and self.decodes.sum():
            out["itl_p50"] = _weighted_median(t / self.steps, self.decodes)
        return out

    def predict(self, eff: ServingEfficiency) -> dict[str, float]:
        q = eff.prefill_fraction_max or self.prefill_max
        col = [np.array([[v]], dtype=float) for v in (
            eff.compute_fraction_max, eff.compute_half_tokens, eff.layer_step_overhead_us, eff.sequence_overhead_us, q)]
        return {name: float(v[0]) for name, v in self.predictions(*col).items()}


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per row of `values` (candidates x blocks), the median of the blocks' steps, each block weighted
    by `weights` (blocks without weight are left out). A block's mean stands at the middle of its share
    of the cumulative weight and the median is read between the two blocks around one half: a run of
    steps whose time grows evenly (KV filling up) then gives its middle step, not a block's mean."""
    v = np.where(weights > 0, values, np.inf)
    order = np.argsort(v, axis=1)
    v = np.take_along_axis(v, order, axis=1)
    w = weights[order]
    cum = np.cumsum(w, axis=1)
    mid = cum - 0.5 * w
    rows = np.arange(len(v))
    i = np.argmax(mid >= 0.5 * cum[:, -1:], axis=1)
    j = np.maximum(i - 1, 0)
    span = mid[rows, i] - mid[rows, j]
    share = np.divide(0.5 * cum[:, -1] - mid[rows, j], span, out=np.ones(len(v)), where=span > 0)
    median: np.ndarray = v[rows, j] + share * (v[rows, i] - v[rows, j])
    return median


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
        if m and (m.group(1), m.group(3)) in STATIC_TARGETS and run.rows[0].scenario == "static-batch":
            targets.append((STATIC_TARGETS[m.group(1), m.group(3)], row.value * UNIT_S[m.group(2)]))
    if not targets or run.reason is not None or run.workload is None:
        return None
    dep = deploy_run(run, BARE)
    steps: list[StepRecord] = []
    try:
        simulate(dep.cost, dep.policy, dep.kv_capacity_tokens, sized_workload(run, dep), record=steps, replicas=run.replicas,
                 max_context_tokens=dep.max_context_tokens, check=time_limit(RECORD_TIME_LIMIT_S))
    except TimeLimitError:
        return None  # a run that does not end is not fitted on (validate reports it)
    if not steps:
        return None
    a = np.array(steps, dtype=float)  # tokens, KV tokens read, attention pairs, decodes, completed prompts, firsts
    tokens = a[:, 0]
    prompt = tokens - a[:, 3]
    c = dep.cost
    routed = c.routed_bytes * (1.0 - (1.0 - c.experts_k_over_e) ** tokens) if c.routed_bytes else 0.0
    weights_s, kv_s = c.memory_s(c.weight_fixed_bytes + c.embedding_row_bytes * tokens + routed, a[:, 1], tokens)
    peak = c.peak_flops or math.inf
    decode_gemm_s = c.matmul_flops_per_token * a[:, 3] / peak
    prefill_gemm_s = c.matmul_flops_per_token * prompt / peak * c.prefill_gemm_scale(tokens)  # MoE experts' share (cost.py)
    attention_s = c.attention_flops_per_pair * a[:, 2] / peak
    fixed = c.overhead_s + c.comm_s(tokens)  # the single-stream per-layer launches only (BARE)
    starts = _blocks(tokens, a[:, 4], prompt)
    n = np.diff(np.append(starts, len(tokens))).astype(float)
    return Recording(
        engine=run.engine, source=run.source, tokens=tokens[starts], steps=n,
        weights_s=np.add.reduceat(weights_s, starts) / n, decode_gemm_s=np.add.reduceat(decode_gemm_s, starts) / n,
        prefill_gemm_s=np.add.reduceat(prefill_gemm_s, starts) / n,
        kv_s=np.add.reduceat(kv_s, starts) / n, attention_s=np.add.reduceat(attention_s, starts) / n,
        fixed_s=np.add.reduceat(fixed, starts), decodes=np.add.reduceat(a[:, 3], starts),
        layers=dep.setup.model.n_layers / dep.setup.layout.pp, out_tokens=float(a[:, 3].sum() + a[:, 4].sum()),
        first_tokens=np.add.reduceat(a[:, 5], starts), emitting=np.add.reduceat(a[:, 3] + a[:, 4], starts),
        targets=targets, prefill_max=c.prefill_fraction_max, prefill_half=c.prefill_half_tokens,
    )


def penalty(log_error: Any) -> Any:
    """Cauchy loss of a log error: its square while small, then only logarithmic, so that a row the
    step costs cannot explain (a latency set by the benchmark's client, say) stops pulling on the fit."""
    return ROBUST_LOG**2 * np.log1p((log_error / ROBUST_LOG) ** 2)


def rms_log_error(recs: Sequence[Recording], eff: ServingEfficiency) -> float:
    """Root mean square of the log errors over every target (an unpredicted one counts as 5)."""
    errors = []
    for rec in recs:
        pred = rec.predict(eff)
        for name, measured in rec.targets:
            value = pred.get(name)
            errors.append(math.log(value / measured) if value is not None and value > 0 else 5.0)
    return math.sqrt(sum(e * e for e in errors) / len(errors)) if errors else 0.0


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
    f_, h_, o_, s_ = f[:, None], half[:, None], overhead_us[:, None], sequence_us[:, None]
    for rec in recs:
        q_ = np.where(np.isnan(q_all), rec.prefill_max, q_all)[:, None]
        pred = rec.predictions(f_, h_, o_, s_, q_)
        for name, measured in rec.targets:
            value = pred.get(name)
            if value is None:
                total += 25.0
            else:
                total += penalty(np.log(np.maximum(value, 1e-30) / measured))
    return total


def _near(grid: Sequence[float], value: float, steps: int) -> list[float]:
    """`value`'s grid point and `steps` points either side of it."""
    i = min(range(len(grid)), key=lambda k: abs(grid[k] - value))
    return list(grid[max(0, i - steps) : i + steps + 1])


def fit(recs: Sequence[Recording], source: str = "fitted", *, prefill: bool = True) -> ServingEfficiency:
    """A coarse grid over (f_max, T_half, per-layer step overhead, sequence overhead) with q_max at its
    prior, a line search over q_max (`prefill`) and the coarse grid again under it, then a finer grid
    over all five around the best, moved to its own best until it stays put; deterministic.
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
        best, compute_fraction_max=f1, compute_half_tokens=h1, layer_step_overhead_us=o1, sequence_overhead_us=s1,
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
            "layer_step_overhead_us": eff.layer_step_overhead_us,
            "sequence_overhead_us": eff.sequence_overhead_us,
            "prefill_fraction_max": eff.prefill_fraction_max,
            "n_runs": len(mine),
            "n_rows": sum(len(r.targets) for r in mine),
            "rms_log_error": round(rms_log_error(mine, eff), 4),
        }
    return {
        "data": "calibration_data/serving.csv",
        "data_sha256": file_sha256(data),
        "method": "tokometer.fitting.serving_fit: offline and static-batch runs (tput_out; static ttft mean and itl p50), "
        "Cauchy loss of log errors (scale 0.35), coarse grid over four parameters, a line search over the prefill plateau (per engine; "
        "the pooled entry keeps single-stream prefill physics), then a finer grid around the best",
        "entries": entries,
    }


Wrap = Callable[[Iterable[Any]], Iterable[Any]]


def _records(runs: Sequence[Run], progress: Wrap | None = None) -> list[Recording]:
    """Each run recorded once: in this process under a progress bar, else side by side (`workers.fork_map`)."""
    from tokometer.fitting.workers import fork_map

    if progress is not None:
        found = [record_run(run) for run in progress(runs)]
    else:
        found = fork_map(lambda i: record_run(runs[i]), len(runs))
    return [r for r in found if r is not None]


def recordings(path: Path, progress: Wrap | None = None) -> tuple[list[Run], list[Recording]]:
    rows, _ = read_rows(path)
    runs = group_runs(rows)
    return runs, _records(runs, progress)


def calibrate_serving(path: Path, out: Path | None = None, *, progress: Wrap | None = None) -> dict[str, Any]:
    """Fit every engine and the pooled entry; write the JSON table when `out` is given."""
    _, recs = recordings(path, progress)
    table = fit_table(recs)
    data = table_json(table, recs, path)
    if out is not None:
        out.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return data


def leave_one_source_out(
    runs: Sequence[Run], recs: Sequence[Recording], *, time_limit_s: float | None = None, progress: Wrap | None = None,
) -> list[RowResult]:
    """Fit without each source, predict that source's rows with what remains (its engine falls back to `*`)."""
    out: list[RowResult] = []
    sources = sorted({run.source for run in runs})
    for source in (progress(sources) if progress else sources):
        table = fit_table([r for r in recs if r.source != source])
        held = [run for run in runs if run.source == source]
        out += predict(held, lookup(table), naive=False, time_limit_s=time_limit_s)
    return out


def validate_serving(
    path: str | Path, *, loso: bool = False, time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
    progress: Callable[[str], Wrap | None] | None = None,
) -> dict[str, Any]:
    """Predict every serving row through the simulator; `loso` adds leave-one-source-out scores.

    Each simulated run (the rows that share a setup) has `time_limit_s` of wall time; past it its
    rows are unscored with that reason. `progress(label)` gives a wrapper for each long loop (a bar).
    The report: `metrics.<metric>.{n,scored,median_ape,p90_ape,within_15,naive_median_ape}`, the
    same per scenario, `unpredictable` rows with their reasons, and `results` row by row.
    """
    from tokometer.catalog.serving import serving_efficiency

    def bar(label: str) -> Wrap | None:
        return progress(label) if progress is not None else None

    parsed, bad = read_rows(path)
    runs = group_runs(parsed)
    rep = report(predict(runs, serving_efficiency, time_limit_s=time_limit_s, progress=bar("simulating runs")) + bad)
    if loso:
        recs = _records(runs, bar("recording runs for the fit"))
        cv = report(leave_one_source_out(runs, recs, time_limit_s=time_limit_s, progress=bar("leaving each source out")))
        rep["loso"] = {"metrics": cv["metrics"], "scenarios": cv["scenarios"]}
    return rep
