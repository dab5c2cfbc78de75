"""GGUF files -> `ModelSpec`: architecture from the metadata, exact bytes from every tensor's ggml type.

The header (magic, version, tensor and key counts, key/value metadata, tensor infos) is walked
here with a bounds check before every read; the `gguf` package supplies the format's semantics:
the value-type and ggml-type enums and `GGML_QUANT_SIZES` (block size and bytes per block of every
quantization type). Why not `gguf.GGUFReader`: measured on gguf 0.19, it (1) never finishes on a
45-byte file that declares a numeric array of 2**40 items (its per-item loop does not advance past
the end of the file and grows a list without bound), so a file has to be walked and checked in
full before it could be handed over, which is this module's whole job; and (2) decodes metadata
arrays item by item at about 12 us each, 4-7 s for a 150k-token vocabulary, where tokometer only
needs the array's length. The tests use `GGUFWriter` to make files and `GGUFReader` as the oracle
for sizes.

Metadata keys follow llama.cpp's names (`{arch}.block_count`, `{arch}.attention.head_count_kv`...)
and are mapped onto Hugging Face config fields, so `spec_from_config` does the accounting; the
file's tensors then replace the parameter counts (the file is the truth) and give the exact bytes:
`token_embd` -> embedding, `output` -> LM head, `*_exps` -> routed experts, the rest -> dense.
"""

from __future__ import annotations

import dataclasses
import math
import mmap
import os
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokometer.domain.specs import AttentionGroup, ModelSpec
from tokometer.errors import IngestError
from tokometer.ingest import GGUF_SOURCE_PREFIX
from tokometer.ingest.weights import Tally, disagreement

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_DECODED_ARRAY = 65_536  # numeric arrays up to this length are decoded (per-layer values)
MAX_DECODED_STRING = 1 << 20  # longer string values are kept as their length only
MAX_ARRAY_ITEMS = 1 << 24  # all string-array items in one file (vocabularies are < 1M)
MAX_NESTING = 3
MIN_KV_BYTES = 8 + 4 + 1  # key length, value type, smallest value
MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8  # name length, n_dims, type, offset

# GGUF value types (gguf.GGUFValueType): struct format of the fixed-size ones.
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9

# llama.cpp architecture name -> Hugging Face model_type that spec_from_config models exactly.
ARCH_MODEL_TYPE = {
    "llama": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "qwen2moe": "qwen2_moe",
    "qwen3moe": "qwen3_moe",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3": "gemma3",
    "deepseek2": "deepseek_v3",
    "gpt-oss": "gpt_oss",
    "phi3": "phi3",
}
SPLIT_NAME = re.compile(r"^(?P<prefix>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")


@dataclass(frozen=True, slots=True)
class Skipped:
    """A metadata value kept by its length only: long arrays (vocabularies, merges) and long strings."""

    item_type: int  # GGUF value type of the items (STRING for a long string)
    count: int  # items, or bytes of a string


@dataclass(frozen=True, slots=True)
class GGUFTensor:
    name: str
    ggml_type: str
    shape: tuple[int, ...]  # ggml order: shape[0] is the innermost (row) dimension
    n_elements: int
    n_bytes: int
    offset: int


@dataclass(frozen=True, slots=True)
class GGUFHeader:
    version: int
    metadata: dict[str, Any]
    tensors: tuple[GGUFTensor, ...]
    alignment: int
    data_offset: int
    file_size: int


class _Cursor:
    """Reads from a buffer, checking every length against what is left before using it."""

    def __init__(self, buf: Any, size: int, where: str) -> None:
        self.buf = buf
        self.size = size
        self.pos = 0
        self.endian = "<"
        self.where = where

    def need(self, n: int, what: str) -> None:
        if n < 0 or n > self.size - self.pos:
            raise IngestError(
                f"{self.where}: truncated or corrupt header: {what} needs {n:,} bytes at offset {self.pos:,}, "
                f"{self.size - self.pos:,} left"
            )

    def unpack(self, fmt: str, what: str) -> Any:
        n = struct.calcsize("<" + fmt)
        self.need(n, what)
        value = struct.unpack_from(self.endian + fmt, self.buf, self.pos)
        self.pos += n
        return value[0] if len(value) == 1 else value

    def raw(self, n: int, what: str) -> bytes:
        self.need(n, what)
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out

    def skip(self, n: int, what: str) -> None:
        self.need(n, what)
        self.pos += n

    def name(self, what: str) -> str:
        length = self.unpack("Q", f"{what} length")
        data = self.raw(length, what)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise IngestError(f"{self.where}: {what} at offset {self.pos - length:,} is not UTF-8") from None


class _Walker:
    def __init__(self, cursor: _Cursor) -> None:
        self.c = cursor
        self.array_items = 0

    def value(self, vtype: int, key: str, depth: int = 0) -> Any:
        c = self.c
        if vtype in _SCALAR:
            return c.unpack(_SCALAR[vtype], f"value of {key!r}")
        if vtype == _STRING:
            length = c.unpack("Q", f"string length of {key!r}")
            if length > MAX_DECODED_STRING:
                c.skip(length, f"string value of {key!r}")
                return Skipped(_STRING, length)
            return c.raw(length, f"string value of {key!r}").decode("utf-8", errors="replace")
        if vtype == _ARRAY:
            if depth >= MAX_NESTING:
                raise IngestError(f"{c.where}: metadata {key!r} nests arrays more than {MAX_NESTING} deep")
            item_type = c.unpack("I", f"array type of {key!r}")
            count = c.unpack("Q", f"array length of {key!r}")
            if item_type in _SCALAR:
                fmt = _SCALAR[item_type]
                item = struct.calcsize("<" + fmt)
                c.need(count * item, f"array {key!r} of {count:,} items")
                if count <= MAX_DECODED_ARRAY:
                    values = struct.unpack_from(f"{c.endian}{count}{fmt}", c.buf, c.pos)
                    c.pos += count * item
                    return list(values)
                c.pos += count * item
                return Skipped(item_type, count)
            if item_type in (_STRING, _ARRAY):
                c.need(count * (8 if item_type == _STRING else 12), f"array {key!r} of {count:,} items")
                self.array_items += count
                if self.array_items > MAX_ARRAY_ITEMS:
                    raise IngestError(f"{c.where}: more than {MAX_ARRAY_ITEMS:,} metadata array items; refusing")
                if item_type == _STRING:
                    for _ in range(count):
                        c.skip(c.unpack("Q", f"string in {key!r}"), f"string in {key!r}")
                else:
                    for _ in range(count):
                        self.value(_ARRAY, key, depth + 1)
                return Skipped(item_type, count)
            raise IngestError(f"{c.where}: metadata {key!r} is an array of unknown type {item_type}")
        raise IngestError(f"{c.where}: metadata {key!r} has unknown value type {vtype}")


def _quant_sizes() -> dict[int, tuple[str, int, int]]:
    """ggml type id -> (name, block size in elements, bytes per block), from the gguf package."""
    from gguf.constants import GGML_QUANT_SIZES

    return {int(t): (t.name, block, size) for t, (block, size) in GGML_QUANT_SIZES.items()}


def parse_header(buf: Any, size: int, where: str) -> GGUFHeader:
    """Walk a whole GGUF header held in `buf` (bytes or mmap) of `size` bytes."""
    c = _Cursor(buf, size, where)
    if size < 4 or bytes(buf[:4]) != GGUF_MAGIC:
        raise IngestError(f"{where}: not a GGUF file (bad magic)")
    c.pos = 4
    version = c.unpack("I", "version")
    if version & 0xFFFF == 0 and version:
        c.endian = ">"
        version = struct.unpack(">I", struct.pack("<I", version))[0]
    if version not in SUPPORTED_VERSIONS:
        raise IngestError(f"{where}: GGUF version {version} is not supported (2 and 3 are)")
    n_tensors, n_kv = c.unpack("QQ", "tensor and key counts")
    left = size - c.pos
    if n_kv > left // MIN_KV_BYTES or n_tensors > left // MIN_TENSOR_INFO_BYTES or (
        n_kv * MIN_KV_BYTES + n_tensors * MIN_TENSOR_INFO_BYTES > left
    ):
        raise IngestError(
            f"{where}: header declares {n_tensors:,} tensors and {n_kv:,} metadata keys, "
            f"more than {size:,} bytes can hold (corrupt or truncated)"
        )
    walker = _Walker(c)
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = c.name("metadata key")
        if key in metadata:
            raise IngestError(f"{where}: duplicate metadata key {key!r}")
        vtype = c.unpack("I", f"type of {key!r}")
        metadata[key] = walker.value(vtype, key)

    sizes = _quant_sizes()
    infos: list[tuple[str, str, tuple[int, ...], int, int, int]] = []
    names: set[str] = set()
    for _ in range(n_tensors):
        name = c.name("tensor name")
        if name in names:
            raise IngestError(f"{where}: duplicate tensor {name!r}")
        names.add(name)
        n_dims = c.unpack("I", f"dimensions of {name!r}")
        if not 1 <= n_dims <= MAX_DIMS:
            raise IngestError(f"{where}: tensor {name!r} has {n_dims} dimensions (1 to {MAX_DIMS} allowed)")
        shape = tuple(c.unpack(f"{n_dims}Q", f"shape of {name!r}")) if n_dims > 1 else (c.unpack("Q", f"shape of {name!r}"),)
        type_id = c.unpack("I", f"type of {name!r}")
        offset = c.unpack("Q", f"offset of {name!r}")
        if type_id not in sizes:
            raise IngestError(f"{where}: tensor {name!r} has unknown ggml type {type_id}")
        type_name, block, type_size = sizes[type_id]
        n_elements = math.prod(shape)
        if shape[0] % block:
            raise IngestError(f"{where}: tensor {name!r} row of {shape[0]} is not a multiple of the {type_name} block ({block})")
        n_bytes = n_elements // block * type_size
        if n_bytes > size:
            raise IngestError(f"{where}: tensor {name!r} would need {n_bytes:,} bytes, the file has {size:,} (truncated?)")
        infos.append((name, type_name, shape, n_elements, n_bytes, offset))

    alignment = metadata.get("general.alignment", 32)
    if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise IngestError(f"{where}: general.alignment must be a power of two, got {alignment!r}")
    data_offset = -(-c.pos // alignment) * alignment
    tensors: list[GGUFTensor] = []
    end_of_previous = 0
    for name, type_name, shape, n_elements, n_bytes, offset in sorted(infos, key=lambda t: t[5]):
        if offset % alignment:
            raise IngestError(f"{where}: tensor {name!r} data offset {offset:,} is not {alignment}-byte aligned")
        if offset < end_of_previous:
            raise IngestError(f"{where}: tensor {name!r} overlaps the tensor before it")
        end = data_offset + offset + n_bytes
        if end > size:
            raise IngestError(
                f"{where}: tensor {name!r} ends at byte {end:,} but the file has {size:,} bytes (truncated download?)"
            )
        end_of_previous = offset + n_bytes
        tensors.append(GGUFTensor(name, type_name, shape, n_elements, n_bytes, offset))
    by_name = {t.name: t for t in tensors}
    ordered = tuple(by_name[i[0]] for i in infos)
    return GGUFHeader(version, metadata, ordered, alignment, data_offset, size)


def read_gguf_header(path: Path) -> GGUFHeader:
    """Map the file read-only and walk its header; tensor data is never touched."""
    where = f"GGUF file {path}"
    try:
        size = os.path.getsize(path)
        with path.open("rb") as f:
            if size < 24:
                head = f.read(24)
                if head[:4] != GGUF_MAGIC:
                    raise IngestError(f"{where}: not a GGUF file (bad magic)")
                raise IngestError(f"{where}: truncated header ({size} bytes)")
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                return parse_header(buf, size, where)
    except OSError as exc:
        raise IngestError(f"cannot read {path}: {exc.strerror or exc}") from None


def _split_paths(path: Path, header: GGUFHeader) -> list[Path]:
    count = header.metadata.get("split.count")
    if not isinstance(count, int) or count <= 1:
        return [path]
    match = SPLIT_NAME.match(path.name)
    if match is None or int(match["count"]) != count:
        raise IngestError(f"{path}: split GGUF ({count} parts) not named like NAME-00001-of-{count:05d}.gguf")
    prefix = match["prefix"]
    return [path.with_name(f"{prefix}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]


def read_gguf(path: Path) -> tuple[dict[str, Any], list[GGUFTensor]]:
    """Metadata (of the first split) and the tensors of every split."""
    header = read_gguf_header(path)
    paths = _split_paths(path, header)
    if paths == [path]:
        return header.metadata, list(header.tensors)
    metadata: dict[str, Any] = {}
    tensors: list[GGUFTensor] = []
    for part in paths:
        if not part.is_file():
            raise IngestError(f"{path}: split part {part.name} is missing")
        h = header if part == path else read_gguf_header(part)
        if h.metadata.get("split.no") == 0:
            metadata = h.metadata
        tensors += h.tensors
    if not metadata:
        raise IngestError(f"{path}: no split carries split.no = 0 (the metadata)")
    if len({t.name for t in tensors}) != len(tensors):
        raise IngestError(f"{path}: a tensor appears in more than one split")
    return metadata, tensors


def tensor_class(name: str) -> str:
    """How decoding reads a GGUF tensor (llama.cpp names)."""
    if name.startswith("token_embd."):
        return "embedding"
    if name.startswith("output."):
        return "lm_head"
    if "_exps." in name:
        return "routed_experts"
    return "dense"


def _count(value: Any, key: str, where: str, limit: int) -> int:
    """A non-negative integer field (max of a per-layer array), bounded by `limit`."""
    if isinstance(value, list) and value:
        value = max(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise IngestError(f"{where}: metadata {key} must be an integer from 0 to {limit:,}, got {str(value)[:40]}")
    return value


def gguf_config(metadata: Mapping[str, Any], tensors: Sequence[GGUFTensor], where: str) -> dict[str, Any]:
    """llama.cpp metadata -> the Hugging Face config fields `spec_from_config` reads."""
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise IngestError(f"{where}: no general.architecture; not a model GGUF")

    def get(suffix: str, limit: int = 1 << 24, required: bool = False) -> int | None:
        key = f"{arch}.{suffix}"
        if key not in metadata:
            if required:
                raise IngestError(
                    f"{where}: GGUF architecture {arch!r} lacks {key}: not a language model "
                    "(a vision projector or a vocabulary-only file?)"
                )
            return None
        return _count(metadata[key], key, where, limit)

    n_layers = get("block_count", 100_000, True)
    hidden = get("embedding_length", required=True)
    n_heads = get("attention.head_count", 100_000, True)
    assert n_layers is not None and hidden is not None and n_heads is not None
    by_name = {t.name: t for t in tensors}
    embd = by_name.get("token_embd.weight")
    vocab = get("vocab_size")
    rows = embd if embd is not None else by_name.get("output.weight")
    if rows is not None and len(rows.shape) >= 2:
        vocab = rows.shape[1]
    elif vocab is None and isinstance(metadata.get("tokenizer.ggml.tokens"), Skipped | list):
        tokens = metadata["tokenizer.ggml.tokens"]
        vocab = tokens.count if isinstance(tokens, Skipped) else len(tokens)
    n_experts = get("expert_count", 1 << 20) or 0
    top_k = get("expert_used_count", 1 << 20) or 0
    model_type = ARCH_MODEL_TYPE.get(arch, arch)
    if model_type == "llama" and n_experts:
        model_type = "mixtral"
    if arch == "deepseek2":
        model_type = "deepseek_v3" if metadata.get(f"{arch}.expert_gating_func") == 2 else "deepseek_v2"
    cfg: dict[str, Any] = {
        "model_type": model_type,
        "hidden_size": hidden,
        "num_hidden_layers": n_layers,
        "num_attention_heads": n_heads,
        "vocab_size": vocab if vocab is not None else 0,
        "tie_word_embeddings": "output.weight" not in by_name,
    }
    for key, suffix in (
        ("num_key_value_heads", "attention.head_count_kv"),
        ("intermediate_size", "feed_forward_length"),
        ("max_position_embeddings", "context_length"),
        ("sliding_window", "attention.sliding_window"),
    ):
        value = get(suffix)
        if value:
            cfg[key] = value
    key_length = get("attention.key_length")
    if model_type.startswith("deepseek"):
        rope = get("rope.dimension_count") or 0
        key_mla, value_mla = get("attention.key_length_mla"), get("attention.value_length_mla")
        cfg.update(
            kv_lora_rank=get("attention.kv_lora_rank", required=True),
            q_lora_rank=get("attention.q_lora_rank") or None,
            qk_rope_head_dim=rope,
            qk_nope_head_dim=(key_mla or key_length or rope) - rope,
            v_head_dim=value_mla or get("attention.value_length") or 0,
            n_routed_experts=n_experts,
            num_experts_per_tok=top_k,
            moe_intermediate_size=get("expert_feed_forward_length") or 0,
            n_shared_experts=get("expert_shared_count") or 0,
            first_k_dense_replace=get("leading_dense_block_count") or 0,
        )
    else:
        if key_length:
            cfg["head_dim"] = key_length
        if n_experts and top_k:
            cfg.update(num_local_experts=n_experts, num_experts_per_tok=top_k)
            expert_ffn = get("expert_feed_forward_length")
            if expert_ffn:
                cfg["moe_intermediate_size"] = expert_ffn
            shared_ffn = get("expert_shared_feed_forward_length")
            if shared_ffn:
                cfg["shared_expert_intermediate_size"] = shared_ffn
            leading = get("leading_dense_block_count", n_layers)
            if leading:
                cfg["mlp_only_layers"] = list(range(leading))
        pattern = metadata.get(f"{arch}.attention.sliding_window_pattern")
        if isinstance(pattern, list) and len(pattern) == n_layers:
            cfg["layer_types"] = ["sliding_attention" if p else "full_attention" for p in pattern]
        elif isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 0:
            cfg["sliding_window_pattern"] = pattern
        if model_type in ("gpt_oss",):
            cfg["attention_bias"] = True
    return cfg


def _per_layer_attention(spec: ModelSpec, metadata: Mapping[str, Any], arch: str) -> tuple[tuple[AttentionGroup, ...], list[str]]:
    """Attention groups when KV heads vary by layer or K and V widths differ (non-MLA only)."""
    groups = spec.attention
    notes: list[str] = []
    kv = metadata.get(f"{arch}.attention.head_count_kv")
    k_len = metadata.get(f"{arch}.attention.key_length") or spec.head_dim
    v_len = metadata.get(f"{arch}.attention.value_length") or k_len
    if not isinstance(k_len, int) or not isinstance(v_len, int) or any(g.kind == "mla" for g in groups):
        return groups, notes
    if isinstance(kv, list) and len(kv) == spec.n_layers and len(set(kv)) > 1:
        counts: dict[int, int] = {}
        for heads in kv:
            if isinstance(heads, int) and not isinstance(heads, bool) and heads >= 0:
                counts[heads] = counts.get(heads, 0) + 1
        dim = spec.n_heads * spec.head_dim
        groups = tuple(
            AttentionGroup(kind="full", n_layers=n, kv_elements_per_token=heads * (k_len + v_len), attention_dim=dim)
            for heads, n in sorted(counts.items())
            if heads
        )
        if counts.get(0):
            groups += (AttentionGroup(kind="linear", n_layers=counts[0], kv_elements_per_token=0),)
            notes.append(f"{counts[0]} layers keep a recurrent state instead of a KV cache; its size is not modelled")
        if any(g.window_tokens for g in spec.attention):
            notes.append("per-layer KV heads: sliding windows are not applied")
    elif v_len != k_len:
        groups = tuple(
            dataclasses.replace(g, kv_elements_per_token=g.kv_elements_per_token // 2 // k_len * (k_len + v_len))
            if g.kind != "linear" and k_len
            else g
            for g in groups
        )
    return groups, notes


def load_gguf(path: Path, model_id: str | None = None) -> ModelSpec:
    """A `.gguf` file (or the first part of a split one) -> `ModelSpec` with exact per-tensor bytes."""
    from tokometer.ingest.architecture import KNOWN_ARCHITECTURES
    from tokometer.ingest.hf_config import account

    metadata, tensors = read_gguf(path)
    where = f"GGUF file {path}"
    if not tensors:
        raise IngestError(f"{where}: holds no tensors (a vocabulary-only file?)")
    cfg = gguf_config(metadata, tensors, where)
    arch = str(metadata["general.architecture"])
    file_type = metadata.get("general.file_type")
    type_label = ""
    if isinstance(file_type, int):
        from gguf.constants import LlamaFileType

        try:
            type_label = LlamaFileType(file_type).name.removeprefix("MOSTLY_")
        except ValueError:
            type_label = f"file type {file_type}"
    name = metadata.get("general.name")
    spec = account(
        cfg,
        name if isinstance(name, str) and name.strip() else path.stem,
        source=f"{GGUF_SOURCE_PREFIX}{path}" + (f" ({type_label})" if type_label else ""),
        model_id=model_id,
    )

    tally = Tally()
    for t in tensors:
        tally.add(tensor_class(t.name), t.n_bytes, t.n_elements)
    warnings = [w for w in spec.warnings if "not modelled exactly" not in w]
    if cfg["model_type"] not in KNOWN_ARCHITECTURES:
        warnings.append(
            f"GGUF architecture {arch!r} is not modelled exactly: parameters and bytes are exact from the file, "
            "the KV cache assumes standard attention in every layer"
        )
    for note in (tally.fold_unrouted(spec.n_experts), disagreement(tally.param_groups.total, spec.params.total, "file")):
        if note:
            warnings.append(note)
    attention, notes = _per_layer_attention(spec, metadata, arch)
    return dataclasses.replace(
        spec,
        params=tally.param_groups,
        exact_weight_bytes=tally.bytes_groups,
        attention=attention,
        tied_embeddings=tally.tied,
        default_quant=None,
        warnings=tuple(warnings + notes),
    )


def is_gguf(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(4) == GGUF_MAGIC
    except OSError:
        return False
