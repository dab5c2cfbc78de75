"""Write, or check, the figures of README.md's prose that come from a command or a catalog.

A figure in the README reads `<!-- figure:NAME -->TEXT<!-- /figure -->` (the comments do not
render). `FIGURES` below says how each NAME is computed, from the catalogs and the estimate that
the sentence quotes, in an empty tokometer home so a user's own entries never count.
`python scripts/readme_figures.py` rewrites them; `--check` exits 1 if any is stale (tests/test_docs.py).
"""

from __future__ import annotations

import functools
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FIGURE = re.compile(r"<!-- figure:([\w-]+) -->(.*?)<!-- /figure -->", re.S)

# the README's bare-numbers example: `tokometer estimate --params 70 --bits 16 --bandwidth 3350`
BARE_EXAMPLE = {"params_b": 70.0, "bits": 16.0, "bandwidth_gb_per_s": 3350.0}


def _bare() -> tuple[float, float]:
    from tokometer.usecases.estimate import estimate

    result = estimate(**BARE_EXAMPLE)
    return result.ceiling_tok_s, result.estimate_tok_s


def _count(catalog: str) -> str:
    from tokometer import catalog as catalogs

    return f"{len(getattr(catalogs, catalog)().ids):,}"


def _tok_s(value: float) -> str:
    from tokometer.report.text import num

    return f"{num(value)} tok/s"


# LocalScore's CUDA systems split by their own decode rates (README, "LocalScore's rows"): a system that ran
# both of these Q4_K_M models decodes the 1B one at most ~6x faster (its weight bytes per token are a sixth);
# under FAST_RATIO x, a per-token cost of the setup that the bytes do not set dominates
LOCALSCORE_PAIR = ("Llama 3.2 1B Instruct", "Meta Llama 3.1 8B Instruct")
FAST_RATIO = 3.0


def _pct(value: float, signed: bool = False) -> str:
    return f"{value * 100:+.0f} %" if signed else f"{value * 100:.0f} %"


@functools.cache
def _localscore_split() -> dict[str, str]:
    """LocalScore's CUDA systems (the site's GPU/CPU/RAM/OS text) that ran both `LOCALSCORE_PAIR` models at
    Q4_K_M, split at `FAST_RATIO` by the ratio of their best decode rates (scored or not), with the leave-one-source-out
    errors (`accuracy_tables.load_held_out`) of every scored Q4_K_M decode row of each side's systems."""
    import importlib.util
    import statistics
    from collections import defaultdict

    from tokometer.fitting.evidence import read_evidence

    # the stored hold-outs as `accuracy_tables` writes and checks them (scripts/ is not a package)
    spec = importlib.util.spec_from_file_location("accuracy_tables", ROOT / "scripts" / "accuracy_tables.py")
    assert spec is not None and spec.loader is not None
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    systems: dict[str, list[Any]] = defaultdict(list)
    for result in tables.load_held_out(read_evidence())["lso"]:
        case = result.case
        if (
            case.text("source_id") == "LOCALSCORE"
            and case.metric == "tg"
            and case.text("backend") == "CUDA"
            and case.text("hardware_id")
            and (case.text("quant") or "").startswith("Q4_K")
        ):
            systems[case.text("hardware_as_stated") or ""].append(result)
    sides: dict[bool, list[float]] = {True: [], False: []}
    counts = {True: 0, False: 0}
    for results in systems.values():
        best = {
            m: max((r.case.value for r in results if r.case.text("model") == m), default=0.0)
            for m in LOCALSCORE_PAIR
        }
        if not all(best.values()):
            continue
        fast = best[LOCALSCORE_PAIR[0]] / best[LOCALSCORE_PAIR[1]] >= FAST_RATIO
        counts[fast] += 1
        sides[fast] += [r.predicted / r.case.value - 1.0 for r in results if r.scored]
    return {
        "localscore-systems": str(counts[True] + counts[False]),
        "localscore-fast": str(counts[True]),
        "localscore-fast-error": _pct(statistics.median(abs(e) for e in sides[True])),
        "localscore-fast-bias": _pct(statistics.median(sides[True]), signed=True),
        "localscore-slow": str(counts[False]),
        "localscore-slow-bias": _pct(statistics.median(sides[False]), signed=True),
    }


def _split_figure(name: str) -> Callable[[], str]:
    return lambda: _localscore_split()[name]


FIGURES: dict[str, Callable[[], str]] = {
    "hardware-count": lambda: _count("hardware_catalog"),
    "model-presets": lambda: _count("model_catalog"),
    "bare-ceiling": lambda: _tok_s(_bare()[0]),
    "bare-estimate": lambda: _tok_s(_bare()[1]),
    **{
        name: _split_figure(name)
        for name in (
            "localscore-systems",
            "localscore-fast",
            "localscore-fast-error",
            "localscore-fast-bias",
            "localscore-slow",
            "localscore-slow-bias",
        )
    },
}


def computed() -> dict[str, str]:
    """Every figure, computed now in an empty tokometer home."""
    old = os.environ.get("TOKOMETER_HOME")
    with tempfile.TemporaryDirectory(prefix="tokometer-readme-") as home:
        os.environ["TOKOMETER_HOME"] = home
        try:
            from tokometer.catalog import clear_caches

            clear_caches()
            return {name: make() for name, make in FIGURES.items()}
        finally:
            if old is None:
                os.environ.pop("TOKOMETER_HOME", None)
            else:
                os.environ["TOKOMETER_HOME"] = old
            clear_caches()


def rewritten(text: str, figures: dict[str, str]) -> str:
    """`text` with each marked figure replaced; an unknown NAME is refused."""

    def one(found: re.Match[str]) -> str:
        name = found.group(1)
        if name not in figures:
            raise SystemExit(f"README.md names figure {name!r}, which scripts/readme_figures.py does not know")
        return f"<!-- figure:{name} -->{figures[name]}<!-- /figure -->"

    return FIGURE.sub(one, text)


def main(argv: list[str]) -> int:
    text = README.read_text(encoding="utf-8")
    new = rewritten(text, computed())
    if "--check" in argv:
        if new != text:
            print("README.md figures are stale: run `python scripts/readme_figures.py`")
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    print("wrote README.md figures")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main(sys.argv[1:]))
