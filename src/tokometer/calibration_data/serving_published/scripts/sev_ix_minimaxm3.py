import sys; sys.path.insert(0, '/tmp/sev')
from common import writer, row
SRC = 'IX-MINIMAXM3'
REF = 'github:SemiAnalysisAI/InferenceX-app@64acb8b7f70aa199c16ffa7c9415c85a5aae2d07:packages/app/content/blog/minimax-m3-vllm-fp8-h200-vs-b200-low-concurrency.mdx (https://inferencex.semianalysis.com/blog/minimax-m3-vllm-fp8-h200-vs-b200-low-concurrency)'
w = writer(sys.argv[1]); n = 0; seq = None
for line in open('/tmp/sev/m3/tables.md'):
    line = line.rstrip('\n')
    if line.startswith('## '): seq = line[3:]; continue
    c = [x.strip() for x in line.strip().strip('|').split('|')]
    conc = c[0]
    isl, osl = map(int, seq.split('/'))
    for hw, hid, off in (('B200', 'b200', 1), ('H200', 'h200', 4)):
        for k, (metric, unit, col) in enumerate((('tput_total', 'total tokens/s per GPU (tok/s/GPU)', 'tok/s/GPU'), ('tput_out_per_user', 'tokens/s/user', 'tok/s/user'), ('tpot_ms', 'ms', 'TPOT (ms)'))):
            vs = c[off + k]; v = vs.replace(',', ''); float(v); n += 1
            w.writerow(row(row_id=f'{SRC}-{seq.replace("/", "-")}-c{conc}-{hid}-{metric}', source_id=SRC, source_ref=REF + f' table "ISL/OSL {seq} — TP=8, non-MTP"',
                engine='vLLM', engine_version='vllm/vllm-openai:minimax-m3 (image named in the post)', backend='vLLM FP8; Blackwell FP8 block-scale MoE defaults to DeepGEMM, Hopper runs Marlin (per the post)',
                hardware_id=hid, hardware_as_stated=hw, n_devices=8, parallelism='tp=8,ep=1', model='MiniMax M3', total_params_b=428, active_params_b='',
                params_basis='total as printed in the post (428B); active count not published per the post', quant='FP8', model_size_basis='not stated in source',
                prompt_tokens=isl, gen_tokens=osl, metric=metric, unit=unit, value=v, value_as_stated=vs,
                table_heading=f'ISL/OSL {seq} — TP=8, non-MTP, Conc {conc}, column "{hw} {col}"', measured_date='2026-06-13',
                flag='nominal_random_lengths' + (';stat_unspecified' if metric == 'tpot_ms' else '') + (';hw_form_factor_assumed' if hid == 'h200' else ''),
                notes='; '.join(['post: "All rows are MiniMax M3 on vLLM FP8, single-node, non-MTP, measured on InferenceX on 2026-06-13. Throughput is per-GPU." Recipe fixed at TP=8 / EP=1',
                                 'tok/s/GPU taken as InferenceX tput_per_gpu (input+output per GPU); H200/B200 ratio column and interpolated iso-interactivity tables not transcribed']),
                scenario='online-concurrency', concurrency=conc, dataset='random (InferenceX fixed-seq-len)'))
print(n)
