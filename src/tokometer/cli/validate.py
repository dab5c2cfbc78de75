"""`tokometer validate` (score predictions on measured rows) and `tokometer calibrate` (fit them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tokometer.calibration_data import MEASUREMENTS_CSV
from tokometer.cli.options import json_option


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
    lines += ["", f"{rep['rows_scored']} of {rep['rows_total']} rows scored"]
    if unscored:
        lines += ["", "not scored:"]
        lines += [f"  {count:4d}  {reason}" for reason, count in unscored.items()]
    return "\n".join(lines)


@click.command()
@click.argument("cases", type=click.Path(dir_okay=False, path_type=Path), default=MEASUREMENTS_CSV, required=False)
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
@json_option
def validate(cases: Path, baseline: str | None, loho: bool, lso: bool, show_rows: bool, as_json: bool) -> None:
    """Predict every row of a measurements CSV and report the error per metric.

    CASES [default: the shipped calibration measurements.csv] follows its schema: hardware by hardware_id /
    hardware_as_stated (or the spec columns mem_bandwidth_gbps, memory_gb, fp16_dense_tflops...),
    the model by name or total_params_b/active_params_b with quant/bits_per_weight/model_size.
    Metrics scored: tg, pp, ttft_ms (batch 1), tg_agg, pp_agg, tput_out. A row that cannot be read
    or predicted (unknown metric or engine, unreadable cell, served workload) and a row flagged in
    its source are listed with the reason and counted, never fatal.
    """
    from tokometer.report.text import to_json
    from tokometer.usecases.calibration import leave_one_hardware_out, leave_one_source_out
    from tokometer.usecases.validation import read_cases, report
    from tokometer.usecases.validation import validate as run

    if baseline and (loho or lso):
        raise click.UsageError("--baseline does not combine with --loho or --lso: a peer formula has nothing to fit")
    if loho and lso:
        raise click.UsageError("--loho and --lso are two different hold-outs: choose one")
    rows = read_cases(cases)
    if loho:
        results = leave_one_hardware_out(rows)
    elif lso:
        results = leave_one_source_out(rows)
    else:
        results = run(rows, baseline=baseline)
    rep = report(results)
    held_out = "hardware" if loho else ("source" if lso else None)
    rep["mode"] = {"baseline": baseline, "loho": loho, "lso": lso, "held_out": held_out, "file": str(cases)}
    if as_json:
        click.echo(to_json(rep))
        return
    title = f"{cases}: " + (
        f"baseline {baseline}"
        if baseline
        else {"hardware": "leave-one-hardware-out", "source": "leave-one-source-out"}.get(held_out or "", "fitted model")
    )
    click.echo(render_report(rep, title))
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


@click.command()
@click.argument("cases", type=click.Path(dir_okay=False, path_type=Path), default=MEASUREMENTS_CSV, required=False)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Where to write the fitted table [default: the shipped efficiency.toml].")
@json_option
def calibrate(cases: Path, out: Path | None, as_json: bool) -> None:
    """Fit engine efficiency (bandwidth share, overheads, prefill efficiency) on measured rows.

    CASES defaults to the shipped calibration measurements.csv.
    """
    from tokometer.catalog.efficiency import EFFICIENCY_FILE, fitted_table
    from tokometer.report.text import table, to_json
    from tokometer.usecases.calibration import calibrate as fit
    from tokometer.usecases.calibration import write_table
    from tokometer.usecases.validation import read_cases

    table_, meta, counts = fit(read_cases(cases), data_label=cases.name)
    target = out or EFFICIENCY_FILE
    write_table(target, table_, meta, counts)
    fitted_table.cache_clear()
    if as_json:
        click.echo(to_json({"written": str(target), "meta": meta, "entries": {k: v.to_dict() for k, v in table_.items()}}))
        return
    rows = [
        [
            key,
            f"{e.bandwidth_fraction:.0%}",
            f"{(e.quantized_bandwidth_fraction or e.bandwidth_fraction):.0%}",
            f"{e.layer_overhead_us:.1f}",
            f"{e.step_overhead_us:.0f}",
            f"{e.prefill_efficiency_max:.0%}",
            f"{e.residual_log_sd:.3f}",
            str(counts[key][0]),
        ]
        for key, e in table_.items()
    ]
    click.echo(table(rows, ["group", "bw plain", "bw quant", "us/layer", "us/step", "prefill max", "log sd", "rows"]))
    click.echo(f"\nwritten to {target}")
