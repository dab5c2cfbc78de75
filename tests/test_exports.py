"""The public Python API is exactly `tokometer.__all__`, and every name in it resolves.

Like httpx's exported-members test: a name added to the package without being declared public, or
declared but missing, fails here.
"""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

import tokometer


def test_all_is_sorted_unique_and_matches_the_lazy_table() -> None:
    assert tokometer.__all__ == sorted(set(tokometer.__all__))
    assert set(tokometer.__all__) == {"__version__", *tokometer._EXPORTS}


def test_every_exported_name_resolves_to_a_tokometer_object() -> None:
    for name in tokometer.__all__:
        member = getattr(tokometer, name)
        if name == "__version__":
            assert isinstance(member, str)
            continue
        assert member.__module__.startswith("tokometer."), name
        assert member.__name__ == name


def test_public_attributes_are_exactly_all() -> None:
    for name in tokometer.__all__:
        getattr(tokometer, name)  # loading them binds their subpackages too, which are not API
    public = {
        n for n in dir(tokometer)
        if not n.startswith("_") and not isinstance(getattr(tokometer, n), ModuleType)
    } - {"annotations", "TYPE_CHECKING", "Any"}
    assert public == set(tokometer.__all__) - {"__version__"}


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        tokometer.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_the_api_predicts() -> None:
    request = tokometer.EstimateRequest(model="llama-3.1-8b", hw="rtx-4090", quant="q4_k_m")
    result = tokometer.estimate(request)
    assert isinstance(result, tokometer.Estimate)
    assert 0 < result.estimate_tok_s < result.ceiling_tok_s
    assert tokometer.estimate_json(result)["decode"]["estimate_tok_s"] == result.estimate_tok_s


def test_a_bad_value_names_its_field() -> None:
    try:
        tokometer.EstimateRequest(batch=0)
    except tokometer.InputError as exc:
        assert exc.field == "batch"
        assert str(exc).startswith("batch must be a positive number")
        assert exc.render({"batch": "--batch"}).startswith("--batch must be")
    else:
        raise AssertionError("expected InputError")


def test_import_stays_light() -> None:
    code = "import sys, tokometer; print(any(m.startswith('tokometer.usecases') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_readme_python_example_runs(capsys) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it from Python", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "tok/s (ceiling" in out and "layers on the GPU" in out
    assert "batch - batch must be a positive number, got 0" in out
