"""Engines x weight formats: whether an engine runs a format, and the nearest valid choices when not.

Each engine in `catalog/data/engines.toml` lists the formats it runs (`weight_formats`: quant ids, or
"gguf" for every GGUF tensor type and K-quant mix) with the source of that list. TensorRT-LLM does
not load a Q4_K_M GGUF and llama.cpp does not run an AWQ checkpoint, so such a pair is an input
error that names the formats the engine does run and the engines that run the format asked for.
Formats an engine runs only experimentally (vLLM's GGUF loader) are accepted with a warning and
never advised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from tokometer.catalog import engine_catalog, quant_catalog
from tokometer.domain.specs import EngineSpec, ModelSpec, QuantFormat
from tokometer.errors import InputError
from tokometer.ingest import GGUF_SOURCE_PREFIX

Support = Literal["yes", "experimental", "no"]
GGUF = "gguf"
# format kinds made from a number (`--bits`, `--weights-gb`): no file format, every engine takes them
UNCONSTRAINED_KINDS = ("user-bits", "file-size")
# the GGUF types offered as choices (the others exist, but nobody is pointed at TQ2_0)
GGUF_CHOICES = ("bf16", "fp16", "q8-0", "q6-k", "q5-k-m", "q4-k-m", "q4-0", "q3-k-m", "q2-k", "mxfp4")
CHOICES_SHOWN = 4


# A ggml block type named by a user of an engine that loads checkpoints, not GGUF, means that engine's
# own layout of the format: `-q nvfp4` under vLLM is a ModelOpt/compressed-tensors NVFP4 checkpoint
# (16-weight groups, embedding and LM head in BF16), `-q mxfp4` a gpt-oss-style one (experts only).
CHECKPOINT_TWINS = {"nvfp4": "nvfp4-modelopt", "mxfp4": "mxfp4-experts"}


def checkpoint_twin(engine: EngineSpec, quant: QuantFormat) -> QuantFormat | None:
    """The engine's own layout of a format named by its ggml id, when the engine runs that and not the ggml one."""
    twin_id = CHECKPOINT_TWINS.get(quant.id)
    if twin_id is None or runs_gguf(engine) == "yes":
        return None
    twin = quant_catalog().get(twin_id)
    return twin if engine_support(engine, twin) == "yes" else None


def _listed(tokens: tuple[str, ...], quant: QuantFormat) -> bool:
    return quant.id in tokens or (GGUF in tokens and quant.is_gguf)


def engine_support(engine: EngineSpec, quant: QuantFormat) -> Support:
    """Whether `engine` runs `quant`: yes, experimental, or no. An engine listing nothing runs anything."""
    if quant.kind in UNCONSTRAINED_KINDS or not (engine.weight_formats or engine.experimental_formats):
        return "yes"
    if _listed(engine.weight_formats, quant):
        return "yes"
    return "experimental" if _listed(engine.experimental_formats, quant) else "no"


def runs_gguf(engine: EngineSpec) -> Support:
    """Whether `engine` loads a GGUF file as it is."""
    if not (engine.weight_formats or engine.experimental_formats) or GGUF in engine.weight_formats:
        return "yes"
    return "experimental" if GGUF in engine.experimental_formats else "no"


def is_gguf_file(model: ModelSpec) -> bool:
    """A model read from a GGUF file (its bytes are the file's tensor types)."""
    return (model.source or "").startswith(GGUF_SOURCE_PREFIX)


def engine_formats(engine: EngineSpec) -> list[QuantFormat]:
    """The catalog weight formats `engine` runs (not experimentally), GGUF ones limited to `GGUF_CHOICES`."""
    out = []
    for q in quant_catalog():
        if q.usage == "kv" or engine_support(engine, q) != "yes":
            continue
        if q.is_gguf and q.id not in engine.weight_formats and q.id not in GGUF_CHOICES:
            continue
        out.append(q)
    return out


def nearest_formats(engine: EngineSpec, quant: QuantFormat, n: int = CHOICES_SHOWN) -> list[QuantFormat]:
    """The formats `engine` runs nearest to `quant` in bits per weight, nearest first (a tie: more bits)."""
    def gap(q: QuantFormat) -> tuple[float, float, str]:
        return abs(q.bits_per_weight - quant.bits_per_weight), -q.bits_per_weight, q.id

    return sorted(engine_formats(engine), key=gap)[:n]


def engines_running(quant: QuantFormat) -> tuple[list[EngineSpec], list[EngineSpec]]:
    """Catalog engines that run `quant`: (those that list it, those that run it experimentally)."""
    engines = list(engine_catalog())
    return (
        [e for e in engines if engine_support(e, quant) == "yes"],
        [e for e in engines if engine_support(e, quant) == "experimental"],
    )


def _names(engines: Sequence[EngineSpec], experimental: Sequence[EngineSpec] = ()) -> str:
    text = ", ".join(e.id for e in engines) or "none in the catalog"
    return text + (f" (experimentally: {', '.join(e.id for e in experimental)})" if experimental else "")


def check_format(engine: EngineSpec, quant: QuantFormat, field: str = "quant") -> None:
    """Raise `InputError` on `field` when `engine` cannot run `quant`, naming the nearest valid choices."""
    if engine_support(engine, quant) != "no":
        return
    gguf_only = quant.is_gguf and not any(quant.id in e.weight_formats for e in engine_catalog())
    what = f"{quant.name} (a GGUF format)" if gguf_only else quant.name
    choices = ", ".join(f"{q.id} ({q.bits_per_weight:.3g} bits)" for q in nearest_formats(engine, quant))
    raise InputError(
        f"{{{field}}} {what} does not run on {engine.name}; formats it runs nearest in size: "
        f"{choices or 'none listed'}; engines that run {quant.id}: {_names(*engines_running(quant))}",
        field=field,
    )


def check_file(engine: EngineSpec, model: ModelSpec) -> None:
    """Raise `InputError` on `engine` when the model is a GGUF file and the engine does not load GGUF."""
    if not is_gguf_file(model) or runs_gguf(engine) != "no":
        return
    gguf = [e for e in engine_catalog() if runs_gguf(e) == "yes"]
    raise InputError(
        f"{{engine}} {engine.name} does not load GGUF files like this one; engines that do: {_names(gguf)}",
        field="engine",
    )


def format_warning(engine: EngineSpec, quant: QuantFormat | None, model: ModelSpec) -> str | None:
    """The warning an experimental pair gets (vLLM or SGLang loading GGUF), else None."""
    experimental = (quant is not None and engine_support(engine, quant) == "experimental") or (
        quant is None and is_gguf_file(model) and runs_gguf(engine) == "experimental"
    )
    if not experimental:
        return None
    what = quant.name if quant is not None else "GGUF files"
    return f"{engine.name} runs {what} only experimentally (its docs say so): expect it slower than the estimate"


def substitute_format(engine: EngineSpec, quant: QuantFormat, preferred: tuple[str, ...] = ()) -> QuantFormat | None:
    """The format `engine` runs nearest to `quant` in bits per weight, among the `preferred` ids when
    the engine runs any of them (mainstream formats before exotic ones); None when it lists none.

    Used only when no quant was asked for (the model's published dtype, or the default quant):
    DeepSeek-V3 is published in FP8, and llama.cpp runs it as a Q8_0 GGUF.
    """
    nearest = nearest_formats(engine, quant, n=len(quant_catalog()))
    mainstream = [q for q in nearest if q.id in preferred]
    choices = mainstream or nearest
    return choices[0] if choices else None
