"""Validate the serving simulator on published serving rows (`calibration_data/serving.csv`).

Rows that describe the same run (source, engine, hardware, model, TP, precision, lengths, scenario,
rate, concurrency, batch) are simulated once; each row's metric is read from that run:
`tput_out`, `tput_total`, `tput_in`, `req_per_s`, and `ttft/tpot/itl/e2e` with a unit (`ms`, `s`,
`ns`) and a statistic (`mean`, `p50`, `p90`, `p99`, `min`, `max`). Scenarios:

- `offline`: every request at t = 0; simulated with `WAVES` full batches of requests (at most
  `MAX_SIM_REQUESTS`, never more than the source ran): the steady state, not the published count;
- `static-batch`: one batch of `batch_size` requests of fixed lengths under the engine's policy;
- `online-rate`: Poisson arrivals at `request_rate`; `online-concurrency`: closed-loop clients.

ShareGPT runs do not print their length distribution. Their mean lengths come from the same
source's own throughput rows (output tokens per request = tput_out / req_per_s, input = (tput_total
- tput_out) / req_per_s); the shape is a lognormal with sigma 1 (ShareGPT is heavy-tailed), each length capped at 1024
tokens as the benchmark scripts' filters do (prompt <= 1024, prompt + output <= 2048).

Rows are read as their sources mean them: the `parallelism` cell in any public spelling
(`parallelism.parse_parallelism`; expert- and attention-data-parallel rows are unscored until they
are modelled, and `n_devices` beyond one parallel group is that many replicas), vendor precision
words with the device in mind (`quant_words`), checkpoint names (`model_words`), and the `unit`
column (`quantity`: a per-GPU, per-node or per-user figure is compared with the prediction as the
same quantity). A `batch_size` reading "max (offline, all requests queued)" is an offline run; a
static batch is `batch_size` requests queued at once, held until the longest ends on engines whose
batch benchmark is static (`static_batch.STATIC_ENGINES`). A row flagged `speculative_decoding` runs
the speculation its launch flags or notes state (`spec_words`: method, drafts per pass, and the
acceptance from a printed accept length, else the method's default), with SGLang's cap of 48 running
requests under speculation when its printed launch does not set one. A disaggregated row whose
source states both pools ("prefill tp=4,ep=4 x3 workers; decode tp=8,ep=8 x2 workers") runs that many
prefill and decode workers, each pool with its own layout (`disagg.Pool`), the decode pool speculating
when the row does; a per-GPU figure divides by every GPU of both pools. A row that states only the nominal
lengths of a random dataset (flag `nominal_random_lengths`) is read as its client drew them (`random_lengths`):
SGLang's uniformly up to the nominal length, vLLM's at it, a printed range ratio or token totals first.

A row that cannot be predicted (model not in the catalog, unknown metric, a statistic the
simulator does not produce, a spelling it cannot read, a run past the time limit) comes back with
its reason; nothing is dropped and nothing is fatal.
The naive baseline is what `tokometer estimate --batch B` said before the simulator: one decode
step of B streams at the prompt depth, the batch's prefill never charged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tokometer.costmodel.serving import (
    ServingEfficiency,
    ServingResult,
    Workload,
)
from tokometer.errors import InputError, TokometerError
from tokometer.fitting.parallelism import GPUS_PER_NODE, Parallelism
from tokometer.fitting.quantity import Quantity, is_throughput, read_quantity
from tokometer.fitting.serving_runs import (
    METRIC,
    MIN_OFFLINE_REQUESTS,
    NVLINK_RACKS,
    STATISTIC,
    UNIT_S,
    WAVES,
    Row,
    RowResult,
    Run,
)
from tokometer.fitting.time_limit import TimeLimitError, time_limit

if TYPE_CHECKING:
    from tokometer.usecases.simulate import Deployment


POOL_KINDS = {"input_tokens": 0, "output_tokens": 1}  # the pool (`Run.pool_gpus`) each per-GPU figure divides by


def as_quantity(quantity: Quantity, run: Run | None, totals: dict[str, float | None]) -> tuple[float | None, str | None]:
    """A replica-wide prediction (`totals`: tput_out, tput_total, tput_in, req_per_s, tpot in seconds)
    as `quantity`: divided by the GPUs or nodes of every replica, or one user's 1 / TPOT."""
    if quantity.per == "user":
        if quantity.kind != "output_tokens":
            return None, f"{quantity.describe()}: only output tokens/s per user (1 / TPOT) is simulated"
        tpot = totals.get("tpot")
        return (1.0 / tpot, None) if tpot else (None, "no TPOT observed in the simulated run")
    value = totals[{"output_tokens": "tput_out", "total_tokens": "tput_total", "input_tokens": "tput_in",
                    "requests": "req_per_s"}[quantity.kind]]
    if value is None:
        return None, None
    par = run.parallelism if run is not None else Parallelism()
    replicas = run.replicas if run is not None else 1
    if run is not None and run.pool_gpus is not None and quantity.per == "gpu" and quantity.kind in POOL_KINDS:
        # InferenceX divides a disaggregated run's input tokens/s by its prefill pool's GPUs and its output
        # tokens/s by its decode pool's (utils/process_result.py); total tokens/s by both pools' GPUs
        value /= run.pool_gpus[POOL_KINDS[quantity.kind]]
    elif run is not None and run.gpus is not None:  # two pools of different layouts: all their GPUs
        value /= run.gpus if quantity.per == "gpu" else (max(1, -(-run.gpus // GPUS_PER_NODE)) if quantity.per == "node" else 1)
    elif quantity.per == "gpu":
        value /= par.n_gpus * replicas
    elif quantity.per == "node":  # replicas of a group within one node share their nodes
        value /= par.nodes * replicas if par.nodes > 1 else max(1, -(-par.n_gpus * replicas // GPUS_PER_NODE))
    return value, None


def read_metric(result: ServingResult, row: Row, run: Run | None = None) -> tuple[float | None, str | None]:
    """The simulated value of a published metric, as the quantity the row measured (its unit's
    denominator: the replica, one GPU, one node or one user) in the metric's own time unit."""
    metric = row.metric
    if is_throughput(metric):
        try:
            quantity = read_quantity(metric, row.text("unit"), row.text("flag"))
        except InputError as exc:
            return None, str(exc)
        # tokens/s per user is 1 / TPOT: InferenceX's "median interactivity" is 1 / the median TPOT
        # (utils/process_result.py: every `*tpot*` key x becomes `*intvty*` = 1000 / x), others 1 / the mean
        tpot = result.tpot_s.p50 if "median" in row.text("unit").lower() else result.tpot_s.mean
        return as_quantity(quantity, run, {
            "tput_out": result.tput_out_tok_s, "tput_total": result.tput_total_tok_s, "tput_in": result.tput_in_tok_s,
            "req_per_s": result.req_per_s, "tpot": tpot})
    m = METRIC.match(metric)
    if m is None:
        return None, f"metric {metric!r} is not one the simulator produces"
    kind, unit, stat = m.groups()
    if unit is None and row.text("unit").lower() in UNIT_S:
        unit = row.text("unit").lower()  # a latency metric without a unit suffix: the unit column says
    if kind == "itl" and run is not None and run.itl_reason is not None:
        return None, run.itl_reason
    summary = getattr(result, f"{kind}_s")
    value = getattr(summary, STATISTIC.get(stat, stat) or "mean")
    if value is None:
        return None, f"no {kind} observed in the simulated run"
    if kind == "itl" and run is not None and not run.itl_per_token:
        # the client sees a chunk of `stream_tokens` tokens at a time; under speculation each verify pass
        # streams its accepted tokens as one chunk, and the OpenAI-endpoint benchmark clients (vLLM's
        # benchmark_serving, InferenceX's copy) time ITL per chunk: the pass interval, E(a, k) per-token
        # gaps. SGLang's bench_serving on its native endpoint divides a chunk's gap by its tokens
        # (`serving_runs.per_token_itl_client`): its ITL stays per token.
        value *= run.stream_tokens * run.tokens_per_pass
    return value / UNIT_S[unit], None


QUEUE_METRICS = ("ttft", "e2e")  # an offline run's mean TTFT and E2E grow with the whole queue's length


def sized_workload(run: Run, dep: Deployment) -> Workload:
    """Offline runs: enough requests for `WAVES` full batches per replica (the steady state), at most
    the published count; all of the published count (up to `MAX_SIM_REQUESTS` per replica) when the
    run's rows include a TTFT or E2E, whose means depend on how long the queue the source sent was."""
    wl = run.workload
    assert wl is not None
    if wl.arrival != "offline" or run.static_batch:
        return wl
    if any(r.metric.split("_")[0] in QUEUE_METRICS for r in run.rows):
        return wl
    per_request = wl.prompt.mean + wl.output.mean + dep.policy.block_size_tokens
    batch = max(1.0, min(dep.policy.max_num_seqs, dep.kv_capacity_tokens / per_request))
    waves = max(MIN_OFFLINE_REQUESTS, WAVES * batch) * run.replicas
    return replace(wl, num_requests=int(min(wl.num_requests, waves)))


def deploy_run(run: Run, efficiency: ServingEfficiency) -> Deployment:
    from tokometer.usecases.simulate import deploy

    kwargs = dict(run.deploy_kwargs)
    dep = deploy(kwargs.pop("model"), kwargs.pop("hw"), efficiency=efficiency, check_fit=False, **kwargs)
    return dep if run.kv_cache_tokens is None else replace(dep, kv_capacity_tokens=run.kv_cache_tokens)


def simulate_run(
    run: Run, efficiency: Callable[[str], ServingEfficiency], seed: int = 0, *, time_limit_s: float | None = None,
    record: list[Any] | None = None,
) -> ServingResult:
    """Simulate one published run (its replicas, its sized workload) under `efficiency(engine)`."""
    from tokometer.costmodel.serving import simulate

    dep = deploy_run(run, efficiency(run.engine))
    if run.disagg is not None:
        return _simulate_pools(run, dep, seed, time_limit_s)
    policy = dep.policy if run.recv_interval == 1 else replace(dep.policy, recv_interval_steps=run.recv_interval)
    if run.adp_balance_timeout:  # the launch's attention-DP balance over the replica's attention ranks
        policy = replace(policy, adp_balance_ranks=int(run.deploy_kwargs.get("dp", 1)),
                         adp_balance_timeout_steps=run.adp_balance_timeout)
    return simulate(
        dep.cost, policy, dep.kv_capacity_tokens, sized_workload(run, dep), replicas=run.replicas, seed=seed,
        max_context_tokens=dep.max_context_tokens, record=record, check=time_limit(time_limit_s), spec=dep.speculation,
    )


def _simulate_pools(run: Run, dep: Deployment, seed: int, time_limit_s: float | None) -> ServingResult:
    """A disaggregated run: `run.disagg` prefill workers of the deployment's layout and decode workers of
    `run.decode_layout` (deployed with the same model, format and engine), the prompt's KV moved over the
    inter-node network (InfiniBand NDR per GPU; the rack's NVLink on GB200/GB300), each GPU of the
    prefill worker sending its own shard at once (the per-GPU link times the worker's GPUs)."""
    from tokometer.costmodel.links import parse_interconnect
    from tokometer.costmodel.serving.cost import kv_token_bytes_total
    from tokometer.costmodel.serving.disagg import Disagg, Pool, simulate_disagg

    assert run.disagg is not None
    link = parse_interconnect("nvl72" if dep.setup.hardware.id.startswith(NVLINK_RACKS) else "ib-ndr")
    pools = Disagg(
        prefill_replicas=run.disagg[0], decode_replicas=run.disagg[1], kv_bytes_per_token=kv_token_bytes_total(dep.setup),
        link_bytes_per_s=link.effective_bytes_per_s * run.parallelism.n_gpus, link_latency_s=link.hop_latency_us * 1e-6,
    )
    layout = {k: v for k, v in run.deploy_kwargs.items() if k not in ("tp", "pp", "ep", "dp", "nodes", "inter_link")}
    d = deploy_run(replace(run, deploy_kwargs={**layout, **run.decode_layout}), dep.efficiency)
    return simulate_disagg(dep.cost, dep.policy, dep.kv_capacity_tokens, sized_workload(run, dep), pools, seed=seed,
                           max_context_tokens=dep.max_context_tokens,
                           decode_pool=Pool(d.cost, d.policy, d.kv_capacity_tokens, d.speculation), check=time_limit(time_limit_s))


def naive_run(run: Run) -> dict[str, float]:
    """One decode step of B streams at the prompt depth (`estimate --batch B`), prefill not charged."""
    from tokometer.usecases.estimate import estimate

    kw = run.deploy_kwargs
    wl = run.workload
    assert wl is not None
    prompt = int(wl.prompt.mean)
    out = int(wl.output.mean)
    b = run.batch if run.rows[0].scenario in ("static-batch", "online-concurrency") else (
        1 if run.rows[0].scenario == "online-rate" else 256)
    e = estimate(kw["model"], kw["hw"], quant=kw["quant"], engine=kw["engine"] if kw["engine"] != "lmdeploy" else "tensorrt-llm",
                 tp=kw["tp"], pp=kw.get("pp", 1), kv_dtype=kw.get("kv_dtype"), batch=b, prompt_tokens=prompt, output_tokens=out, advise=False,
                 ep=kw.get("ep", 1), dp=kw.get("dp", 1), nodes=kw.get("nodes", 1), inter_link=kw.get("inter_link"))
    step = e.step.time_s
    tput_out = b / step * run.replicas
    return {"tput_out": tput_out, "tput_total": tput_out * (prompt + out) / out, "tput_in": tput_out * prompt / out,
            "req_per_s": tput_out / out, "ttft": e.ttft_s or math.nan, "tpot": step, "itl": step, "e2e": e.e2e_s or math.nan}


def _naive_value(row: Row, run: Run, base: dict[str, float]) -> float | None:
    """The naive one-step predictor's value for `row`, as the same quantity and unit as the row."""
    if is_throughput(row.metric):
        try:
            value, _ = as_quantity(read_quantity(row.metric, row.text("unit"), row.text("flag")), run, dict(base))
        except InputError:
            return None
    else:
        m = METRIC.match(row.metric)
        value = base.get(row.metric.split("_")[0])
        if value is not None:
            unit = m.group(2) if m else None
            if unit is None and row.text("unit").lower() in UNIT_S:
                unit = row.text("unit").lower()
            value /= UNIT_S[unit]
    return value if value is not None and math.isfinite(value) else None


def predict(
    runs: Sequence[Run], efficiency: Callable[[str], ServingEfficiency], *, naive: bool = True,
    time_limit_s: float | None = None, progress: Callable[[Iterable[Run]], Iterable[Run]] | None = None,
) -> list[RowResult]:
    """Every run's rows predicted by one simulation each (a run past `time_limit_s` leaves its rows
    unscored with that reason); `progress` wraps the runs' iteration (a progress bar), which keeps them
    in this process. Without one the runs are simulated side by side (`workers.fork_map`, one process
    per core): each run's simulation is its own, so the results are the same."""
    from tokometer.fitting.workers import fork_map

    def one(index: int) -> list[tuple[float | None, float | None, str | None]]:
        return _predict_run(runs[index], efficiency, naive=naive, time_limit_s=time_limit_s)

    if progress is not None:
        per_run = [_predict_run(run, efficiency, naive=naive, time_limit_s=time_limit_s) for run in progress(runs)]
    else:
        per_run = fork_map(one, len(runs))
    return [RowResult(r, value, base, why) for run, rows in zip(runs, per_run, strict=True)
            for r, (value, base, why) in zip(run.rows, rows, strict=True)]


def _predict_run(
    run: Run, efficiency: Callable[[str], ServingEfficiency], *, naive: bool, time_limit_s: float | None,
) -> list[tuple[float | None, float | None, str | None]]:
    """One run's rows as (predicted, naive, reason), from one simulation."""
    if run.reason is not None:
        return [(None, None, run.reason)] * len(run.rows)
    try:
        result = simulate_run(run, efficiency, time_limit_s=time_limit_s)
        base = naive_run(run) if naive else {}
    except TimeLimitError as exc:
        return [(None, None, str(exc))] * len(run.rows)
    except TokometerError as exc:
        return [(None, None, f"cannot simulate: {exc}")] * len(run.rows)
    if not result.completed:
        none = (f"no request completed in the simulated run: {result.rejected} of {result.requests} refused "
                "(the weights leave no room for one request's KV cache in this layout)")
        return [(None, None, none)] * len(run.rows)
    out: list[tuple[float | None, float | None, str | None]] = []
    for r in run.rows:
        value, why = read_metric(result, r, run)
        out.append((value, _naive_value(r, run, base) if base else None, why))
    return out


# ---------------------------------------------------------------- summaries
