"""`plan --emit` for a deployment that speculates: each engine's documented speculative decoding
options (pinned in launch_flags.toml with the docs they come from), and the prefix cache each
engine keeps by default, said in a note rather than a flag (usecases/launch.py)."""

from __future__ import annotations

import json
import re

import pytest

from tokometer.errors import InputError
from tokometer.usecases.launch import EMIT_ENGINES, launch, pinned_flags, used_flags
from tokometer.usecases.simulate import deploy


def yaml_keys(text: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^\s*([a-z_]+):", text, flags=re.MULTILINE)}


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm"])
@pytest.mark.parametrize(("model", "hw", "quant", "spec"), [
    ("llama-3.1-8b", "h100-sxm", "bf16", dict(spec_method="eagle3", spec_tokens=4)),
    ("llama-3.1-8b", "h100-sxm", "bf16", dict(spec_method="ngram")),
    ("llama-3.1-8b", "h100-sxm", "bf16", dict(spec_method="draft", draft_model="llama-3.2-1b", spec_tokens=5)),
    ("deepseek-r1", "h200", "fp8", dict(spec_method="mtp", spec_tokens=2, ep=8, dp=8)),
], ids=["eagle3", "ngram", "draft", "mtp-dep8"])
def test_speculation_emits_only_pinned_flags_and_keys(engine: str, model: str, hw: str, quant: str, spec: dict) -> None:
    dep = deploy(model, hw, quant=quant, **spec)
    out = launch(dep, quant, engine)
    pin = pinned_flags()[engine]
    for _, command in out.commands:
        assert set(used_flags(engine, command)) <= set(pin["flags"])
    for text in out.files.values():
        assert yaml_keys(text) <= set(pin["config_keys"]), yaml_keys(text) - set(pin["config_keys"])
    k = dep.speculation.draft_tokens
    command = out.commands[0][1]
    if engine == "vllm":
        config = json.loads(re.search(r"--speculative-config '([^']+)'", command).group(1))
        assert config["num_speculative_tokens"] == k
        assert config["method"] == {"eagle3": "eagle3", "ngram": "ngram", "draft": "draft_model", "mtp": "mtp"}[dep.speculation.method]
        assert ("model" in config) == (dep.speculation.method in ("eagle3", "draft"))
    elif engine == "sglang":
        algorithm = {"eagle3": "EAGLE3", "ngram": "NGRAM", "draft": "STANDALONE", "mtp": "NEXTN"}[dep.speculation.method]
        assert f"--speculative-algorithm {algorithm}" in command
        assert f"--speculative-num-draft-tokens {k + 1}" in command
        if dep.speculation.method != "ngram":
            assert f"--speculative-num-steps {k} --speculative-eagle-topk 1" in command
    else:
        yaml = out.files["extra-llm-api-config.yml"]
        assert "speculative_config:" in yaml
        depth = "num_nextn_predict_layers" if dep.speculation.method == "mtp" else "max_draft_len"
        assert f"  {depth}: {k}" in yaml


def test_a_draft_model_is_named_by_its_hub_id_and_llama_server_takes_it() -> None:
    dep = deploy("llama-3.1-8b", "h100-sxm", quant="bf16", spec_method="draft", draft_model="llama-3.2-1b", spec_tokens=6)
    assert "meta-llama/Llama-3.2-1B" in launch(dep, "bf16", "vllm").commands[0][1]
    assert "--speculative-draft-model-path meta-llama/Llama-3.2-1B" in launch(dep, "bf16", "sglang").commands[0][1]
    assert "speculative_model_dir: meta-llama/Llama-3.2-1B" in launch(dep, "bf16", "trtllm").files["extra-llm-api-config.yml"]
    command = launch(dep, "bf16", "llama-cpp").commands[0][1]
    assert "--model-draft Llama-3.2-1B-BF16.gguf --draft-max 6" in command
    assert set(used_flags("llama-cpp", command)) <= set(pinned_flags()["llama-cpp"]["flags"])


def test_llama_server_refuses_a_head_or_ngram_and_an_eagle_head_is_a_named_placeholder() -> None:
    dep = deploy("llama-3.1-8b", "h100-sxm", quant="bf16", spec_method="eagle3")
    with pytest.raises(InputError, match="only a draft model"):
        launch(dep, "bf16", "llama-cpp")
    out = launch(dep, "bf16", "vllm")
    assert "EAGLE3_HEAD_PATH" in out.commands[0][1] and any("EAGLE3_HEAD_PATH" in n for n in out.notes)


def test_without_speculation_nothing_speculative_is_emitted() -> None:
    dep = deploy("llama-3.1-8b", "h100-sxm", quant="bf16")
    for engine in EMIT_ENGINES:
        out = launch(dep, "bf16", engine)
        text = out.render()
        assert "speculative" not in text.replace("speculative decoding", "") and "draft" not in text


@pytest.mark.parametrize(("engine", "words"), [
    ("vllm", "on by default"), ("sglang", "--disable-radix-cache"), ("tensorrt-llm", "enable_block_reuse"), ("llama-cpp", "cache_prompt"),
])
def test_each_engine_says_its_prefix_cache_is_on_by_default_and_emits_no_flag_for_it(engine: str, words: str) -> None:
    out = launch(deploy("llama-3.1-8b", "h100-sxm", quant="bf16"), "bf16", engine)
    assert any(n.startswith("prefix caching:") and words in n for n in out.notes)
    assert all("prefix" not in c and "radix" not in c for _, c in out.commands)  # the default is what the simulator runs
