"""What quantity a published throughput is: which tokens, counted over what.

Serving tables print throughputs that look alike and are not: output tokens/s of the whole
replica ("output tokens/s (total across all TP GPUs)"), the same divided by its GPUs ("output
tokens/s per GPU", "tok/s/gpu"), input + output tokens ("total tokens/s", "tokens/s
(prompt+completion, total)"), the speed one user sees ("tokens/s/user", which is 1 / TPOT), per
node, and requests per second. `read_quantity` reads the row's `metric` with its `unit` (and the
`per_gpu_normalized` flag) into a `Quantity`, so a prediction of the whole replica is turned into
the same quantity before it is compared. A unit that contradicts the metric (a `tput_out` row
whose unit says input + output tokens, a latency unit on a throughput) raises `InputError`: the row
is left unscored with that reason, not compared with the wrong number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tokometer.errors import InputError

KINDS = ("output_tokens", "total_tokens", "input_tokens", "requests")
PERS = ("replica", "gpu", "node", "user")
METRIC_KINDS = {"tput_out": "output_tokens", "tput_total": "total_tokens", "tput_in": "input_tokens",
                "req_per_s": "requests", "tput": None, "throughput": None}
_METRIC = re.compile(r"^(tput_out|tput_total|tput_in|req_per_s|tput|throughput)(?:_per_(gpu|node|user))?$")
_PER_USER = re.compile(r"(/|\bper[ _-]?)(users?|streams?|clients?|sequences?|seqs?)\b|\binteractivity\b|\btps/user")
_PER_GPU = re.compile(r"(/|\bper[ _-]?)(gpus?|devices?|accelerators?|chips?|cards?)\b")
_PER_NODE = re.compile(r"(/|\bper[ _-]?)(nodes?|servers?|hosts?)\b")
_TOTAL = re.compile(r"(prompt|input|in)\s*(\+|and|&)\s*(completion|output|out|generat\w*)|\btotal\s+tok|\ball\s+tokens")
_INPUT = re.compile(r"\b(input|prompt|prefill)\b")
_OUTPUT = re.compile(r"\b(output|completion|generat\w*|decode|gen)\b")
_REQUESTS = re.compile(r"\b(req|reqs|requests?|queries|query|samples?|qps|rps)\b")
_TOKENS = re.compile(r"\btok(en)?s?\b|\btps\b")
_LATENCY = re.compile(r"^\s*(s|ms|ns|us|sec|seconds?|milliseconds?)\s*$")


@dataclass(frozen=True, slots=True)
class Quantity:
    """A throughput's meaning: `kind` of count (output, total = input + output, input tokens, or
    requests) and what it is counted `per` (the whole replica, one GPU, one node, one user)."""

    kind: str = "output_tokens"
    per: str = "replica"

    def describe(self) -> str:
        what = {"output_tokens": "output tokens/s", "total_tokens": "input+output tokens/s",
                "input_tokens": "input tokens/s", "requests": "requests/s"}[self.kind]
        return what if self.per == "replica" else f"{what} per {self.per}"


def is_throughput(metric: str) -> bool:
    return _METRIC.match(metric.strip().lower()) is not None


def read_quantity(metric: str, unit: str = "", flag: str = "") -> Quantity:
    """The `Quantity` a throughput row measured; `InputError` when the unit contradicts the metric or
    the metric is not a throughput. The metric's own kind wins where the unit names none ("tok/s/gpu")."""
    m = _METRIC.match(metric.strip().lower())
    if m is None:
        raise InputError(f"metric {metric!r} is not a throughput")
    metric_kind = METRIC_KINDS[m.group(1)]
    per = m.group(2) or "replica"
    text = unit.strip().lower()
    if _LATENCY.match(text):
        raise InputError(f"unit {unit!r} is a time, not a throughput ({metric})")
    unit_kind = None
    if _TOTAL.search(text):
        unit_kind = "total_tokens"
    elif _REQUESTS.search(text) and not _TOKENS.search(text):
        unit_kind = "requests"
    elif _INPUT.search(text) and not _OUTPUT.search(text):
        unit_kind = "input_tokens"
    elif _OUTPUT.search(text):
        unit_kind = "output_tokens"
    unit_per = None
    if _PER_USER.search(text):
        unit_per = "user"
    elif _PER_GPU.search(text):
        unit_per = "gpu"
    elif _PER_NODE.search(text):
        unit_per = "node"
    if "per_gpu_normalized" in flag.lower().split(";"):
        unit_per = unit_per or "gpu"
    if metric_kind and unit_kind and metric_kind != unit_kind:
        raise InputError(f"unit {unit!r} counts {Quantity(unit_kind).describe()} but metric {metric!r} is "
                         f"{Quantity(metric_kind).describe()}")
    if m.group(2) and unit_per and unit_per != per:
        raise InputError(f"unit {unit!r} is per {unit_per} but metric {metric!r} is per {per}")
    kind = metric_kind or unit_kind or "output_tokens"
    return Quantity(kind, unit_per or per)
