"""Safetensors headers -> tensor names, dtypes, shapes and exact byte sizes; the tensors are never read.

A safetensors file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON
(`{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}`), then the data.
Sharded checkpoints add `model.safetensors.index.json` (`weight_map`: tensor -> shard file).

Why a small reader and not `safetensors.safe_open`: tokometer needs the header only. `safe_open`
memory-maps the whole file, validates that the data region is complete (an interrupted download
fails although its header is intact), needs a framework for `get_slice`, and rejects dtypes newer
than the installed wheel. Reading 8 + N bytes and handing them to the standard-library JSON parser
is the same job `huggingface_hub` does for remote headers (`parse_safetensors_file_metadata`), and
its result has the same shape as the Hub's `TensorInfo`, so local files and Hub metadata share one
accounting. Every number is bounds-checked before use: the length against the file size and a
100 MB cap (safetensors' own limit), offsets against the data region, each tensor's byte span
against its dtype and shape. Anything malformed raises `IngestError`.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokometer.errors import IngestError, InputError

MAX_HEADER_BYTES = 100_000_000  # safetensors refuses larger headers too
MAX_INDEX_BYTES = 50_000_000
MAX_DIMS = 32

# Bits per element of every dtype the safetensors format defines (F4/F6 are sub-byte, packed).
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
    "C64": 64,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
}
FLOAT_DTYPES = frozenset({"F64", "F32", "F16", "BF16", "F8_E5M2", "F8_E4M3"})


@dataclass(frozen=True, slots=True)
class TensorEntry:
    """One stored tensor: its name, dtype, logical shape and the exact bytes it occupies."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    n_bytes: int

    @property
    def n_elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, slots=True)
class SafetensorsHeader:
    tensors: tuple[TensorEntry, ...]
    metadata: dict[str, str]


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise IngestError(f"duplicate key {key!r}")
        out[key] = value
    return out


def parse_json_bytes(raw: bytes, where: str) -> Any:
    """Strict UTF-8 JSON with duplicate keys refused; any failure is an `IngestError` naming `where`."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IngestError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except IngestError as exc:
        raise IngestError(f"{where}: {exc}") from None
    except RecursionError:
        raise IngestError(f"{where}: JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and int() digit limits
        raise IngestError(f"{where}: invalid JSON ({exc})") from None


def read_json_file(path: Path, what: str, max_bytes: int = MAX_INDEX_BYTES) -> Any:
    """A small JSON file (config, index) through the guarded door: a regular UTF-8 file (a BOM is
    allowed) of at most `max_bytes`, nested at most `guard.MAX_NESTING_DEPTH` deep."""
    from tokometer.guard import check_nesting, decode_text, read_bytes

    where = f"{what} {path}"
    try:
        raw = read_bytes(path, door="model file", limit_bytes=max_bytes, what=f"a {what}")
        text = decode_text(raw, where, door="model file", what=f"a {what} in UTF-8")
        check_nesting(text, where, door="model file")
    except InputError as exc:
        raise IngestError(str(exc)) from None
    return parse_json_bytes(text.encode("utf-8"), where)


def _int_list(value: Any, where: str, what: str) -> list[int]:
    if not isinstance(value, list) or not all(type(v) is int and v >= 0 for v in value):
        raise IngestError(f"{where}: {what} must be a list of non-negative integers, got {str(value)[:60]}")
    return value


def tensor_entries(header: Mapping[str, Any], data_bytes: int | None, where: str) -> list[TensorEntry]:
    """Validate a parsed header (or the Hub's equivalent) into entries; `data_bytes` bounds the offsets."""
    entries: list[tuple[int, int, TensorEntry]] = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, Mapping):
            raise IngestError(f"{where}: tensor {name!r} is not described by an object")
        dtype = info.get("dtype")
        if not isinstance(dtype, str) or not dtype:
            raise IngestError(f"{where}: tensor {name!r} has no dtype")
        shape = _int_list(info.get("shape"), where, f"shape of {name!r}")
        if len(shape) > MAX_DIMS:
            raise IngestError(f"{where}: tensor {name!r} has {len(shape)} dimensions")
        offsets = _int_list(info.get("data_offsets"), where, f"data_offsets of {name!r}")
        if len(offsets) != 2 or offsets[0] > offsets[1]:
            raise IngestError(f"{where}: tensor {name!r} has bad data_offsets {offsets}")
        begin, end = offsets
        if data_bytes is not None and end > data_bytes:
            raise IngestError(
                f"{where}: tensor {name!r} ends at byte {end:,} of a {data_bytes:,}-byte data region (truncated file?)"
            )
        n_bytes = end - begin
        bits = DTYPE_BITS.get(dtype)
        if bits is not None and math.prod(shape) * bits != n_bytes * 8:
            raise IngestError(
                f"{where}: tensor {name!r} is {dtype} {shape} but spans {n_bytes:,} bytes"
            )
        entries.append((begin, end, TensorEntry(name, dtype, tuple(shape), n_bytes)))
    entries.sort(key=lambda e: (e[0], e[1]))
    for (_, prev_end, prev), (begin, _, entry) in zip(entries, entries[1:], strict=False):
        if begin < prev_end:
            raise IngestError(f"{where}: tensors {prev.name!r} and {entry.name!r} overlap")
    return [e for _, _, e in entries]


def read_header(path: Path) -> SafetensorsHeader:
    """Read and validate the header of one `.safetensors` file (8 + N bytes, nothing more)."""
    where = f"safetensors file {path}"
    try:
        size = os.path.getsize(path)
        with path.open("rb") as f:
            prefix = f.read(8)
            if len(prefix) < 8:
                raise IngestError(f"{where}: {size} bytes, too short for a safetensors header")
            (length,) = struct.unpack("<Q", prefix)
            if length > size - 8:
                raise IngestError(
                    f"{where}: header length {length:,} exceeds the file size ({size:,} bytes); not safetensors or truncated"
                )
            if length > MAX_HEADER_BYTES:
                raise IngestError(f"{where}: header length {length:,} exceeds the {MAX_HEADER_BYTES:,}-byte limit")
            if length < 2:
                raise IngestError(f"{where}: header length {length} is too short")
            raw = f.read(length)
    except OSError as exc:
        raise IngestError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) != length:
        raise IngestError(f"{where}: file shorter than its header")
    header = parse_json_bytes(raw, where)
    if not isinstance(header, dict):
        raise IngestError(f"{where}: header is not a JSON object")
    metadata = header.get("__metadata__") or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise IngestError(f"{where}: __metadata__ must map strings to strings")
    return SafetensorsHeader(tuple(tensor_entries(header, size - 8 - length, where)), metadata)


def read_index(path: Path) -> dict[str, str]:
    """The `weight_map` of a sharded checkpoint's index: tensor name -> shard file name (same folder)."""
    index = read_json_file(path, "safetensors index")
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise IngestError(f"safetensors index {path} has no weight_map")
    for name, shard in weight_map.items():
        if not isinstance(shard, str) or not shard or Path(shard).name != shard:
            raise IngestError(f"safetensors index {path}: tensor {name!r} maps to a bad shard name {shard!r}")
    return weight_map


def read_shards(folder: Path, shard_names: Iterable[str]) -> list[TensorEntry]:
    """Headers of every shard; a shard that is missing raises (the byte count would be wrong)."""
    tensors: list[TensorEntry] = []
    seen: set[str] = set()
    for shard in sorted(set(shard_names)):
        path = folder / shard
        if not path.is_file():
            raise IngestError(f"shard {shard} listed in the index is missing from {folder}")
        for entry in read_header(path).tensors:
            if entry.name in seen:
                raise IngestError(f"tensor {entry.name!r} appears in more than one shard")
            seen.add(entry.name)
            tensors.append(entry)
    return tensors


def is_index_file(path: Path) -> bool:
    return path.name.endswith(".safetensors.index.json")
