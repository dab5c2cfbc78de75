"""`validate --serving --only SOURCE --family WORDS`: one publication's (or one family's) held-out serving
error at the cost of one fit, with a per-publication table.

The serving publications are the sources of the fit file (the shipped `serving.csv`, or a CASES file) and,
for the shipped evidence, the compiled 2025-26 files (`calibration_data/serving_published/<SOURCE>.csv`).
A fit-file source is predicted by the shipped fit (in-sample) or, with `lso`, by one fit on every other
source of the fit file (`serving_fit.fit_table`, its engine falling back to the pooled entry as in
`serving_fit.leave_one_source_out`); a compiled source is held out by construction (the shipped fit never
saw it), so its figures are `serving_families.validate_published`'s. `family` is a few words that a run's
family (`serving_families.Family`: dense/MoE, weight format, device family) must all carry ("MoE",
"MoE Hopper", "FP8"); rows of a run that could not be planned have no family and are left out then.

Why its own module: the full `validate --serving --lso` refits once per source and the published rows'
report takes minutes; diagnosing one source (issue 29) should cost one fit and that source's runs.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from tokometer.errors import InputError
from tokometer.fitting.serving_families import (
    CLASSES,
    Family,
    family,
    family_report,
    metric_class,
    published_paths,
)
from tokometer.fitting.serving_runs import RowResult, Run, default_data_path, group_runs, read_rows

Wrap = Callable[[Iterable[Any]], Iterable[Any]]

# The words a family selection may use, by the `Family` field they name.
FAMILY_WORDS: dict[str, tuple[str, ...]] = {
    "model": ("dense", "MoE"),
    "weights": ("BF16", "FP8", "FP4", "INT4"),
    "device": ("Ampere", "Hopper", "Blackwell", "Instinct"),
}


def publications(fit_file: Path | None = None) -> dict[str, Path]:
    """Every serving publication (`source_id`) and the file holding its rows: the fit file's sources,
    then (shipped evidence only, `fit_file` None) each compiled file, named by its stem."""
    path = fit_file or default_data_path()
    rows, bad = read_rows(path)
    out: dict[str, Path] = {}
    for row in [*rows, *(b.row for b in bad)]:
        if row.source:
            out.setdefault(row.source, path)
    if fit_file is None:
        for p in published_paths():
            out.setdefault(p.stem, p)
    return out


def resolve_sources(only: Iterable[str], known: Iterable[str]) -> list[str]:
    """The publications `only` names (case-insensitive), spelt as the data spells them.

    Raises InputError naming the known publications when one matches none."""
    spelt = {k.casefold(): k for k in known}
    wanted = [s.strip() for s in only if s.strip()]
    unknown = sorted(s for s in wanted if s.casefold() not in spelt)
    if unknown:
        raise InputError(f"no serving rows from publication(s) {', '.join(unknown)}; known: {', '.join(sorted(spelt.values()))}",
                         field="only")
    return sorted({spelt[s.casefold()] for s in wanted})


def family_words(text: str | None) -> dict[str, str]:
    """`Family` field -> the value `text` asks for ("MoE Hopper" -> {model: MoE, device: Hopper}).

    Raises InputError for an unknown word or two words for the same field."""
    if text is None:
        return {}
    chosen: dict[str, str] = {}
    known = {w.casefold(): (f, w) for f, words in FAMILY_WORDS.items() for w in words}
    words = text.replace(",", " ").split()
    if not words:
        raise InputError("--family is empty; " + _family_help(), field="family")
    for word in words:
        hit = known.get(word.casefold())
        if hit is None:
            raise InputError(f"unknown serving family word {word!r}; " + _family_help(), field="family")
        if hit[0] in chosen and chosen[hit[0]] != hit[1]:
            raise InputError(f"--family names two {hit[0]} values ({chosen[hit[0]]}, {hit[1]}); " + _family_help(), field="family")
        chosen[hit[0]] = hit[1]
    return chosen


def _family_help() -> str:
    return "combine at most one word of each: " + "; ".join(f"{f} {'/'.join(w)}" for f, w in FAMILY_WORDS.items())


def matches(fam: Family | None, words: dict[str, str]) -> bool:
    """Whether a run's family carries every chosen word (a run without a family matches only no words)."""
    if not words:
        return True
    return fam is not None and all(getattr(fam, field) == value for field, value in words.items())


def _signed(results: Sequence[RowResult]) -> list[float]:
    return [r.predicted / r.row.value - 1.0 for r in results if r.ape is not None and r.reason is None and r.predicted is not None]


def source_summary(results: Sequence[RowResult]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per publication and metric class (throughput, TTFT, ITL/TPOT; `all` every scored metric, tails
    included): rows, scored, median and p90 absolute error, median signed error (predicted / measured - 1)."""
    from tokometer.fitting.serving_report import _summary

    groups: dict[str, dict[str, list[RowResult]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        groups[r.row.source]["all"].append(r)
        cls = metric_class(r.row.metric)
        if cls is not None:
            groups[r.row.source][cls].append(r)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for source in sorted(groups):
        out[source] = {}
        for cls in (*CLASSES, "all"):
            rows = groups[source].get(cls)
            if not rows:
                continue
            s = _summary(rows)
            signed = _signed(rows)
            out[source][cls] = {"n": s["n"], "scored": s["scored"], "median_ape": s["median_ape"], "p90_ape": s["p90_ape"],
                                "median_signed_error": statistics.median(signed) if signed else None}
    return out


def validate_selected(
    only: Sequence[str] = (), family_text: str | None = None, *, fit_file: Path | None = None, lso: bool = False,
    time_limit_s: float | None = None, progress: Callable[[str], Wrap | None] | None = None,
) -> dict[str, Any]:
    """Predict the chosen publications' serving rows (all of them when `only` is empty) on the chosen
    family; `serving_report.report` of them plus `sources` (`source_summary`) and `families`
    (`serving_families.family_report`'s groups) and `mode.held_out` per publication."""
    from tokometer.catalog.serving import serving_efficiency
    from tokometer.fitting.serving_fit import _records, fit_table, lookup
    from tokometer.fitting.serving_report import report
    from tokometer.fitting.serving_validate import predict

    def bar(label: str) -> Wrap | None:
        return progress(label) if progress is not None else None

    pubs = publications(fit_file)
    wanted = resolve_sources(only, pubs)
    words = family_words(family_text)
    fit_path = fit_file or default_data_path()
    results: list[RowResult] = []
    runs_seen: list[Run] = []
    held: dict[str, str] = {}
    for path in sorted({pubs[s] for s in wanted} if wanted else set(pubs.values())):
        rows, bad = read_rows(path)
        keep = set(wanted) if wanted else {s for s, p in pubs.items() if p == path}
        runs = [run for run in group_runs(r for r in rows if r.source in keep) if matches(family(run), words)]
        bad = [] if words else [b for b in bad if b.row.source in keep]
        runs_seen += runs
        for source in sorted({run.source for run in runs} | {b.row.source for b in bad}):
            held[source] = ("source" if lso else "none (in-sample)") if path == fit_path else "source (not in the fit)"
        if path == fit_path and lso and runs:
            recs = _records(group_runs(read_rows(path)[0]), bar(f"recording {path.name} runs for the fit"))
            for source in sorted({run.source for run in runs}):
                table = fit_table([r for r in recs if r.source != source])
                results += predict([run for run in runs if run.source == source], lookup(table), naive=True,
                                   time_limit_s=time_limit_s, progress=bar(f"{source} held out"))
        else:
            results += predict(runs, serving_efficiency, naive=path == fit_path, time_limit_s=time_limit_s,
                               progress=bar(f"simulating {path.stem} runs"))
        results += bad
    if not results:
        raise InputError(f"no serving rows of {', '.join(wanted) or 'any publication'} in family {family_text or 'any'}",
                         field="only" if wanted else "family")
    rep = report(results)
    rep["sources"] = source_summary(results)
    rep["families"] = family_report(results, runs_seen)["groups"]
    rep["mode"] = {"serving": True, "baseline": None, "loho": False, "lso": lso, "only": wanted or None, "family": family_text,
                   "held_out": held, "file": str(fit_path), "time_limit_s": time_limit_s}
    return rep
