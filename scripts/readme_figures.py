"""Write, or check, the figures of README.md's prose that come from a command or a catalog.

A figure in the README reads `<!-- figure:NAME -->TEXT<!-- /figure -->` (the comments do not
render). `FIGURES` below says how each NAME is computed, from the catalogs and the estimate that
the sentence quotes, in an empty tokometer home so a user's own entries never count.
`python scripts/readme_figures.py` rewrites them; `--check` exits 1 if any is stale (tests/test_docs.py).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

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


FIGURES: dict[str, Callable[[], str]] = {
    "hardware-count": lambda: _count("hardware_catalog"),
    "model-presets": lambda: _count("model_catalog"),
    "bare-ceiling": lambda: _tok_s(_bare()[0]),
    "bare-estimate": lambda: _tok_s(_bare()[1]),
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
