"""Write the README's serving accuracy table from `tokometer validate --serving --lso`.

One row per scenario and metric of the shipped `calibration_data/serving.csv` that the simulator
scored, with three predictors side by side, each saying what it held out: the shipped per-engine
fit (in-sample: nothing held out), leave-one-source-out (the row's whole publication held out; its
engine falls back to the pooled fit of the others) and the naive one-step predictor (one decode
step of B streams at the prompt depth, prefill not charged: nothing fitted). Rendered between the
`<!-- serving-accuracy:start -->` and `<!-- serving-accuracy:end -->` markers of README.md;
`tests/test_docs.py` checks the README matches.

A second table scores the compiled 2025-26 serving rows (`calibration_data/serving_published/`,
`fitting.serving_families`) with the shipped fit, which none of their sources is in (each row's
publication held out), per family: dense/MoE, weight format, device family, against the issue's
MoE targets (throughput <= 15 %, TTFT <= 25 %, ITL/TPOT <= 20 %); the rows left unscored are
counted by reason.

    python scripts/serving_accuracy.py          # rewrite README.md
    python scripts/serving_accuracy.py --check  # exit 1 if README.md is stale
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
START, END = "<!-- serving-accuracy:start -->", "<!-- serving-accuracy:end -->"
HELD_OUT = (
    ("fitted", "nothing (in-sample)"),
    ("leave-one-source-out", "every row of the row's publication"),
    ("naive one step", "nothing fitted"),
)


PUBLISHED_TIME_LIMIT_S = 120.0  # per simulated run: the slowest takes about 2 s here; a limit only against a hang
FAMILY_GROUPS = (
    "all", "dense", "MoE", "MoE BF16", "MoE FP8", "MoE FP4", "MoE INT4",
    "MoE Ampere", "MoE Hopper", "MoE Blackwell", "MoE Instinct", "dense BF16", "dense FP8", "dense Hopper",
)


PER_PUBLICATION_GROUPS = ("all", "MoE")  # families also shown with every publication weighing the same


def report() -> dict[str, Any]:
    """`tokometer validate --serving --lso --json`, as data, with the published rows' family report
    under `published`."""
    from tokometer.fitting.serving_families import validate_published
    from tokometer.fitting.serving_fit import validate_serving
    from tokometer.fitting.serving_runs import default_data_path

    rep = validate_serving(default_data_path(), loso=True)
    rep["published"] = validate_published(time_limit_s=PUBLISHED_TIME_LIMIT_S)
    return rep


def target(scenario: str, metric: str) -> str:
    """The issue's targets: offline/static `tput_out`, online TTFT/ITL means, `req_per_s`."""
    if metric == "tput_out" and scenario in ("offline", "static-batch"):
        return "<= 15 % (p90 <= 40 %)"
    if metric == "req_per_s":
        return "<= 10 %"
    if scenario.startswith("online") and metric.split("_")[0] in ("ttft", "itl"):
        if metric.endswith("_mean"):
            return "<= 25 %"
        if metric.endswith("_p50"):
            return "<= 25 % (a median, not a mean)"
    return ""


def _pct(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0%}" if value >= 1 else f"{value:.1%}"


def _reason_kind(reason: str) -> str:
    """A reason without the names it quotes ("model 'X' is not in ..." -> "model not in the model catalog")."""
    import re

    text = re.sub(r"\s*\([^)]*\)", "", re.sub(r"'[^']*'", "X", reason))
    text = re.sub(r"\d+ of \d+", "all", text)
    return text.replace("X ", "").replace(" X", "").split(":")[0].strip()


def render_published(pub: dict[str, Any]) -> list[str]:
    """The family table of the compiled 2025-26 serving rows and the unscored rows' reasons."""
    from tokometer.fitting.serving_families import CLASS_NAMES, CLASSES, TARGETS, published_paths

    lines = [
        "",
        f"**2025-26 published serving rows** (`calibration_data/serving_published/`, {pub['rows']:,} rows from "
        f"{len(published_paths())} sources, `SOURCES_sev.md`), predicted with the shipped fit above, which holds none of them: every row's "
        "publication is held out. Median absolute error (rows scored); MoE targets: "
        + ", ".join(f"{CLASS_NAMES[c]} <= {TARGETS[c]:.0%}" for c in CLASSES) + ".",
        "",
        "| family | " + " | ".join(CLASS_NAMES[c] for c in CLASSES) + " |",
        "|---|" + "--:|" * len(CLASSES),
    ]
    groups = pub["groups"]
    for g in FAMILY_GROUPS:
        cells = []
        for c in CLASSES:
            cell = groups.get(f"{g}|{c}")
            cells.append(f"{_pct(cell['median_ape'])} ({cell['n']:,})" if cell else "-")
        if any(x != "-" for x in cells):
            lines.append(f"| {g} | " + " | ".join(cells) + " |")
    for g in PER_PUBLICATION_GROUPS:  # the same rows, each publication weighing the same
        cells = []
        for c in CLASSES:
            cell = groups.get(f"{g}|{c}")
            cells.append(f"{_pct(cell['median_ape_per_publication'])} ({cell['publications']} publ.)" if cell else "-")
        lines.append(f"| {g}, each publication weighing the same | " + " | ".join(cells) + " |")
    lines += ["", "| source (held out) | " + " | ".join(CLASS_NAMES[c] for c in CLASSES) + " |", "|---|" + "--:|" * len(CLASSES)]
    for source in sorted({key.split("|")[0] for key in pub["sources"]}):
        cells = []
        for c in CLASSES:
            cell = pub["sources"].get(f"{source}|{c}")
            cells.append(f"{_pct(cell['median_ape'])} ({cell['n']:,})" if cell else "-")
        lines.append(f"| {source} | " + " | ".join(cells) + " |")
    kinds: dict[str, int] = {}
    for reason, n in pub["unscored"].items():
        key = _reason_kind(reason)
        kinds[key] = kinds.get(key, 0) + n
    lines += ["", f"{pub['scored']:,} of {pub['rows']:,} rows scored (ITL/TPOT, TTFT and throughput means and medians "
              "above; tails and end-to-end latency scored but not tabled). Not scored: "
              + "; ".join(f"{k} ({n:,})" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))) + "."]
    return lines


def render(rep: dict[str, Any]) -> str:
    lines = [
        START,
        "<!-- written by scripts/serving_accuracy.py from `tokometer validate --serving --lso`; do not edit -->",
        "",
        "Held out: " + "; ".join(f"**{name}**: {held}" for name, held in HELD_OUT) + ".",
        "Median absolute error, p90 in brackets, and the share of rows within 15 % for the fit.",
        "",
        "| scenario | metric | rows scored | fitted | within 15 % | leave-one-source-out | naive one step | target |",
        "|---|---|--:|--:|--:|--:|--:|---|",
    ]
    for scenario, metrics in rep["scenarios"].items():
        for metric, m in metrics.items():
            if not m["scored"]:
                continue
            cv = rep["loso"]["scenarios"].get(scenario, {}).get(metric, {})
            lines.append(
                f"| {scenario} | {metric} | {m['scored']} of {m['n']} | {_pct(m['median_ape'])} ({_pct(m['p90_ape'])}) "
                f"| {_pct(m['within_15'])} | {_pct(cv.get('median_ape'))} ({_pct(cv.get('p90_ape'))}) "
                f"| {_pct(m['naive_median_ape'])} | {target(scenario, metric)} |"
            )
    tally = f"{rep['scored']} of {rep['rows']} rows scored"
    if rep["scored"] < rep["rows"]:
        tally += "; the others are listed with their reason by `tokometer validate --serving`"
    lines += ["", tally + "."]
    if "published" in rep:
        lines += render_published(rep["published"])
    lines += [END]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    from readme_block import write_or_check  # scripts/ is on sys.path when this file is run

    return write_or_check(README, START, END, render(report()), what="serving accuracy table", script="serving_accuracy.py", argv=argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
