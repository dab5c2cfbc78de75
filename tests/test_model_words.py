"""Published checkpoint names read into catalog presets, and the precision a name carries."""

from __future__ import annotations

import pytest

from tokometer.catalog import model_catalog
from tokometer.fitting.model_words import find_model, precision_in_name

NAMES = [
    ("meta-llama/Llama-3.3-70B-Instruct", "Llama-3.3-70B-Instruct", None),
    ("nvidia/Llama-3.3-70B-Instruct-FP4", "Llama-3.3-70B-Instruct", "FP4"),
    ("Llama-3.1-405B-Instruct-FP8", "Llama-3.1-405B", "FP8"),
    ("deepseek-ai/DeepSeek-R1-0528", "DeepSeek-R1", None),
    ("Qwen3-235B-A22B-FP8", "Qwen3-235B-A22B", "FP8"),
    ("Llama-3.1-70B-Instruct-AWQ", "Llama-3.1-70B", "AWQ"),
    ("LLaMA v3.1 8B", "Llama-3.1-8B", None),
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic", "Llama-3.1-8B", "FP8"),
    ("Qwen3-30B-A3B-Instruct-2507", "Qwen3-30B-A3B", None),
]


@pytest.mark.parametrize("printed, plain, precision", NAMES)
def test_checkpoint_names_resolve_to_the_architecture(printed: str, plain: str, precision: str | None) -> None:
    expected = model_catalog().find(plain)
    assert expected is not None
    found = find_model(printed)
    assert found is not None and found.spec.name == expected.spec.name
    assert precision_in_name(printed) == precision


def test_an_unknown_name_stays_unknown() -> None:
    assert find_model("Totally-Unknown-Model-7B-FP8") is None
    assert precision_in_name("Llama-3.1-8B") is None
