"""What InferenceX's harness sets on each run it publishes (sources IX-*), read from its scripts.

The rows print the device, engine, model, format, layout and client count, not the launch flags or
the client's length draws; those are the harness's, the same for every run of a script, so they are
read here from github:SemiAnalysisAI/InferenceX (each value with the file that sets it) and applied
to the simulated run by `serving_runs.plan_run`. Nothing here is fitted.
"""

from __future__ import annotations

from typing import NamedTuple

# InferenceX's sweeps (sources IX-*), as its harness runs them (github:SemiAnalysisAI/InferenceX:
# .github/workflows/benchmark-tmpl.yml sets RANDOM_RANGE_RATIO 0.8; the benchmark scripts pass
# --random-range-ratio "$RANDOM_RANGE_RATIO" --num-prompts $((CONC * 10)) --max-concurrency "$CONC";
# utils/bench_serving/benchmark_serving.py draws each input and output length uniformly from
# [int(L * ratio), L]). The rows print neither, so these are the harness's values, not the row's.
INFERENCEX_PREFIX = "IX-"
INFERENCEX_RANGE_RATIO = 0.8
INFERENCEX_PROMPTS_PER_CLIENT = 10
# InferenceX's client times ITL per streamed chunk; a disaggregated run's recipe sets the chunk (the decode
# workers' stream interval) and the API row does not carry it: measured mean ITL / mean TPOT takes a handful of
# values, 1, 10, 20, 30, 49 and 95-99 without MTP (2-290 with it), across IX-DSR1-API's Dynamo and MoRI runs,
# each repeated over many concurrencies: a chunk size, not a step cost (`serving_runs.plan_run` sets it)
INFERENCEX_DISAGG_ITL = (
    "ITL timed per streamed chunk whose size the disaggregated recipe sets and the row does not state "
    "(measured ITL / TPOT 10-99 without MTP); TPOT and tokens/s per user are scored"
)
# InferenceX's TensorRT-LLM servers stream every 10th token (`stream_interval: 10` in the
# extra-llm-api-config its benchmarks/*trt*.sh scripts write), so its clients' ITL is 10 tokens' time
INFERENCEX_TRTLLM_STREAM_TOKENS = 10
# InferenceX's DeepSeek-R1 SGLang scripts for Blackwell launch with --scheduler-recv-interval 10, or 30 from
# 16 clients ("recv every ~10 requests; if CONC >= 16, relax to ~30"): B200 (benchmarks/dsr1_fp8_b200.sh,
# dsr1_fp4_b200_docker.sh; since the 2026-02 reorganisation single_node/fixed_seq_len/dsr1_fp{8,4}_b200.sh),
# B300 (single_node/fixed_seq_len/dsr1_fp8_b300.sh, dsr1_fp4_b300.sh: "reuses the DSR1 FP8 B200 SGLang
# recipe"), and their MTP variants (dsr1_fp8_b200_mtp.sh, dsr1_fp8_b300_mtp.sh, dsr1_fp4_b200_mtp.sh); the
# FP8 scripts' TP 4 branch keeps 10, and the FP4 B200 scripts reset it to 1 under attention DP
# ("if DP_ATTENTION == true: SCHEDULER_RECV_INTERVAL=1"). The H200 scripts (dsr1_fp8_h200.sh,
# dsr1_fp8_h200_mtp.sh) and the disaggregated launches set none: SGLang's default of 1.
INFERENCEX_SGLANG_RECV = {"b200": (10, 30), "b300": (10, 30)}
INFERENCEX_SGLANG_RECV_FROM_CLIENTS = 16
# The same SGLang scripts' --stream-interval (a chunk every N decode passes; the first token at once), per
# device and checkpoint format: dsr1_fp8_b200.sh, dsr1_fp8_b300.sh and their _mtp variants 30;
# dsr1_fp4_b200.sh, dsr1_fp4_b300.sh, dsr1_fp4_b200_mtp.sh, dsr1_fp8_h200.sh, dsr1_fp8_h200_mtp.sh 10;
# the MI300X/MI325X/MI355X scripts set none (1)
INFERENCEX_SGLANG_STREAM = {("b200", "fp8"): 30, ("b300", "fp8"): 30, ("b200", "fp4"): 10, ("b300", "fp4"): 10,
                            ("h200", "fp8"): 10}
# InferenceX's DeepSeek-R1 TensorRT-LLM scripts (single_node/fixed_seq_len/dsr1_fp{4,8}_b200_trt{,_mtp}.sh,
# dsr1_fp8_h200_trt{,_mtp}.sh; benchmarks/*_trt_slurm.sh before 2026-01) write, with DP_ATTENTION=true,
# `attention_dp_config: {batching_wait_iters: 0, enable_balance: true, timeout_iters: 60}`
INFERENCEX_TRTLLM_ADP_TIMEOUT_STEPS = 60


class LaunchFlags(NamedTuple):
    """The launch flags a run carries into the simulator (`serving_runs.Run`)."""

    stream_tokens: int = 1  # tokens per streamed chunk (TensorRT-LLM stream_interval, SGLang --stream-interval)
    recv_interval: int = 1  # SGLang --scheduler-recv-interval
    adp_balance_timeout: int = 0  # TensorRT-LLM attention-DP balance timeout_iters (0: no balance)


def launch_flags(engine: str, hardware_id: str, quant: str, model: str, clients: float, *, tp: int, dp: int,
                 disaggregated: bool) -> LaunchFlags:
    """The flags InferenceX's script for this run passes: TensorRT-LLM streams every 10th token; its
    DeepSeek-R1 SGLang scripts set a stream and a receive interval per device and format (aggregated runs
    only, the receive interval without attention DP and kept at 10 for FP8 at TP 4); its DeepSeek-R1
    TensorRT-LLM scripts balance attention-DP context requests with a 60-step timeout."""
    stream, recv, adp = 1, 1, 0
    r1 = "DeepSeek-R1" in model
    if engine == "tensorrt-llm":
        stream = INFERENCEX_TRTLLM_STREAM_TOKENS
        if dp > 1 and not disaggregated and r1:
            adp = INFERENCEX_TRTLLM_ADP_TIMEOUT_STEPS
    if engine == "sglang" and not disaggregated and r1:
        stream = INFERENCEX_SGLANG_STREAM.get((hardware_id, quant.lower()), stream)
        intervals = INFERENCEX_SGLANG_RECV.get(hardware_id)
        if intervals and dp == 1:
            fp8_tp4 = tp == 4 and quant.lower() == "fp8"
            recv = intervals[1] if clients >= INFERENCEX_SGLANG_RECV_FROM_CLIENTS and not fp8_tp4 else intervals[0]
    return LaunchFlags(stream, recv, adp)
