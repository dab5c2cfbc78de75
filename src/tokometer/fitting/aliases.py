"""Published names to catalog entries: what a transcribed row calls a model, format, engine, backend or
device, resolved where the row's own cells do not resolve in the catalogs.

Transcriptions keep names as printed ("mlx-community/Qwen3-32B-4bit", "qwen3moe 30B.A3B Q4_K - Medium",
"MLX (Metal)", "NVIDIA_GB10_122GB"), so the catalogs' own lookups miss most of them. Two layers, both
conservative (a wrong match is worse than an unscored row):

- `calibration_data/published/RESOLVE.toml`: one entry per (source id or "*", as-stated string) naming the
  catalog id it resolves to and why; a source-specific entry wins over "*". It also lists sources whose rows
  cannot be scored at all, with the reason (`unscorable`), and rows of a source that measured something
  else than their metric says (`unscorable_rows`: a client-side "prefill" of a few tokens that is latency),
  and sources whose build multiplied in FP32 without the matrix engines (`fp32_gemm_build`).
- general rules (`model_candidates`, `quant_from_text`, `backend_from_text`): strip what a name carries
  besides the model (hub organisation, file path and extension, Ollama tag separator, quantization and
  packaging suffixes) and look the rest up exactly in the catalog; a model found this way must agree with the
  row's own parameter count when the row prints one.

`fitting.validation` asks here only after its own lookup failed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokometer.catalog import normalise
from tokometer.errors import CatalogError

RESOLVE_TOML = Path(__file__).resolve().parents[1] / "calibration_data" / "published" / "RESOLVE.toml"
KINDS = ("model", "quant", "engine", "backend", "hardware")
# a preset found by the name rules must hold the row's printed parameter count within this share
PARAMS_TOLERANCE = 0.04


@dataclass(frozen=True)
class Resolution:
    """What an as-stated string resolves to (`target`: a catalog id, a backend, or bits per weight) and why."""

    target: str
    reason: str


@dataclass(frozen=True)
class RowRule:
    """Rows of one source that measured something else than their metric says (RESOLVE.toml
    `[[unscorable_rows]]`): the source's rows of `metrics` (one name or a list) whose table_heading contains
    `heading`, whose prompt is at most `max_prompt_tokens` (0: any length) and, where `engines` are given
    (one name or a list), whose engine column is one of them (one harness timing several servers miscounts only
    some of them). `contains` narrows it to rows whose named columns contain the given text (a run's
    configuration that only its notes state, such as an environment variable)."""

    source: str
    metrics: tuple[str, ...]
    heading: str
    max_prompt_tokens: int
    reason: str
    engines: tuple[str, ...] = ()
    contains: tuple[tuple[str, str], ...] = ()  # (column, text) pairs, all of which must hold

    def matches(self, case: Any) -> bool:
        return (
            _source(case) == self.source
            and case.metric in self.metrics
            and self.heading in case.text("table_heading")
            and (self.max_prompt_tokens <= 0 or case.prompt_tokens <= self.max_prompt_tokens)
            and (not self.engines or case.text("engine") in self.engines)
            and all(text in case.text(column) for column, text in self.contains)
        )


def _names(value: Any, where: str) -> tuple[str, ...]:
    """A rule's field that takes one name or a list of names, as a tuple ("" or [] for none)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise CatalogError(f"{where} must be a string or a list of strings")
    return tuple(v.strip() for v in items if v.strip())


@dataclass(frozen=True)
class ResolveTable:
    entries: dict[tuple[str, str, str], Resolution]  # (kind, source id or "*", normalised as-stated)
    unscorable: dict[str, str]  # source id -> why none of its rows can be scored
    row_rules: tuple[RowRule, ...] = ()  # some rows of a source, misread as their metric
    broken_rows: dict[str, str] = field(default_factory=dict)  # row id -> why that run is not a measurement of its setup
    # (source id, normalised as-stated device) -> why the device's variant cannot be read from that source
    undecided_hardware: dict[tuple[str, str], str] = field(default_factory=dict)
    # (source id or "*", normalised as-stated model) -> what of its architecture the accounting lacks
    unmodelled_models: dict[tuple[str, str], str] = field(default_factory=dict)
    # source id -> why its llama.cpp build multiplied every GEMM in FP32 (no matrix-engine path)
    fp32_gemm_builds: dict[str, str] = field(default_factory=dict)

    def unmodelled(self, source: str, as_stated: str) -> str | None:
        key = normalise(as_stated)
        return self.unmodelled_models.get((source, key)) or self.unmodelled_models.get(("*", key))

    def lookup(self, kind: str, source: str, as_stated: str) -> Resolution | None:
        key = normalise(as_stated)
        return self.entries.get((kind, source, key)) or self.entries.get((kind, "*", key))


@functools.cache
def resolve_table(path: Path = RESOLVE_TOML) -> ResolveTable:
    """RESOLVE.toml, checked: every entry names its kind, as-stated string, target and reason."""
    import tomllib

    if not path.is_file():
        return ResolveTable({}, {})
    try:
        raw: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{path}: {exc}") from None
    entries: dict[tuple[str, str, str], Resolution] = {}
    for kind in KINDS:
        for index, item in enumerate(raw.get(kind, [])):
            where = f"{path.name}: [[{kind}]] #{index + 1}"
            missing = [k for k in ("as_stated", "id", "reason") if not str(item.get(k, "")).strip()]
            if missing:
                raise CatalogError(f"{where}: missing {', '.join(missing)}")
            key = (kind, str(item.get("source", "*")), normalise(str(item["as_stated"])))
            if key in entries:
                raise CatalogError(f"{where}: {item['as_stated']!r} is listed twice for {key[1]}")
            entries[key] = Resolution(str(item["id"]), str(item["reason"]))
    unscorable = {}
    for index, item in enumerate(raw.get("unscorable", [])):
        if not item.get("source") or not item.get("reason"):
            raise CatalogError(f"{path.name}: [[unscorable]] #{index + 1}: needs source and reason")
        unscorable[str(item["source"])] = str(item["reason"])
    rules = []
    for index, item in enumerate(raw.get("unscorable_rows", [])):
        where = f"{path.name}: [[unscorable_rows]] #{index + 1}"
        missing = [k for k in ("source", "metric", "heading", "reason") if not str(item.get(k, "")).strip()]
        if missing:
            raise CatalogError(f"{where}: missing {', '.join(missing)}")
        limit = item.get("max_prompt_tokens", 0)
        if not isinstance(limit, int) or limit < 0:
            raise CatalogError(f"{where}: max_prompt_tokens must be a whole number >= 0")
        metrics, engines = _names(item.get("metric", []), f"{where}: metric"), _names(item.get("engine", []), f"{where}: engine")
        if not metrics:
            raise CatalogError(f"{where}: metric names no metric")
        contains = item.get("contains", {})
        if not isinstance(contains, dict) or not all(isinstance(v, str) and v for v in contains.values()):
            raise CatalogError(f"{where}: contains must map columns to texts")
        rules.append(RowRule(
            str(item["source"]), metrics, str(item["heading"]), limit, str(item["reason"]), engines,
            tuple((str(k), v) for k, v in contains.items()),
        ))
    broken: dict[str, str] = {}
    for index, item in enumerate(raw.get("broken_run", [])):
        rows = item.get("rows")
        if not item.get("source") or not item.get("reason") or not isinstance(rows, list) or not rows:
            raise CatalogError(f"{path.name}: [[broken_run]] #{index + 1}: needs source, rows and reason")
        for row_id in rows:
            if not str(row_id).startswith(str(item["source"])):
                raise CatalogError(f"{path.name}: [[broken_run]] #{index + 1}: row {row_id!r} is not of {item['source']}")
            broken[str(row_id)] = f"broken run: {item['reason']}"
    undecided: dict[tuple[str, str], str] = {}
    for index, item in enumerate(raw.get("undecided_hardware", [])):
        missing = [k for k in ("source", "as_stated", "reason") if not str(item.get(k, "")).strip()]
        if missing:
            raise CatalogError(f"{path.name}: [[undecided_hardware]] #{index + 1}: missing {', '.join(missing)}")
        undecided[(str(item["source"]), normalise(str(item["as_stated"])))] = str(item["reason"])
    unmodelled: dict[tuple[str, str], str] = {}
    for index, item in enumerate(raw.get("unmodelled_model", [])):
        missing = [k for k in ("as_stated", "reason") if not str(item.get(k, "")).strip()]
        if missing:
            raise CatalogError(f"{path.name}: [[unmodelled_model]] #{index + 1}: missing {', '.join(missing)}")
        named = (str(item.get("source", "*")), normalise(str(item["as_stated"])))
        if named in unmodelled:
            raise CatalogError(f"{path.name}: [[unmodelled_model]] #{index + 1}: {item['as_stated']!r} is listed twice for {named[0]}")
        unmodelled[named] = str(item["reason"])
    fp32_gemm: dict[str, str] = {}
    for index, item in enumerate(raw.get("fp32_gemm_build", [])):
        if not str(item.get("source", "")).strip() or not str(item.get("reason", "")).strip():
            raise CatalogError(f"{path.name}: [[fp32_gemm_build]] #{index + 1}: needs source and reason")
        fp32_gemm[str(item["source"])] = str(item["reason"])
    return ResolveTable(entries, unscorable, tuple(rules), broken, undecided, unmodelled_models=unmodelled, fp32_gemm_builds=fp32_gemm)


# ---------------------------------------------------------------- models

# what a published model name carries besides the model, stripped from its end (case-insensitive)
_QUANT_TOKEN = (
    r"(?:ud[-_ ]?)?i?q\d(?:_[a-z0-9]+)*|[fb]f?16|fp8(?:[-_](?:static|dynamic))?|fp4|int[48]|w\d+a\d+\S*|"
    r"auto-?round(?:[-_]?int4)?|"
    r"\d+(?:\.\d+)?bpw\S*|exl[23]\S*|awq(?:[-_]?(?:4bit|int4))?|gptq(?:[-_]?int4)?|nvfp4|mxfp4(?:[-_]moe)?|"
    r"\d+bits?|q\d|mlx|qat|optiq|gguf|dwq"
)
_PACKAGING = r"it|instruct(?:[-_]\d{4})?|chat|hf|mlx[-_]lm|mlx[-_]vlm|default|omlx|latest"
_SUFFIX = re.compile(rf"[-_ .:](?:{_QUANT_TOKEN}|{_PACKAGING})$", re.IGNORECASE)
# llama-bench's "general.architecture size" type string: "qwen3moe 30B.A3B Q4_K - Medium", "llama 7B Q4_0"
# "?B": llama-bench builds that cannot name a model's size print a question mark (gpt-oss); the
# parameter count then decides between the family's sizes (`resolve_model` needs it for these)
# (a model under a billion prints its size in millions: "gemma3 270M Q8_0"; Gemma's per-layer-embedding models
# their effective size: "gemma4 E4B Q4_K - Medium")
_LLAMA_BENCH = re.compile(r"^([a-z0-9_-]+) (E?\d+(?:\.\d+)?|\?)([BM])(?:\.A(\d+(?:\.\d+)?)B)?(?: |$)", re.IGNORECASE)
# llama-bench architecture -> catalog family prefix, where the architecture name maps to one family
# ("phi3 3B" is not here: Phi-3-mini, Phi-3.5-mini and Phi-4-mini all print it)
_ARCH_FAMILY = {
    "qwen3": "qwen3",
    "qwen3moe": "qwen3",
    "gemma3": "gemma-3",
    "gpt-oss": "gpt-oss",
    "qwen35": "qwen3.5",
    "qwen35moe": "qwen3.5",
    "qwen3next": "qwen3-next",
    "gemma4": "gemma-4",
}


def _strip_wrapping(name: str) -> str:
    """The model part of a printed name: no path, hub organisation, '.gguf', parenthetical or trailing size."""
    text = re.sub(r"\([^)]*\)", " ", name).strip()
    text = text.split()[0] if text.startswith(("~", "/")) else text
    text = text.rstrip("/").rsplit("/", 1)[-1]
    text = re.sub(r"\.gguf$", "", text, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", text).strip()


# a checkpoint that changed the architecture it was derived from: never read as its base model
_CHANGED = re.compile(r"reap|prun|distill|merge|frankenmerge|upscal|\bmoe-?\d+x", re.IGNORECASE)


def _specific(candidate: str) -> bool:
    """A bare family word ("Mistral", "Qwen3") names no one model: a candidate needs two name parts and a digit."""
    return len([p for p in re.split(r"[-_ .:]", candidate) if p]) >= 2 and any(ch.isdigit() for ch in candidate)


def model_candidates(name: str) -> list[str]:
    """Names to look up exactly, most specific first: the name unwrapped, then with one more trailing
    quantization or packaging token removed each time ("Qwen3-32B-4bit" -> "Qwen3-32B"). Version numbers are
    never touched, so "Qwen3.6-27B" never becomes a Qwen3 name; a bare family word is never a candidate, and a
    pruned, distilled or merged checkpoint gets none at all."""
    if _CHANGED.search(name):
        return []
    text = _strip_wrapping(name)
    # an Ollama tag "qwen3.5:35b-a3b-q4_K_M" names the model before its quantization
    text = text.replace(":", "-")
    # "Gemma4-26B-A4B" / "gemma4" spell the family without its dash
    text = re.sub(r"^gemma(\d)", r"gemma-\1", text, flags=re.IGNORECASE)
    found = [text]
    first = text.split(" ")[0]
    if first != text:
        found.append(first)
    for start in list(found):
        current = start
        while True:
            shorter = _SUFFIX.sub("", current).strip()
            if shorter == current or not shorter:
                break
            found.append(shorter)
            current = shorter
    return [c for c in dict.fromkeys(found) if c == text or _specific(c)]


# llama-bench architectures that several catalog families print (Llama 2, 3, 3.1, 3.2, 3.3 and their fine-tunes
# are all "llama"; Qwen2 and Qwen2.5 "qwen2"; Ministral 3 "mistral3"), with the config `model_type`s they cover:
# the size in the string names no family, so only the printed parameter count can choose (`shared_arch_candidates`)
_SHARED_ARCH = {"llama": ("llama",), "qwen2": ("qwen2",), "mistral3": ("ministral3", "mistral3")}
# llama-bench prints the GGUF's own parameter count to two decimals ("8.03 B", "70.55 B"): a shared architecture's
# preset must hold it to within this share, so Llama 2 70B (68.98 B) is never read for Llama 3 70B (70.55 B)
EXACT_PARAMS_TOLERANCE = 0.005


def _shape(spec: Any) -> tuple[Any, ...]:
    """What a decode step reads and computes: two presets of one shape are the same model for speed."""
    return (
        spec.n_layers, spec.hidden_size, spec.n_heads, spec.n_kv_heads, spec.head_dim, spec.vocab_size,
        spec.params, spec.attention, spec.tied_embeddings, spec.n_experts, spec.n_experts_per_token,
    )


def shared_arch_candidates(name: str, total_params_b: float | None) -> list[str]:
    """For a llama-bench type string whose architecture several families share ("llama 8B Q4_K - Medium"),
    the catalog presets of that architecture holding the printed count to `EXACT_PARAMS_TOLERANCE`, when
    they all have one shape (Llama 3 8B and Llama 3.1 8B: the same layers, read the same way), the longest
    context first; else none."""
    match = _LLAMA_BENCH.match(name.strip())
    if not match or not total_params_b or match.group(1).lower() not in _SHARED_ARCH:
        return []
    from tokometer.catalog import model_catalog

    model_types = _SHARED_ARCH[match.group(1).lower()]
    found = []
    for preset in model_catalog():
        if str(preset.config.get("model_type", "")).lower() not in model_types:
            continue
        try:
            spec = preset.spec
        except Exception:  # a preset whose spec cannot be built names nothing
            continue
        if abs(spec.total_params / 1e9 - total_params_b) <= EXACT_PARAMS_TOLERANCE * total_params_b:
            found.append((-(spec.max_context_tokens or 0), preset.id, _shape(spec)))
    # one shape: the longest-context preset first, so a row measured deep in the cache is never beyond its model
    return [i for _, i, _ in sorted(found)] if len({shape for _, _, shape in found}) == 1 else []


def llama_bench_candidates(name: str) -> list[str]:
    """llama-bench's type string as catalog ids: "qwen3moe 30B.A3B Q4_K - Medium" -> "qwen3-30b-a3b"."""
    match = _LLAMA_BENCH.match(name.strip())
    if not match or match.group(1).lower() not in _ARCH_FAMILY:
        return []
    family, size, unit, active = _ARCH_FAMILY[match.group(1).lower()], match.group(2), match.group(3).lower(), match.group(4)
    if size == "?":
        from tokometer.catalog import model_catalog

        return sorted(i for i in model_catalog().ids if i.startswith(f"{family}-"))
    return [f"{family}-{size.lower()}{unit}" + (f"-a{active}b" if active else "")]


def _params_agree(preset: Any, total_params_b: float | None) -> bool:
    """Whether a row's printed parameter count is the preset's: its checkpoint's count (`params_b`, with a
    multimodal model's vision tower) or its language model's (`spec.total_params`). A GGUF holds the language
    model alone (the vision tower and projector go in a separate mmproj file), so llama-bench prints Gemma 3
    4B as "3.88 B" where the checkpoint holds 4.3 B; either count names the model."""
    if not total_params_b:
        return True
    counts = [preset.params_b] if preset.params_b else []
    try:
        counts.append(preset.spec.total_params / 1e9)
    except Exception:  # a preset whose spec cannot be built agrees only by its stated count
        pass
    return any(abs(c - total_params_b) <= PARAMS_TOLERANCE * total_params_b for c in counts)


def _name_rule_candidates(name: str, total_params_b: float | None) -> Iterator[str]:
    """Catalog ids the name rules read `name` as, most specific first; lazily, so the shared-architecture
    scan (every preset's spec) runs only when the rules before it found nothing."""
    yield from model_candidates(name)
    if not ("?B" in name and not total_params_b):  # "gpt-oss ?B": only the parameter count can choose
        yield from llama_bench_candidates(name)
    yield from shared_arch_candidates(name, total_params_b)


def resolve_model(name: str, source: str = "*", total_params_b: float | None = None) -> tuple[Any, str] | None:
    """The catalog preset a printed model name means, and why; None when no rule is sure."""
    from tokometer.catalog import model_catalog

    catalog = model_catalog()
    listed = resolve_table().lookup("model", source, name)
    if listed is not None:
        return catalog.get(listed.target), listed.reason
    for candidate in _name_rule_candidates(name, total_params_b):
        preset = catalog.find(candidate)
        if preset is not None and _params_agree(preset, total_params_b):
            return preset, f"name rule: {name!r} read as {candidate!r}"
    return None


def unmodelled_model_reason(name: str, source: str = "*") -> str | None:
    """Why a printed model that resolves to no preset has none (RESOLVE.toml `[[unmodelled_model]]`):
    its architecture has a part the accounting does not model (a new attention kind, diffusion decoding),
    so a preset would price it as something it is not. None when the file says nothing about it."""
    return resolve_table().unmodelled(source, name)


# ---------------------------------------------------------------- quantization

# llama-bench prints a file's type as llama_model_ftype_name: "Q4_K - Medium", "IQ4_XS - 4.25 bpw"
_FTYPE = re.compile(r"^(I?Q\d_K|Q\d_K|IQ\d_[A-Z]+|Q\d_\d) - (Small|Medium|Large|[\d.]+ bpw)$", re.IGNORECASE)
_FTYPE_SIZE = {"small": "S", "medium": "M", "large": "L"}
# llama.cpp's ftype names whose "- Medium" means the plain type (LLAMA_FTYPE_MOSTLY_Q2_K prints "Q2_K - Medium")
_PLAIN_MEDIUM = {"q2_k"}
_MLX_AFFINE = re.compile(r"^(?:MLX )?(?:q(\d)|(\d)bit)(?: MLX)?(?: g(\d+))?$", re.IGNORECASE)
_BPW = re.compile(r"(\d+(?:\.\d+)?) ?bpw\b", re.IGNORECASE)


def quant_from_text(text: str, source: str = "*") -> Resolution | None:
    """A printed quantization as a catalog format id, or as bits per weight ("bits:4.25") where the text
    states them; None when it says neither."""
    from tokometer.catalog import quant_catalog

    listed = resolve_table().lookup("quant", source, text)
    if listed is not None:
        return listed
    catalog = quant_catalog()
    clean = text.strip()
    match = _FTYPE.match(clean)
    if match:
        base, size = match.group(1), match.group(2).lower()
        if size.endswith("bpw"):
            found = catalog.find(base)
            if found is not None:
                return Resolution(found.id, f"llama-bench ftype {clean!r}: {base}")
        else:
            name = base if base.lower() in _PLAIN_MEDIUM and size == "medium" else f"{base}_{_FTYPE_SIZE[size]}"
            found = catalog.find(name)
            if found is not None:
                return Resolution(found.id, f"llama-bench ftype {clean!r} is {name}")
    # MXFP4 is one format everywhere (OCP MX: 32-element blocks, an E8M0 scale): "MXFP4 mxfp4", "MLX mxfp4".
    # NVFP4 and "int4" are not: each engine stores them its own way, so they are never read from text alone.
    if normalise(clean) in ("mxfp4-mxfp4", "mlx-mxfp4"):
        return Resolution("mxfp4", f"{clean!r}: OCP MXFP4 (32-element blocks, E8M0 scale)")
    gguf = re.match(r"^GGUF-(\S+)$|^(\S+) GGUF$", clean, re.IGNORECASE)
    if gguf:
        name = gguf.group(1) or gguf.group(2)
        found = catalog.find(name)
        if found is not None:
            return Resolution(found.id, f"{clean!r}: GGUF file of type {name}")
    affine = _MLX_AFFINE.match(clean)
    if affine and "mlx" in clean.lower():
        bits = int(affine.group(1) or affine.group(2))
        group = int(affine.group(3) or 64)
        # MLX affine quantization stores a 16-bit scale and a 16-bit bias per group (quants.toml mlx-4bit)
        return Resolution(f"bits:{bits + 32 / group:g}", f"MLX affine {bits}-bit, group {group}: {bits} + 32/{group} bits")
    bpw = _BPW.search(clean)
    if bpw:
        return Resolution(f"bits:{float(bpw.group(1)):g}", f"{clean!r} states {bpw.group(1)} bits per weight")
    return None


# ---------------------------------------------------------------- engines, backends, hardware


def resolve_engine(name: str, source: str = "*") -> str | None:
    listed = resolve_table().lookup("engine", source, name)
    return listed.target if listed is not None else None


def backend_from_text(text: str, source: str = "*") -> Resolution | None:
    """A printed backend as a catalog backend: RESOLVE.toml, else its first word ("Vulkan (RADV)",
    "ROCm 7.2 (HIP)", "CUDA (MLX CUDA backend)"), else a backend named inside parentheses ("MLX (Metal)")."""
    from tokometer.domain.specs import BACKENDS

    listed = resolve_table().lookup("backend", source, text)
    if listed is not None:
        return listed
    words = re.findall(r"[A-Za-z]+", text.split("(")[0])
    if words and words[0].lower() in BACKENDS:
        return Resolution(words[0].lower(), f"backend {text!r}: {words[0]}")
    inside = [w.lower() for part in re.findall(r"\(([^)]*)\)", text) for w in re.findall(r"[A-Za-z]+", part)]
    if inside and inside[0] in BACKENDS:
        return Resolution(inside[0], f"backend {text!r}: {inside[0]} named in parentheses")
    return None


def resolve_hardware(as_stated: str, source: str = "*") -> Any | None:
    """The catalog device a row's printed hardware names (RESOLVE.toml entries only: printed device
    strings carry host, driver and memory details that no general rule reads safely)."""
    from tokometer.catalog import hardware_catalog

    listed = resolve_table().lookup("hardware", source, as_stated)
    return hardware_catalog().get(listed.target) if listed is not None else None


def unscorable_reason(source: str) -> str | None:
    return resolve_table().unscorable.get(source)


# ---------------------------------------------------------------- a row's cells (fitting.validation.Case)


def _source(case: Any) -> str:
    return str(case.text("source_id") or "*")


def model_for(case: Any) -> Any | None:
    """The preset a row's `model` cell names, when the catalog's own lookup did not find it."""
    name = case.text("model")
    found = resolve_model(name, _source(case), case.number("total_params_b")) if name else None
    return found[0] if found else None


def quant_for(case: Any) -> tuple[Any | None, float | None]:
    """(catalog format, None) or (None, bits per weight) for a row's `quant` cell; (None, None) if neither."""
    from tokometer.catalog import quant_catalog

    text = case.text("quant")
    found = quant_from_text(text, _source(case)) if text else None
    if found is None:
        return None, None
    if found.target.startswith("bits:"):
        return None, float(found.target[5:])
    return quant_catalog().get(found.target), None


def engine_for(case: Any) -> str | None:
    return resolve_engine(case.text("engine"), _source(case)) if case.text("engine") else None


def source_engine_for(case: Any) -> str | None:
    """The engine RESOLVE.toml lists for this very publication and printed name (not "*" entries): a
    reading of that source (how its harness drove the engine) that outranks the catalog's match on the
    name's first word, as `source_hardware_for` does for devices."""
    text, source = case.text("engine"), _source(case)
    listed = resolve_table().entries.get(("engine", source, normalise(text))) if text and source != "*" else None
    return listed.target if listed is not None else None


def backend_for(case: Any) -> str | None:
    found = backend_from_text(case.text("backend"), _source(case)) if case.text("backend") else None
    return found.target if found else None


def case_backend(case: Any) -> str | None:
    """The backend a row ran on: its `backend` column when that names one, else the source's reading."""
    from tokometer.domain.specs import BACKENDS

    backend = case.text("backend").lower()
    return backend if backend in BACKENDS else backend_for(case)


def hardware_for(case: Any) -> Any | None:
    text = case.text("hardware_as_stated")
    return resolve_hardware(text, _source(case)) if text else None


def source_hardware_for(case: Any) -> Any | None:
    """The device RESOLVE.toml lists for this very publication and printed name: a reading of that source
    (the module a developer kit carries, the power mode it ran in) that outranks the catalog's match on the
    printed name, which cannot see either. Entries for every source ("*") do not outrank it."""
    from tokometer.catalog import hardware_catalog

    text, source = case.text("hardware_as_stated"), _source(case)
    listed = resolve_table().entries.get(("hardware", source, normalise(text))) if text and source != "*" else None
    return hardware_catalog().get(listed.target) if listed is not None else None


def fp32_gemm_build_for(case: Any) -> str | None:
    """Why the row's build ran its prefill GEMMs in FP32, on the vector ALUs (RESOLVE.toml `[[fp32_gemm_build]]`:
    a SYCL build without `GGML_SYCL_F16`, as its own log prints it), or None."""
    return resolve_table().fp32_gemm_builds.get(_source(case))


def unscorable_for(case: Any) -> str | None:
    """Why a row cannot be scored whatever it resolves to: its source is listed unscorable, a
    `[[unscorable_rows]]` rule says it measured something else than its metric, the row is a broken run
    listed in RESOLVE.toml ([[broken_run]]), its device is one whose variant (memory, GPU cores) that source
    does not decide ([[undecided_hardware]]), or it measured a prompt (pp, ttft_ms) without saying how
    long the prompt was."""
    listed = unscorable_reason(_source(case))
    if listed is not None:
        return listed
    if (broken := resolve_table().broken_rows.get(str(getattr(case, "row_id", "")))) is not None:
        return broken  # a run listed by its id says more than a rule over its source's rows
    for rule in resolve_table().row_rules:
        if rule.matches(case):
            return rule.reason
    device = case.text("hardware_as_stated")
    if device and (undecided := resolve_table().undecided_hardware.get((_source(case), normalise(device)))) is not None:
        return f"device variant not stated: {undecided}"
    if case.metric in ("pp", "pp_agg", "ttft_ms") and not case.number("prompt_tokens"):
        return f"{case.metric} without prompt_tokens: the prompt length is not stated"
    return None
