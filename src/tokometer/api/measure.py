"""`tokometer.benchmark` / `bench_async` (measure a running server) and `tokometer.probe` (this machine)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokometer.api.result import JsonResult
from tokometer.errors import InputError

if TYPE_CHECKING:
    from tokometer.bench.machine_load import LoadSample
    from tokometer.bench.probe import CheckedProbe, ProbeResult
    from tokometer.bench.runner import BenchResult
    from tokometer.domain.runrecord import RunRecord


@dataclass(frozen=True)
class BenchRun(JsonResult):
    """A measured run (`run`, graded against the prediction when hardware was given) and its store id."""

    run: RunRecord
    result: BenchResult
    run_id: int | None = None
    store_error: str | None = None
    deadline_s: float | None = None
    store_reason: str | None = None  # why the run is not (fully) in the database, in words ("the disk is full")
    saved_to: Path | None = None  # where the whole run was written instead (`tokometer runs import` stores it)
    plot_saved_to: Path | None = None  # `plot_path`: the frontier figure of a concurrency run

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
    `seed`, `trace`/`trace_name` (or `trace_file`, a path read and parsed here), `workers`, `ray_address`, `save` (True) and `progress`; with
    `predict_model` and `hw` (or `bandwidth_gb_per_s`) the run is graded against the prediction.
    The random workload (`--concurrency`, `--rate`): `input_len`, `output_len`, `range_ratio`. The frontier
    (`--concurrency`): `gpus` (the server's, default 1) and `plot_path` (a .png/.svg/.pdf of the measured
    points over the predicted frontier).
    """
    from tokometer.bench.runner import BenchConfig
    from tokometer.report.bench_frontier import check_plot_path, plot_bench_frontier
    from tokometer.report.json import estimate_json
    from tokometer.usecases.bench_frontier import check_gpus
    from tokometer.usecases.benchmark import Predictor, benchmark
    from tokometer.usecases.request import mean_decode_depth

    bench_keys = {"runs", "warmup", "max_tokens", "prompt_tokens", "depths", "concurrency", "rate_rps", "duration_s", "requests", "slo_ttft_ms",
                  "slo_tpot_ms", "stall_timeout_s", "request_timeout_s", "deadline_s", "ignore_eos", "seed", "trace", "trace_name",
                  "input_len", "output_len", "range_ratio"}
    trace_file = options.pop("trace_file", None)
    if trace_file is not None:
        from tokometer.bench.trace import parse_trace, read_trace_text

        trace_file = Path(trace_file)
        options["trace"], options["trace_name"] = parse_trace(read_trace_text(trace_file), trace_file.name), trace_file.name
    settings = {k: options.pop(k) for k in list(options) if k in bench_keys}
    for key in ("depths", "concurrency"):
        if isinstance(settings.get(key), int):
            settings[key] = (settings[key],)
        elif settings.get(key) is not None:
            settings[key] = tuple(settings[key])
    served_model, protocol, api_key = options.pop("model", None), options.pop("protocol", "auto"), options.pop("api_key", None)
    workers, ray_address = options.pop("workers", 1), options.pop("ray_address", None)
    save, progress, predict_model = options.pop("save", True), options.pop("progress", None), options.pop("predict_model", None)
    gpus, plot_path = options.pop("gpus", 1), options.pop("plot_path", None)
    if settings.get("range_ratio") is None:
        settings.pop("range_ratio", None)
    config = BenchConfig(url=url, model=served_model, protocol=protocol, api_key=api_key, **settings)
    config.validate()
    check_gpus(gpus)
    if plot_path is not None:
        check_plot_path(plot_path)
        if config.mode != "concurrency":
            raise InputError("--plot draws the frontier of a --concurrency run")
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
        outcome = benchmark(config, predictor, save=save, progress=progress, gpus=gpus)
    else:
        outcome = benchmark(config, predictor, save=save, progress=progress, runner=runner_factory, gpus=gpus)
    plotted = None
    if plot_path is not None and any(level.frontier is not None for level in outcome.run.levels):
        plotted = plot_bench_frontier(plot_path, outcome.run)
    return BenchRun(outcome.run, outcome.result, outcome.run_id, outcome.store_error, config.deadline_bound_s(), outcome.store_reason,
                    outcome.saved_to, plotted)


async def bench_async(url: str, **options: Any) -> BenchRun:
    """`benchmark` as a coroutine (`tokometer bench`): the run goes on in a worker thread while the event loop stays free."""
    import asyncio

    return await asyncio.to_thread(benchmark, url, **options)


@dataclass(frozen=True)
class ProbeReport(JsonResult):
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
