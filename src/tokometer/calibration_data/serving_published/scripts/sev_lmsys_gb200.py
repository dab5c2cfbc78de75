import sys; sys.path.insert(0, '/tmp/sev')
from common import writer, row
SRC = 'LMSYS-GB200'
P1 = 'github:lm-sys/lm-sys.github.io@00766f6b72b99cccd775561f9f8d31e966e05e3f:blog/2025-06-16-gb200-part-1.md (https://lmsys.org/blog/2025-06-16-gb200-part-1/)'
P2 = 'github:lm-sys/lm-sys.github.io@0f320187180ab49e752be9dbc2add93adaa7fd55:blog/2025-09-25-gb200-part-2.md (https://lmsys.org/blog/2025-09-25-gb200-part-2/)'
R = [
 ('p1-decode', P1, 'tput_out', 'output tokens/s per GPU (decode)', '7583', '7,583', 'decode, 12 nodes (trays) of the 14 provided for decode, prefill on the rest; no MTP', '', '', 'decode ranks on 12 GB200 nodes (EP, DP attention)', '2025-06-16', 'post: "SGLang achieved 7,583 tokens per second per GPU for decoding on the GB200 NVL72 ... for 2,000-token input lengths"; slow-down API used to saturate decode nodes; reproduction https://github.com/sgl-project/sglang/issues/7227'),
 ('p2-prefill-lowprec', P2, 'tput_in', 'input tokens/s per GPU (prefill)', '26156', '26,156', 'prefill, FP8 attention + NVFP4 MoE, 2 ranks per prefill instance', 'NVFP4 (MoE and output projection), FP8 q_b_proj', 'fp8', 'prefill instances of 2 ranks', '2025-09-25', 'post: "SGLang achieved 26,156 input and 13,386 output tokens per second per GPU for prefill and decode ... for 2000-token input sequences"'),
 ('p2-decode-lowprec', P2, 'tput_out', 'output tokens/s per GPU (decode)', '13386', '13,386', 'decode, FP8 attention + NVFP4 MoE, 48 ranks (large-scale EP); batch size chosen to fill the KV cache ("1408 for 2k ISL")', 'NVFP4 (MoE and output projection), FP8 q_b_proj', 'fp8', 'decode on 48 ranks (large-scale EP, DP attention)', '2025-09-25', 'post: batch size "chosen to make KV cache roughly full (thus 768 for 4k ISL and 1408 for 2k ISL)"'),
 ('p2-prefill-origprec', P2, 'tput_in', 'input tokens/s per GPU (prefill)', '18471', '18,471', 'prefill, BF16 attention + FP8 MoE, 4 ranks per prefill instance', 'FP8 (MoE), BF16 attention', 'bf16', 'prefill instances of 4 ranks', '2025-09-25', 'post: "Even with traditional BF16 attention and FP8 MoE, SGLang still achieves 18,471 input and 9,087 output tokens per second"'),
 ('p2-decode-origprec', P2, 'tput_out', 'output tokens/s per GPU (decode)', '9087', '9,087', 'decode, BF16 attention + FP8 MoE, 48 ranks (large-scale EP)', 'FP8 (MoE), BF16 attention', 'bf16', 'decode on 48 ranks (large-scale EP, DP attention)', '2025-09-25', 'post: "Even with traditional BF16 attention and FP8 MoE, SGLang still achieves 18,471 input and 9,087 output tokens per second"'),
]
w = writer(sys.argv[1]); n = 0
for rid, ref, metric, unit, v, vs, head, q, kv, par, date, note in R:
    n += 1
    nd = 48 if rid.startswith('p2-decode') else ''
    w.writerow(row(row_id=f'{SRC}-{rid}', source_id=SRC, source_ref=ref, engine='SGLang', engine_version='', backend='PD disaggregation, large-scale EP (DeepEP), DP attention; Blackwell DeepGEMM/FlashInfer kernels',
        hardware_id='gb200', hardware_as_stated='GB200 NVL72', n_devices=nd, parallelism=par, model='DeepSeek V3/R1', total_params_b=671, active_params_b=37,
        params_basis="DeepSeek's published total/active counts (not printed in this source)", quant=q, model_size_basis='not stated in source',
        prompt_tokens=2000, gen_tokens='', metric=metric, unit=unit, value=v, value_as_stated=vs, table_heading=head, measured_date='',
        flag='multinode;disaggregated;phase_isolated', notes='; '.join([note, f'post date {date}; phase-isolated setup following the large-scale EP post (baseline numbers copied from it)', 'SGLang version not printed']),
        scenario='static-batch', dataset='not stated (2000-token inputs)', kv_cache_dtype=kv))
print(n)
