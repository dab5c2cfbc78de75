import sys; sys.path.insert(0, '/tmp/sev')
from common import writer, row
SRC = 'LMSYS-LARGE-EP'
REF = 'github:lm-sys/lm-sys.github.io@2db4e4042b31f3c3c9f4f93068ae80946d25a115:blog/2025-05-05-large-scale-ep.md (https://lmsys.org/blog/2025-05-05-large-scale-ep/), section "Evaluation"'
COMMON = ['SGLang PD disaggregation with DeepEP (normal dispatch for prefill, low-latency dispatch for decode), DeepGEMM, two-batch overlap, EPLB, DP attention and DP dense FFN (--moe-dense-tp-size=1), per the post',
          'phase-isolated measurement: "we independently evaluated the prefill (P) and decode (D) phases, assuming unlimited resources for the non-tested phase"',
          'reproduction instructions: https://github.com/sgl-project/sglang/issues/6017 (SGLang version not printed in the post)', 'model: DeepSeek (V3/R1 671B, the post says DeepSeek)']
R = [
 ('prefill-1k', 'tput_in', 'input tokens/s per node', '57674', '57,674', 1000, '', 'prefill: 4 nodes (4x8xH100, EP32), prompt length 1K', 32, 'ep=32 (4 nodes, dp-attention)', '', []),
 ('prefill-2k', 'tput_in', 'input tokens/s per node', '54543', '54,543', 2000, '', 'prefill: 4 nodes (4x8xH100, EP32), prompt length 2K', 32, 'ep=32 (4 nodes, dp-attention)', '', []),
 ('prefill-4k', 'tput_in', 'input tokens/s per node', '50302', '50,302', 4096, '', 'prefill: 4 nodes EP32, prompt length 4K; also "Overall Throughput" table column "SGLang (Default)": Batch Size 16,384 (tokens per device), Input Length 4,096', 32, 'ep=32 (4 nodes, dp-attention)', '16384 tokens per device', []),
 ('prefill-4k-perfect-eplb', 'tput_in', 'input tokens/s per node', '59337', '59,337', 4096, '', 'Overall Throughput table, column "SGLang + Simulated Perfect EPLB" (random expert selection following group-limited routing)', 32, 'ep=32 (4 nodes, dp-attention)', '16384 tokens per device', ['simulated_expert_balance']),
 ('decode-2k', 'tput_out', 'output tokens/s per node', '22282', '22,282', 2000, '', 'decode: 9 nodes (9x8xH100, EP72) for 2K inputs; decode table column "SGLang (Default)": Batch Size 256, KV Cache Length 2,000, Number of Nodes 9', 72, 'ep=72 (9 nodes, dp-attention)', '256 per device', []),
 ('decode-4k-sim-mtp', 'tput_out', 'output tokens/s per node', '17373', '17,373', 4000, '', 'decode table column "SGLang + Simulated MTP (Slow Attention)": Batch Size 128, KV Cache Length 4,000, Number of Nodes 9 (attention kernels intentionally slowed)', 72, 'ep=72 (9 nodes, dp-attention)', '128 per device', ['simulated_mtp_slow_attention']),
]
w = writer(sys.argv[1]); n = 0
for rid, metric, unit, v, vs, isl, osl, head, nd, par, bs, fl in R:
    n += 1
    w.writerow(row(row_id=f'{SRC}-{rid}', source_id=SRC, source_ref=REF, engine='SGLang', engine_version='', backend='PD disaggregation, DeepEP, DeepGEMM, two-batch overlap, EPLB',
        hardware_id='h100-sxm', hardware_as_stated='8 H100 GPUs per node (Atlas Cloud)', n_devices=nd, parallelism=par, model='DeepSeek-V3/R1 (671B)', total_params_b=671, active_params_b=37,
        params_basis="DeepSeek's published total/active counts (not printed in this source)", quant='', model_size_basis='not stated in source',
        batch_size=bs, prompt_tokens=isl, gen_tokens=osl, metric=metric, unit=unit, value=v, value_as_stated=vs, table_heading=head, measured_date='',
        flag=';'.join(['multinode', 'disaggregated', 'phase_isolated', 'hw_form_factor_assumed'] + fl), notes='; '.join(COMMON), scenario='static-batch', dataset='not stated (synthetic input lengths)',
        max_num_seqs_or_batch=bs))
print(n)
