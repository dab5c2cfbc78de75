"""Reading a published row's speculative decoding (`fitting.spec_words`) and scoring it through the scheduler."""

from __future__ import annotations

import pytest

from tokometer.costmodel.serving.speculation import expected_tokens
from tokometer.fitting.serving_runs import SGLANG_SPEC_MAX_RUNNING, Row, plan_run
from tokometer.fitting.spec_words import acceptance_for_length, read_speculation


def test_sglang_chain_flags_are_read_as_mtp_with_their_steps() -> None:
    s = read_speculation("python3 -m sglang.launch_server --speculative-algorithm NEXTN --speculative-num-steps 2 "
                         "--speculative-eagle-topk 1 --speculative-num-draft-tokens 3")
    assert (s.method, s.draft_tokens, s.acceptance, s.reason) == ("mtp", 2, None, None)
    assert s.launch_printed
    assert s.deploy_kwargs() == {"spec_method": "mtp", "spec_tokens": 2}


def test_sglang_tree_drafting_keeps_a_reason() -> None:
    s = read_speculation("--speculative-algorithm EAGLE3 --speculative-num-steps 4 --speculative-eagle-topk 4")
    assert s.reason is not None and "tree" in s.reason


def test_vllm_config_and_api_field() -> None:
    v = read_speculation('vllm serve x --speculative-config {"method":"mtp","num_speculative_tokens":1}')
    assert (v.method, v.draft_tokens) == ("mtp", 1)
    api = read_speculation("framework=sglang, precision=fp4, spec_method=mtp, disagg=false")
    assert (api.method, api.draft_tokens, api.launch_printed) == ("mtp", None, False)
    assert read_speculation("speculative decoding on").reason is not None


@pytest.mark.parametrize(("k", "length"), [(3, 2.61), (2, 1.5), (4, 3.48)])
def test_printed_accept_length_gives_the_acceptance_whose_expectation_matches(k: int, length: float) -> None:
    a = acceptance_for_length(length, k)
    assert 0.0 < a < 1.0
    assert expected_tokens(a, k) == pytest.approx(length, rel=1e-9)
    s = read_speculation(f"--speculative-algorithm EAGLE --speculative-num-steps {k} --speculative-eagle-topk 1; "
                         f"Accept length printed: {length}")
    assert s.acceptance == pytest.approx(a)


def test_accept_length_outside_the_chain_is_clamped() -> None:
    assert acceptance_for_length(0.9, 3) == 0.0
    assert acceptance_for_length(5.0, 3) == 1.0


def _row(**cells: str) -> Row:
    base = {
        "row_id": "T-1", "source_id": "T", "engine": "SGLang", "hardware_id": "h200", "n_devices": "8",
        "parallelism": "tp=8", "model": "deepseek-ai/DeepSeek-R1-0528", "quant": "FP8", "prompt_tokens": "1024",
        "gen_tokens": "1024", "metric": "tput_out", "unit": "tok/s", "value": "1000", "scenario": "online-concurrency",
        "concurrency": "64", "flag": "speculative_decoding", "backend": "", "notes": "",
    }
    base.update(cells)
    return Row(base["row_id"], base, base["metric"], float(base["value"]))


def test_a_speculative_row_is_planned_with_the_sources_settings_and_sglangs_request_cap() -> None:
    launch = "--tp 8 --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1"
    run = plan_run([_row(backend=launch)])
    assert run.reason is None
    assert run.deploy_kwargs["spec_method"] == "mtp" and run.deploy_kwargs["spec_tokens"] == 3
    assert run.deploy_kwargs["max_num_seqs"] == SGLANG_SPEC_MAX_RUNNING
    capped = plan_run([_row(backend=launch, notes="--max-running-requests 128")])
    assert "max_num_seqs" not in capped.deploy_kwargs  # the launch set its own limit
    api = plan_run([_row(notes="spec_method=mtp")])
    assert api.deploy_kwargs["spec_method"] == "mtp" and "max_num_seqs" not in api.deploy_kwargs


def test_speculation_changes_the_simulated_run() -> None:
    from tokometer.catalog.serving import serving_efficiency
    from tokometer.fitting.serving_validate import predict

    plain = _row(flag="", concurrency="1", notes="")
    spec = _row(backend="--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1",
                concurrency="1")
    a = predict([plan_run([plain])], serving_efficiency, naive=False)[0]
    b = predict([plan_run([spec])], serving_efficiency, naive=False)[0]
    assert a.predicted is not None and b.predicted is not None
    assert b.predicted > 1.3 * a.predicted  # one stream: ~E(0.85, 3) tokens per pass of about a plain step's cost


def test_disaggregated_pools_of_different_layouts_are_planned_per_pool() -> None:
    par = "disaggregated: prefill tp=4,ep=4 (dp-attention) x3 workers; decode tp=8,ep=8 x2 workers"
    run = plan_run([_row(parallelism=par, flag="disaggregated", hardware_id="b200", metric="tput_out",
                         unit="output tokens/s per GPU")])
    assert run.reason is None
    assert run.disagg == (3, 2)
    assert run.gpus == 3 * 4 + 2 * 8
    assert run.deploy_kwargs["dp"] == 4 and run.decode_layout["tp"] == 8 and run.decode_layout["ep"] == 8
    empty = plan_run([_row(parallelism=par.replace("x3", "x0"), flag="disaggregated")])
    assert empty.reason is not None and "0 workers" in empty.reason
    vague = plan_run([_row(parallelism="disaggregated: prefill 8 GPU, TP=8; decode 32 GPU, EP=8", flag="disaggregated")])
    assert vague.reason is not None and "disaggregated" in vague.reason


def test_a_disaggregated_run_is_scored_per_gpu_over_both_pools() -> None:
    from tokometer.catalog.serving import serving_efficiency
    from tokometer.fitting.serving_validate import predict

    par = "disaggregated: prefill tp=8,ep=8 x1 workers; decode tp=8,ep=8 x{d} workers"
    results = {}
    for d in (1, 3):
        row = _row(parallelism=par.format(d=d), flag="disaggregated", hardware_id="b200", concurrency="64",
                   unit="output tokens/s per GPU")
        results[d] = predict([plan_run([row])], serving_efficiency, naive=False)[0]
    assert results[1].predicted is not None and results[3].predicted is not None
    # the same 64 clients over more decode GPUs: less output per GPU
    assert results[3].predicted < results[1].predicted


def test_a_speculative_rows_itl_is_the_chunk_interval_of_a_verify_pass() -> None:
    """Benchmark clients time ITL per streamed chunk; a verify pass streams E(a, k) tokens as one chunk."""
    from tokometer.catalog.serving import serving_efficiency
    from tokometer.fitting.serving_validate import predict

    launch = "--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1"
    rows = [_row(row_id=f"T-{m}", backend=launch, concurrency="1", metric=m, unit="ms", value="10")
            for m in ("itl_ms_mean", "tpot_ms_mean")]
    run = plan_run(rows)
    assert run.tokens_per_pass == pytest.approx(expected_tokens(0.85, 3))
    itl, tpot = (r.predicted for r in predict([run], serving_efficiency, naive=False))
    assert itl is not None and tpot is not None
    assert itl == pytest.approx(tpot * run.tokens_per_pass, rel=0.1)
    assert plan_run([_row(flag="")]).tokens_per_pass == 1.0


def test_glm_5_2_reads_as_glm_5_and_a_prefill_context_parallel_arm_keeps_a_reason() -> None:
    glm = dict(model="amd/GLM-5.2-MXFP4", quant="MXFP4 (Quark)", hardware_id="mi355x", n_devices="4", flag="",
               parallelism="tp=4")
    run = plan_run([_row(**glm)])
    assert run.reason is None  # the GLM-5 preset: same network (models.toml notes)
    cp = plan_run([_row(**{**glm, "parallelism": "tp=4,prefill-cp=4 (interleave; attn_tp=1)"})])
    assert cp.reason is not None and "prefill context parallelism" in cp.reason
    assert "given twice" not in cp.reason  # the reason names the split, not the cell's parse
