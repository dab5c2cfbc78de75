import sys; sys.path.insert(0, '/tmp/sev')
from common import writer, row
SRC = 'LMSYS-K2-EP'
REF = 'github:lm-sys/lm-sys.github.io@09af7eee05b80cbe15a2a29f05a81949564b2548:blog/2025-07-20-k2-large-scale-ep.md (https://lmsys.org/blog/2025-07-20-k2-large-scale-ep/)'
R = [
 ('prefill-cluster', 'tput_in', 'k tokens/s (prefill, 4 P nodes together)', '224', '224k tokens/sec (4 P Nodes)', 'Cluster-Level Performance (128 x H200 GPUs): Prefill Throughput', 32, 'prefill: 4 nodes (PD disaggregated, large-scale EP)'),
 ('decode-cluster', 'tput_out', 'k tokens/s (decode, 12 D nodes together)', '288', '288k tokens/sec (12 D Nodes)', 'Cluster-Level Performance (128 x H200 GPUs): Decode Throughput', 96, 'decode: 12 nodes (PD disaggregated, large-scale EP, 96 redundant experts)'),
 ('prefill-per-node', 'tput_in', 'k tokens/s per node (prefill)', '56', '56k / node', 'Comparison to DeepSeek R1 Deployment, row Kimi K2, column Prefill Throughput (tokens/sec)', 32, 'prefill: 4 nodes (PD disaggregated, large-scale EP)'),
 ('decode-per-node', 'tput_out', 'k tokens/s per node (decode)', '24', '24k / node', 'Comparison to DeepSeek R1 Deployment, row Kimi K2, column Decode Throughput (tokens/sec)', 96, 'decode: 12 nodes (PD disaggregated, large-scale EP, 96 redundant experts)'),
]
w = writer(sys.argv[1]); n = 0
for rid, metric, unit, v, vs, head, nd, par in R:
    n += 1
    w.writerow(row(row_id=f'{SRC}-{rid}', source_id=SRC, source_ref=REF, engine='SGLang (deployed with OME)', engine_version='', backend='PD disaggregation (1P1D), DeepEP low_latency decode, ep-dispatch-algorithm=dynamic, EPLB, SGLang router',
        hardware_id='h200', hardware_as_stated='128 H200 GPUs (NVIDIA DGX Cloud), 1P1D: 4 nodes/P and 12 nodes/D', n_devices=nd, parallelism=par,
        model='Kimi-K2-Instruct', total_params_b=1000, active_params_b=32, params_basis='as printed in the post (1 trillion total, 32 billion activated)', quant='', model_size_basis='not stated in source',
        batch_size=480 if 'decode' in rid else '', prompt_tokens=2000, gen_tokens=100, metric=metric, unit=unit, value=v, value_as_stated=vs, table_heading=head, measured_date='',
        flag='multinode;disaggregated;hw_form_factor_assumed;k_units', notes='; '.join(['benchmark: Input Length 2000 tokens, Output Length 100 tokens, Decode Batch Size 480 (post table)', 'values printed in thousands ("224k"); value column keeps the printed number, unit says k tokens/s', 'n_devices from the printed node split (4 P nodes, 12 D nodes of the 128-GPU, 8-GPU-per-node cluster: 128/16 = 8 per node is implied, not printed)', 'post date 2025-07-20; SGLang version not printed']),
        scenario='static-batch', dataset='not stated (2000-in/100-out benchmark as in the DeepSeek large-scale EP post)', max_num_seqs_or_batch=480 if 'decode' in rid else ''))
print(n)
