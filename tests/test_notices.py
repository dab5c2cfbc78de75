"""Issue 10: `estimate()` returns what it warns about as typed values with their numbers; report/ words them.

The golden JSON (tests/test_golden.py) holds the words byte for byte; these tests check that the
use-case decides the case and the data, and that every case has its sentence.
"""

from __future__ import annotations

import typing

import pytest

from tokometer.report.json import estimate_warnings
from tokometer.report.notices import notice_text
from tokometer.usecases import notices
from tokometer.usecases.estimate import estimate


def test_a_setup_that_does_not_fit_carries_its_numbers_not_a_sentence() -> None:
    e = estimate("llama-3.1-70b", "rtx-4090", quant="q4_k_m")
    (found,) = [w for w in e.warnings if isinstance(w, notices.DoesNotFit)]
    assert (found.need_gb, found.available_gb) == (e.memory.total_gb, e.memory.available_gb)
    assert found.hardware_name == e.hardware.name and found.engine_name == e.engine.name
    assert not any(isinstance(w, str) and w.startswith("does not fit") for w in e.warnings)
    assert f"does not fit: needs {e.memory.total_gb:.1f} GB" in estimate_warnings(e)[e.warnings.index(found)]


def test_two_devices_are_named_as_such() -> None:
    e = estimate("llama-3.1-405b", "rtx-4090", quant="q4_k_m", tp=2)
    (found,) = [w for w in e.warnings if isinstance(w, notices.DoesNotFit)]
    assert found.devices == 2 and notice_text(found).startswith(f"does not fit: needs {found.need_gb:.1f} GB, 2 x ")


def test_the_speculative_default_and_the_context_limit_are_typed() -> None:
    e = estimate("llama-3.1-8b", "rtx-4090", draft="llama-3.2-1b", context_tokens=10_000_000)
    kinds = {type(w) for w in e.warnings}
    assert {notices.AssumedAcceptance, notices.PastContextLimit} <= kinds
    (limit,) = [w for w in e.warnings if isinstance(w, notices.PastContextLimit)]
    assert limit.context_tokens > limit.limit_tokens and limit.model_name == e.model.name


@pytest.mark.parametrize("kind", typing.get_args(notices.Notice), ids=lambda k: k.__name__)
def test_every_notice_has_its_sentence(kind: type) -> None:
    fields = {
        "gpu_memory_gb": 36.0, "memory_gb": 48.0, "acceptance": 0.7, "need_gb": 50.0, "available_gb": 20.0,
        "devices": 1, "hardware_name": "dev", "engine_name": "eng", "context_tokens": 200_000, "model_name": "m",
        "limit_tokens": 131_072, "cpu_name": "cpu", "format_name": "fmt", "substitute_name": "sub", "n_heads": 6,
        "tp": 4,
    }
    notice = kind(**{name: fields[name] for name in kind.__dataclass_fields__})
    text = notice_text(notice)
    assert text and text == text.strip() and "{" not in text
    assert notice_text(text) == text  # a note that is already words stays as it is
