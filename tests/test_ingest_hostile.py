"""Hostile and broken inputs: each is one clear IngestError, quickly, without a memory blow-up.

The CLI turns them into one line on stderr and exit code 2. A bounded Hypothesis fuzz over both
header readers checks that random and mutated bytes raise nothing but IngestError.
"""

from __future__ import annotations

import json
import struct
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import run_cli
from ingest_helpers import gguf_bytes, gguf_string, llama_tensors, write_gguf, write_safetensors
from tokometer.errors import IngestError
from tokometer.ingest import load_model
from tokometer.ingest.gguf_file import parse_header
from tokometer.ingest.safetensors_header import read_header

U32, U64 = struct.Struct("<I"), struct.Struct("<Q")


def _kv(key: bytes, vtype: int, value: bytes) -> bytes:
    return gguf_string(key) + U32.pack(vtype) + value


def _valid_gguf(tmp: Path) -> bytes:
    path = tmp / "valid.gguf"
    write_gguf(path, hidden=32, layers=1, heads=2, kv_heads=1, ffn=64, vocab=8)
    return path.read_bytes()


def _tensor_info(name: bytes, dims: list[int], ggml_type: int = 1, offset: int = 0) -> bytes:
    return gguf_string(name) + U32.pack(len(dims)) + b"".join(U64.pack(d) for d in dims) + U32.pack(ggml_type) + U64.pack(offset)


def _st(header: bytes, data: bytes = b"", length: int | None = None) -> bytes:
    return U64.pack(len(header) if length is None else length) + header + data


def _st_json(obj: object, data: bytes = b"") -> bytes:
    return _st(json.dumps(obj).encode(), data)


GGUF_CASES: dict[str, Callable[[bytes], bytes]] = {
    "empty": lambda v: b"",
    "three bytes": lambda v: b"GGU",
    "wrong magic": lambda v: b"GGUX" + v[4:],
    "safetensors named .gguf": lambda v: _st_json({}),
    "version 1": lambda v: v[:4] + U32.pack(1) + v[8:],
    "version 99": lambda v: v[:4] + U32.pack(99) + v[8:],
    "truncated header": lambda v: v[:200],
    "truncated data": lambda v: v[: len(v) - 100],
    "2**62 tensors": lambda v: gguf_bytes(2**62, 0),
    "2**62 keys": lambda v: gguf_bytes(0, 2**62),
    "2**64-1 of both": lambda v: gguf_bytes(2**64 - 1, 2**64 - 1, b"\0" * 64),
    "numeric array of 2**40 items": lambda v: gguf_bytes(0, 1, _kv(b"x", 9, U32.pack(0) + U64.pack(2**40))),
    "string array of 2**60 items": lambda v: gguf_bytes(0, 1, _kv(b"x", 9, U32.pack(8) + U64.pack(2**60))),
    "nested arrays": lambda v: gguf_bytes(0, 1, _kv(b"x", 9, (U32.pack(9) + U64.pack(1)) * 6 + U32.pack(0) + U64.pack(0))),
    "string of 2**63 bytes": lambda v: gguf_bytes(0, 1, _kv(b"x", 8, U64.pack(2**63))),
    "key of 2**63 bytes": lambda v: gguf_bytes(0, 1, U64.pack(2**63) + b"abc"),
    "non-UTF-8 key": lambda v: gguf_bytes(0, 1, _kv(b"\xff\xfe", 4, U32.pack(1))),
    "unknown value type": lambda v: gguf_bytes(0, 1, _kv(b"x", 77, U32.pack(1))),
    "duplicate key": lambda v: gguf_bytes(0, 2, _kv(b"x", 4, U32.pack(1)) * 2),
    "non-UTF-8 tensor name": lambda v: gguf_bytes(1, 0, _tensor_info(b"\xc3\x28", [32]) + b"\0" * 64),
    "five dimensions": lambda v: gguf_bytes(1, 0, _tensor_info(b"t", [32] * 5) + b"\0" * 64),
    "unknown ggml type": lambda v: gguf_bytes(1, 0, _tensor_info(b"t", [32], ggml_type=999) + b"\0" * 64),
    "2**63-wide tensor": lambda v: gguf_bytes(1, 0, _tensor_info(b"t", [2**63, 2**63], ggml_type=0) + b"\0" * 64),
    "tensor past the end": lambda v: gguf_bytes(1, 0, _tensor_info(b"t", [32], offset=2**40) + b"\0" * 64),
    "misaligned tensor": lambda v: gguf_bytes(1, 0, _tensor_info(b"t", [32], offset=3) + b"\0" * 128),
    "bad alignment": lambda v: gguf_bytes(0, 1, _kv(b"general.alignment", 4, U32.pack(3))),
    "no architecture": lambda v: gguf_bytes(1, 0, _tensor_info(b"t", [32]) + b"\0" * 128),
    "vocabulary only": lambda v: gguf_bytes(0, 1, _kv(b"general.architecture", 8, gguf_string(b"llama"))),
    "projector (no block_count)": lambda v: gguf_bytes(
        1, 1, _kv(b"general.architecture", 8, gguf_string(b"clip")) + _tensor_info(b"t", [32]) + b"\0" * 128
    ),
    "string block_count": lambda v: gguf_bytes(
        1,
        2,
        _kv(b"general.architecture", 8, gguf_string(b"llama"))
        + _kv(b"llama.block_count", 8, gguf_string(b"32"))
        + _tensor_info(b"t", [32])
        + b"\0" * 128,
    ),
}

ST_CASES: dict[str, bytes] = {
    "empty": b"",
    "seven bytes": b"\x02\0\0\0\0\0\0",
    "header longer than the file": _st(b"{}", length=10_000),
    "header length 2**63": _st(b"{}", length=2**63),
    "header length 0": _st(b""),
    "non-UTF-8 header": _st(b'{"\xff": 1}'),
    "not JSON": _st(b"{nope"),
    "JSON list": _st(b"[1, 2, 3]"),
    "deeply nested": _st(b"[" * 100_000 + b"]" * 100_000),
    "huge integer": _st(b'{"t": {"dtype": "F16", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 2]}}'),
    "duplicate names": _st(b'{"t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}', b"\0"),
    "offsets past the data": _st_json({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8),
    "size disagrees with dtype": _st_json({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}, b"\0" * 8),
    "overlapping tensors": _st_json(
        {"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}, "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}},
        b"\0" * 8,
    ),
    "negative shape": _st_json({"t": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 0]}}),
    "boolean shape": _st_json({"t": {"dtype": "U8", "shape": [True], "data_offsets": [0, 1]}}, b"\0"),
    "reversed offsets": _st_json({"t": {"dtype": "U8", "shape": [0], "data_offsets": [4, 0]}}, b"\0" * 4),
    "64 dimensions": _st_json({"t": {"dtype": "U8", "shape": [1] * 64, "data_offsets": [0, 1]}}, b"\0"),
    "metadata not strings": _st_json({"__metadata__": {"a": 1}}),
    "no tensors": _st_json({"__metadata__": {"format": "pt"}}),
    "tensor not an object": _st_json({"t": [1, 2]}),
}


def _quick(path: Path) -> IngestError:
    tracemalloc.start()
    start = time.process_time()
    try:
        with pytest.raises(IngestError) as info:
            load_model(str(path))
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert time.process_time() - start < 0.5
    assert peak < 50_000_000
    message = str(info.value)
    assert message and "\n" not in message
    return info.value


@pytest.mark.parametrize("case", sorted(GGUF_CASES))
def test_hostile_gguf(tmp_path: Path, case: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(GGUF_CASES[case](_valid_gguf(tmp_path)))
    _quick(path)


@pytest.mark.parametrize("case", sorted(ST_CASES))
def test_hostile_safetensors(tmp_path: Path, case: str) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(ST_CASES[case])
    _quick(path)


def test_hostile_index_and_folders(tmp_path: Path) -> None:
    index = tmp_path / "model.safetensors.index.json"
    for content in ({"weight_map": {"t": "../../etc/passwd"}}, {"weight_map": []}, [1], {"weight_map": {"t": 3}}):
        index.write_text(json.dumps(content))
        _quick(index)
    empty = tmp_path / "empty-folder"
    empty.mkdir()
    assert "no config.json" in str(_quick(empty))
    two = tmp_path / "two-ggufs"
    two.mkdir()
    (two / "a.gguf").write_bytes(b"GGUF")
    (two / "b.gguf").write_bytes(b"GGUF")
    assert "several GGUF files" in str(_quick(two))
    unknown = tmp_path / "weights.bin"
    unknown.write_bytes(b"\0" * 64)
    assert "unrecognised" in str(_quick(unknown))
    with pytest.raises(IngestError, match="no such file"):
        load_model(str(tmp_path / "missing" / "model.gguf"))
    with pytest.raises(IngestError, match=r"no such file or folder: 'bad\\x00path'"):
        load_model("bad\0path")


def test_cli_bad_gguf_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(gguf_bytes(2**62, 0))
    for args in (["models", "show", str(path)], ["estimate", str(path), "--hw", "rtx-4090"]):
        result = run_cli(*args)
        assert result.code == 2
        assert result.out == ""
        assert result.err.startswith("error: ") and result.err.count("\n") == 1
        assert "Traceback" not in result.err


def test_cli_folder_without_config(tmp_path: Path) -> None:
    result = run_cli("models", "show", str(tmp_path))
    assert result.code == 2 and "no config.json" in result.err and result.err.count("\n") == 1


# ---------------------------------------------------------------- fuzz


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("seeds")
    st_path = tmp / "seed.safetensors"
    write_safetensors(st_path, llama_tensors(8, 1, 2, 1, 8, 4, False), "float16")
    return {"gguf": _valid_gguf(tmp), "safetensors": st_path.read_bytes(), "dir": str(tmp)}  # type: ignore[dict-item]


mutations = st.lists(st.tuples(st.integers(0, 4095), st.integers(0, 255)), max_size=8)


def _mutate(seed: bytes, edits: list[tuple[int, int]], cut: int | None) -> bytes:
    data = bytearray(seed)
    for pos, value in edits:
        if pos < len(data):
            data[pos] = value
    return bytes(data[:cut] if cut is not None else data)


def _only_ingest_errors(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    try:
        load_model(str(path))
    except IngestError:
        pass


@settings(max_examples=200, deadline=None)
@given(edits=mutations, cut=st.none() | st.integers(0, 6000))
def test_fuzz_mutated_gguf(seeds: dict[str, bytes], edits: list[tuple[int, int]], cut: int | None) -> None:
    _only_ingest_errors(Path(str(seeds["dir"])) / "fuzz.gguf", _mutate(seeds["gguf"], edits, cut))


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=512))
def test_fuzz_random_gguf_header(data: bytes) -> None:
    for candidate in (data, b"GGUF" + data, b"GGUF\x03\0\0\0" + data):
        try:
            parse_header(candidate, len(candidate), "fuzz")
        except IngestError:
            pass


@settings(max_examples=200, deadline=None)
@given(edits=mutations, cut=st.none() | st.integers(0, 3000))
def test_fuzz_mutated_safetensors(seeds: dict[str, bytes], edits: list[tuple[int, int]], cut: int | None) -> None:
    path = Path(str(seeds["dir"])) / "fuzz.safetensors"
    path.write_bytes(_mutate(seeds["safetensors"], edits, cut))
    try:
        read_header(path)
    except IngestError:
        pass
    _only_ingest_errors(path, path.read_bytes())


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=512))
def test_fuzz_random_safetensors(seeds: dict[str, bytes], data: bytes) -> None:
    path = Path(str(seeds["dir"])) / "random.safetensors"
    for candidate in (data, U64.pack(len(data)) + data):
        _only_ingest_errors(path, candidate)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=10,
)
CONFIG_KEYS = [
    "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "vocab_size", "intermediate_size", "layer_types", "sliding_window", "sliding_window_pattern", "num_experts",
    "num_experts_per_tok", "moe_intermediate_size", "mlp_only_layers", "decoder_sparse_step", "kv_lora_rank",
    "text_config", "quantization_config", "tie_word_embeddings", "first_k_dense_replace", "max_window_layers",
]


@settings(max_examples=200, deadline=None)
@given(
    base=st.sampled_from(["Llama-3.1-8B", "Qwen3-30B-A3B", "DeepSeek-V3", "gpt-oss-20b", "Gemma-3-12b-it"]),
    changes=st.dictionaries(st.sampled_from(CONFIG_KEYS), json_values, max_size=4),
)
def test_fuzz_config_fields(base: str, changes: dict[str, object]) -> None:
    from ingest_helpers import fixture_config
    from tokometer.ingest.hf_config import spec_from_hf

    config = fixture_config(base)
    target = config.get("text_config", config) if isinstance(config.get("text_config"), dict) else config
    target.update(changes)
    try:
        spec_from_hf(config, name="fuzz", source="fuzz", model_id=None)
    except IngestError:
        pass


def test_importing_ingest_loads_no_heavy_modules() -> None:
    import subprocess
    import sys

    code = (
        "import sys, tokometer.ingest, tokometer.ingest.hub, tokometer.ingest.gguf_file, tokometer.ingest.hf_config;"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'huggingface_hub', 'gguf', 'safetensors'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
