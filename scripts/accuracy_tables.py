"""Write the README's accuracy tables from `tokometer validate` runs on the shipped calibration data.

Each table is one command's output (fitted on all rows, leave-one-hardware-out, leave-one-source-out,
the peer formulas), rendered between the `<!-- accuracy:start -->` and `<!-- accuracy:end -->` markers
of README.md, with what each row held out. `tests/test_docs.py` checks the README matches.

    python scripts/accuracy_tables.py          # rewrite README.md
    python scripts/accuracy_tables.py --check  # exit 1 if README.md is stale
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
START, END = "<!-- accuracy:start -->", "<!-- accuracy:end -->"

RUNS = (  # (label, what was held out, how the rows are predicted)
    ("fitted on all rows", "nothing (in-sample)", "fitted"),
    ("leave-one-hardware-out", "every row of the device, multi-device rows too", "loho"),
    ("leave-one-source-out", "every row of the publication", "lso"),
    ("peer: 100 % of datasheet bandwidth", "nothing to fit", "ceiling"),
    ("peer: 0.55 x ceiling", "nothing to fit", "derate"),
)
SUBSETS = (
    ("tg_single_device", "decode (tg), single device"),
    ("pp_single_device", "prompt processing (pp), single device"),
    ("tg_multi_device", "decode (tg), several devices"),
    ("pp_multi_device", "prompt processing (pp), several devices"),
)


def reports() -> dict[str, dict[str, Any]]:
    """One validation report per run, on the shipped measurements."""
    from tokometer.calibration_data import MEASUREMENTS_CSV
    from tokometer.usecases.calibration import leave_one_hardware_out, leave_one_source_out
    from tokometer.usecases.validation import read_cases, report, validate

    cases = read_cases(MEASUREMENTS_CSV)
    out: dict[str, dict[str, Any]] = {}
    for _, _, mode in RUNS:
        if mode == "loho":
            results = leave_one_hardware_out(cases)
        elif mode == "lso":
            results = leave_one_source_out(cases)
        else:
            results = validate(cases, baseline=None if mode == "fitted" else mode)
        out[mode] = report(results)
    return out


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
        for label, held_out, mode in RUNS:
            m = reps[mode]["subsets"][key]
            if not m["scored"]:
                continue
            band = _pct(m["interval_coverage"]) if mode in ("fitted", "loho", "lso") else "-"
            bias = m["median_signed_error"]
            lines.append(
                f"| {label} | {held_out} | {m['scored']} of {m['n']} | {_pct(m['median_ape'])} | {_pct(m['p90_ape'])} "
                f"| {_pct(m['within_15'])} | {band} | {'-' if bias is None else f'{bias:+.1%}'} |"
            )
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    from readme_block import write_or_check  # scripts/ is on sys.path when this file is run

    return write_or_check(README, START, END, render(reports()), what="accuracy tables", script="accuracy_tables.py", argv=argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
