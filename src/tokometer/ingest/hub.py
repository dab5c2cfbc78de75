"""Hugging Face Hub ids (`owner/name`, optionally `@revision`) -> `ModelSpec`, without downloading weights.

`config.json` comes through `hf_hub_download`, so it lands in (and is reused from) huggingface_hub's
own cache; the safetensors headers come through `get_safetensors_metadata` (HTTP range requests of
the first bytes of each shard), which gives every tensor's dtype, shape and byte span. The library
reads `HF_TOKEN`, `HF_HUB_OFFLINE`, `HF_HUB_CACHE` and `HF_ENDPOINT` itself. Offline, the headers
are read from weights already in the local snapshot when they are there; otherwise the estimate
falls back to the config and says so. Every failure a user can meet (gated or private repository,
unknown id or revision, not cached while offline, no network) becomes one `IngestError` line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tokometer.domain.specs import ModelSpec
from tokometer.errors import IngestError
from tokometer.ingest.hf_config import read_config, spec_from_hf
from tokometer.ingest.safetensors_header import (
    TensorEntry,
    read_header,
    read_index,
    read_shards,
    tensor_entries,
)

_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
HUB_ID = re.compile(rf"^(?P<repo>{_PART}/{_PART})(?:@(?P<revision>[A-Za-z0-9][A-Za-z0-9._/-]{{0,199}}))?$")
INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"


def is_hub_id(ref: str) -> bool:
    """`owner/name` or `owner/name@revision`, and not something that looks like a file name."""
    match = HUB_ID.match(ref)
    return (
        match is not None
        and ".." not in match["repo"]
        and not match["repo"].endswith((".gguf", ".json", ".safetensors"))
    )


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def hub_error(
    exc: BaseException, repo_id: str, revision: str | None, what: str, offline_reason: str | None = None
) -> IngestError:
    """One clear line for everything huggingface_hub (or the network under it) can raise."""
    from huggingface_hub import errors

    page = f"https://huggingface.co/{repo_id}"
    if isinstance(exc, errors.GatedRepoError):
        return IngestError(
            f"{repo_id} is a gated repository: accept its terms on {page} and set HF_TOKEN (or run `hf auth login`)"
        )
    if isinstance(exc, errors.RepositoryNotFoundError):
        return IngestError(
            f"{repo_id}: no such model on the Hugging Face Hub, or it is private (set HF_TOKEN to a token that can read it)"
        )
    if isinstance(exc, errors.RevisionNotFoundError):
        return IngestError(f"{repo_id}: revision {revision!r} not found on the Hugging Face Hub")
    if isinstance(exc, errors.LocalEntryNotFoundError | errors.OfflineModeIsEnabled):
        if _offline():
            return IngestError(f"{repo_id}: {what} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set")
        why = f" ({offline_reason})" if offline_reason else ""
        return IngestError(
            f"{repo_id}: cannot reach the Hugging Face Hub{why} and {what} is not cached (check the network, or HF_ENDPOINT)"
        )
    if isinstance(exc, errors.EntryNotFoundError):
        return IngestError(
            f"{repo_id} has no {what}: not a transformers model repository "
            "(for a GGUF repository, download the .gguf file and give its path)"
        )
    if isinstance(exc, errors.HFValidationError):
        return IngestError(f"{repo_id!r} is not a valid Hugging Face Hub id")
    if isinstance(exc, errors.HfHubHTTPError):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return IngestError(f"{repo_id}: Hugging Face Hub error fetching {what}: {first}")
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return IngestError(
        f"{repo_id}: could not fetch {what} from the Hugging Face Hub ({type(exc).__name__}{': ' + detail if detail else ''})"
    )


@contextmanager
def _quiet() -> Iterator[None]:
    """No progress bars or retry warnings on stderr while tokometer asks the Hub; settings restored."""
    import logging

    import huggingface_hub.utils as hf_utils  # the progress-bar helpers are public but not in its __all__

    hub_logger = logging.getLogger("huggingface_hub")
    level = hub_logger.level
    hub_logger.setLevel(logging.ERROR)
    bars_were_disabled = hf_utils.are_progress_bars_disabled()  # type: ignore[attr-defined]
    hf_utils.disable_progress_bars()  # type: ignore[attr-defined]
    try:
        yield
    finally:
        hub_logger.setLevel(level)
        if not bars_were_disabled:
            hf_utils.enable_progress_bars()  # type: ignore[attr-defined]


def unreachable() -> str | None:
    """Why the Hub cannot be reached when its host name does not resolve (no network at all), else None.

    Without this, huggingface_hub retries a dead connection five times with backoff (about 25 s)
    before falling back to its cache; a failed name lookup answers at once.
    """
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    host = urlparse(constants.ENDPOINT).hostname
    if not host:
        return None
    try:
        socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return f"{host} does not resolve"
    return None


def _remote_tensors(repo_id: str, revision: str | None) -> list[TensorEntry]:
    import huggingface_hub

    meta = huggingface_hub.get_safetensors_metadata(repo_id, revision=revision)
    tensors: list[TensorEntry] = []
    for filename, file_meta in sorted(meta.files_metadata.items()):
        header = {
            name: {"dtype": info.dtype, "shape": list(info.shape), "data_offsets": list(info.data_offsets)}
            for name, info in file_meta.tensors.items()
        }
        tensors += tensor_entries(header, None, f"{repo_id}/{filename}")
    return tensors


def _cached_tensors(snapshot: Path) -> list[TensorEntry] | None:
    """Headers of weights already in the local snapshot (a full download), else None."""
    try:
        if (snapshot / INDEX_FILE).is_file():
            shards = set(read_index(snapshot / INDEX_FILE).values())
            if all((snapshot / s).is_file() for s in shards):
                return read_shards(snapshot, shards)
        elif (snapshot / SINGLE_FILE).is_file():
            return list(read_header(snapshot / SINGLE_FILE).tensors)
    except IngestError:
        return None
    return None


def _tensors(
    repo_id: str, revision: str | None, snapshot: Path, offline_reason: str | None
) -> tuple[list[TensorEntry] | None, str | None]:
    """The checkpoint's tensors, and a warning when the exact bytes could not be had."""
    from huggingface_hub import errors

    reason = offline_reason
    if reason is None:
        try:
            return _remote_tensors(repo_id, revision), None
        except errors.NotASafetensorsRepoError:
            return None, f"{repo_id} publishes no safetensors weights: bytes estimated from config.json"
        except (errors.GatedRepoError, errors.RepositoryNotFoundError, errors.RevisionNotFoundError) as exc:
            raise hub_error(exc, repo_id, revision, "the safetensors headers") from None
        except IngestError as exc:
            reason = f"the Hub's safetensors headers are malformed ({exc})"
        except Exception as exc:  # network and HTTP failures: fall back to the cache, then to the config
            reason = f"could not fetch the safetensors headers ({type(exc).__name__})"
    cached = _cached_tensors(snapshot)
    if cached is not None:
        return cached, None
    return None, f"{reason}; the weights are not in the local cache: bytes estimated from config.json"


def load_hub_model(ref: str) -> ModelSpec:
    """`owner/name[@revision]` -> `ModelSpec` from config.json and the safetensors headers."""
    match = HUB_ID.match(ref)
    if match is None:
        raise IngestError(f"{ref!r} is not a Hugging Face Hub id (owner/name)")
    repo_id, revision = match["repo"], match["revision"]
    from huggingface_hub import hf_hub_download

    offline_reason = "HF_HUB_OFFLINE is set" if _offline() else unreachable()
    with _quiet():
        try:
            downloaded = hf_hub_download(
                repo_id, "config.json", revision=revision, local_files_only=offline_reason is not None
            )
        except Exception as exc:  # every hub, network and cache failure -> one line
            raise hub_error(exc, repo_id, revision, "config.json", offline_reason) from None
        if not isinstance(downloaded, str):
            raise IngestError(f"{repo_id}: huggingface_hub returned no file for config.json")
        config_path = Path(downloaded)
        config: dict[str, Any] = read_config(config_path)
        tensors, note = _tensors(repo_id, revision, config_path.parent, offline_reason)
    source = f"https://huggingface.co/{repo_id}" + (f" (revision {revision})" if revision else "")
    return spec_from_hf(
        config,
        name=repo_id,
        source=source,
        model_id=ref,
        tensors=tensors,
        notes=[note] if note else [],
    )
