"""What `estimate()` warns about, as typed values (issue 10): the use-case decides, report/ words it.

Each notice names its case by type and carries the numbers and names its sentence needs;
`report.notices.notice_text` turns one into the line the CLI, the web API and the JSON print
(the web translates that line by message id). Notes made elsewhere (model ingest, a device name
that names several devices, format support, the compute peak) still arrive as text.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MacosWorkingSet:
    """An Apple GPU without a user memory limit: macOS lets the GPU wire only part of the RAM."""

    gpu_memory_gb: float
    memory_gb: float


@dataclass(frozen=True, slots=True)
class AssumedAcceptance:
    """Speculative decoding without --acceptance: the default acceptance rate was taken."""

    acceptance: float


@dataclass(frozen=True, slots=True)
class DoesNotFit:
    """The setup needs more memory than its devices offer; speeds are 'if it fit'."""

    need_gb: float
    available_gb: float
    devices: int
    hardware_name: str
    engine_name: str


@dataclass(frozen=True, slots=True)
class PastContextLimit:
    """The planned context is longer than the model attends to."""

    context_tokens: int
    model_name: str
    limit_tokens: int


@dataclass(frozen=True, slots=True)
class CpuSideShort:
    """Offloaded layers or experts need more system RAM than the CPU side has."""

    need_gb: float
    available_gb: float
    cpu_name: str


@dataclass(frozen=True, slots=True)
class FormatSubstituted:
    """The model's default format does not run on the engine; the nearest one it runs was taken."""

    engine_name: str
    format_name: str
    model_name: str
    substitute_name: str


@dataclass(frozen=True, slots=True)
class ExpertOffloadEngine:
    """Expert offload is modelled as llama.cpp runs it; another engine may not offer it."""

    engine_name: str


@dataclass(frozen=True, slots=True)
class UnevenHeads:
    """Attention heads that do not split evenly over the tensor-parallel degree."""

    n_heads: int
    tp: int


@dataclass(frozen=True, slots=True)
class LlamaCppRowSplit:
    """--tp on llama.cpp models its row split, not its default layer split."""


@dataclass(frozen=True, slots=True)
class BareAllReduce:
    """A bare model has no hidden size, so all-reduces cost only their latency."""


Notice = (
    MacosWorkingSet | AssumedAcceptance | DoesNotFit | PastContextLimit | CpuSideShort | FormatSubstituted
    | ExpertOffloadEngine | UnevenHeads | LlamaCppRowSplit | BareAllReduce
)
