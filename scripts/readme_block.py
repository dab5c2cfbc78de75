"""Replace, or check, a generated block between two markers of README.md.

`scripts/accuracy_tables.py` and `scripts/serving_accuracy.py` each own one block of the README;
the splice and the `--check` mode are the same for both, so they live here once.
"""

from __future__ import annotations

from pathlib import Path


def replaced_between(text: str, start: str, end: str, block: str) -> str:
    """`text` with everything from `start` to `end` (markers included) replaced by `block`.

    `block` carries its own markers. A text without both markers is refused with one line.
    """
    if start not in text or end not in text:
        raise SystemExit(f"README.md lacks the {start} / {end} markers")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return head + block + tail


def write_or_check(readme: Path, start: str, end: str, block: str, *, what: str, script: str, argv: list[str]) -> int:
    """Rewrite `readme` with `block` between the markers, or with `--check` in `argv` exit 1 if stale."""
    text = readme.read_text(encoding="utf-8")
    new = replaced_between(text, start, end, block)
    if "--check" in argv:
        if new != text:
            stale = "are stale" if what.endswith("tables") else "is stale"
            print(f"README.md {what} {stale}: run `python scripts/{script}`")
            return 1
        return 0
    readme.write_text(new, encoding="utf-8")
    print(f"wrote README.md {what}")
    return 0
