"""A published model name, read into a catalog preset: the checkpoint names tables print.

Results tables name the checkpoint they ran, not the architecture: `meta-llama/Llama-3.3-70B-Instruct`,
`nvidia/Llama-3.3-70B-Instruct-FP4`, `deepseek-ai/DeepSeek-R1-0528`, `Qwen3-235B-A22B-FP8`,
`Llama-3.1-70B-Instruct-AWQ`, `LLaMA v3.1 8B`. `find_model` tries the name as printed, then without
its organisation, its precision suffix (FP8, FP4, NVFP4, AWQ, ...), its release date and the
"v" of "LLaMA v3.1", so the same architecture resolves whichever checkpoint was quantized or
re-released. `precision_in_name` gives the precision word a name carries (`-FP4`), for rows whose
`quant` cell is blank.
"""

from __future__ import annotations

import re
from typing import Any

_PRECISION = re.compile(
    r"[-_ ](fp8|fp4|nvfp4|mxfp4|awq|gptq|int4|int8|w4a16|w8a8|w4a8|fp8[-_]dynamic|bf16|fp16|quantized|dynamic)(?=$|[-_ ])",
    re.IGNORECASE,
)
_DATE = re.compile(r"[-_ ](\d{4}|\d{6}|\d{8})$")  # DeepSeek-R1-0528, Qwen3-...-2507


def _variants(name: str) -> list[str]:
    text = name.strip()
    out = [text]
    if "/" in text:
        text = text.rsplit("/", 1)[1]
        out.append(text)
    stripped = _PRECISION.sub("", text)
    stripped = re.sub(r"[-_ ](fp8|fp4|nvfp4)[-_ ]?$", "", stripped, flags=re.IGNORECASE)
    out.append(stripped)
    undated = _DATE.sub("", stripped)
    out.append(undated)
    out.append(re.sub(r"\bv(\d)", r"\1", undated, flags=re.IGNORECASE))  # "LLaMA v3.1 8B"
    out.append(re.sub(r"[-_ ](instruct|chat|hf|it|base)$", "", undated, flags=re.IGNORECASE))
    seen: list[str] = []
    for v in out:
        if v and v not in seen:
            seen.append(v)
    return seen


def find_model(name: str) -> Any | None:
    """The catalog preset a printed model name names, or None."""
    from tokometer.catalog import model_catalog

    for candidate in _variants(name):
        found = model_catalog().find(candidate)
        if found is not None:
            return found
    return None


def precision_in_name(name: str) -> str | None:
    """The precision word a checkpoint name carries (`nvidia/Llama-3.3-70B-Instruct-FP4` -> "FP4"), or None."""
    m = _PRECISION.search(name.rsplit("/", 1)[-1])
    if m is None or m.group(1).lower() in ("quantized", "dynamic"):
        return None
    word = m.group(1)
    return "FP8" if word.lower().startswith("fp8") else word.upper()
