"""Speed feel: the pseudo-tokenizer, the timing plan, the terminal animation and `tokometer feel`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from tokometer.cli import cli
from tokometer.errors import InputError
from tokometer.report.feel import animate, frame_lines, ticker_line
from tokometer.usecases.feel import LANGUAGES, Lane, feel_plan, parse_rates, sample_text, tokenize
from tokometer.usecases.reading import reading_verdict_code


@given(st.text(max_size=400))
def test_tokens_concatenate_back_to_the_text(text: str) -> None:
    assert "".join(tokenize(text)) == text


@pytest.mark.parametrize("lang", LANGUAGES)
def test_samples_tokenize_like_an_answer(lang: str) -> None:
    text = sample_text(lang)
    tokens = tokenize(text)
    words = len(text.split())
    assert 1.1 < len(tokens) / words < 1.6  # about 1.3 BPE tokens per word
    assert len(tokens) >= 350  # long enough to measure 100 tok/s over 3 s


def test_long_words_split_into_pieces() -> None:
    assert tokenize("understanding bandwidth!") == ["under", "stand", "ing", " bandw", "idth", "!"]


def test_verdicts_follow_reading_speed() -> None:
    assert [reading_verdict_code(r) for r in (1, 2.9, 3, 4.9, 5, 9.9, 10, 100)] == [
        "broken", "broken", "slow", "slow", "reading", "reading", "fast", "fast",
    ]


@pytest.mark.parametrize(
    ("text", "needle"),
    [("", "at least one rate"), ("5,,x", "rates must be numbers"), ("0", "above 0"), ("1,2,3,4,5,6,7,8,9", "at most 8")],
)
def test_bad_rates(text: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        parse_rates(text)


def test_plan_counts_what_each_rate_shows() -> None:
    plan = feel_plan("one two three four five six seven eight nine ten", [2, 20], 3)
    assert plan["text_tokens"] == 10
    first, second = plan["lanes"]
    assert (first["tokens_after"], first["words_after"], first["finish_s"]) == (6, 6, 5.0)
    assert (second["tokens_after"], second["finish_s"]) == (10, 0.5)
    with pytest.raises(InputError, match="empty"):
        feel_plan("", [5], 3)


def test_lane_shows_floor_of_elapsed_times_rate() -> None:
    lane = Lane(7.0, 100)
    assert [lane.shown(t) for t in (0, 0.14, 0.143, 1, 20)] == [0, 0, 1, 7, 100]


def test_frame_puts_lanes_side_by_side() -> None:
    tokens = tokenize(sample_text("en"))
    lanes = [Lane(5, len(tokens)), Lane(50, len(tokens))]
    lines = frame_lines(tokens, lanes, 2.0, width=80, height=6)
    assert lines[0].startswith("5 tok/s (reading)") and "50 tok/s (fast)" in lines[0]
    assert all(len(line) <= 80 for line in lines)
    assert len(lines) == 2 + 6
    assert " | " in lines[2]
    one = ticker_line(tokens, lanes, 2.0, width=80)
    assert one.startswith("5/s ") and "| 50/s " in one and len(one) <= 80  # the tail of each lane


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps = 0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds


@pytest.mark.parametrize("ansi", [True, False])
def test_animation_runs_on_the_clock_it_is_given(ansi: bool) -> None:
    clock = FakeClock()
    out = io.StringIO()
    shown = animate("a b c d e f g h i j", [5, 10], 4.0, out, ansi=ansi, size=(80, 24), clock=clock, sleep=clock.sleep, fps=10)
    assert shown == pytest.approx(2.0)  # every lane is done once the 5 tok/s one shows its 10 tokens
    assert clock.sleeps in (20, 21)  # 20 steps of 0.1 s, give or take rounding
    text = out.getvalue()
    if ansi:
        assert "\x1b[" in text and "t =   2.0 s of 2.0 s" in text
    else:
        assert "\x1b" not in text and "\r" in text and text.endswith("\n")


def test_feel_no_animate_prints_the_timing_table() -> None:
    result = CliRunner().invoke(cli, ["feel", "--rates", "5,20,80", "--no-animate"])
    assert result.exit_code == 0, result.output
    assert "5.00 tok/s" in result.output and "80.0 tok/s" in result.output
    assert "about reading speed" in result.output and "\x1b" not in result.output


def test_feel_defaults_to_the_table_off_a_terminal() -> None:
    result = CliRunner().invoke(cli, ["feel", "--seconds", "2"])
    assert result.exit_code == 0 and "shown after 2 s" in result.output


def test_feel_json_and_text_file(tmp_path: Path) -> None:
    path = tmp_path / "answer.txt"
    path.write_text("Hello there, friendly world.", encoding="utf-8")
    result = CliRunner().invoke(cli, ["feel", "--rates", "2,5", "--text", str(path), "--seconds", "1", "--json"])
    data = json.loads(result.output)
    assert data["text_tokens"] == 7 and [lane["tokens_after"] for lane in data["lanes"]] == [2, 5]
    stdin = CliRunner().invoke(cli, ["feel", "--rates", "3", "--text", "-", "--json"], input="one two")
    assert json.loads(stdin.output)["text_tokens"] == 2


def test_feel_animates_in_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr("tokometer.report.feel.animate", lambda *a, **k: calls.append(k["ansi"]) or 0.0)
    monkeypatch.setenv("TERM", "dumb")
    result = CliRunner().invoke(cli, ["feel", "--animate", "--rates", "5"])
    assert result.exit_code == 0 and calls == [False]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--rates", "fast"], "rates must be numbers"),
        (["--seconds", "0"], "seconds must be a positive number"),
        (["--text", "/nonexistent/answer.txt"], "cannot read"),
    ],
)
def test_feel_errors_are_one_line(args: list[str], needle: str) -> None:
    from tokometer.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["feel", *args])
    assert exit_info.value.code == 2


def test_serve_help_lists_its_options() -> None:
    result = CliRunner().invoke(cli, ["serve", "--help"])
    assert result.exit_code == 0
    for option in ("--host", "--port", "--bench-url", "127.0.0.1"):
        assert option in result.output
    bad = CliRunner().invoke(cli, ["serve", "--bench-url", "ftp://x"])
    assert bad.exit_code == 2 and "http(s) URL" in bad.output


def test_the_latency_page_reading_verdict_agrees_with_python() -> None:
    """latency.js words a rate with its own copy of the rule, fed the API's thresholds; run it in node."""
    import re
    import shutil
    import subprocess

    from tokometer.web.compute import meta

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    js = (Path(__file__).resolve().parents[1] / "src/tokometer/web/static/js/pages/latency.js").read_text(encoding="utf-8")
    match = re.search(r"function code\(tokS, info\) \{.*?\n\}", js, re.S)
    assert match, "latency.js no longer has code(tokS, info)"
    rates = [0.5, 2.99, 3.0, 4.99, 5.0, 7.5, 9.99, 10.0, 250.0]
    script = f"{match.group(0)}\nconst info = {json.dumps(meta())};\nconsole.log(JSON.stringify({rates}.map((r) => code(r, info))));"
    out = subprocess.run([node, "-e", script], capture_output=True, text=True, check=True, timeout=60).stdout
    assert json.loads(out) == [reading_verdict_code(r) for r in rates]
