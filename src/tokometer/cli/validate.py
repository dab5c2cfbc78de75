"""`tokometer validate` (score predictions on measured rows) and `tokometer calibrate` (fit them)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from tokometer.cli.options import json_option

DEFAULT_TIME_LIMIT_S = 10.0  # fitting.serving_runs.DEFAULT_TIME_LIMIT_S (not imported: keeps `--help` quick)


def _fmt(value: float | None, pct: bool = True) -> str:
    if value is None:
        return "-"
    return f"{value:.1%}" if pct else f"{value:g}"


def render_report(rep: dict[str, Any], title: str) -> str:
    from tokometer.report.text import table

    rows = []
    for name, m in [*rep["metrics"].items(), *rep["subsets"].items()]:
        rows.append(
            [
                name,
                str(m["n"]),
                str(m["scored"]),
                _fmt(m["median_ape"]),
                _fmt(m["p90_ape"]),
                _fmt(m["within_15"]),
                _fmt(m["interval_coverage"]),
            ]
        )
    unscored: dict[str, int] = rep["not_scored"]
    lines = [title, "", table(rows, ["metric", "rows", "scored", "median err", "p90 err", "within 15%", "80% band holds"])]
    if rep.get("families"):
        lines += ["", "single device, per hardware family:", _grouped_table(rep["families"], "family")]
    mode = rep.get("mode") or {}
    if rep.get("sources") and (mode.get("held_out") or mode.get("only") or mode.get("family")):
        lines += ["", "single device, per publication:", _grouped_table(rep["sources"], "publication")]
    lines += ["", f"{rep['rows_scored']} of {rep['rows_total']} rows scored"]
    if unscored:
        lines += ["", "not scored:"]
        lines += [f"  {count:4d}  {reason}" for reason, count in unscored.items()]
    return "\n".join(lines)


def _grouped_table(groups: dict[str, dict[str, Any]], label: str) -> str:
    """One row per group and metric with scored rows (`family_report` / `source_report` output)."""
    from tokometer.report.text import table

    rows = [
        [name, metric, str(m["scored"]), _fmt(m["median_ape"]), _fmt(m["p90_ape"]), _fmt(m["interval_coverage"]), _signed(m["median_signed_error"])]
        for name, metrics in groups.items()
        for metric, m in metrics.items()
        if m["scored"]
    ]
    return table(rows, [label, "metric", "scored", "median err", "p90 err", "80% band holds", "median bias"])


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def _echo_per_publication(per: dict[str, Any]) -> None:
    """One line per metric: the single-device figures with every publication weighing the same."""
    for metric, m in per.items():
        if m["scored"] and m["publications"] > 1:
            click.echo(
                f"{metric}, single device, each of {m['publications']} publications weighing the same: median error "
                f"{_fmt(m['median_ape'])}, p90 {_fmt(m['p90_ape'])}, 80 % band holds {_fmt(m['interval_coverage'])}"
            )


def _source_table(sources: dict[str, dict[str, dict[str, Any]]]) -> str:
    """One row per publication and metric class (`serving_select.source_summary`)."""
    from tokometer.report.text import table

    rows = [
        [name, cls, f"{m['scored']} of {m['n']}", _fmt(m["median_ape"]), _fmt(m["p90_ape"]), _signed(m["median_signed_error"])]
        for name, classes in sources.items()
        for cls, m in classes.items()
    ]
    return table(rows, ["publication", "metric class", "scored", "median err", "p90 err", "median bias"])


def _family_table(groups: dict[str, dict[str, Any]]) -> str:
    """One row per serving family and metric class (`serving_families.family_report` groups)."""
    from tokometer.report.text import table

    rows = [[*key.split("|", 1), str(m["n"]), _fmt(m["median_ape"])] for key, m in groups.items()]
    return table(rows, ["family", "metric class", "scored", "median err"])


def render_serving_report(rep: dict[str, Any], title: str) -> str:
    """Per scenario and metric: rows, scored, fitted error (median, p90, within 15 %), LOSO and naive medians."""
    from tokometer.report.text import table

    out = []
    for scenario, metrics in rep["scenarios"].items():
        for metric, m in metrics.items():
            cv_m = rep.get("loso", {}).get("scenarios", {}).get(scenario, {}).get(metric, {})
            out.append([scenario or "(none)", metric, str(m["n"]), str(m["scored"]), _fmt(m["median_ape"]), _fmt(m["p90_ape"]),
                        _fmt(m["within_15"]), _fmt(cv_m.get("median_ape")), _fmt(m["naive_median_ape"])])
    lines = [title, "", table(out, ["scenario", "metric", "rows", "scored", "median err", "p90 err", "within 15%", "LOSO median", "naive median"])]
    lines += ["", f"{rep['scored']} of {rep['rows']} rows scored"]
    reasons: dict[str, int] = {}
    for r in rep["unpredictable"]:
        reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    if reasons:
        lines += ["", "not scored:"]
        lines += [f"  {count:4d}  {reason}" for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1])]
    return "\n".join(lines)


def _validate_serving(
    cases: Path, baseline: str | None, loho: bool, lso: bool, show_rows: bool, as_json: bool, time_limit_s: float,
    only: tuple[str, ...] = (), family: str | None = None, *, shipped: bool = True,
) -> None:
    from tokometer.api.measurements import validate as run_validate
    from tokometer.report.text import num, table

    if baseline or loho:
        raise click.UsageError(
            f"{'--baseline' if baseline else '--loho'} applies to single-stream rows; {cases.name} has serving columns "
            "(its report carries the naive one-step predictor as naive_median_ape; --lso leaves each source out)"
        )
    scored = run_validate(None if shipped else cases, serving=shipped, lso=lso, rows=show_rows, time_limit_s=time_limit_s,
                          progress=not as_json, only=only, family=family)
    rep, rows = dict(scored.report), scored.rows
    if as_json:
        click.echo(scored.to_json())
        return
    if only or family:
        chosen = "; ".join(x for x in (f"only {', '.join(rep['mode']['only'])}" if rep["mode"]["only"] else "",
                                       f"family {family}" if family else "") if x)
        title = f"serving rows through the simulator ({chosen}; " + ("fit-file sources held out" if lso else "fit-file sources in-sample") + ")"
        click.echo(render_serving_report(rep, title))
        click.echo("\nper publication (held out: " + ", ".join(f"{s} {h}" for s, h in rep["mode"]["held_out"].items()) + "):")
        click.echo(_source_table(rep["sources"]))
        if rep.get("families"):
            click.echo("\nper serving family:")
            click.echo(_family_table(rep["families"]))
    else:
        title = f"{cases}: serving rows through the simulator" + (" (with leave-one-source-out)" if lso else "")
        click.echo(render_serving_report(rep, title))
    if show_rows:
        click.echo("")
        click.echo(table(
            [[r["row_id"], r["scenario"] or "-", r["metric"], num(r["measured"]), num(r["predicted"]), _fmt(r["ape"]), r["reason"] or ""]
             for r in rows],
            ["row", "scenario", "metric", "measured", "predicted", "error", "not scored because"],
        ))


@click.command()
@click.argument("cases", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--serving", is_flag=True, help="Score the shipped serving rows (calibration_data/serving.csv) instead of measurements.csv.")
@click.option(
    "--baseline",
    type=click.Choice(["ceiling", "derate"]),
    help="Score a peer formula instead: 100 % of datasheet bandwidth, or 0.55 x that ceiling.",
)
@click.option(
    "--loho", is_flag=True, help="Leave-one-hardware-out: each device (multi-device rows too) is predicted by a fit that never saw it."
)
@click.option("--lso", is_flag=True, help="Leave-one-source-out: each publication is predicted by a fit on the others only.")
@click.option("--rows", "show_rows", is_flag=True, help="Also print every row with its prediction or the reason it was not scored.")
@click.option(
    "--only", "only", multiple=True, metavar="SOURCE",
    help="Predict and report only this publication's rows (source_id; repeat for several); --lso/--loho still fit on every other row. "
    "With --serving: serving.csv's sources or a compiled 2025-26 publication (calibration_data/serving_published/).",
)
@click.option(
    "--family", metavar="FAMILY",
    help="Predict and report only rows on this hardware family (Apple, 'NVIDIA consumer', datacenter, 'AMD and Intel GPUs', 'APUs and CPUs'). "
    "With --serving: serving-family words, at most one each of dense/MoE, BF16/FP8/FP4/INT4, Ampere/Hopper/Blackwell/Instinct ('MoE Hopper').",
)
@click.option(
    "--time-limit", "time_limit_s", type=float, default=DEFAULT_TIME_LIMIT_S, show_default=True, metavar="SECONDS",
    help="Wall time one simulated run (the rows that share a setup) may take; past it its rows are unscored with that reason.",
)
@json_option
def validate(
    cases: Path | None, serving: bool, baseline: str | None, loho: bool, lso: bool, show_rows: bool,
    only: tuple[str, ...], family: str | None, time_limit_s: float, as_json: bool,
) -> None:
    """Predict every row of a measurements CSV and report the error per metric.

    CASES [default: the shipped measurements.csv and published/*.csv] follows its schema: hardware by hardware_id /
    hardware_as_stated (or the spec columns mem_bandwidth_gbps, memory_gb, fp16_dense_tflops...),
    the model by name or total_params_b/active_params_b with quant/bits_per_weight/model_size.
    Metrics scored: tg, pp, ttft_ms (batch 1), tg_agg, pp_agg, tput_out. A row that cannot be read
    or predicted (unknown metric or engine, unreadable cell, served workload) and a row flagged in
    its source are listed with the reason and counted, never fatal.

    A file with serving columns (scenario, request_rate, concurrency, num_requests, dataset,
    kv_cache_dtype, max_num_seqs_or_batch; `--serving` takes the shipped serving.csv) is predicted
    through the serving simulator, one run per published run: metrics tput_out, tput_total,
    tput_in, req_per_s and ttft/tpot/itl/e2e with a unit and statistic (ttft_ms_mean, itl_s_p99...),
    reported per metric and per scenario; rows it cannot simulate are listed with the reason.
    Static-batch aggregates of a single-stream file (tg_agg, pp_agg, tput_out at batch > 1 or a
    "max" batch) go through the simulator too. A bar shows progress on stderr when it is a terminal.
    """
    from tokometer.api.measurements import evidence_file
    from tokometer.api.measurements import validate as run_validate

    if serving and cases is not None:
        raise click.UsageError("give a CASES file or --serving, not both")
    if not (time_limit_s > 0 and math.isfinite(time_limit_s)):
        raise click.UsageError(f"--time-limit must be a positive number of seconds, got {time_limit_s!r}")
    shipped = cases is None and not serving  # the shipped evidence: measurements.csv + published/*.csv
    cases, serving_rows = evidence_file(cases, serving)
    if serving_rows:
        _validate_serving(cases, baseline, loho, lso, show_rows, as_json, time_limit_s, only, family, shipped=serving)
        return
    if baseline and (loho or lso):
        raise click.UsageError("--baseline does not combine with --loho or --lso: a peer formula has nothing to fit")
    if loho and lso:
        raise click.UsageError("--loho and --lso are two different hold-outs: choose one")
    scored = run_validate(None if shipped else cases, baseline=baseline, loho=loho, lso=lso, rows=show_rows, time_limit_s=time_limit_s,
                          progress=not as_json, only=only, family=family)
    rep = dict(scored.report)
    held_out = rep["mode"]["held_out"]
    if as_json:
        click.echo(scored.to_json())
        return
    title = f"{cases}: " + (
        f"baseline {baseline}"
        if baseline
        else {"hardware": "leave-one-hardware-out", "source": "leave-one-source-out"}.get(held_out or "", "fitted model")
    )
    chosen = [f"only {', '.join(rep['mode']['only'])}" if rep["mode"].get("only") else "", f"family {family}" if family else ""]
    if any(chosen):
        title += " (" + "; ".join(c for c in chosen if c) + ")"
    click.echo(render_report(rep, title))
    _echo_per_publication(rep.get("per_publication") or {})
    if show_rows:
        from tokometer.report.text import num, table

        click.echo("")
        click.echo(
            table(
                [
                    [
                        r["row_id"],
                        r["metric"],
                        str(r["hardware"] or "-"),
                        num(r["measured"]),
                        num(r["predicted"]),
                        _fmt(r["ape"]),
                        r["reason"] or "",
                    ]
                    for r in rep["rows"]
                ],
                ["row", "metric", "hardware", "measured", "predicted", "error", "not scored because"],
            )
        )


def _calibrate_serving(cases: Path, out: Path | None, as_json: bool) -> None:
    from tokometer.api.measurements import calibrate as run_calibrate

    fitted = run_calibrate(cases, out=out, progress=not as_json)
    data, target = fitted.to_dict(), fitted.written
    if as_json:
        click.echo(fitted.to_json())
        return
    for key, e in data["entries"].items():
        q = e.get("prefill_fraction_max")
        prefill = f"prefill {q:.2f}" if q is not None else "prefill from physics"
        click.echo(f"{key:14s} f_max {e['compute_fraction_max']:.2f}  T_half {e['compute_half_tokens']:g}  {prefill}  "
                   f"step overhead {e['layer_step_overhead_us']:g} us per layer + {e.get('sequence_overhead_us', 0.0):g} us per sequence  ({e['n_runs']} runs, rms log error {e['rms_log_error']:.3f})")
    click.echo(f"wrote {target}" + (USED_FROM_NOW if out is None else ""))


USED_FROM_NOW = "; later commands use it (`tokometer calibrate --reset` goes back to the shipped fit)"


def _reset(serving: bool, as_json: bool) -> None:
    """Remove the user's fit from the tokometer home, so the shipped one applies again."""
    from tokometer.api.measurements import calibrate as run_calibrate

    reset = run_calibrate(serving=serving, reset=True)
    user = reset.data["user_file"]
    removed, shipped = reset.data["removed"] is not None, reset.data["active"]
    if as_json:
        click.echo(reset.to_json())
    elif removed:
        click.echo(f"removed {user}; the shipped fit applies again ({shipped})")
    else:
        click.echo(f"no fit of yours at {user}; the shipped fit already applies ({shipped})")


@click.command()
@click.argument("cases", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--serving", is_flag=True, help="Fit the serving efficiency on the shipped serving.csv.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Where to write the fitted table [default: efficiency.toml, or serving_efficiency.json for serving rows, in the tokometer home, used from then on].")
@click.option("--reset", is_flag=True, help="Remove your fit from the tokometer home (with --serving: the serving fit), so the shipped one applies again.")
@json_option
def calibrate(cases: Path | None, serving: bool, out: Path | None, reset: bool, as_json: bool) -> None:
    """Fit engine efficiency (bandwidth share, overheads, prefill efficiency) on measured rows.

    CASES defaults to the shipped measurements.csv and every published/*.csv (never outside.csv). A file with serving columns (or
    --serving) fits the serving simulator instead: per engine, the batched-compute efficiency curve
    and the step overheads (per layer, per sequence).

    The fit goes to the tokometer home ($TOKOMETER_HOME: efficiency.toml or
    serving_efficiency.json) and every later command uses it instead of the shipped one, until
    --reset removes it. The installed package is never written; --out FILE writes elsewhere.
    """
    from tokometer.api.measurements import calibrate as run_calibrate
    from tokometer.api.measurements import evidence_file
    from tokometer.report.text import table

    if serving and cases is not None:
        raise click.UsageError("give a CASES file or --serving, not both")
    if reset:
        if cases is not None or out is not None:
            raise click.UsageError("--reset takes no CASES file and no --out")
        _reset(serving, as_json)
        return
    shipped = cases is None and not serving  # the shipped evidence: measurements.csv + published/*.csv
    cases, serving_rows = evidence_file(cases, serving)
    if serving_rows:
        _calibrate_serving(cases, out, as_json)
        return
    fitted = run_calibrate(None if shipped else cases, out=out, progress=not as_json)
    table_, counts, target = fitted.table, fitted.counts, fitted.written
    if as_json:
        click.echo(fitted.to_json())
        return
    rows = [
        [
            key,
            f"{e.bandwidth_fraction:.0%}",
            f"{(e.quantized_bandwidth_fraction or e.bandwidth_fraction):.0%}",
            f"{e.layer_overhead_us:.1f}",
            f"{e.step_overhead_us:.0f}",
            f"{e.unit_bandwidth_gb_per_s:.1f}" if e.unit_bandwidth_gb_per_s else "-",
            f"{e.prefill_efficiency_max:.0%}",
            f"{e.residual_log_sd:.3f}",
            str(counts[key][0]),
        ]
        for key, e in table_.items()
    ]
    click.echo(table(rows, ["group", "bw plain", "bw quant", "us/layer", "us/step", "GB/s/unit", "prefill max", "log sd", "rows"]))
    click.echo(f"\nwritten to {target}" + (USED_FROM_NOW if out is None else ""))
