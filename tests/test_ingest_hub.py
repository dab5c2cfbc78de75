"""Hub ids without a network: a fake huggingface_hub cache (offline) and fakes of the two Hub calls."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import huggingface_hub
import pytest
from huggingface_hub import constants, errors

from helpers import run_cli
from ingest_helpers import fixture_config, llama_tensors, tiny_llama_config, write_safetensors
from tokometer.errors import IngestError
from tokometer.ingest import hub, load_model
from tokometer.ingest.hub import is_hub_id

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def make_cache(cache: Path, repo_id: str, files: dict[str, Any]) -> Path:
    """huggingface_hub's cache layout: models--org--name/{refs/main, snapshots/COMMIT/...}."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    for name, content in files.items():
        (snapshot / name).write_text(json.dumps(content))
    return snapshot


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def test_hub_id_pattern() -> None:
    assert is_hub_id("Qwen/Qwen3-30B-A3B") and is_hub_id("meta-llama/Llama-3.1-8B@main")
    assert not is_hub_id("a/b/c") and not is_hub_id("./x/y") and not is_hub_id("org/model.gguf")
    assert not is_hub_id("qwen3-30b-a3b") and not is_hub_id("../up/there")


def test_offline_config_from_the_cache(hub_cache: Path) -> None:
    make_cache(hub_cache, "Qwen/Qwen3-30B-A3B", {"config.json": fixture_config("Qwen3-30B-A3B")})
    spec = load_model("Qwen/Qwen3-30B-A3B")
    assert spec.total_params == 30_532_122_624 and spec.id == "Qwen/Qwen3-30B-A3B"
    assert spec.source == "https://huggingface.co/Qwen/Qwen3-30B-A3B"
    assert spec.exact_weight_bytes is None
    assert any("HF_HUB_OFFLINE" in w and "estimated from config.json" in w for w in spec.warnings)


def test_offline_uses_weights_already_in_the_snapshot(hub_cache: Path) -> None:
    snapshot = make_cache(hub_cache, "org/tiny", {"config.json": tiny_llama_config()})
    data_bytes = write_safetensors(snapshot / "model.safetensors", llama_tensors(64, 2, 4, 2, 128, 96, False))
    spec = load_model("org/tiny")
    assert spec.exact_weight_bytes is not None and spec.exact_weight_bytes.total == data_bytes
    assert spec.warnings == ()


def test_offline_miss_is_one_clear_line(hub_cache: Path) -> None:
    with pytest.raises(IngestError, match="not in the local Hugging Face cache and HF_HUB_OFFLINE is set"):
        load_model("Qwen/Qwen3-30B-A3B")


def test_cli_offline_miss_exits_2_without_traceback(tmp_path: Path) -> None:
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "empty")}
    result = run_cli("models", "show", "nobody/no-such-model", env=env)
    assert result.code == 2
    assert result.err.count("\n") == 1 and result.err.startswith("error: ")
    assert "Traceback" not in result.err


def test_cli_offline_hit_shows_the_model(hub_cache: Path) -> None:
    make_cache(hub_cache, "meta-llama/Llama-3.1-8B", {"config.json": fixture_config("Llama-3.1-8B")})
    result = run_cli("models", "show", "meta-llama/Llama-3.1-8B", "--json", env={"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub_cache)})
    assert result.code == 0, result.err
    assert result.json()["total_params"] == 8_030_261_248
    est = run_cli("estimate", "meta-llama/Llama-3.1-8B", "--hw", "h100-sxm", "--json", env={"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub_cache)})
    assert est.code == 0, est.err
    assert est.json()["model"]["id"] == "meta-llama/Llama-3.1-8B" and est.json()["model"]["quant"] == "bf16"


def _metadata(shapes: dict[str, tuple[int, ...]], dtype: str = "BF16") -> Any:
    """A real huggingface_hub SafetensorsRepoMetadata for one file, as get_safetensors_metadata returns."""
    from huggingface_hub.utils import SafetensorsFileMetadata, SafetensorsRepoMetadata, TensorInfo

    tensors, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * math.prod(shape)
        tensors[name] = TensorInfo(dtype=dtype, shape=list(shape), data_offsets=(offset, offset + size))  # type: ignore[arg-type]
        offset += size
    file_meta = SafetensorsFileMetadata(metadata={"format": "pt"}, tensors=tensors)
    return SafetensorsRepoMetadata(metadata=None, sharded=False, weight_map=dict.fromkeys(shapes, "model.safetensors"),
                                   files_metadata={"model.safetensors": file_meta})


@pytest.fixture
def online(hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """'Online' mode with the two Hub calls faked: config from the fake cache, metadata from a fake."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    state: dict[str, Any] = {"metadata": None, "calls": []}
    snapshot = make_cache(hub_cache, "org/tiny", {"config.json": tiny_llama_config()})

    def fake_download(repo_id: str, filename: str, **kwargs: Any) -> str:
        state["calls"].append(("download", repo_id, filename, kwargs))
        if isinstance(state.get("download_error"), BaseException):
            raise state["download_error"]
        return str(snapshot / filename)

    def fake_metadata(repo_id: str, **kwargs: Any) -> Any:
        state["calls"].append(("metadata", repo_id, kwargs))
        if isinstance(state["metadata"], BaseException):
            raise state["metadata"]
        return state["metadata"]

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", fake_metadata)
    monkeypatch.setattr(hub, "unreachable", lambda: None)  # pretend the Hub's name resolves
    return state


def test_online_metadata_gives_exact_bytes_without_weights(online: dict[str, Any]) -> None:
    shapes = llama_tensors(64, 2, 4, 2, 128, 96, False)
    online["metadata"] = _metadata(shapes)
    spec = load_model("org/tiny@v1.0")
    assert spec.exact_weight_bytes is not None
    assert spec.exact_weight_bytes.total == 2 * sum(math.prod(s) for s in shapes.values())
    assert spec.params.scaled(2.0) == spec.exact_weight_bytes
    assert ("download", "org/tiny", "config.json", {"revision": "v1.0", "local_files_only": False}) in online["calls"]
    assert ("metadata", "org/tiny", {"revision": "v1.0"}) in online["calls"]
    assert "revision v1.0" in (spec.source or "")


def test_not_a_safetensors_repo_falls_back_to_the_config(online: dict[str, Any]) -> None:
    online["metadata"] = errors.NotASafetensorsRepoError("no safetensors")
    spec = load_model("org/tiny")
    assert spec.exact_weight_bytes is None and any("no safetensors" in w for w in spec.warnings)


def test_network_failure_on_metadata_falls_back(online: dict[str, Any]) -> None:
    online["metadata"] = ConnectionError("connection reset")
    spec = load_model("org/tiny")
    assert spec.exact_weight_bytes is None
    assert any("ConnectionError" in w for w in spec.warnings)


def _http_error(cls: type[Exception], message: str) -> Exception:
    import httpx

    response = httpx.Response(401, request=httpx.Request("GET", "https://huggingface.co/org/tiny"))
    try:
        return cls(message, response=response)  # type: ignore[call-arg]
    except TypeError:
        return cls(message)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (lambda: _http_error(errors.GatedRepoError, "gated"), "gated repository.*HF_TOKEN"),
        (lambda: _http_error(errors.RepositoryNotFoundError, "404"), "no such model.*private"),
        (lambda: _http_error(errors.RevisionNotFoundError, "404"), "revision"),
        (lambda: errors.LocalEntryNotFoundError("not cached"), "cannot reach the Hugging Face Hub"),
        (lambda: ConnectionError("Name or service not known"), "could not fetch config.json.*ConnectionError"),
        (lambda: TimeoutError(), "could not fetch config.json.*TimeoutError"),
    ],
)
def test_hub_failures_are_one_line(online: dict[str, Any], error: Any, expected: str) -> None:
    online["download_error"] = error()
    with pytest.raises(IngestError, match=expected) as info:
        load_model("org/tiny")
    assert "\n" not in str(info.value)


def test_gated_repo_on_metadata_is_an_error(online: dict[str, Any]) -> None:
    online["metadata"] = _http_error(errors.GatedRepoError, "gated")
    with pytest.raises(IngestError, match="gated"):
        load_model("org/tiny")


def test_hf_token_is_left_to_huggingface_hub(online: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """tokometer passes no token: huggingface_hub reads HF_TOKEN (or the stored login) itself."""
    monkeypatch.setenv("HF_TOKEN", "hf_fake")
    online["metadata"] = errors.NotASafetensorsRepoError("none")
    load_model("org/tiny")
    assert all("token" not in call[-1] for call in online["calls"])


def _no_dns(*args: Any, **kwargs: Any) -> Any:
    raise OSError(-2, "Name or service not known")


def test_no_network_uses_the_cache_at_once(hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Online mode but the Hub's name does not resolve: the cached config, through the real library."""
    import socket

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(socket, "getaddrinfo", _no_dns)
    make_cache(hub_cache, "Qwen/Qwen3-30B-A3B", {"config.json": fixture_config("Qwen3-30B-A3B")})
    spec = load_model("Qwen/Qwen3-30B-A3B")
    assert spec.total_params == 30_532_122_624
    assert any("does not resolve" in w for w in spec.warnings)
    with pytest.raises(IngestError, match=r"cannot reach the Hugging Face Hub \(huggingface.co does not resolve\)"):
        load_model("Qwen/Qwen3-8B")


def test_hub_warnings_and_bars_are_restored(online: dict[str, Any]) -> None:
    import logging

    import huggingface_hub.utils as hf_utils

    hub_logger = logging.getLogger("huggingface_hub")
    before = (hub_logger.level, hf_utils.are_progress_bars_disabled())
    online["metadata"] = errors.NotASafetensorsRepoError("none")
    load_model("org/tiny")
    assert (hub_logger.level, hf_utils.are_progress_bars_disabled()) == before
