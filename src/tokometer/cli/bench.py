"""`tokometer bench`, `tokometer runs ...` and `tokometer probe`: measure, keep, compare, grade.

Entry points only: the measuring is `tokometer.bench`, the keeping `tokometer.store`, the
predicting `tokometer.usecases.estimate.estimate`. Heavy modules load inside the commands.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from tokometer.cli.options import engine_options, hardware_options, json_option, model_options
from tokometer.errors import BenchError, InputError

API_KEY_ENV = ("TOKOMETER_API_KEY", "OPENAI_API_KEY")


def _int_list(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...]:
    if not value:
        return ()
    try:
        items = tuple(int(v.strip().replace("_", "")) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated whole numbers, got {value!r}") from None
    if not items:
        raise click.BadParameter("expected at least one number")
    return items


def _progress() -> Callable[[int, int | None, str], None] | None:
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int | None, label: str) -> None:
        if total:
            width = 28
            filled = min(width, int(width * done / total))
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label:<18}")
        else:
            sys.stderr.write(f"\r{done} requests {label:<18}")
        sys.stderr.flush()

    return show


def _end_progress(progress: object) -> None:
    if progress is not None:
        sys.stderr.write("\r" + " " * 60 + "\r")
        sys.stderr.flush()


@click.command()
@click.argument("url")
@click.option("-m", "--model", "served_model", help="Model name to request (default: the server's first model).")
@click.option("--protocol", type=click.Choice(["auto", "openai-chat", "openai-completions", "llamacpp", "ollama"]), default="auto", show_default=True, help="Wire protocol; auto probes the server.")
@click.option("--api-key", help="Bearer token (default: $TOKOMETER_API_KEY, then $OPENAI_API_KEY); never stored or printed.")
@click.option("--runs", type=int, default=3, show_default=True, help="Measured repetitions (rounds of c streams, in --concurrency mode, unless --requests sets the count).")
@click.option("--warmup", type=int, default=1, show_default=True, help="Cold runs sent first and dropped from the statistics.")
@click.option("--max-tokens", type=int, default=200, show_default=True, help="Tokens to generate per request.")
@click.option("--prompt-tokens", type=int, default=1024, show_default=True, help="Length of the long prompt that measures TTFT and prefill (0: skip).")
@click.option("--depth", "depths", callback=_int_list, help="Decode speed at these context depths, e.g. 0,4096,16384.")
@click.option("--concurrency", callback=_int_list, help="Concurrent streams, e.g. 1,2,4: per-stream and aggregate speed.")
@click.option("--rate", "rate_rps", type=float, help="Open-loop Poisson arrivals, requests per second.")
@click.option("--duration", "duration_s", type=float, help="Seconds of arrivals for --rate (default 60).")
@click.option("--requests", type=int, help="Measured requests: with --concurrency, this many at every level (N // c rounds of c streams, then the rest), as vllm bench serve --num-prompts; in other modes, stop after this many.")
@click.option("--slo-ttft", "slo_ttft_ms", type=float, help="Goodput SLO: time to first token, ms.")
@click.option("--slo-tpot", "slo_tpot_ms", type=float, help="Goodput SLO: time per output token after the first, ms.")
@click.option("--timeout", "stall_timeout_s", type=float, default=60.0, show_default=True, help="Seconds without data before a request counts as stalled (prompts over 2048 tokens get prompt/20 tok/s if longer).")
@click.option("--request-timeout", "request_timeout_s", type=float, help="Seconds a whole request may take (default: 60 + prompt/20 + max-tokens/2).")
@click.option("--deadline", "deadline_s", type=float, help="Seconds the whole run may take (default: every planned request at its --request-timeout); completed requests are kept.")
@click.option("--ignore-eos/--no-ignore-eos", default=None, help="Ask the server to ignore end-of-sequence: `ignore_eos` for vLLM, SGLang and llama.cpp (with n_predict); Ollama has none, its options.num_predict caps the output (default: where known to work).")
@click.option("--input-len", type=int, help="Random workload (--concurrency, --rate): prompt tokens per request, as vllm bench serve --random-input-len.")
@click.option("--output-len", type=int, help="Random workload (--concurrency, --rate): tokens to generate per request (replaces --max-tokens), as --random-output-len.")
@click.option("--range-ratio", type=float, help="Random workload: lengths drawn uniform in [L(1-R), L(1+R)], R in [0, 1), as vLLM's --random-range-ratio [default: 0].")
@click.option("--gpus", type=int, default=1, show_default=True, help="GPUs the server runs on: --concurrency reports output tokens/s per GPU (the frontier's axis) over this many.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), help="--concurrency: write a figure (.png/.svg/.pdf) of the measured levels over the predicted frontier.")
@click.option("--seed", type=int, help="Seed for prompts and arrivals.")
@click.option("--trace", "trace_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Replay a trace's arrivals, prompt and output lengths (CSV: Azure TIMESTAMP,ContextTokens,GeneratedTokens or arrival_s,prompt_tokens,output_tokens; or JSON Lines).")
@click.option("--workers", type=click.IntRange(1, 1024), default=1, show_default=True, help="Split the streams of --concurrency or --rate across this many local processes (or Ray workers with --ray).")
@click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None, help="Run the --workers on a Ray cluster: ADDRESS, or no value for a local head on 127.0.0.1 (pip install tokometer[ray]).")
@click.option("--predict-model", help="Model to predict for the verdict (catalog name, .gguf, config.json, Hub id).")
@model_options
@hardware_options
@engine_options
@click.option("--no-save", is_flag=True, help="Do not store the run.")
@json_option
def bench(
    url: str,
    served_model: str | None,
    protocol: str,
    api_key: str | None,
    predict_model: str | None,
    trace_file: Path | None,
    workers: int,
    ray_address: str | None,
    no_save: bool,
    as_json: bool,
    **options: Any,
) -> None:
    """Measure a running LLM server: decode speed, time to first token, and how they compare.

    URL is the server (with or without /v1) or a full endpoint. The protocol is detected:
    OpenAI chat/completions (vLLM, SGLang, LM Studio, llama.cpp, llama-cpp-python...), llama.cpp's
    native /completion, Ollama's /api/generate. One cold run is dropped, then --runs requests of
    --max-tokens tokens measure decode speed (tokens after the first / seconds after the first)
    and --runs long-prompt requests measure TTFT. With --hw (or --hw local after `tokometer
    probe`) the result is graded against the prediction.

    \b
        tokometer bench http://localhost:8080 --predict-model llama-3.1-8b -q q4_k_m --hw rtx-4090
        tokometer bench http://localhost:11434 -m llama3.1:8b --concurrency 1,2,4 --hw local
        tokometer bench http://localhost:8000 --concurrency 4,16,64 --input-len 1024 --output-len 1024 --gpus 8
        tokometer bench http://localhost:8000 --concurrency 8,32 --predict-model llama-3.1-70b --hw h100-sxm -q fp8 --plot f.png

    With --concurrency each level is also a point of the serving frontier: output tokens/s per GPU
    (over --gpus) and tokens/s per user (the median request's 1 / TPOT), with TTFT; with a model and
    --hw the serving simulator's frontier for the same workload and layout (TP over --gpus) is shown
    beside it.
    """
    from tokometer.api.measure import benchmark as run_bench
    from tokometer.domain.runrecord import RunSummary
    from tokometer.report.bench import render_run

    key = api_key or next((os.environ[k] for k in API_KEY_ENV if os.environ.get(k)), None)
    if trace_file is not None:
        options["trace_file"] = trace_file
    progress = _progress()
    try:
        outcome = run_bench(url, model=served_model, protocol=protocol, api_key=key, workers=workers, ray_address=ray_address,
                            predict_model=predict_model, save=not no_save, progress=progress, **options)
    finally:
        _end_progress(progress)
    result, record, run_id = outcome.result, outcome.run, outcome.run_id
    summary = record.summary or RunSummary()
    stop_code = 128 + int(result.stopped_by) if result.stopped_by else 130
    if result.endpoint is None:
        if result.status == "interrupted":
            raise click.exceptions.Exit(stop_code)
        raise BenchError(f"nothing measured at {url}")
    if as_json:
        click.echo(outcome.to_json())
    else:
        click.echo(render_run(record))
        if outcome.plot_saved_to is not None:
            click.echo(f"wrote the frontier figure to {outcome.plot_saved_to}")
        if run_id is not None:
            click.echo(f"\nsaved as run #{run_id}: `tokometer runs show {run_id}`")
    if outcome.saved_to is not None or outcome.store_reason is not None:
        where = f"the whole run is in {outcome.saved_to}; `tokometer runs import {outcome.saved_to}` stores it later" if outcome.saved_to else "and no folder took a copy"
        click.echo(f"error: the run was not saved: {outcome.store_reason}; {where}", err=True)
    elif outcome.store_error:
        click.echo(f"warning: {outcome.store_error}", err=True)
    if result.status == "interrupted":
        raise click.exceptions.Exit(stop_code)
    if result.status == "deadline":
        kept = summary.requests_ok
        saved = f" (run #{run_id} saved)" if run_id is not None else ""
        raise BenchError(f"the run reached its deadline of {outcome.deadline_s:g} s; {kept} completed request(s) kept{saved}")
    if result.status == "failed":
        first = summary.first_error or next((r.get("error") for r in record.requests if r.get("error")), "no response")
        saved = f" (run #{run_id} saved)" if run_id is not None else ""
        raise BenchError(f"all {summary.requests_total} measured requests failed: {first}{saved}")
    if outcome.store_reason is not None:
        raise click.exceptions.Exit(RUN_NOT_STORED_EXIT)


# `bench` measured, printed and kept the run in a file, but the database refused it (disk full,
# read-only, locked): not the user's input (2), not a crash (1)
RUN_NOT_STORED_EXIT = 3


@click.group()
def runs() -> None:
    """Stored benchmark runs: list, show, compare, export, import, path."""


@runs.command("list")
@click.option("--limit", type=int, default=20, show_default=True)
@click.option("--model", help="Only runs of this served model.")
@json_option
def runs_list(limit: int, model: str | None, as_json: bool) -> None:
    """The most recent runs, newest first."""
    from tokometer.api.runs import list_runs
    from tokometer.report.bench import render_list

    found = list_runs(limit=limit, model=model)
    click.echo(found.to_json() if as_json else render_list(found.runs))


@runs.command("show")
@click.argument("run_id", type=int)
@click.option("--requests", "with_requests", is_flag=True, help="Also list every request.")
@json_option
def runs_show(run_id: int, with_requests: bool, as_json: bool) -> None:
    """One run in full: summary, levels, prediction, grade, flags."""
    from tokometer.api.runs import show_run
    from tokometer.report.bench import render_run

    shown = show_run(run_id, requests=with_requests)
    click.echo(shown.to_json() if as_json else render_run(shown.run, with_requests=with_requests))


@runs.command("compare")
@click.argument("run_ids", type=int, nargs=-1, required=True)
@json_option
def runs_compare(run_ids: tuple[int, ...], as_json: bool) -> None:
    """Runs side by side, with each one's change against the first."""
    from tokometer.api.runs import compare_runs
    from tokometer.report.bench import render_compare

    compared = compare_runs(run_ids)
    click.echo(compared.to_json() if as_json else render_compare(compared.runs))


@runs.command("export")
@click.argument("run_ids", type=int, nargs=-1)
@click.option("--format", "fmt", type=click.Choice(["json", "csv"]), default="json", show_default=True)
@click.option("--requests", "per_request", is_flag=True, help="CSV: one row per request instead of per run.")
@click.option("--limit", type=int, default=1000, show_default=True, help="Without ids: the most recent runs.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True, path_type=Path), help="Write to a file instead of stdout.")
@json_option
def runs_export(run_ids: tuple[int, ...], fmt: str, per_request: bool, limit: int, output: Path | None, as_json: bool) -> None:
    """Runs as JSON (everything, timestamps included) or CSV."""
    from tokometer.api.runs import export_runs

    if as_json:
        fmt = "json"
    found = export_runs(run_ids, limit=limit, requests=fmt == "json" or per_request)
    text = found.to_json() if fmt == "json" else found.to_csv(requests=per_request)
    if output is None:
        click.echo(text, nl=fmt == "json")
    else:
        try:
            output.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write {output}: {exc.strerror}") from None
        click.echo(f"wrote {len(found.runs)} run(s) to {output}", err=True)


@runs.command("import")
@click.argument("files", type=click.Path(exists=True, dir_okay=False, path_type=Path), nargs=-1, required=True)
@json_option
def runs_import(files: tuple[Path, ...], as_json: bool) -> None:
    """Import `llama-bench -o json`, `vllm bench serve` JSON or a tokometer export."""
    from tokometer.api.runs import import_runs

    imported = import_runs(files)
    if as_json:
        click.echo(imported.to_json())
    else:
        for item in imported.imported:
            click.echo(f"imported {item['file']} ({item['source']}, {item['model']}, {item['requests']} samples) as run #{item['id']}")


@runs.command("delete")
@click.argument("run_id", type=int)
@click.option("--yes", is_flag=True, help="Do not ask.")
def runs_delete(run_id: int, yes: bool) -> None:
    """Delete one run and its requests."""
    from tokometer.api.runs import delete_run, show_run

    if not yes:
        show_run(run_id, requests_limit=0)  # an unknown id is refused before asking
        click.confirm(f"delete run #{run_id}?", abort=True)
    delete_run(run_id)
    click.echo(f"deleted run #{run_id}")


@runs.command("path")
@json_option
def runs_path(as_json: bool) -> None:
    """Where the runs database lives ($TOKOMETER_HOME/runs.db)."""
    from tokometer.api.runs import runs_path as where

    found = where()
    click.echo(found.to_json() if as_json else str(found.path))


@click.command()
@click.option("--quick", is_flag=True, help="Smaller arrays and fewer repetitions (a few seconds): a lower bound.")
@click.option("--device", type=click.Choice(["auto", "cpu", "gpu"]), default="auto", show_default=True, help="auto: the GPU through torch when present, else the CPU.")
@click.option("--no-save", is_flag=True, help="Measure only; do not write the `local` profile.")
@click.option("--force", is_flag=True, help="Save the profile even when the machine was busy while it was measured.")
@json_option
def probe(quick: bool, device: str, no_save: bool, force: bool, as_json: bool) -> None:
    """Measure this machine's memory bandwidth and matmul speed; save them as hardware `local`.

    Then `tokometer estimate MODEL --hw local` and `tokometer bench URL --hw local` predict for
    this very machine. The bandwidth is measured (STREAM-like copy and triad over arrays far
    larger than the caches, best of several passes), so it is what the memory really delivers,
    not the datasheet peak. Each format's matrix peak the device runs is measured (a GPU: fp16,
    bf16, fp32, fp8, int8 where torch has them; the CPU: fp32 and fp64).

    The machine's load is sampled before and after each measurement (CPU busy share; GPU
    utilisation through NVML or torch), and the probe repeats until two idle measurements agree.
    A profile measured under load is not saved without --force. --quick gives a lower bound.
    """
    from tokometer.api.measure import probe as run_probe
    from tokometer.report.text import num

    if not as_json:
        click.echo("measuring memory bandwidth and matmul speed, with the machine's load before and after...", err=True)
    def told(n: int, limit: int, attempt: Any) -> None:
        if not as_json:
            click.echo(f"  attempt {n} of at most {limit}: {num(attempt.result.memory_bandwidth_gb_per_s)} GB/s, "
                       f"{attempt.result.elapsed_s:.1f} s; before: {attempt.before.words()}; after: {attempt.after.words()}", err=True)

    measured = run_probe(quick=quick, device=device, save=not no_save, force=force, on_attempt=told)
    checked, result, path = measured.load, measured.result, measured.saved_to
    if as_json:
        click.echo(measured.to_json())
        return
    click.echo(f"{result.name}: {result.device}, {result.threads} thread(s), {num(result.memory_gb)} GB memory")
    click.echo(f"memory bandwidth  {num(result.memory_bandwidth_gb_per_s)} GB/s  (copy {num(result.copy_gb_per_s)}, triad {num(result.triad_gb_per_s)}; {result.array_bytes / 1e6:,.0f} MB arrays)")
    peaks = result.matrix_tflops or {k: v for k, v in (("fp16", result.fp16_tflops), ("fp32", result.fp32_tflops)) if v}
    for key, value in peaks.items():
        click.echo(f"{key + ' matmul':<17} {num(value)} {'TOPS' if key == 'int8' else 'TFLOPS'}")
    if result.formats_note:
        click.echo(f"note: {result.formats_note}")
    click.echo(f"load: {checked.verdict()}")
    click.echo(f"took {result.elapsed_s:.1f} s per attempt" + (" (quick: a lower bound; run `tokometer probe` for the full figures)" if quick else ""))
    if path:
        forced = " (measured under load: --force)" if not checked.idle else ""
        click.echo(f"saved as hardware `local` in {path}{forced}: try `tokometer estimate llama-3.1-8b -q q4_k_m --hw local`")
