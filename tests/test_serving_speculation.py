"""Speculative decoding in the serving scheduler (costmodel/serving/speculation.py).

What the physics says must come out: at one user a drafter with acceptance 0.8 and k = 3 cuts the
time per token and raises tokens/s per user; at a compute-bound batch (512 streams of 8B on an
H100) the verify pass's (k + 1) x GEMMs cost more than the accepted tokens bring; acceptance 0 is
strictly slower; each request advances by E(a, k) = (1 - a^(k+1)) / (1 - a) tokens per pass on
average; the drafter's weights and KV shrink the cache. The CLI and the API take the same options.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from tests.helpers import cli

from tokometer.catalog.serving import serving_engines
from tokometer.costmodel.serving import Workload, fixed, simulate
from tokometer.costmodel.serving.engine import StepRecord
from tokometer.costmodel.serving.invariants import InvariantChecker
from tokometer.costmodel.serving.speculation import (
    ENGINE_METHODS,
    METHODS,
    expected_tokens,
)
from tokometer.costmodel.speculative import tokens_per_pass
from tokometer.errors import InputError
from tokometer.usecases.simulate import Deployment, deploy

SHORT = {"prompt": fixed(128), "output": fixed(128)}
METHOD_ARGS = {"eagle3": {}, "ngram": {}, "draft": {"draft_model": "llama-3.2-1b"}}


def _deploy(**kwargs: object) -> Deployment:
    return deploy("llama-3.1-8b", "h100-sxm", quant="bf16", engine="vllm", **kwargs)  # type: ignore[arg-type]


def _closed(dep: Deployment, users: int, requests: int, **lengths: object) -> object:
    wl = Workload("closed", num_requests=requests, concurrency=users, **(lengths or SHORT))  # type: ignore[arg-type]
    checker = InvariantChecker()
    result = simulate(dep.cost, dep.policy, dep.kv_capacity_tokens, wl, spec=dep.speculation, observe=checker,
                      max_context_tokens=dep.max_context_tokens)
    checker.finish(result)
    return result


@pytest.mark.parametrize("acceptance", [0.0, 0.3, 0.8, 0.95, 1.0])
@pytest.mark.parametrize("k", [1, 3, 7])
def test_the_expectation_is_the_sum_of_acceptance_powers(acceptance: float, k: int) -> None:
    direct = sum(acceptance**i for i in range(k + 1))
    assert expected_tokens(acceptance, k) == pytest.approx(direct)
    if acceptance < 1.0:  # the single-stream model's formula agrees
        assert expected_tokens(acceptance, k) == pytest.approx(tokens_per_pass(acceptance, k))


@pytest.mark.parametrize("acceptance,k", [(0.8, 3), (0.5, 2), (0.85, 1), (0.0, 4)])
def test_each_request_advances_by_the_expected_tokens_per_pass(acceptance: float, k: int) -> None:
    """One stream, a free drafter: the decode passes a request of 1 + N output tokens takes are N / E, within one."""
    dep = _deploy(spec_method="ngram", spec_tokens=k, spec_acceptance=acceptance)
    record: list[StepRecord] = []
    output = 401
    wl = Workload("closed", num_requests=5, concurrency=1, prompt=fixed(64), output=fixed(output))
    r = simulate(dep.cost, dep.policy, dep.kv_capacity_tokens, wl, spec=dep.speculation, record=record)
    passes = sum(1 for rec in record if rec[3] > 0)
    per_request = passes / 5
    e = expected_tokens(acceptance, k)
    assert abs(per_request - (output - 1) / e) <= 1.0
    assert r.tput_out_tok_s * r.duration_s == pytest.approx(5 * output)  # every token counted once
    # every decode pass carries the k drafts + 1 per stream
    assert all(rec[0] == k + 1 for rec in record if rec[3] == 1 and rec[4] == 0)


@pytest.mark.parametrize("method", ["eagle3", "ngram", "draft"])
def test_one_user_gets_lower_itl_and_more_tokens_per_second(method: str) -> None:
    plain = _closed(_deploy(), 1, 6)
    spec = _closed(_deploy(spec_method=method, spec_tokens=3, spec_acceptance=0.8, **METHOD_ARGS[method]), 1, 6)
    assert spec.itl_s.mean < 0.8 * plain.itl_s.mean  # type: ignore[attr-defined]
    assert 1 / spec.tpot_s.mean > 1.3 / plain.tpot_s.mean  # type: ignore[attr-defined]
    assert spec.tput_out_tok_s > plain.tput_out_tok_s  # type: ignore[attr-defined]
    # a pass never costs less than a plain step, so the gain is at most E(a, k) = 2.95
    assert plain.tpot_s.mean / spec.tpot_s.mean <= expected_tokens(0.8, 3) * 1.01  # type: ignore[attr-defined]


def test_deepseek_v3_mtp_cuts_tpot_at_low_concurrency() -> None:
    """DeepSeek-V3 on 8 x H200 under SGLang with its MTP module (k = 1, a = 0.85 from its report): TPOT falls,
    by at most E = 1.85; three drafts from the same head fall further."""
    def tpot(**kwargs: object) -> float:
        dep = deploy("deepseek-v3", "h200", engine="sglang", tp=8, **kwargs)  # type: ignore[arg-type]
        return _closed(dep, 4, 8, prompt=fixed(1000), output=fixed(300)).tpot_s.mean  # type: ignore[attr-defined,no-any-return]

    plain, one, three = tpot(), tpot(spec_method="mtp"), tpot(spec_method="mtp", spec_tokens=3)
    assert plain / expected_tokens(0.85, 1) * 0.99 <= one < 0.8 * plain
    assert three < one


@pytest.mark.parametrize("method", ["eagle3", "draft"])
def test_a_compute_bound_batch_loses_throughput_to_speculation(method: str) -> None:
    """512 streams of 8B on an H100 with short contexts: the GEMMs are compute-bound, and verifying
    4 tokens per stream costs more than the 2.95 tokens a = 0.8 keeps."""
    def big(dep: Deployment) -> Deployment:
        pol = replace(dep.policy, max_num_seqs=512, max_num_batched_tokens=8192)
        return replace(dep, serving=replace(dep.serving, policy=pol))

    plain = _closed(big(_deploy()), 512, 2048)
    spec = _closed(big(_deploy(spec_method=method, spec_tokens=3, spec_acceptance=0.8, **METHOD_ARGS[method])), 512, 2048)
    assert plain.mean_batch > 400  # type: ignore[attr-defined]
    assert spec.tput_out_tok_s < plain.tput_out_tok_s  # type: ignore[attr-defined]
    # while one user still gains: speculation helps at low concurrency and hurts at high
    assert _closed(_deploy(spec_method=method, spec_tokens=3, spec_acceptance=0.8, **METHOD_ARGS[method]), 1, 4).tput_out_tok_s \
        > _closed(_deploy(), 1, 4).tput_out_tok_s  # type: ignore[attr-defined]


@pytest.mark.parametrize("method", ["eagle3", "ngram", "draft"])
@pytest.mark.parametrize("users", [1, 64])
def test_acceptance_zero_is_strictly_slower(method: str, users: int) -> None:
    plain = _closed(_deploy(), users, 2 * users + 2)
    spec = _closed(_deploy(spec_method=method, spec_tokens=3, spec_acceptance=0.0, **METHOD_ARGS[method]), users, 2 * users + 2)
    assert spec.tput_out_tok_s < plain.tput_out_tok_s  # type: ignore[attr-defined]
    assert spec.tpot_s.mean > plain.tpot_s.mean  # type: ignore[attr-defined]


def test_the_drafter_takes_kv_and_weights_from_the_cache() -> None:
    plain = _deploy().kv_capacity_tokens
    assert _deploy(spec_method="ngram").kv_capacity_tokens == plain
    head = _deploy(spec_method="eagle3").kv_capacity_tokens
    draft = _deploy(spec_method="draft", draft_model="llama-3.2-1b").kv_capacity_tokens
    assert draft < head < plain
    # a 1B draft with 16 layers of 8 KV heads of 64 next to 32 layers of 8 of 128: 1/4 more KV per token
    assert draft < plain / 1.2


def test_defaults_come_from_the_published_table() -> None:
    dep = _deploy(spec_method="eagle3")
    assert dep.speculation is not None
    assert dep.speculation.acceptance == METHODS["eagle3"].acceptance
    assert dep.speculation.draft_tokens == METHODS["eagle3"].draft_tokens
    assert "arXiv" in dep.speculation.source
    mtp = deploy("deepseek-v3", "h200", engine="sglang", tp=8, spec_method="mtp").speculation
    assert mtp is not None and mtp.acceptance == 0.85 and "2412.19437" in mtp.source
    assert all(m.source for m in METHODS.values())


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"spec_method": "mtp"}, "MTP layers"),
        ({"spec_method": "draft"}, "--draft-model"),
        ({"spec_method": "eagle3", "draft_model": "llama-3.2-1b"}, "goes with --spec-method draft"),
        ({"spec_method": "ngram", "spec_acceptance": 1.5}, "from 0 to 1"),
        ({"spec_method": "ngram", "spec_tokens": 0}, "whole number"),
        ({"spec_method": "magic"}, "one of"),
        ({"spec_tokens": 3}, "go with --spec-method"),
        ({"spec_method": "ngram", "scheduler_steps": 4}, "scheduler-steps"),
        ({"spec_method": "draft", "draft_model": "qwen3-0.6b"}, "tokenizer"),
    ],
)
def test_bad_settings_are_input_errors(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InputError, match=match):
        _deploy(**kwargs)


def test_each_engine_takes_only_what_it_serves() -> None:
    for engine in serving_engines():
        for method in METHODS:
            args = {"engine": engine, "spec_method": method, **METHOD_ARGS.get(method, {})}
            if method == "mtp":
                continue  # needs an MTP model, checked below
            if method in ENGINE_METHODS.get(engine, ()) and not serving_engines()[engine].policy.static:
                assert deploy("llama-3.1-8b", "h100-sxm", **args).speculation is not None  # type: ignore[arg-type]
            else:
                with pytest.raises(InputError, match="does not serve it"):
                    deploy("llama-3.1-8b", "h100-sxm", **args)  # type: ignore[arg-type]
    assert ENGINE_METHODS["llama-cpp"] == ("draft",)
    assert "static" not in ENGINE_METHODS and "lmdeploy" not in ENGINE_METHODS


def test_speculation_runs_on_the_decode_pool_of_disaggregated_pools() -> None:
    from tokometer.api.serving import simulate as api_simulate

    kw = {"concurrency": 1, "num_requests": 6, "prompt": 256, "output": 128, "disagg": "1:1"}
    plain = api_simulate("llama-3.1-8b", "h100-sxm", **kw).result  # type: ignore[arg-type]
    spec = api_simulate("llama-3.1-8b", "h100-sxm", spec_method="ngram", spec_tokens=3, spec_acceptance=0.8,
                        **kw).result  # type: ignore[arg-type]
    assert spec.completed == plain.completed == 6
    assert spec.tpot_s.mean < 0.6 * plain.tpot_s.mean  # E(0.8, 3) = 2.95 tokens per pass of about a step's cost


def test_the_api_takes_the_cli_keyword_names() -> None:
    import tokometer

    sim = tokometer.simulate("llama-3.1-8b", "h100-sxm", concurrency=1, num_requests=3, prompt=128, output=64,
                             spec_method="eagle3", spec_tokens=3, spec_acceptance=0.8)
    d = sim.to_dict()
    assert d["deployment"]["speculation"]["tokens_per_pass"] == pytest.approx(expected_tokens(0.8, 3))
    plain = tokometer.simulate("llama-3.1-8b", "h100-sxm", concurrency=1, num_requests=3, prompt=128, output=64)
    assert "speculation" not in plain.to_dict()["deployment"]
    assert sim.result.tpot_s.mean < plain.result.tpot_s.mean


def test_cli_flags_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--concurrency", "1", "-n", "3", "--prompt", "128", "--output", "64")
    code, out, err = cli(capsys, *base, "--spec-method", "draft", "--draft-model", "llama-3.2-1b", "--spec-tokens", "4",
                         "--spec-acceptance", "0.75", "--json")
    assert code == 0, err
    spec = json.loads(out)["deployment"]["speculation"]
    assert (spec["method"], spec["draft_tokens"], spec["acceptance"]) == ("draft", 4, 0.75)
    assert spec["draft_model"] == "Llama 3.2 1B" and spec["tokens_per_pass"] == pytest.approx(expected_tokens(0.75, 4))
    code, out, err = cli(capsys, *base, "--spec-method", "eagle3")
    assert code == 0 and "eagle3 k=3 a=0.65" in out, err
    for bad in (("--spec-method", "eagle3", "--engine", "static"), ("--spec-method", "mtp"),
                ("--spec-method", "ngram", "--spec-acceptance", "-1"), ("--spec-method", "nope")):
        code, out, err = cli(capsys, *base, *bad)
        assert code == 2 and "Traceback" not in err and err.strip(), bad


def test_mtp_follows_the_config_each_family_publishes() -> None:
    """`mtp` needs MTP modules as the model's config names them (DeepSeek/GLM num_nextn_predict_layers,
    Qwen3.5 mtp_num_hidden_layers, MiniMax-M2 num_mtp_modules), not a list of ids: GLM-5 and Qwen3.5-397B
    serve it, Kimi K2 (num_nextn_predict_layers 0) and a config that switches MTP off do not."""
    from tokometer.catalog import model_catalog
    from tokometer.ingest.architecture import mtp_layer_count

    layers = {m.id: m.spec.mtp_layers for m in model_catalog()}
    assert layers["glm-5"] == 1 and layers["qwen3.5-397b-a17b"] == 1 and layers["minimax-m2"] == 3
    assert layers["kimi-k2"] == 0 and layers["llama-3.1-8b"] == 0
    assert deploy("glm-5", "b200", engine="sglang", tp=8, quant="fp8", spec_method="mtp").speculation is not None
    with pytest.raises(InputError, match="MTP layers"):
        deploy("kimi-k2", "h200", engine="sglang", tp=8, spec_method="mtp")
    assert mtp_layer_count({"text_config": {"hidden_size": 4096, "mtp_num_hidden_layers": 1}}) == 1
    assert mtp_layer_count({"num_mtp_modules": 3, "use_mtp": False}) == 0
    assert mtp_layer_count({"num_nextn_predict_layers": True}) == 0  # a boolean is not a count
