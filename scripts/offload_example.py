"""Write the README's gpt-oss-120b expert-offload worked example from `tokometer estimate`.

One row per `--offload-experts` value (none, the fewest that fit and its neighbours, 30, all) of
gpt-oss-120b on an RTX 4090 with 64 GB of dual-channel DDR5-6000 at 16,384 tokens of context:
VRAM needed, RAM for the experts, the decode estimate with its 80 % band, the ceiling and the
prefill rate of a 512-token prompt. Rendered between the `<!-- offload-example:start -->` and
`<!-- offload-example:end -->` markers of README.md; `tests/test_expert_offload.py` checks it.

    python scripts/offload_example.py          # rewrite README.md
    python scripts/offload_example.py --check  # exit 1 if README.md is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
START, END = "<!-- offload-example:start -->", "<!-- offload-example:end -->"
CPU = "ddr5-6000-dual-channel"


def _estimate(n: int | str | None):  # noqa: ANN202 (tokometer is imported late: scripts/ runs without it installed)
    from tokometer.usecases.estimate import estimate

    extra = {} if n is None else {"offload_experts": n, "cpu_hw": CPU}
    return estimate("gpt-oss-120b", "rtx-4090", context_tokens=16384, **extra)


def fewest_that_fit() -> int:
    """The smallest N whose `--offload-experts N` fits the card."""
    n_layers = _estimate(None).model.n_layers
    return next(n for n in range(1, n_layers + 1) if _estimate(n).memory.fits)


def rows() -> list[str]:
    none = _estimate(None)
    n_fit = fewest_that_fit()
    n_layers = none.model.n_layers
    avail = none.memory.available_gb
    cpu_avail = _estimate("all").offload.cpu_available_gb
    head = (
        f"| `--offload-experts` | VRAM needed (of {avail:.1f} GB) | RAM for experts (of {cpu_avail:.1f} GB) "
        "| decode estimate (80 % band) | ceiling | prefill, 512 tokens |"
    )
    out = [head, "|---|---|---|---|---|---|"]
    out.append(
        f"| none | {none.memory.total_gb:.1f} GB: does not fit | - | ({none.estimate_tok_s:.0f} tok/s if it did) "
        f"| {none.ceiling_tok_s:.0f} tok/s | {none.prefill.tok_s:,.0f} tok/s |"
    )
    for n, label in ((n_fit - 1, str(n_fit - 1)), (n_fit, f"{n_fit} (fewest that fit)"), (30, "30"), ("all", f"all ({n_layers})")):
        e = _estimate(n)
        band = e.estimate_interval
        vram = f"{e.memory.total_gb:.1f} GB" + ("" if e.memory.fits else ": does not fit")
        out.append(
            f"| {label} | {vram} | {e.offload.cpu_weights_gb:.1f} GB "
            f"| {e.estimate_tok_s:.1f} ({band.low:.1f}-{band.high:.1f}) tok/s | {e.ceiling_tok_s:.1f} tok/s "
            f"| {e.prefill.tok_s:,.0f} tok/s |"
        )
    return out


def render() -> str:
    note = "<!-- written by scripts/offload_example.py from `tokometer estimate`; do not edit -->"
    return "\n".join([START, note, "", *rows(), "", END])


def main(argv: list[str]) -> int:
    from readme_block import write_or_check  # scripts/ is on sys.path when this file is run

    return write_or_check(README, START, END, render(), what="offload worked example", script="offload_example.py", argv=argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
