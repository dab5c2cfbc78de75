"""Hardware families: the groups a user's device falls in, for per-family error and band coverage.

`validate` and the README tables report every metric per family as well as overall, because a fit
can be right on average and wrong one way on a whole family (Apple too slow, datacenter cards too
fast); the band must hold where the user is, not only on the mix of devices the data happen to hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from tokometer.fitting.features import case_source
from tokometer.fitting.rows import Case, CaseResult
from tokometer.fitting.validation import summarise

FAMILIES = ("Apple", "NVIDIA consumer", "datacenter", "AMD and Intel GPUs", "APUs and CPUs")
FAMILY_METRICS = ("tg", "pp")


def hardware_family(hardware_id: str | None) -> str:
    """Apple (any Apple chip), datacenter (any vendor's datacenter part), NVIDIA consumer (desktop,
    laptop and workstation cards), AMD and Intel GPUs (their consumer and workstation cards), APUs
    and CPUs (unified-memory PCs, Jetsons, CPUs); a device the catalog lacks counts as the last."""
    from tokometer.catalog import hardware_catalog

    hw = hardware_catalog().find(hardware_id or "")
    if hw is None:
        return "APUs and CPUs"
    if hw.vendor == "apple":
        return "Apple"
    if hw.segment == "datacenter":
        return "datacenter"
    if hw.kind in ("cpu", "apu", "soc"):
        return "APUs and CPUs"
    return "NVIDIA consumer" if hw.vendor == "nvidia" else "AMD and Intel GPUs"


def family_report(results: Iterable[CaseResult], single_device: bool = True) -> dict[str, dict[str, Any]]:
    """`summarise` per family and metric (tg, pp), single-device rows by default; empty families left out."""
    return _grouped(results, lambda r: hardware_family(r.hardware_id), FAMILIES, single_device, "n")


def source_report(results: Iterable[CaseResult], single_device: bool = True) -> dict[str, dict[str, Any]]:
    """`summarise` per publication (`source_id`) and metric (tg, pp), single-device rows by default;
    under leave-one-source-out each publication's figures are its own held-out error."""
    return _grouped(results, lambda r: case_source(r.case), None, single_device, "scored")


def per_publication(results: Iterable[CaseResult], metric: str) -> dict[str, Any]:
    """`summarise`'s figures with every publication weighing the same, whatever its row count.

    A row-weighted median is mostly the large publications' (two of 56 hold a third of the scored
    decode rows); a user's next publication is one draw of a harness, so this asks what a typical
    publication reads: each scored row weighs 1 / (its publication's scored rows of `metric`), and the
    median, p90, shares and bias are the weighted ones (`weighted_quantile`). `n` and `scored` count
    rows; `publications` counts the publications with a scored row."""
    rows = [r for r in results if r.case.metric == metric]
    scored = [r for r in rows if r.scored and r.ape is not None and r.predicted is not None]
    pubs = [case_source(r.case) for r in scored]
    weights = publication_weights(pubs)
    total = sum(weights)

    def share(test: Callable[[CaseResult], bool]) -> float | None:
        return sum(w for r, w in zip(scored, weights, strict=True) if test(r)) / total if scored else None

    apes = [r.ape for r in scored]
    signed = [(r.predicted - r.case.value) / r.case.value for r in scored]  # type: ignore[operator]
    return {
        "n": len(rows),
        "scored": len(scored),
        "publications": len(set(pubs)),
        "median_ape": weighted_quantile(apes, weights, 0.5),  # type: ignore[arg-type]
        "p90_ape": weighted_quantile(apes, weights, 0.9),  # type: ignore[arg-type]
        "within_15": share(lambda r: r.ape <= 0.15),  # type: ignore[operator]
        "interval_coverage": share(lambda r: r.low is not None and r.high is not None and r.low <= r.case.value <= r.high),
        "median_signed_error": weighted_quantile(signed, weights, 0.5),
    }


def publication_weights(sources: list[str]) -> list[float]:
    """Each row's weight when every publication weighs the same: 1 / (its publication's rows here)."""
    from collections import Counter

    count = Counter(sources)
    return [1.0 / count[s] for s in sources]


def weighted_quantile(values: list[float], weights: list[float], q: float) -> float | None:
    """The smallest value whose cumulative weight (values in order) reaches `q` of the total; None when empty."""
    if not values:
        return None
    pairs = sorted(zip(values, weights, strict=True))
    target = q * sum(weights)
    acc = 0.0
    for value, weight in pairs:
        acc += weight
        if acc >= target - 1e-12:
            return value
    return pairs[-1][0]


def _grouped(
    results: Iterable[CaseResult], key: Callable[[CaseResult], str], names: Iterable[str] | None, single_device: bool, kept_if: str
) -> dict[str, dict[str, Any]]:
    """`summarise` per group (`names` in that order, else the groups present, sorted) and metric; a
    group is kept when one of its metrics has `kept_if` (rows `n`, or `scored`) above zero."""
    rows = [r for r in results if r.case.n_devices == 1 or not single_device]
    by: dict[str, list[CaseResult]] = {}
    for r in rows:
        by.setdefault(key(r), []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for name in names if names is not None else sorted(by):
        metrics = {m: summarise(by.get(name, []), m) for m in FAMILY_METRICS}
        if any(v[kept_if] for v in metrics.values()):
            out[name] = metrics
    return out


def select_cases(cases: list[Case], sources: Iterable[str] = (), family: str | None = None) -> list[Case]:
    """The cases of these publications (`source_id`, any case) on this hardware family: the rows
    `validate --only/--family` predicts, while a hold-out still fits on every other row.

    Raises InputError naming the known publications or families when one matches nothing."""
    from tokometer.errors import InputError
    from tokometer.fitting.features import case_hardware_id

    wanted = {s.strip().casefold() for s in sources if s.strip()}
    known = {case_source(c).casefold(): case_source(c) for c in cases}
    unknown = sorted(s for s in wanted if s not in known)
    if unknown:
        raise InputError(
            f"no rows from publication(s) {', '.join(unknown)}; known: {', '.join(sorted(known.values()))}", field="only"
        )
    if family is not None:
        match = [f for f in FAMILIES if f.casefold() == family.strip().casefold()]
        if not match:
            raise InputError(f"unknown hardware family {family!r}; one of: {', '.join(FAMILIES)}", field="family")
        family = match[0]
    return [
        c for c in cases
        if (not wanted or case_source(c).casefold() in wanted)
        and (family is None or hardware_family(case_hardware_id(c)) == family)
    ]
