"""Write the README's accuracy tables from `tokometer validate` runs on the shipped calibration data.

Each table is one command's output (fitted on all rows, leave-one-hardware-out, leave-one-source-out,
the peer formulas), rendered between the `<!-- accuracy:start -->` and `<!-- accuracy:end -->` markers
of README.md, with what each row held out. The outside check (`<!-- outside:start -->` ...) scores the
shipped fit on `outside.csv`, published rows that `tokometer calibrate` never reads, per metric and
hardware family. `tests/test_docs.py` checks the README matches.

The hold-outs' row-by-row predictions are kept in `docs/accuracy/held_out.json.gz` (one fit per device and
one per publication: tens of minutes on 2 cores). The tests render the README's tables from that file and
refit a sample of its folds (`sample_folds`) to check the stored predictions are what the code gives now;
this script is what recomputes every fold.

    python scripts/accuracy_tables.py          # rewrite README.md and the stored hold-outs
    python scripts/accuracy_tables.py --check  # exit 1 if README.md is stale (recomputes every fold)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
HELD_OUT_FILE = ROOT / "docs" / "accuracy" / "held_out.json.gz"
HELD_OUT_MODES = ("loho", "lso")
START, END = "<!-- accuracy:start -->", "<!-- accuracy:end -->"
OUTSIDE_START, OUTSIDE_END = "<!-- outside:start -->", "<!-- outside:end -->"
OUTSIDE_METRICS = ("tg", "pp", "ttft_ms")

RUNS = (  # (label, what was held out, how the rows are predicted)
    ("fitted on all rows", "nothing (in-sample)", "fitted"),
    ("leave-one-hardware-out", "every row of the device, multi-device rows too", "loho"),
    ("leave-one-source-out", "every row of the publication", "lso"),
    ("leave-one-source-out, each publication weighs the same", "every row of the publication", "lso_pub"),
    ("peer: 100 % of datasheet bandwidth", "nothing to fit", "ceiling"),
    ("peer: 0.55 x ceiling", "nothing to fit", "derate"),
)
SUBSETS = (
    ("tg_single_device", "decode (tg), single device"),
    ("pp_single_device", "prompt processing (pp), single device"),
    ("tg_multi_device", "decode (tg), several devices"),
    ("pp_multi_device", "prompt processing (pp), several devices"),
)


def publication_subsets(results: list[Any]) -> dict[str, dict[str, Any]]:
    """The four README subsets (decode/prefill, single/several devices) with every publication weighing the same."""
    from tokometer.fitting.families import per_publication

    single = [r for r in results if r.case.n_devices == 1]
    multi = [r for r in results if r.case.n_devices > 1]
    return {
        "tg_single_device": per_publication(single, "tg"),
        "tg_multi_device": per_publication(multi, "tg"),
        "pp_single_device": per_publication(single, "pp"),
        "pp_multi_device": per_publication(multi, "pp"),
    }


def fold_of(mode: str) -> Any:
    """What a hold-out mode leaves out: the device (`loho`) or the publication (`lso`)."""
    from tokometer.fitting.model import case_hardware_id, case_source

    return case_hardware_id if mode == "loho" else case_source


def held_out(cases: list[Any]) -> dict[str, list[Any]]:
    """Every row predicted by the fit without its device (`loho`) and without its publication (`lso`)."""
    from tokometer.fitting.model import cross_validate

    return {mode: cross_validate(cases, fold_of(mode)) for mode in HELD_OUT_MODES}


def reports(cases: list[Any] | None = None, held: dict[str, list[Any]] | None = None) -> dict[str, dict[str, Any]]:
    """One validation report per run, on the shipped measurements; `held`: the hold-outs' results
    (`held_out`, or `load_held_out`), computed here when not given."""
    from tokometer.fitting.evidence import read_evidence
    from tokometer.fitting.families import family_report, source_report
    from tokometer.fitting.validation import report, validate

    cases = read_evidence() if cases is None else cases
    held = held_out(cases) if held is None else held
    out: dict[str, dict[str, Any]] = {}
    for _, _, mode in RUNS:
        if mode == "lso_pub":
            continue
        if mode in HELD_OUT_MODES:
            results = held[mode]
        else:
            results = validate(cases, baseline=None if mode == "fitted" else mode)
        out[mode] = report(results)
        if mode in ("loho", "lso"):
            out[mode]["families"] = family_report(results)
        if mode == "lso":
            out[mode]["sources"] = source_report(results)
            out["lso_pub"] = {"subsets": publication_subsets(results)}
    return out


def dump_held_out(cases: list[Any], held: dict[str, list[Any]]) -> bytes:
    """The hold-outs' results, row by row (index in the evidence, row id, prediction, band, reason, group,
    device, details), as gzipped JSON that reads back exactly (floats in full)."""
    import gzip
    import json

    index = {id(c): i for i, c in enumerate(cases)}
    data = {
        "rows": len(cases),
        **{
            mode: [[index[id(r.case)], r.case.row_id, r.predicted, r.low, r.high, r.reason, r.group, r.hardware_id, r.details]
                   for r in results]
            for mode, results in held.items()
        },
    }
    text = json.dumps(data, separators=(",", ":"), default=str).replace("],[", "],\n[")
    return gzip.compress(text.encode("utf-8"), mtime=0)


def load_held_out(cases: list[Any], path: Path = HELD_OUT_FILE) -> dict[str, list[Any]]:
    """`dump_held_out`'s file read back onto `cases`; SystemExit with the fix when it does not match them."""
    import gzip
    import json

    from tokometer.fitting.rows import CaseResult

    stale = f"{path.relative_to(ROOT)} does not match the evidence: run `python scripts/accuracy_tables.py`"
    if not path.exists():
        raise SystemExit(f"{path.relative_to(ROOT)} is missing: run `python scripts/accuracy_tables.py`")
    data = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    if data["rows"] != len(cases):
        raise SystemExit(stale)
    out: dict[str, list[Any]] = {}
    for mode in HELD_OUT_MODES:
        results = []
        for i, row_id, predicted, low, high, reason, group, hardware_id, details in data[mode]:
            if cases[i].row_id != row_id:
                raise SystemExit(stale)
            results.append(CaseResult(cases[i], predicted, low, high, reason, group, hardware_id, details or {}))
        out[mode] = results
    return out


SAMPLED_FOLDS = 3  # per mode: the largest fold and two picked by a hash of their names


def sample_folds(cases: list[Any], mode: str) -> list[str]:
    """The folds a test refits to check the stored hold-outs: the one with the most rows (most of the
    evidence that moves) and two others picked by a stable hash of their names (no favourite)."""
    import hashlib
    from collections import Counter

    of = fold_of(mode)
    sizes = Counter(str(g) for c in cases if (g := of(c)) is not None)
    largest = max(sorted(sizes), key=lambda g: sizes[g])
    others = sorted((g for g in sizes if g != largest), key=lambda g: hashlib.sha256(g.encode()).hexdigest())
    return [largest, *others[: SAMPLED_FOLDS - 1]]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def render(reps: dict[str, dict[str, Any]]) -> str:
    lines = [
        START,
        "<!-- written by scripts/accuracy_tables.py from `tokometer validate [--loho | --lso | --baseline ...]`; do not edit -->",
    ]
    for key, title in SUBSETS:
        lines += [
            "",
            f"**{title}**",
            "",
            "| predicted by | held out | rows scored | median error | p90 error | within 15 % | 80 % band holds | median bias |",
            "|---|---|--:|--:|--:|--:|--:|--:|",
        ]
        for label, unseen, mode in RUNS:  # `unseen`: what the run held out (not the module's `held_out`)
            m = reps[mode]["subsets"][key]
            if not m["scored"]:
                continue
            band = _pct(m["interval_coverage"]) if mode in ("fitted", "loho", "lso", "lso_pub") else "-"
            if mode == "lso_pub":
                unseen = f"{unseen} ({m['publications']} publications)"
            lines.append(_row(label, unseen, m, band))
    for title, key, mode, what in (
        ("single device, per hardware family, leave-one-source-out", "families", "lso", "hardware family"),
        ("single device, per hardware family, leave-one-hardware-out", "families", "loho", "hardware family"),
        ("single device, per publication held out (leave-one-source-out)", "sources", "lso", "publication"),
    ):
        lines += [
            "",
            f"**{title}**",
            "",
            f"| metric | {what} | rows scored | median error | p90 error | within 15 % | 80 % band holds | median bias |",
            "|---|---|--:|--:|--:|--:|--:|--:|",
        ]
        for metric in ("tg", "pp"):
            for name, metrics in reps[mode][key].items():
                m = metrics[metric]
                if m["scored"]:
                    lines.append(_row(metric, name, m, _pct(m["interval_coverage"])))
    lines.append(END)
    return "\n".join(lines)


def _row(first: str, second: str, m: dict[str, Any], band: str) -> str:
    """One table row of a `summarise` result: rows scored, median and p90 error, within 15 %, band, bias."""
    bias = m["median_signed_error"]
    return (
        f"| {first} | {second} | {m['scored']} of {m['n']} | {_pct(m['median_ape'])} | {_pct(m['p90_ape'])} "
        f"| {_pct(m['within_15'])} | {band} | {'-' if bias is None else f'{bias:+.1%}'} |"
    )


def outside_results() -> list[Any]:
    """The shipped fit's prediction of every row of `outside.csv` (`tokometer validate outside.csv`)."""
    from tokometer.calibration_data import OUTSIDE_CSV
    from tokometer.fitting.rows import read_cases
    from tokometer.fitting.validation import validate

    return validate(read_cases(OUTSIDE_CSV))


def render_outside(results: list[Any]) -> str:
    """The outside-check block: error per metric, then per hardware family within each metric."""
    from collections import Counter

    from tokometer.fitting.families import FAMILIES, hardware_family
    from tokometer.fitting.validation import summarise

    sources = Counter(r.case.text("source_id") for r in results)
    lines = [
        OUTSIDE_START,
        "<!-- written by scripts/accuracy_tables.py from `tokometer validate src/tokometer/calibration_data/outside.csv`; do not edit -->",
        "",
        f"{len(results)} rows from {len(sources)} publications ("
        + ", ".join(f"{name} {n}" for name, n in sorted(sources.items(), key=lambda kv: (-kv[1], kv[0])))
        + f"), {sum(r.scored for r in results)} scored; none of them is read by `tokometer calibrate`.",
        "",
        "| metric | hardware family | rows scored | median error | p90 error | within 15 % | 80 % band holds | median bias |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for metric in OUTSIDE_METRICS:
        groups = [("all", results)] + [(name, [r for r in results if hardware_family(r.hardware_id) == name]) for name in FAMILIES]
        for name, rows in groups:
            m = summarise(rows, metric)
            if not m["scored"]:
                continue
            lines.append(_row(metric, name, m, _pct(m["interval_coverage"])))
    lines.append(OUTSIDE_END)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    from readme_block import write_or_check  # scripts/ is on sys.path when this file is run

    from tokometer.fitting.evidence import read_evidence

    cases = read_evidence()
    held = held_out(cases)
    tables = write_or_check(README, START, END, render(reports(cases, held)), what="accuracy tables", script="accuracy_tables.py", argv=argv)
    stored = dump_held_out(cases, held)
    if "--check" in argv:
        if not HELD_OUT_FILE.exists() or HELD_OUT_FILE.read_bytes() != stored:
            print(f"{HELD_OUT_FILE.relative_to(ROOT)} is stale: run `python scripts/accuracy_tables.py`", file=sys.stderr)
            tables = 1
    else:
        HELD_OUT_FILE.parent.mkdir(parents=True, exist_ok=True)
        HELD_OUT_FILE.write_bytes(stored)
        print(f"wrote {HELD_OUT_FILE.relative_to(ROOT)}")
    outside = write_or_check(
        README, OUTSIDE_START, OUTSIDE_END, render_outside(outside_results()), what="outside-check table", script="accuracy_tables.py", argv=argv
    )
    return tables or outside


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
