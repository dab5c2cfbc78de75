"""The one row type: a published measurement as read from a CSV with `measurements.csv`'s header.

`read_cases` parses a file into `Case`s (a row that cannot be scored keeps its reason, never fatal);
`CaseResult` is a row with its prediction, band and reason. `Cells` is shared with the serving rows.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokometer.errors import InputError

REQUIRED_COLUMNS = ("metric", "value")
NUMERIC_COLUMNS = (
    "n_devices",
    "total_params_b",
    "active_params_b",
    "bits_per_weight",
    "model_size",
    "batch_size",
    "prompt_tokens",
    "gen_tokens",
    "value",
    "mem_bandwidth_gbps",
    "memory_gb",
    "fp16_dense_tflops",
    "fp8_dense_tflops",
    "int8_dense_tops",
)
METRICS = ("tg", "pp", "tg_agg", "pp_agg", "tput_out", "ttft_ms")
AGGREGATES = ("tg_agg", "pp_agg", "tput_out")
# the batch_size of a row that ran every request at once with the engine choosing its own batch
# ("max (offline, all requests queued)", "max", "all"): an offline run, the KV cache and the
# engine's max_num_seqs deciding how many run together
MAX_BATCH = re.compile(r"^\s*(max|all|offline|unbounded|auto|inf)", re.IGNORECASE)
DEFAULT_GEN_TOKENS = 200  # gpt-fast's default max_new_tokens, when a source does not say


class Cells:
    """A CSV row's cells as read (`raw`): one stripped text, or a number (None when blank or unreadable;
    the reader records an unreadable cell as the row's problem). Shared by the decode/prefill cases here
    and the serving rows of `serving_validate`."""

    raw: dict[str, str]

    def text(self, key: str) -> str:
        return (self.raw.get(key) or "").strip()

    def number(self, key: str) -> float | None:
        text = self.text(key)
        try:
            return float(text) if text else None
        except ValueError:
            return None


@dataclass(frozen=True)
class Case(Cells):
    """One measured row, parsed and checked."""

    row_id: str
    line: int
    raw: dict[str, str]
    metric: str
    value: float
    n_devices: int
    batch: int
    prompt_tokens: int
    gen_tokens: int | None
    flag: str
    problem: str | None = None  # why the row cannot be scored as written (kept, counted, never fatal)
    batch_max: bool = False  # batch_size reads "max" (every request queued, the engine choosing the batch)

    @property
    def static_batch(self) -> bool:
        """An aggregate of a batch > 1 (or a "max" batch): simulated as a static batch, not one step."""
        return self.metric in AGGREGATES and (self.batch > 1 or self.batch_max)


@dataclass
class CaseResult:
    case: Case
    predicted: float | None = None
    low: float | None = None
    high: float | None = None
    reason: str | None = None
    group: str | None = None
    hardware_id: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def scored(self) -> bool:
        return self.predicted is not None and self.reason is None

    @property
    def ape(self) -> float | None:
        if self.predicted is None:
            return None
        return abs(self.predicted - self.case.value) / self.case.value

    def to_dict(self) -> dict[str, Any]:
        return {
            "row_id": self.case.row_id,
            "line": self.case.line,
            "metric": self.case.metric,
            "measured": self.case.value if math.isfinite(self.case.value) else None,
            "predicted": self.predicted,
            "interval": [self.low, self.high] if self.low is not None else None,
            "ape": self.ape,
            "scored": self.scored,
            "reason": self.reason,
            "group": self.group,
            "hardware": self.hardware_id,
            "model": self.case.text("model") or None,
            "engine": self.case.text("engine") or None,
            "n_devices": self.case.n_devices,
        }


def _integer(row: dict[str, str], column: str, default: int | None) -> int | None:
    text = row.get(column, "").strip()
    try:
        return int(float(text)) if text else default
    except ValueError:
        return default


def row_problem(clean: dict[str, str]) -> str | None:
    """Why a row cannot be scored as written (an unreadable cell, an unknown metric), or None."""
    for column in NUMERIC_COLUMNS:
        value = clean.get(column, "").strip()
        if not value or (column == "batch_size" and MAX_BATCH.match(value)):
            continue
        try:
            number = float(value)
        except ValueError:
            return f"column {column!r}: {value!r} is not a number"
        if not math.isfinite(number) or number < 0:
            return f"column {column!r}: {value!r} must be a finite number >= 0"
    metric = clean.get("metric", "").strip()
    if metric not in METRICS:
        return f"metric {metric!r} is not scored (scored: {', '.join(METRICS)})"
    if float(clean["value"].strip() or 0) <= 0:
        return "column 'value': a positive measurement is required"
    return None


def read_cases(path: str | Path) -> list[Case]:
    """Parse a measurements CSV. A file without the columns a row needs is an error naming them; a
    row that cannot be scored (unreadable cell, unknown metric) is kept with its reason."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    if not text.strip():
        raise InputError(f"{path}: empty file (expected a header row and measurements)")
    try:
        rows = list(csv.DictReader(text.splitlines()))
        header = list(rows[0].keys()) if rows else next(csv.reader(text.splitlines()), [])
    except csv.Error as exc:
        raise InputError(f"{path}: not a readable CSV: {exc}") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)} in the header")
    if not any(c in header for c in ("model", "total_params_b")):
        raise InputError(f"{path}: needs a 'model' or 'total_params_b' column")
    if not any(c in header for c in ("hardware_id", "hardware_as_stated", "mem_bandwidth_gbps")):
        raise InputError(f"{path}: needs a 'hardware_id', 'hardware_as_stated' or 'mem_bandwidth_gbps' column")
    cases = []
    for index, row in enumerate(rows):
        line = index + 2
        clean = {k: (v or "") for k, v in row.items() if isinstance(k, str)}
        problem = "more fields than the header has columns" if None in row else row_problem(clean)
        value = _number(clean.get("value", ""))
        cases.append(
            Case(
                row_id=clean.get("row_id", "").strip() or f"line{line}",
                line=line,
                raw=clean,
                metric=clean["metric"].strip(),
                value=value if value and value > 0 else math.nan,
                n_devices=max(1, _integer(clean, "n_devices", 1) or 1),
                batch=max(1, _integer(clean, "batch_size", 1) or 1),
                prompt_tokens=_integer(clean, "prompt_tokens", 0) or 0,
                gen_tokens=_integer(clean, "gen_tokens", None),
                flag=clean.get("flag", "").strip(),
                problem=problem,
                batch_max=_is_max_batch(clean.get("batch_size", "")),
            )
        )
    return cases


def _is_max_batch(text: str) -> bool:
    return bool(text.strip()) and MAX_BATCH.match(text) is not None


def _number(text: str) -> float | None:
    try:
        number = float(text.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None
