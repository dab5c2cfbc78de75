"""The published single-stream evidence (`calibration_data/published/*.csv`) is transcription, checked.

Each file holds one publication's rows in `measurements.csv`'s columns. These tests hold every row
to what a transcription must be: the number in `value` is the number printed in `value_as_stated`,
each row names its source (and its date where the source prints one), no row comes from a source kept aside for judging or from the
outside check (`outside.csv` stays outside: none of its sources may enter what the fit reads), and
row ids are unique across every file the fit reads.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pytest

from tokometer.calibration_data import DATA_DIR, MEASUREMENTS_CSV, OUTSIDE_CSV

PUBLISHED = sorted((DATA_DIR / "published").glob("*.csv")) if (DATA_DIR / "published").is_dir() else []
# files beside the rows that are not measurement rows (device specs for the catalog)
SPEC_FILES = {"hardware_new.csv"}
ROW_FILES = [p for p in PUBLISHED if p.name not in SPEC_FILES]
# the identifiers of the sources kept aside for judging (the developers' guide lists them)
RESERVED = re.compile(
    r"casper-hansen/AutoAWQ|turboderp/exllamav2|llama\.cpp/pull/(2917|2959|3084|4766|21024)\b|"
    r"benches/dgx-spark|strix-halo-testing|amd-strix-halo-toolboxes|antirez/ds4|schedcp|AIMLbling|"
    r"attention_backend/NVIDIA_H200|datacrunch-research|mlperf|inference_results_v",
    re.IGNORECASE,
)
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _header(path: Path) -> list[str]:
    with path.open(encoding="utf-8", newline="") as fh:
        return next(csv.reader(fh))


def _printed_numbers(text: str) -> list[float]:
    found = []
    for match in NUMBER.findall(text):
        try:
            found.append(float(match.replace(",", "")))
        except ValueError:
            continue
    return found


def _outside_refs() -> set[str]:
    return {row["source_ref"].strip() for row in _rows(OUTSIDE_CSV)}


pytestmark = pytest.mark.skipif(not ROW_FILES, reason="no published evidence files shipped")


@pytest.mark.parametrize("path", ROW_FILES, ids=lambda p: p.name)
def test_each_file_has_the_measurements_columns(path: Path) -> None:
    assert _header(path) == _header(MEASUREMENTS_CSV), f"{path.name}: columns differ from measurements.csv"


@pytest.mark.parametrize("path", ROW_FILES, ids=lambda p: p.name)
def test_each_row_is_a_printed_number_with_its_source(path: Path) -> None:
    outside = _outside_refs()
    problems = []
    for row in _rows(path):
        rid = row["row_id"]
        try:
            value = float(row["value"])
        except ValueError:
            problems.append(f"{rid}: value {row['value']!r} is not a number")
            continue
        if not (math.isfinite(value) and value > 0):
            problems.append(f"{rid}: value {value} is not a positive finite number")
        printed = _printed_numbers(row["value_as_stated"])
        if not any(math.isclose(value, p, rel_tol=1e-9, abs_tol=1e-9) for p in printed):
            problems.append(f"{rid}: value {row['value']} is not printed in {row['value_as_stated']!r}")
        if not row["source_id"].strip() or not row["source_ref"].strip():
            problems.append(f"{rid}: no source_id/source_ref")
        date = row["measured_date"].strip()  # blank where the source prints no date
        if date and not re.fullmatch(r"\d{4}(-\d{2}(-\d{2})?)?", date):
            problems.append(f"{rid}: measured_date {date!r} is not YYYY[-MM[-DD]]")
        if RESERVED.search(row["source_ref"]) or RESERVED.search(row["notes"]):
            problems.append(f"{rid}: names a source kept aside for judging")
        if row["source_ref"].strip() in outside:
            problems.append(f"{rid}: its source is the outside check's ({row['source_ref']})")
        if not row["metric"].strip() or not row["unit"].strip():
            problems.append(f"{rid}: no metric/unit")
    assert not problems, f"{path.name}: {len(problems)} bad rows:\n" + "\n".join(problems[:20])


def test_row_ids_are_unique_across_every_file_the_fit_reads() -> None:
    seen: dict[str, str] = {row["row_id"]: MEASUREMENTS_CSV.name for row in _rows(MEASUREMENTS_CSV)}
    clashes = []
    for path in ROW_FILES:
        for row in _rows(path):
            rid = row["row_id"]
            if rid in seen:
                clashes.append(f"{rid} in {path.name} and {seen[rid]}")
            seen[rid] = path.name
    assert not clashes, "\n".join(clashes[:20])


def test_no_published_row_repeats_an_outside_row() -> None:
    def key(row: dict[str, str]) -> tuple[str, ...]:
        return (row["hardware_as_stated"].strip().lower(), row["model"].strip().lower(), row["quant"].strip().lower(),
                row["metric"].strip(), row["value"].strip())

    outside = {key(row) for row in _rows(OUTSIDE_CSV)}
    repeated = [f"{path.name}:{row['row_id']}" for path in ROW_FILES for row in _rows(path) if key(row) in outside]
    assert not repeated, f"rows that are outside.csv's: {repeated[:20]}"


def test_one_publication_is_one_source() -> None:
    """Two files must not transcribe the same publication under two source ids: leave-one-source-out
    would then hold one copy out while the fit still saw the other. Rows that share their metric, value,
    prompt and generated tokens (rows that state them) are counted per pair of sources; a pair sharing most of the smaller
    file's rows is one publication."""
    from collections import Counter, defaultdict

    index: dict[tuple[str, ...], set[str]] = defaultdict(set)
    sizes: Counter[str] = Counter()
    for path in ROW_FILES:
        for row in _rows(path):
            sizes[row["source_id"]] += 1
            if not (row["prompt_tokens"].strip() or row["gen_tokens"].strip()):
                continue  # a suite aggregate without lengths: its short numbers recur by chance
            index[(row["metric"], row["value"], row["prompt_tokens"], row["gen_tokens"])].add(row["source_id"])
    shared: Counter[tuple[str, str]] = Counter()
    for sources in index.values():
        for a in sources:
            for b in sources:
                if a < b:
                    shared[(a, b)] += 1
    same = [(a, b, n) for (a, b), n in shared.items() if n >= 5 and n >= 0.3 * min(sizes[a], sizes[b])]
    assert not same, f"sources that look like one publication: {same}"
