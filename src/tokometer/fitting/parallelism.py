"""Read a published `parallelism` cell into one typed value, in every spelling public tables use.

Serving tables name how a model was split across GPUs in many ways: `tp=8`, `TP8`, `tp=8,ep=8`,
`dp=4,ep=4`, `DEP8` (attention data parallel over 8 GPUs with 8-way expert parallelism: the
"DP8+EP8" of NVIDIA's and SGLang's DeepSeek tables), `TP8EP8`, `tp=8 (dp-attention)`,
`tp=16 (2 nodes)`, `pp=2,tp=4`, `TP4xPP2`, or a blank cell (the row's `n_devices` on one
device each, or one GPU). `parse_parallelism` turns each into a `Parallelism`; a spelling it cannot
read raises `InputError` naming the cell, so a validation row is left unscored with that reason
instead of guessed (a `dp=4,ep=4` cell once read as one GPU predicted 0 tok/s).

The GPU count: attention data parallelism and tensor parallelism share the same GPUs in SGLang's
and TensorRT-LLM's MoE layouts (`--tp 8 --enable-dp-attention --dp 8` runs on 8 GPUs, and expert
parallelism reuses those GPUs too), so one replica spans max(tp, dp, ep) x pp GPUs, unless the row
states another count (`n_devices`, or `x nodes` with GPUs per node).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tokometer.errors import InputError

GPUS_PER_NODE = 8  # an HGX/DGX node, when a cell names nodes but not GPUs
_KEYS = {"tp": "tp", "pp": "pp", "ep": "ep", "dp": "dp", "dep": "dep", "attention dp": "dp", "attn dp": "dp",
         "tensor": "tp", "pipeline": "pp", "expert": "ep", "data": "dp", "moe ep": "ep", "moe tp": "moe_tp", "etp": "moe_tp"}
_PAIR = re.compile(r"(dep|moe[ _-]?tp|moe[ _-]?ep|etp|tp|pp|ep|dp|attn[ _-]?dp|attention[ _-]?dp)\s*[=:x]?\s*(\d+)")
_NODES = re.compile(r"(\d+)\s*(?:x\s*)?nodes?\b")
_GPUS = re.compile(r"(\d+)\s*(?:x\s*)?(?:gpus?|devices?)\b")
_DP_ATTENTION = re.compile(r"dp[ _-]?attention|attention[ _-]?dp|attn[ _-]?dp|enable[ _-]dp[ _-]attention")
_WORDS = re.compile(r"\b(tensor|pipeline|expert|data)[ _-]?parallel(?:ism)?\b")


@dataclass(frozen=True, slots=True)
class Parallelism:
    """How one replica splits the model: tensor, pipeline, expert and attention-data parallel degrees.

    `n_gpus` is the replica's GPU count and `nodes` the machines it spans; `note` keeps what the
    cell said beyond the degrees (`dp-attention`, `2 nodes`), so a report can say why a row ran so.
    """

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1  # attention data parallel (DP-attention): each rank attends over its own requests
    nodes: int = 1
    n_gpus: int = 1
    note: str = ""

    @property
    def plain(self) -> bool:
        """Only tensor and pipeline parallelism: what the cost model runs today."""
        return self.ep == 1 and self.dp == 1

    def unmodelled(self) -> str | None:
        """Why a row with this split cannot be predicted yet, or None (every split `layout` reads is modelled)."""
        try:
            self.layout()
        except InputError as exc:
            return str(exc)
        return None

    def layout(self) -> tuple[int, int, int]:
        """(tp, dp, ep) in the cost model's convention (`costmodel.layout.Layout`, vLLM's): `dp` attention
        ranks of `tp` GPUs each over one pipeline stage's GPUs, the experts over `ep` of them. SGLang's
        `--tp 8 --dp 8 --enable-dp-attention --ep 8` is attention tp 1 x dp 8 with ep 8 (its `--tp` counts
        the stage's GPUs); a `dp-attention` note without a dp degree is one rank per GPU of the stage.

        Raises `InputError` when the degrees do not split the stage's GPUs evenly."""
        stage = max(1, self.n_gpus // self.pp)
        dp = self.dp
        if dp == 1 and "dp-attention" in self.note and self.tp == 1:
            dp = stage  # "ep=72 (9 nodes, dp-attention)": SGLang --tp 72 --dp 72 --enable-dp-attention
        if stage % dp:
            raise InputError(f"attention dp {dp} does not divide the {stage} GPUs of a stage")
        tp = stage // dp
        if self.ep > 1 and (tp * dp) % self.ep:
            raise InputError(f"ep {self.ep} does not divide the {tp * dp} GPUs the MoE layers span")
        return tp, dp, self.ep


def _positive(text: str, cell: str) -> int:
    value = int(text)
    if value < 1:
        raise InputError(f"parallelism {cell!r}: a degree must be 1 or more")
    return value


def parse_parallelism(cell: str | None, n_devices: int | None = None) -> Parallelism:
    """The `Parallelism` a cell names; a blank cell is `n_devices` GPUs in tensor parallel (1 without it).

    Raises `InputError` for a spelling that names no degree it can read, or degrees that disagree.
    """
    raw = (cell or "").strip()
    text = raw.lower()
    if not text or text in ("none", "-", "n/a", "single", "single gpu", "1 gpu"):
        n = max(1, n_devices or 1)
        return Parallelism(tp=n, n_gpus=n)
    degrees: dict[str, int] = {}
    rest = text
    rest = _DP_ATTENTION.sub(" ", rest)
    note_parts = []
    dp_attention = rest != text
    if dp_attention:
        note_parts.append("dp-attention")
    nodes = None
    m = _NODES.search(rest)
    if m:
        nodes = _positive(m.group(1), raw)
        note_parts.append(f"{nodes} nodes")
        rest = rest[: m.start()] + " " + rest[m.end():]
    gpus = None
    m = _GPUS.search(rest)
    if m:
        gpus = _positive(m.group(1), raw)
        rest = rest[: m.start()] + " " + rest[m.end():]
    for word in _WORDS.finditer(rest):  # "tensor parallel" with the device count
        degrees.setdefault(_KEYS[word.group(1)], 0)
    rest = _WORDS.sub(" ", rest)
    for m in _PAIR.finditer(rest):
        key = _KEYS.get(re.sub(r"[ _-]", " ", m.group(1)), m.group(1))
        value = _positive(m.group(2), raw)
        if key in degrees and degrees[key] not in (0, value):
            raise InputError(f"parallelism {raw!r}: {key} given twice ({degrees[key]} and {value})")
        degrees[key] = value
    leftover = _PAIR.sub(" ", rest)
    leftover = re.sub(r"[\s,;+/()x*=&]|and|with|enabled|on", "", leftover)
    if leftover:
        raise InputError(f"parallelism {raw!r}: cannot read {leftover!r} (spellings read: tp=8, TP8, tp=8,ep=8, "
                         "dp=4,ep=4, DEP8, TP8EP8, tp=8 (dp-attention), tp=16 (2 nodes), pp=2,tp=4)")
    if not degrees and gpus is None:
        raise InputError(f"parallelism {raw!r}: names no parallel degree")
    dep = degrees.pop("dep", None)
    if dep is not None:  # DEP8: attention data parallel and expert parallel over the same 8 GPUs
        degrees.setdefault("dp", dep)
        degrees.setdefault("ep", dep)
        note_parts.append(f"DEP{dep}")
    degrees.pop("moe_tp", None)  # the experts' own TP split inside the EP group: same GPUs
    stated = gpus or (n_devices if n_devices and n_devices > 1 else None)
    for key, value in list(degrees.items()):
        if value == 0:  # "tensor parallel" without a degree: the stated device count
            degrees[key] = stated or 1
    tp, pp, ep, dp = (degrees.get(k, 1) for k in ("tp", "pp", "ep", "dp"))
    if dp_attention and dp == 1:
        dp = tp  # SGLang --enable-dp-attention: --dp defaults to the TP size
    if not degrees and gpus:
        tp = gpus
    n_gpus = max(tp, dp, ep) * pp
    if nodes is not None and gpus is None and n_gpus < nodes:
        n_gpus = nodes * GPUS_PER_NODE
    if gpus is not None:
        n_gpus = gpus
    nodes = nodes or max(1, -(-n_gpus // GPUS_PER_NODE))
    return Parallelism(tp=tp, pp=pp, ep=ep, dp=dp, nodes=nodes, n_gpus=n_gpus, note=", ".join(note_parts))
