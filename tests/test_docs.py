"""Generated docs are checked in and must match what `scripts/gen_docs.py` writes now."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_script(name: str):
    """`scripts/NAME.py` as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("rel", ["docs/cli.md", "docs/hardware.md"])
def test_generated_docs_are_current(rel: str) -> None:
    expected = load_script("gen_docs").DOCS[rel]()
    actual = (ROOT / rel).read_text(encoding="utf-8")
    assert actual == expected, f"{rel} is stale: run `python scripts/gen_docs.py`"


def test_cli_reference_covers_every_command() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for command in ["estimate", "hardware list", "models show", "quants list", "validate", "calibrate", "bench", "runs list", "probe", "serve", "feel", "fit", "sweep", "utilization"]:
        assert f"## `tokometer {command}`" in text, command


def test_cli_reference_usage_lines_name_each_command_once() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    usages = [line for line in text.splitlines() if line.startswith("Usage: ")]
    assert "Usage: tokometer hardware list [OPTIONS]" in usages
    assert len(usages) > 15 and not [u for u in usages if u.count("tokometer") != 1]


def test_docstrings_cite_sections_of_our_own_physics_page() -> None:
    """Every `docs/PHYSICS.md` citation in the code names a section the page has; none cites a document
    outside the repository (a bare PHYSICS.md, the seeds)."""
    import re

    page = (ROOT / "docs" / "PHYSICS.md").read_text(encoding="utf-8")
    sections = {int(n) for n in re.findall(r"^## (\d+)\.", page, re.M)}
    cited = 0
    for path in (ROOT / "src" / "tokometer").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(?<!docs/)PHYSICS\.md", text), f"{path.name} cites a PHYSICS.md outside docs/"
        assert not re.search(r"\bseed 0\d\d", text), f"{path.name} cites a seed document"
        for first, last in re.findall(r"docs/PHYSICS\.md,? (?:sections? )?(\d+)(?:-(\d+))?", text):
            for n in range(int(first), int(last or first) + 1):
                assert n in sections, f"{path.name} cites docs/PHYSICS.md section {n}, which does not exist"
                cited += 1
    assert cited >= 20


@pytest.mark.timeout(900)  # the in-sample and peer runs predict every row of the evidence once
def test_readme_accuracy_tables_are_what_the_script_writes() -> None:
    """The README's accuracy tables and outside check are `scripts/accuracy_tables.py`'s output: the in-sample and
    peer runs computed here, the hold-outs from its stored row-by-row results (their folds are checked below)."""
    from tokometer.fitting.evidence import read_evidence

    module = load_script("accuracy_tables")
    cases = read_evidence()
    tables = module.render(module.reports(cases, module.load_held_out(cases)))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert tables in readme, "README accuracy tables are stale: run `python scripts/accuracy_tables.py`"
    for held_out in ("nothing (in-sample)", "every row of the device, multi-device rows too", "every row of the publication"):
        assert held_out in tables
    outside = module.render_outside(module.outside_results())
    assert outside in readme, "README outside-check table is stale: run `python scripts/accuracy_tables.py`"
    assert "none of them is read by `tokometer calibrate`" in outside
    from tokometer.fitting.families import hardware_family

    for family in {hardware_family(r.hardware_id) for r in module.outside_results() if r.scored and r.case.metric == "tg"}:
        assert f"| tg | {family} |" in outside
    assert "**single device, per hardware family, leave-one-source-out**" in tables
    assert "**single device, per publication held out (leave-one-source-out)**" in tables


@pytest.mark.timeout(900)  # six fits of the whole evidence, side by side on the machine's cores
@pytest.mark.parametrize("mode", ["loho", "lso"])
def test_stored_hold_outs_are_what_their_folds_give_now(mode: str) -> None:
    """A sample of the stored hold-out folds (the largest and two by hash, `sample_folds`) refitted now predicts
    each of their rows exactly as stored: a change to the code or the data that moves the fits shows here."""
    from tokometer.fitting.evidence import read_evidence
    from tokometer.fitting.model import cross_validate

    module = load_script("accuracy_tables")
    cases = read_evidence()
    stored = {id(r.case): r for r in module.load_held_out(cases)[mode]}
    of = module.fold_of(mode)
    folds = set(module.sample_folds(cases, mode))
    assert len(folds) == module.SAMPLED_FOLDS
    rows = [c for c in cases if (g := of(c)) is not None and str(g) in folds]
    fresh = cross_validate(cases, of, only=rows)
    assert sum(r.scored for r in fresh) >= 100
    for r in fresh:
        s = stored[id(r.case)]
        assert (r.reason, r.group, r.hardware_id) == (s.reason, s.group, s.hardware_id), r.case.row_id
        for now, then in ((r.predicted, s.predicted), (r.low, s.low), (r.high, s.high)):
            assert (now is None) == (then is None) and (now is None or now == pytest.approx(then, rel=1e-9)), (
                f"{r.case.row_id}: stored hold-outs are stale: run `python scripts/accuracy_tables.py`"
            )


@pytest.mark.slow  # leave-one-source-out refits the serving efficiency three times: about 40 s here
@pytest.mark.timeout(900)  # validate --serving --lso on the shipped serving rows
def test_readme_serving_accuracy_table_is_what_the_script_writes() -> None:
    """The README's serving table is `scripts/serving_accuracy.py`'s output from `validate --serving --lso`."""
    module = load_script("serving_accuracy")
    table = module.render(module.report())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert table in readme, "README serving accuracy table is stale: run `python scripts/serving_accuracy.py`"
    for _, held_out in module.HELD_OUT:
        assert held_out in table
    assert "| offline | tput_out |" in table and "| static-batch | tput_out |" in table


def test_readme_sample_output_is_what_estimate_prints() -> None:
    """The README's first sample is `tokometer estimate` on defaults, as the current code prints it."""
    from click.testing import CliRunner

    from tokometer.cli import cli

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```\n$ tokometer estimate\n") + len("```\n$ tokometer estimate\n")
    sample = text[start : text.index("```\n", start)]
    result = CliRunner().invoke(cli, ["estimate"])
    assert result.exit_code == 0, result.output
    assert sample.rstrip("\n") == result.output.rstrip("\n"), "README sample is stale: paste `tokometer estimate`"


def test_readme_figures_are_what_the_commands_give() -> None:
    """Each `<!-- figure:NAME -->` of the README (catalog counts, the bare-numbers example's ceiling and
    estimate) is what `scripts/readme_figures.py` computes now; every figure it knows is used."""
    module = load_script("readme_figures")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    marked = dict(module.FIGURE.findall(readme))
    assert set(marked) == set(module.FIGURES), "README.md and scripts/readme_figures.py name different figures"
    computed = module.computed()
    for name, text in marked.items():
        assert text == computed[name], f"README figure {name} is {text!r}, the command gives {computed[name]!r}: run `python scripts/readme_figures.py`"
    from tokometer.catalog import model_catalog

    assert marked["model-presets"] == f"{len(model_catalog().ids):,}"
    assert "ceiling of <!-- figure:bare-ceiling -->" in readme and "estimate of <!-- figure:bare-estimate -->" in readme


def test_the_license_is_an_spdx_expression() -> None:
    """setuptools >= 77 warns three times on the `project.license` table; the SPDX string is the current form."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in project["build-system"]["requires"]
    assert not [c for c in project["project"].get("classifiers", []) if c.startswith("License ::")]


def _all_cli_options() -> set[str]:
    import click

    from tokometer.cli import cli

    found: set[str] = set()

    def walk(cmd: click.Command, ctx: click.Context) -> None:
        for p in cmd.params:
            found.update(o for o in (*p.opts, *p.secondary_opts) if o.startswith("--"))
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None:
                    walk(sub, click.Context(sub, parent=ctx))

    walk(cli, click.Context(cli))
    return found


def test_every_option_the_readme_names_exists() -> None:
    """A `--flag` written in the README (outside shell commands of other tools) is an option of some
    tokometer command: documentation that names a renamed or removed option fails here."""
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", text))
    other_tools = {"--n-cpu-moe", "--num-prompts", "--num-scheduler-steps", "--flash-attn"}  # llama.cpp's and vLLM's, quoted
    other_tools |= {"--case"}  # benchmarks/simulate.py's, named with the script
    missing = sorted(named - _all_cli_options() - other_tools)
    assert not missing, f"the README names options no command has: {missing}"


def test_localscore_split_separates_the_systems_it_names() -> None:
    """The README's LocalScore split (`readme_figures._localscore_split`) counts every system once, and the
    side whose 1B model decodes under 3x its 8B rate reads far more over the prediction than the other side
    reads off it: the split is what the sentence says, read from the stored hold-outs."""
    module = load_script("readme_figures")
    split = module._localscore_split()
    fast, slow = int(split["localscore-fast"]), int(split["localscore-slow"])
    assert fast > 0 and slow > 0 and fast + slow == int(split["localscore-systems"])
    slow_bias = float(split["localscore-slow-bias"].rstrip(" %"))
    fast_error = float(split["localscore-fast-error"].rstrip(" %"))
    assert slow_bias > 2 * fast_error
