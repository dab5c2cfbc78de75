"""Real models -> `ModelSpec`: config.json, model folders, safetensors, GGUF files and Hub ids.

`load_model(ref)` dispatches on what `ref` is:

- an existing `.gguf` file (or any file starting with the GGUF magic; split files are followed);
- an existing `.safetensors` file, read with the `config.json` beside it when there is one;
- an existing `*.safetensors.index.json`: every shard's header, with the `config.json` beside it;
- any other existing `.json` file: a Hugging Face `config.json` (config only: no exact bytes);
- an existing folder: its `config.json` plus the safetensors headers found in it, or its one `.gguf`;
- otherwise `owner/name[@revision]`: a Hugging Face Hub id (`tokometer.ingest.hub`).

Only headers are read, never tensor data. Anything unreadable raises `IngestError`, whose message
is meant for the user. Heavy imports (numpy through gguf, huggingface_hub) happen inside the
loaders, so importing this package costs nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokometer.domain.specs import ModelSpec
from tokometer.errors import IngestError

__all__ = ["GGUF_SOURCE_PREFIX", "load_model"]

# how a spec read from a GGUF file names its source (engines check it); here, not in gguf_file, so that
# checking it does not import the GGUF reader
GGUF_SOURCE_PREFIX = "GGUF file "


def load_model(ref: str) -> ModelSpec:
    """A path (file or folder) or a Hugging Face Hub id -> `ModelSpec`."""
    try:
        path = Path(ref).expanduser()
        is_dir, is_file, exists = path.is_dir(), path.is_file(), path.exists()
    except (OSError, ValueError, RuntimeError) as exc:  # NUL bytes, unknown ~user, name too long
        raise IngestError(f"{ref!r} is not a usable path ({exc})") from None
    if is_dir:
        return _load_folder(path, ref)
    if is_file:
        return _load_file(path, ref)
    if exists:
        raise IngestError(f"{ref}: not a regular file or folder")
    from tokometer.ingest.hub import is_hub_id, load_hub_model

    if is_hub_id(ref):
        return load_hub_model(ref)
    shown = ref if ref.isprintable() else repr(ref)
    raise IngestError(f"no such file or folder: {shown} (nor a Hugging Face Hub id like owner/name)")


def _load_file(path: Path, ref: str) -> ModelSpec:
    from tokometer.ingest import gguf_file
    from tokometer.ingest.safetensors_header import is_index_file

    if path.suffix.lower() == ".gguf" or gguf_file.is_gguf(path):
        return gguf_file.load_gguf(path, model_id=ref)
    if path.name.endswith(".safetensors"):
        return _load_safetensors(path, ref)
    if is_index_file(path):
        return _load_index(path, ref)
    if path.suffix.lower() == ".json":
        return _load_config(path, ref)
    raise IngestError(
        f"{path}: unrecognised model file (expected .gguf, .safetensors, model.safetensors.index.json or config.json)"
    )


def _name_of(path: Path) -> str:
    folder = path if path.is_dir() else path.parent
    return folder.resolve().name or str(path)


def _load_config(path: Path, ref: str) -> ModelSpec:
    from tokometer.ingest.hf_config import read_config, spec_from_hf

    config = read_config(path)
    if "weight_map" in config:  # an index under another name
        return _load_index(path, ref)
    name = _name_of(path) if path.name == "config.json" else path.stem
    return spec_from_hf(config, name=name, source=f"config {path}", model_id=ref)


def _sibling_config(path: Path) -> dict[str, Any] | None:
    from tokometer.ingest.hf_config import read_config

    config = path.parent / "config.json"
    return read_config(config) if config.is_file() else None


def _load_safetensors(path: Path, ref: str) -> ModelSpec:
    from tokometer.ingest.hf_config import spec_from_hf, spec_from_tensors_only
    from tokometer.ingest.safetensors_header import read_header

    tensors = list(read_header(path).tensors)
    if not tensors:
        raise IngestError(f"safetensors file {path} holds no tensors")
    config = _sibling_config(path)
    source = f"safetensors file {path}"
    if config is None:
        return spec_from_tensors_only(tensors, name=path.stem, source=source, model_id=ref)
    return spec_from_hf(config, name=_name_of(path), source=source, model_id=ref, tensors=tensors)


def _load_index(path: Path, ref: str) -> ModelSpec:
    from tokometer.ingest.hf_config import spec_from_hf, spec_from_tensors_only
    from tokometer.ingest.safetensors_header import read_index, read_shards

    tensors = read_shards(path.parent, read_index(path).values())
    config = _sibling_config(path)
    source = f"safetensors index {path}"
    if config is None:
        return spec_from_tensors_only(tensors, name=_name_of(path), source=source, model_id=ref)
    return spec_from_hf(config, name=_name_of(path), source=source, model_id=ref, tensors=tensors)


def _weight_files(folder: Path) -> list[Path]:
    """The checkpoint's safetensors files: the index's shards, else model.safetensors, else all of them."""
    files = sorted(p for p in folder.glob("*.safetensors") if p.is_file())
    if (folder / "model.safetensors").is_file():
        return [folder / "model.safetensors"]
    plain = [p for p in files if not p.name.startswith("consolidated")]
    return plain or files


def _load_folder(folder: Path, ref: str) -> ModelSpec:
    from tokometer.ingest import gguf_file
    from tokometer.ingest.hf_config import read_config, spec_from_hf
    from tokometer.ingest.safetensors_header import read_index, read_shards

    config_path = folder / "config.json"
    if not config_path.is_file():
        ggufs = sorted(p for p in folder.glob("*.gguf") if p.is_file() and not p.name.startswith("mmproj"))
        firsts = [p for p in ggufs if not gguf_file.SPLIT_NAME.match(p.name) or "-00001-of-" in p.name]
        if len(firsts) == 1:
            return gguf_file.load_gguf(firsts[0], model_id=ref)
        if firsts:
            listing = ", ".join(p.name for p in firsts[:5])
            raise IngestError(f"{folder}: several GGUF files ({listing}); give the file's path")
        raise IngestError(f"{folder}: no config.json (nor a .gguf file) in this folder")
    config = read_config(config_path)
    source = f"model folder {folder}"
    notes: list[str] = []
    tensors = None
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        shards = sorted(set(read_index(index).values()))
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            notes.append(
                f"{len(missing)} of {len(shards)} shards missing ({missing[0]}...): bytes estimated from config.json"
            )
        else:
            tensors = read_shards(folder, shards)
    else:
        files = _weight_files(folder)
        if files:
            tensors = read_shards(folder, [f.name for f in files])
        elif any(folder.glob("*.bin")) or any(folder.glob("*.pth")):
            notes.append("PyTorch .bin/.pth weights are not read: bytes estimated from config.json")
    return spec_from_hf(config, name=_name_of(folder), source=source, model_id=ref, tensors=tensors, notes=notes)
