"""The public Python API: one function per CLI verb, over the use cases (the entry layer).

Each function takes the CLI's option names and units as keyword arguments (or, for `estimate`, an
`EstimateRequest`) and returns a frozen result whose `to_dict()` / `to_json()` equal what the verb
prints with `--json` on the same inputs; the CLI commands call these functions and only parse
options and render. Heavy modules load inside the functions, so importing this module is cheap.
Errors a caller can cause are `TokometerError`s (`InputError.field` names the argument at fault).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokometer.errors import InputError
from tokometer.usecases.estimate import Estimate

if TYPE_CHECKING:
    from tokometer.bench.machine_load import LoadSample
    from tokometer.bench.probe import CheckedProbe, ProbeResult
    from tokometer.bench.runner import BenchResult
    from tokometer.costmodel.serving import Workload
    from tokometer.costmodel.serving.disagg import Disagg
    from tokometer.runrecord import RunRecord
    from tokometer.specs import HardwareSpec, ModelSpec
    from tokometer.usecases.fit import FitReport
    from tokometer.usecases.plan import Plan
    from tokometer.usecases.request import EstimateRequest
    from tokometer.usecases.simulate import CurvePoint, Deployment
    from tokometer.usecases.sweep import SweepResult

__all__ = [
    "BenchRun", "CalibrateResult", "CatalogListing", "EstimateResult", "FitResult", "PlanResult", "ProbeReport",
    "SimulateResult", "SweepTable", "ValidateResult", "bench_async", "benchmark", "calibrate", "estimate", "list_catalog",
    "fit", "plan", "probe", "simulate", "sweep", "validate",
]


def dumps(data: Any) -> str:
    """The CLI's JSON text of `data` (`report.text.to_json`: indented, NaN as null)."""
    from tokometer.report.text import to_json

    return to_json(data)


class _Json:
    """`to_json()` for a result whose `to_dict()` is the CLI's `--json` shape."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_json(self) -> str:
        """The text `tokometer <verb> --json` prints for the same inputs."""
        return dumps(self.to_dict())


# --- estimate --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class EstimateResult(Estimate, _Json):
    """An `Estimate` (every typed field, so also a `tokometer.Estimate`) with the CLI's JSON."""

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer estimate --json` shape (`report.json.estimate_json`)."""
        from tokometer.report.json import estimate_json

        return estimate_json(self)


def estimate(
    request: EstimateRequest | str | ModelSpec | None = None,
    hw: str | HardwareSpec | None = None,
    /,
    **fields_: Any,
) -> EstimateResult:
    """Predict decode (ceiling and estimate), prefill/TTFT, latency and memory for one setup.

    Takes an `EstimateRequest`, or its fields as keyword arguments (`estimate("llama-3.1-8b",
    "rtx-4090", quant="q4_k_m")`), as `tokometer estimate` takes its options; the levers are
    documented on `usecases.estimate.estimate`. `to_json()` is `tokometer estimate --json`.
    """
    from tokometer.usecases.estimate import estimate as run

    result = run(request, hw, **fields_)
    return EstimateResult(**{f.name: getattr(result, f.name) for f in fields(result) if f.init})


# --- simulate --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SimulateResult(_Json):
    """A simulated serving run (`result`), or a latency-throughput curve over rates (`points`, `knee`)."""

    deployment: Deployment
    workload: Workload
    result: Any = None  # costmodel.serving.SimResult for one run
    points: tuple[CurvePoint, ...] = ()
    knee: CurvePoint | None = None
    disagg: Disagg | None = None
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer simulate --json` shape."""
        if self.points:
            from tokometer.report.serving import curve_dict

            return {"deployment": self.deployment.to_dict(), **curve_dict(list(self.points), self.knee)}
        assert self.result is not None
        return (
            {"deployment": self.deployment.to_dict(), "workload": self.workload.to_dict() | {"trace": len(self.workload.trace)},
             "result": self.result.to_dict(), "binding": self.result.binding}
            | ({"disagg": self.disagg.to_dict()} if self.disagg is not None else {})
        )


def parse_rates(text: str) -> list[float]:
    """`--rate`: one rate or a comma-separated list, requests per second."""
    rates = []
    for part in text.split(","):
        try:
            value = float(part.strip())
        except ValueError:
            raise InputError(f"--rate must be a positive number of requests per second (or a list like 1,2,4), got {part.strip()!r}") from None
        if not (value > 0 and math.isfinite(value)):
            raise InputError(f"--rate must be a positive number of requests per second, got {part.strip()!r}")
        rates.append(value)
    return rates


def _ms(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"{name} must be a positive number of milliseconds, got {value!r}")
    return value / 1e3


def simulate(
    model: str,
    hw: str,
    *,
    quant: str | None = None,
    engine: str = "vllm",
    kv_dtype: str | None = None,
    tp: int = 1,
    pp: int = 1,
    replicas: int = 1,
    disagg: str | None = None,
    kv_link: str | None = None,
    router: str = "round-robin",
    rate: str | float | Sequence[float] | None = None,
    sweep_rate: bool = False,
    burstiness: float = 1.0,
    constant_rate: bool = False,
    concurrency: int | None = None,
    think_s: float = 0.0,
    offline: int | None = None,
    trace: str | None = None,
    prompt: str | int = "1000",
    output: str | int = "200",
    lengths: str | None = None,
    num_requests: int = 1000,
    slo_ttft: float | None = None,
    slo_tpot: float | None = None,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    memory_fraction: float | None = None,
    prefix_cache_hit: float | None = None,
    scheduler_steps: int | None = None,
    seed: int = 0,
) -> SimulateResult:
    """Simulate `model` served on `hw` by an engine's scheduler, step by step (`tokometer simulate`).

    One workload: `rate` (req/s; a list or "1,2,4" draws the curve), `sweep_rate=True`, `concurrency`,
    `offline` or `trace` (a JSONL/CSV path). `prompt`/`output` are token counts or distributions
    ("lognormal:800:0.6"); `slo_ttft`/`slo_tpot` are milliseconds, as on the command line.
    """
    from dataclasses import replace

    from tokometer.costmodel.serving import Workload
    from tokometer.usecases.simulate import (
        auto_rates,
        deploy,
        disaggregation,
        knee,
        parse_lengths,
        read_trace,
        run,
        sweep_rates,
    )

    chosen = [n for n, v in (("--rate", rate), ("--sweep-rate", sweep_rate or None), ("--concurrency", concurrency),
                             ("--offline", offline), ("--trace", trace)) if v is not None]
    if len(chosen) != 1:
        raise InputError("give exactly one workload: --rate R, --sweep-rate, --concurrency N, --offline N or --trace FILE"
                         + (f" (got {', '.join(chosen)})" if chosen else ""))
    slo = (_ms("--slo-ttft", slo_ttft), _ms("--slo-tpot", slo_tpot))
    prompt, output = str(prompt), str(output)
    if lengths:
        parts = lengths.split(",")
        if len(parts) != 2:
            raise InputError("--lengths takes PROMPT_DIST,OUTPUT_DIST, e.g. lognormal:800:0.6,uniform:50:400")
        prompt, output = parts
    p_dist, o_dist = parse_lengths(prompt), parse_lengths(output)
    n = offline if offline is not None else num_requests
    if isinstance(n, int) and n < 1:
        raise InputError(f"the number of requests must be at least 1, got {n}")
    dep = deploy(model, hw, quant=quant, engine=engine, tp=tp, pp=pp, kv_dtype=kv_dtype, max_num_seqs=max_num_seqs,
                 max_num_batched_tokens=max_num_batched_tokens, memory_fraction=memory_fraction,
                 prefix_cache_hit_fraction=prefix_cache_hit, scheduler_steps=scheduler_steps)
    kwargs: dict[str, Any] = {"replicas": replicas, "router": router, "seed": seed, "slo_ttft_s": slo[0], "slo_tpot_s": slo[1]}
    if disagg is not None:
        if replicas != 1:
            raise InputError("--disagg P:D sets the replicas of each pool; leave out --replicas")
        kwargs["disagg"] = disaggregation(dep, disagg, kv_link)
    elif kv_link is not None:
        raise InputError("--kv-link only applies with --disagg P:D")
    arrival = "constant" if constant_rate else ("gamma" if burstiness != 1.0 else "poisson")
    base = Workload("offline", n, p_dist, o_dist)
    pools = kwargs.get("disagg")
    if rate is not None or sweep_rate:
        if rate is None:
            rates = auto_rates(dep, base, **kwargs)
        elif isinstance(rate, str):
            rates = parse_rates(rate)
        elif isinstance(rate, int | float):
            rates = parse_rates(str(rate))
        else:
            rates = parse_rates(",".join(str(r) for r in rate))
        base = replace(base, arrival=arrival, rate_per_s=rates[0], burstiness=burstiness)
        Workload(arrival, n, p_dist, o_dist, rate_per_s=rates[0], burstiness=burstiness)  # checks the inputs
        if len(rates) > 1:
            points = sweep_rates(dep, base, rates, **kwargs)
            return SimulateResult(dep, base, points=tuple(points), knee=knee(points), disagg=pools, slo_ttft_s=slo[0], slo_tpot_s=slo[1])
        workload = base
    elif concurrency is not None:
        workload = Workload("closed", n, p_dist, o_dist, concurrency=concurrency, think_s=think_s)
    elif trace is not None:
        workload = Workload("trace", prompt=p_dist, output=o_dist, trace=read_trace(trace))
    else:
        workload = base
    return SimulateResult(dep, workload, result=run(dep, workload, **kwargs), disagg=pools, slo_ttft_s=slo[0], slo_tpot_s=slo[1])


# --- plan ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PlanResult(_Json):
    """The cheapest deployments that meet the objectives (`plan.rows`), what was considered and pruned."""

    plan: Plan
    rate: float
    prompt: int
    output: int
    slo_ttft_p99: float
    slo_tpot_p99: float
    disagg: bool

    def configs(self) -> list[dict[str, Any]]:
        """One dict per configuration, cheapest first."""
        return [r.to_dict(self.rate, self.output) for r in self.plan.rows]

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer plan --json` shape."""
        return {"configs": self.configs(), "considered": self.plan.considered, "pruned": self.plan.pruned}


def parse_prices(values: Sequence[str] | Mapping[str, float]) -> dict[str, float]:
    """`--price HW=USD_PER_HOUR` (repeatable), or a mapping of hardware name to dollars per device-hour."""
    from tokometer.catalog import hardware_catalog

    texts = [f"{k}={v}" for k, v in values.items()] if isinstance(values, Mapping) else list(values)
    out: dict[str, float] = {}
    for text in texts:
        name, sep, price = text.partition("=")
        try:
            value = float(price.strip().lstrip("$"))
        except ValueError:
            value = math.nan
        if not sep or not (value > 0 and math.isfinite(value)):
            raise InputError(f"--price takes HW=USD_PER_HOUR, e.g. h100-sxm=2.5, got {text!r}")
        out[hardware_catalog().get(name.strip()).id] = value
    return out


def _names(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else [p for v in value for p in v.split(",")]
    return tuple(i.strip() for i in items if i.strip()) or None


def plan(
    model: str,
    *,
    rate: float,
    slo_ttft_p99: float,
    slo_tpot_p99: float,
    prompt: int = 1000,
    output: int = 200,
    hw: str | Sequence[str] | None = None,
    quant: str | Sequence[str] | None = None,
    engine: str = "vllm",
    price: Sequence[str] | Mapping[str, float] = (),
    disagg: bool = True,
    top: int = 5,
    seed: int = 0,
) -> PlanResult:
    """The cheapest deployments of `model` serving `rate` req/s within the p99 objectives (`tokometer plan`).

    `slo_ttft_p99`/`slo_tpot_p99` are milliseconds; `hw`/`quant` a comma-separated string or a list
    (default: the priced datacenter GPUs, bf16/fp8/awq-int4); `price` overrides dollars per
    device-hour. No configuration meeting the objectives is an `InputError` naming the best achievable.
    """
    from tokometer.usecases.plan import DEFAULT_HARDWARE, DEFAULT_QUANTS
    from tokometer.usecases.plan import plan as make_plan

    result = make_plan(
        model, rate=rate, prompt=prompt, output=output, slo_ttft_s=slo_ttft_p99 / 1e3, slo_tpot_s=slo_tpot_p99 / 1e3,
        hardware=_names(hw) or DEFAULT_HARDWARE, quants=_names(quant) or DEFAULT_QUANTS, engine=engine,
        prices=parse_prices(price), seed=seed, top=top, disagg=disagg,
    )
    if not result.rows:
        best = ", ".join(
            f"{name} {value * 1e3:,.0f} ms" for name, value in (("p99 TTFT", result.best_ttft_p99_s), ("p99 TPOT", result.best_tpot_p99_s))
            if value is not None
        )
        raise InputError(
            f"no configuration among {result.considered} meets p99 TTFT <= {slo_ttft_p99:g} ms and p99 TPOT <= "
            f"{slo_tpot_p99:g} ms at {rate:g} req/s" + (f"; the best achievable is {best}" if best else "")
        )
    return PlanResult(result, rate, prompt, output, slo_ttft_p99, slo_tpot_p99, disagg)


# --- validate and calibrate ------------------------------------------------------------------------

@dataclass(frozen=True)
class ValidateResult(_Json):
    """Prediction errors per metric (and per scenario for serving rows), with every row's outcome."""

    report: Mapping[str, Any]
    serving: bool
    file: Path
    rows: tuple[Mapping[str, Any], ...] = ()  # serving rows; single-stream rows are `report["rows"]`
    show_rows: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer validate --json` shape (serving rows only with `rows=True`, as `--rows`)."""
        data = dict(self.report)
        if self.serving and self.show_rows:
            data["results"] = list(self.rows)
        return data


def _cases(cases: str | Path | None, serving: bool) -> Path:
    from tokometer.calibration_data import MEASUREMENTS_CSV
    from tokometer.usecases.serving_validate import default_data_path

    if serving and cases is not None:
        raise InputError("give a CASES file or --serving, not both", field="serving")
    return default_data_path() if serving else Path(cases) if cases is not None else Path(MEASUREMENTS_CSV)


def validate(
    cases: str | Path | None = None,
    *,
    serving: bool = False,
    baseline: str | None = None,
    loho: bool = False,
    lso: bool = False,
    rows: bool = False,
) -> ValidateResult:
    """Predict every row of a measurements CSV and score the error per metric (`tokometer validate`).

    `cases` defaults to the shipped measurements.csv (`serving=True`: the shipped serving.csv); a file
    with serving columns goes through the serving simulator. `baseline` scores a peer formula,
    `loho`/`lso` hold out each device or each source.
    """
    from tokometer.usecases.serving_validate import is_serving_file

    path = _cases(cases, serving)
    if is_serving_file(path):
        from tokometer.usecases.serving_fit import validate_serving

        if baseline or loho:
            raise InputError(
                f"{'--baseline' if baseline else '--loho'} applies to single-stream rows; {path.name} has serving columns "
                "(its report carries the naive one-step predictor as naive_median_ape; --lso leaves each source out)"
            )
        rep = validate_serving(path, loso=lso)
        rep["mode"] = {"serving": True, "baseline": None, "loho": False, "lso": lso, "held_out": "source" if lso else None, "file": str(path)}
        results = rep.pop("results")
        return ValidateResult(rep, True, path, tuple(results), rows)
    from tokometer.usecases.calibration import leave_one_hardware_out, leave_one_source_out
    from tokometer.usecases.validation import read_cases, report
    from tokometer.usecases.validation import validate as run

    if baseline and (loho or lso):
        raise InputError("--baseline does not combine with --loho or --lso: a peer formula has nothing to fit")
    if loho and lso:
        raise InputError("--loho and --lso are two different hold-outs: choose one")
    measured = read_cases(path)
    results = leave_one_hardware_out(measured) if loho else leave_one_source_out(measured) if lso else run(measured, baseline=baseline)
    rep = report(results)
    held_out = "hardware" if loho else ("source" if lso else None)
    rep["mode"] = {"baseline": baseline, "loho": loho, "lso": lso, "held_out": held_out, "file": str(path)}
    return ValidateResult(rep, False, path, show_rows=rows)


@dataclass(frozen=True)
class CalibrateResult(_Json):
    """A fitted efficiency table and where it was written (or, with `reset`, which fit applies now)."""

    data: Mapping[str, Any]
    written: Path | None = None
    serving: bool = False
    table: Mapping[str, Any] = field(default_factory=dict)  # single-stream fits: group -> Efficiency
    counts: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer calibrate --json` shape."""
        return dict(self.data)


def calibrate(
    cases: str | Path | None = None,
    *,
    serving: bool = False,
    out: str | Path | None = None,
    reset: bool = False,
) -> CalibrateResult:
    """Fit engine efficiency on measured rows and write it (`tokometer calibrate`).

    The fit goes to the tokometer home (or `out`) and every later prediction uses it, until
    `reset=True` removes it. A file with serving columns (or `serving=True`) fits the serving simulator.
    """
    from tokometer.catalog.efficiency import clear_fitted_table
    from tokometer.catalog.serving import clear_serving_efficiency_table

    if reset:
        from tokometer.catalog.efficiency import EFFICIENCY_FILE, user_efficiency_file
        from tokometer.catalog.serving import SERVING_EFFICIENCY_FILE, user_serving_efficiency_file

        if cases is not None or out is not None:
            raise InputError("--reset takes no CASES file and no --out")
        user, shipped = (user_serving_efficiency_file(), SERVING_EFFICIENCY_FILE) if serving else (user_efficiency_file(), EFFICIENCY_FILE)
        removed = user.is_file()
        if removed:
            user.unlink()
        clear_fitted_table()
        clear_serving_efficiency_table()
        return CalibrateResult({"removed": str(user) if removed else None, "active": str(shipped)}, serving=serving)
    from tokometer.usecases.serving_validate import is_serving_file

    path = _cases(cases, serving)
    if is_serving_file(path):
        from tokometer.catalog.serving import user_serving_efficiency_file
        from tokometer.usecases.serving_fit import calibrate_serving

        target = Path(out) if out is not None else user_serving_efficiency_file()
        target.parent.mkdir(parents=True, exist_ok=True)
        data = calibrate_serving(path, target)
        clear_serving_efficiency_table()
        return CalibrateResult({"written": str(target), **data}, target, serving=True)
    from tokometer.catalog.efficiency import user_efficiency_file
    from tokometer.usecases.calibration import calibrate as run_fit
    from tokometer.usecases.calibration import write_table
    from tokometer.usecases.validation import read_cases

    table, meta, counts = run_fit(read_cases(path), data_label=path.name)
    target = Path(out) if out is not None else user_efficiency_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    write_table(target, table, meta, counts)
    clear_fitted_table()
    data = {"written": str(target), "meta": meta, "entries": {k: v.to_dict() for k, v in table.items()}}
    return CalibrateResult(data, target, table=table, counts=counts)


# --- fit and sweep ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class FitResult(_Json):
    """What fits a device: one row per model and quant, with speed and context (`report.rows`)."""

    report: FitReport

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer fit --json` shape."""
        return self.report.to_dict()


def fit(hw: str | HardwareSpec | None = None, *, model: str | Sequence[str] | None = None, quant: str | Sequence[str] | None = None, **options: Any) -> FitResult:
    """What can run on `hw`: catalog models and quants that fit, how fast, with how much context (`tokometer fit`).

    Options as the command's, in its units: `context_tokens` (4096), `sessions` (1), `min_speed_tok_s`,
    `engine`, `backend`, `kv_dtype`, `include_all`, `best`; `model`/`quant` narrow the catalog.
    """
    from tokometer.usecases.fit import fit as run_fit

    options.setdefault("context_tokens", 4096)
    options.setdefault("sessions", 1)
    return FitResult(run_fit(hw, models=_names(model), quants=_names(quant), **options))


@dataclass(frozen=True)
class SweepTable(_Json):
    """Decode over every combination of models x hardware x quants x contexts x batches (`result`)."""

    result: SweepResult

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer sweep --json` shape."""
        return self.result.to_dict()


def sweep(
    *,
    model: str | Sequence[str] | None = None,
    hw: str | Sequence[str] | None = None,
    quant: str | Sequence[str] | None = None,
    context: Sequence[int] = (512,),
    batch: Sequence[int] = (1,),
    **options: Any,
) -> SweepTable:
    """Decode speed over models x hardware x quants x contexts x batches, vectorised (`tokometer sweep`).

    Names are comma-separated strings or lists (`all`: the catalog); `context` in tokens; options
    `engine`, `backend`, `kv_dtype` as on the command line.
    """
    from tokometer.usecases.sweep import sweep as run_sweep

    return SweepTable(run_sweep(_names(model), _names(hw), _names(quant), tuple(context), tuple(batch), **options))


# --- bench and probe -------------------------------------------------------------------------------

@dataclass(frozen=True)
class BenchRun(_Json):
    """A measured run (`run`, graded against the prediction when hardware was given) and its store id."""

    run: RunRecord
    result: BenchResult
    run_id: int | None = None
    store_error: str | None = None
    deadline_s: float | None = None

    @property
    def status(self) -> str:
        """`complete`, `interrupted`, `deadline` or `failed`, as the runner ended."""
        return str(self.result.status)

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer bench --json` shape (the run without its per-request rows, and their count)."""
        shown = self.run.to_dict(requests=False)
        shown["requests_recorded"] = len(self.run.requests)
        return shown


def benchmark(url: str, **options: Any) -> BenchRun:
    """Measure a running LLM server (`tokometer bench`), blocking until the run ends.

    (Named `benchmark`, not `bench`: `tokometer.bench` is the package that talks to servers.)

    Options as the command's: `model` (the served name), `protocol`, `api_key`, `runs`, `warmup`,
    `max_tokens`, `prompt_tokens`, `depths`, `concurrency`, `rate_rps`, `duration_s`, `requests`,
    `slo_ttft_ms`, `slo_tpot_ms`, `stall_timeout_s`, `request_timeout_s`, `deadline_s`, `ignore_eos`,
    `seed`, `trace`/`trace_name`, `workers`, `ray_address`, `save` (True) and `progress`; with
    `predict_model` and `hw` (or `bandwidth_gb_per_s`) the run is graded against the prediction.
    """
    from tokometer.bench.runner import BenchConfig
    from tokometer.report.json import estimate_json
    from tokometer.usecases.benchmark import Predictor, benchmark
    from tokometer.usecases.request import mean_decode_depth

    bench_keys = {"runs", "warmup", "max_tokens", "prompt_tokens", "depths", "concurrency", "rate_rps", "duration_s", "requests", "slo_ttft_ms",
                  "slo_tpot_ms", "stall_timeout_s", "request_timeout_s", "deadline_s", "ignore_eos", "seed", "trace", "trace_name"}
    settings = {k: options.pop(k) for k in list(options) if k in bench_keys}
    for key in ("depths", "concurrency"):
        if isinstance(settings.get(key), int):
            settings[key] = (settings[key],)
        elif settings.get(key) is not None:
            settings[key] = tuple(settings[key])
    served_model, protocol, api_key = options.pop("model", None), options.pop("protocol", "auto"), options.pop("api_key", None)
    workers, ray_address = options.pop("workers", 1), options.pop("ray_address", None)
    save, progress, predict_model = options.pop("save", True), options.pop("progress", None), options.pop("predict_model", None)
    config = BenchConfig(url=url, model=served_model, protocol=protocol, api_key=api_key, **settings)
    config.validate()
    runner_factory = None
    if workers > 1 or ray_address is not None:
        from tokometer.bench.distributed import distributed_runner

        runner_factory = distributed_runner(config, workers, ray_address)
    predictor = Predictor(predict_model, options, to_json=estimate_json)
    if predictor.wanted:
        predictor.check_hardware()
        if predict_model or options.get("params_b"):
            # fail on a model or hardware the estimate refuses before measuring anything
            prompt = config.prompt_tokens or 512
            predictor.estimate(
                prompt_tokens=prompt, output_tokens=config.max_tokens, batch=1,
                context_tokens=int(mean_decode_depth(prompt, config.max_tokens)),
            )
    elif predict_model:
        raise InputError("--predict-model needs --hw (a catalog id, or `local` after `tokometer probe`) or --bandwidth")
    if runner_factory is None:
        outcome = benchmark(config, predictor, save=save, progress=progress)
    else:
        outcome = benchmark(config, predictor, save=save, progress=progress, runner=runner_factory)
    return BenchRun(outcome.run, outcome.result, outcome.run_id, outcome.store_error, config.deadline_bound_s())


async def bench_async(url: str, **options: Any) -> BenchRun:
    """`benchmark` as a coroutine (`tokometer bench`): the run goes on in a worker thread while the event loop stays free."""
    import asyncio

    return await asyncio.to_thread(benchmark, url, **options)


@dataclass(frozen=True)
class ProbeReport(_Json):
    """This machine's measured bandwidth and matmul peaks (`result`), the load around them, the profile."""

    result: ProbeResult
    load: CheckedProbe
    profile: Mapping[str, Any]
    lower_bound: bool
    saved_to: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer probe --json` shape."""
        return {"probe": self.result.to_dict(), "load": self.load.to_dict(), "profile": dict(self.profile),
                "lower_bound": self.lower_bound, "saved_to": str(self.saved_to) if self.saved_to else None}


def probe(
    *,
    quick: bool = False,
    device: str = "auto",
    save: bool = True,
    force: bool = False,
    on_attempt: Callable[[int, int, Any], None] | None = None,
    load: Callable[[], LoadSample] | None = None,
) -> ProbeReport:
    """Measure this machine's memory bandwidth and matmul speed; save them as hardware `local` (`tokometer probe`).

    `save=False` is `--no-save`; a profile measured under load is an `InputError` unless `force`.
    `on_attempt(n, limit, attempt)` hears each attempt; `load` replaces the machine's load sampler.
    """
    from tokometer.bench.local_profile import profile_entry, save_local_profile
    from tokometer.bench.machine_load import CPU_BUSY_LIMIT, GPU_BUSY_LIMIT
    from tokometer.bench.probe import probe_checked

    checked = probe_checked(quick=quick, device=device, on_attempt=on_attempt, load=load)
    if not checked.idle and save and not force:
        raise InputError(
            f"not saved: {checked.verdict()} (busy means over {CPU_BUSY_LIMIT:.0%} CPU or {GPU_BUSY_LIMIT:.0%} GPU). "
            "Stop the other work and run `tokometer probe` again, or pass --force to save these figures anyway"
        )
    path = save_local_profile(checked.result) if save else None
    return ProbeReport(checked.result, checked, profile_entry(checked.result), quick, path)


# --- catalogs --------------------------------------------------------------------------------------

CATALOG_KINDS = ("hardware", "models", "quants", "engines")


@dataclass(frozen=True)
class CatalogListing(_Json):
    """The entries of one catalog as `tokometer <kind> list` shows them: typed (`items`: `HardwareSpec`s,
    model presets, `QuantFormat`s or `EngineSpec`s) and as the JSON dicts (`entries`)."""

    kind: str
    items: tuple[Any, ...]
    entries: tuple[Mapping[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        """`{kind: [entry, ...]}`; `to_json()` prints the list itself, as `tokometer <kind> list --json`."""
        return {self.kind: [dict(e) for e in self.entries]}

    def to_json(self) -> str:
        """The text `tokometer <kind> list --json` prints (a JSON list)."""
        return dumps(self.to_dict()[self.kind])


def list_catalog(kind: str, *, vendor: str | None = None, segment: str | None = None, sort: str = "id") -> CatalogListing:
    """The entries `tokometer <kind> list` shows, for `kind` in hardware, models, quants, engines.

    Hardware takes the command's filters (`vendor`, `segment`) and `sort` (id, bandwidth, memory,
    year). The catalogs themselves are `tokometer.hardware_catalog()`, `model_catalog()`,
    `quant_catalog()` and `engine_catalog()`.
    """
    from tokometer.catalog import engine_catalog, hardware_catalog, model_catalog, quant_catalog

    if kind == "hardware":
        keys: dict[str, Callable[[Any], Any]] = {
            "id": lambda h: h.id,
            "bandwidth": lambda h: -h.memory_bandwidth_gb_per_s,
            "memory": lambda h: -h.memory_gb,
            "year": lambda h: -(h.launch_year or 0),
        }
        if sort not in keys:
            raise InputError(f"sort must be one of {', '.join(keys)}, got {sort!r}", field="sort")
        items = [h for h in hardware_catalog() if (not vendor or h.vendor == vendor.lower()) and (not segment or h.segment == segment.lower())]
        items.sort(key=keys[sort])
        return CatalogListing(kind, tuple(items), tuple(h.to_dict() for h in items))
    if kind == "models":
        presets = tuple(model_catalog())
        return CatalogListing(kind, presets, tuple(
            {"id": p.id, "name": p.name, "hf_id": p.hf_id, "architecture": p.spec.architecture, "total_params": p.spec.total_params,
             "active_params": p.spec.active_params(), "max_context_tokens": p.spec.max_context_tokens, "source": p.source}
            for p in presets
        ))
    if kind == "quants":
        formats = tuple(quant_catalog())
        return CatalogListing(kind, formats, tuple(q.to_dict() for q in formats))
    if kind == "engines":
        engines = tuple(engine_catalog())
        return CatalogListing(kind, engines, tuple(e.to_dict() for e in engines))
    raise InputError(f"kind must be one of {', '.join(CATALOG_KINDS)}, got {kind!r}", field="kind")
