"""Plain-text rendering helpers: numbers with sensible precision, aligned tables."""

from __future__ import annotations

import math
from collections.abc import Sequence


def num(value: float | None, digits: int = 3) -> str:
    """A number with about `digits` significant figures and thousands separators."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:,.{decimals}f}"


def table(rows: Sequence[Sequence[str]], header: Sequence[str] | None = None) -> str:
    all_rows = [list(header)] if header else []
    all_rows += [list(r) for r in rows]
    if not all_rows:
        return ""
    widths = [max(len(r[i]) if i < len(r) else 0 for r in all_rows) for i in range(max(map(len, all_rows)))]
    lines = []
    for index, row in enumerate(all_rows):
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if header and index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


