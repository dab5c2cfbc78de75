"""The lengths a published serving row's benchmark client drew from its "random" dataset (`fitting.random_lengths`):
SGLang's client draws [1, L] at its default, vLLM's draws L, a printed range ratio or a printed mean overrides."""

from __future__ import annotations

from tokometer.costmodel.serving import LengthDist, fixed
from tokometer.fitting.random_lengths import random_lengths


def test_sglang_default_draws_uniformly_up_to_the_nominal_length() -> None:
    text = "bench: python -m sglang.bench_serving --backend sglang --dataset-name random --random-input-len 1000"
    assert random_lengths(text, 1000, 500, 80) == (LengthDist("uniform", 1, 1000), LengthDist("uniform", 1, 500))


def test_vllm_bench_serve_draws_the_nominal_length() -> None:
    assert random_lengths("random (vllm bench serve)", 2048, 512, 400) == (fixed(2048), fixed(512))


def test_a_printed_range_ratio_of_one_gives_sglang_fixed_lengths() -> None:
    text = "python3 -m sglang.bench_serving --random-input 10240 --random-output 512 --random-range-ratio 1.0"
    assert random_lengths(text, 10240, 512, 10) == (fixed(10240), fixed(512))


def test_a_vllm_range_ratio_spreads_both_ways() -> None:
    assert random_lengths("vllm bench serve --random-range-ratio 0.5", 1000, 100, 10)[0] == LengthDist("uniform", 500, 1500)


def test_printed_totals_equal_to_the_nominal_lengths_mean_fixed_lengths_whatever_the_client() -> None:
    text = "num_prompts=5; completed=5; total_input_tokens=640; total_output_tokens=640; endpoint_type=openai"
    assert random_lengths(text, 128, 128, 5) == (fixed(128), fixed(128))


def test_a_vllm_run_that_stopped_early_is_read_at_its_printed_mean_output() -> None:
    text = "bench: vllm bench serve ...; Total input tokens 7984000, Total generated tokens 388750"
    prompt, output = random_lengths(text, 8000, 4000, 998)
    assert prompt == fixed(8000)
    assert output == fixed(390)  # 388,750 / 998


def test_sglang_totals_below_the_nominal_keep_the_uniform_draw() -> None:
    text = "sglang.bench_serving random_range_ratio as printed; completed=5; total_input_tokens=370; total_output_tokens=379"
    assert random_lengths(text, 128, 128, 5) == (LengthDist("uniform", 1, 128), LengthDist("uniform", 1, 128))


def test_printed_means_need_both_totals_and_divide_by_the_completed_requests() -> None:
    from tokometer.fitting.random_lengths import printed_means

    assert printed_means("Total input tokens 219171, Total generated tokens 200752", 1000) == (219.171, 200.752)
    assert printed_means("completed=5; total_input_tokens=640; total_output_tokens=600", 10) == (128.0, 120.0)
    assert printed_means("Total input tokens 219171", 1000) is None
