"""End to end on a real llama.cpp server: tiny GGUF -> llama-cpp-python server -> `tokometer bench`.

Also runs `tokometer probe --quick` and predicts the same GGUF on `--hw local`, so the run is
graded against a prediction for this very machine; prints predicted vs measured decode speed.

Needs `llama-cpp-python[server]` (scripts/ci/llama-cpp.sh installs it). Skipped locally when it
is missing; with CI set, a missing install is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from tiny_gguf import TinyLlama

from web_helpers import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _require_llama_cpp_server() -> None:
    try:
        import llama_cpp.server.app  # noqa: F401
    except ImportError as exc:
        if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
            pytest.fail(f"llama-cpp-python[server] is not installed but CI is set (scripts/ci/llama-cpp.sh installs it): {exc}")
        pytest.skip("llama-cpp-python[server] is not installed (scripts/ci/llama-cpp.sh installs it)")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, float]]:
    path = tmp_path_factory.mktemp("gguf") / "tiny-llama-q8_0.gguf"
    info = TinyLlama().write(path)
    return path, info


@dataclass
class LlamaServer:
    """A running llama-cpp-python server: its URL, its process and the log it writes.

    `check()` fails the test with the server's own log when the process has died, so a crash
    (an illegal instruction in libggml-cpu.so, a model it cannot load) reads as a crash, not as
    "cannot connect".
    """

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else "(no log)"

    def check(self, doing: str) -> None:
        code = self.process.poll()
        if code is not None:
            pytest.fail(f"llama-cpp-python server died ({_describe_exit(code)}) {doing}; its log:\n{self.log_tail()}")


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


@pytest.fixture(scope="module")
def llama_server(tiny_model: tuple[Path, dict[str, float]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    _require_llama_cpp_server()
    model, _ = tiny_model
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "llama-server.log"
    threads = str(max(1, os.cpu_count() or 1))
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", threads]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    server = LlamaServer(url=f"http://127.0.0.1:{port}", process=process, log=log)
    try:
        deadline = time.monotonic() + 240
        while True:
            server.check("while starting")
            try:
                if httpx.get(server.url + "/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama-cpp-python server did not answer within 240 s; its log:\n{server.log_tail()}")
            time.sleep(0.5)
        # One real completion before the test: a CPU kernel the machine cannot run crashes here,
        # on the first matmul, not while loading.
        try:
            httpx.post(server.url + "/v1/completions", json={"prompt": "hello", "max_tokens": 2}, timeout=120)
        except httpx.HTTPError as exc:
            server.check(f"on its first completion ({exc})")
            pytest.fail(f"llama-cpp-python server failed its first completion: {exc}; its log:\n{server.log_tail()}")
        server.check("on its first completion")
        yield server
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def tokometer(args: list[str], home: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TOKOMETER_HOME": str(home)}
    env.pop("TOKOMETER_API_KEY", None)
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "tokometer", *args], env=env, capture_output=True, text=True, timeout=timeout)


def test_bench_a_real_llama_cpp_server_against_the_local_prediction(
    llama_server: LlamaServer, tiny_model: tuple[Path, dict[str, float]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, info = tiny_model
    home = tmp_path / "home"

    probe = tokometer(["probe", "--quick", "--device", "cpu", "--json"], home)
    assert probe.returncode == 0, probe.stderr
    profile = json.loads(probe.stdout)["profile"]
    assert (home / "hardware.toml").is_file() and profile["kind"] == "cpu"

    bench = tokometer(
        ["bench", llama_server.url, "--max-tokens", "64", "--prompt-tokens", "256", "--runs", "3", "--predict-model", str(model), "--hw", "local", "--json"],
        home,
    )
    llama_server.check("during `tokometer bench`")
    assert bench.returncode == 0, f"{bench.stderr}\nserver log:\n{llama_server.log_tail()}"
    run = json.loads(bench.stdout)
    summary = run["summary"]
    assert run["status"] == "complete" and run["protocol"] == "openai-completions"
    assert summary["requests_ok"] == 6 and summary["requests_failed"] == 0
    assert summary["decode_tps"]["n"] == 3 and summary["decode_tps"]["median"] > 1.0
    assert summary["ttft_ms"]["median"] > 0 and summary["ttft_prompt_tokens"] >= 128
    assert summary["output_tokens"]["median"] == 64  # the zeroed EOS row keeps every run at full length
    assert summary["cold_requests"] == 1

    prediction = run["prediction"]
    grading = run["grading"]
    assert prediction["hardware"] == "local" and run["hardware"] == "local"
    assert prediction["memory_bandwidth_gb_per_s"] == pytest.approx(profile["memory_bandwidth_gb_per_s"])
    assert prediction["ceiling_tok_s"] > prediction["estimate_tok_s"] > 0
    assert grading["realised_fraction"] > 0 and grading["mbu"] > 0 and "ceiling" in grading["verdict"]
    assert prediction["estimate"]["model"]["weight_bytes"] == pytest.approx(info["weight_bytes"], rel=0.02)

    listed = tokometer(["runs", "list", "--json"], home)
    stored = json.loads(listed.stdout)
    assert stored[0]["id"] == run["id"] and stored[0]["hardware"] == "local"
    shown = json.loads(tokometer(["runs", "show", str(run["id"]), "--json", "--requests"], home).stdout)
    assert len(shown["requests"]) == 7 and all(r["event_times_s"] for r in shown["requests"])

    measured = summary["decode_tps"]["median"]
    with capsys.disabled():  # shown in CI logs even when the test passes
        print(
            f"\nllama.cpp (llama-cpp-python) on {profile['name']}, tiny llama Q8_0 {info['weight_bytes'] / 1e6:.0f} MB: "
            f"measured decode {measured:.1f} tok/s (TTFT {summary['ttft_ms']['median']:.0f} ms at {summary['ttft_prompt_tokens']:.0f} tokens); "
            f"predicted ceiling {prediction['ceiling_tok_s']:.1f} tok/s, estimate {prediction['estimate_tok_s']:.1f} tok/s "
            f"({prediction['interval_tok_s']['low']:.1f}-{prediction['interval_tok_s']['high']:.1f}); "
            f"{grading['realised_fraction']:.0%} of the ceiling, probe bandwidth {profile['memory_bandwidth_gb_per_s']:.1f} GB/s"
        )
