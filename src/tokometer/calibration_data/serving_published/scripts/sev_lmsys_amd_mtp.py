import sys; sys.path.insert(0, '/tmp/sev')
from common import writer, row
SRC = 'LMSYS-AMD-DSV3-MTP'
REF = 'github:lm-sys/lm-sys.github.io@03d5107bbe479b2fa51ec61ac1372903ead0f403:blog/2025-09-02-sglang-amd-deepseek-v3-mtp.md (https://lmsys.org/blog/2025-09-02-sglang-amd-deepseek-v3-mtp/)'
T1 = [(1, '17348.25', '8229.37'), (2, '17162.29', '8408.02'), (4, '17948.3', '9736.64'), (8, '19919.06', '11742.82'),
      (16, '23708.94', '15483.11'), (32, '30868.39', '21399.39'), (64, '43848.2', '35074.26')]
T2 = [(4, '3981.91', '2215.44'), (8, '5007.75', '2854.36'), (16, '6255.86', '3947.93'), (32, '7571.25', '5023.23'), (64, '11900.36', '8763.65')]
BASE = ('python3 -m sglang.launch_server --model-path /models/DeepSeek-V3/ --attention-backend aiter --trust-remote-code --tp-size 8 '
        '--enable-metrics --mem-fraction-static 0.85 --chunked-prefill-size 131072')
SPEC = ' --speculative-algorithm NEXTN --speculative-draft-model-path /models/DeepSeek-V3-NextN/ --speculative-num-steps 2 --speculative-eagle-topk 1 --speculative-num-draft-tokens 3 --speculative-accept-threshold-single=0.001'
w = writer(sys.argv[1]); n = 0
for tab, data, ds, head in (('Table 1', T1, 'random', 'Table 1. End-to-end latency ... on random dataset'), ('Table 2', T2, 'ShareGPT', 'Table 2. End-to-end latency ... on ShareGPT dataset')):
    for conc, base, mtp in data:
        for label, v, spec in (('Without MTP', base, False), ('With MTP', mtp, True)):
            n += 1
            notes = ['end-to-end latency in ms per request (statistic not stated)', 'launch: ' + BASE + (SPEC if spec else ''),
                     'client command printed in the post: sglang.bench_serving --dataset-name random --num-prompt 300 --request-rate 1 --random-input 1024 --random-output 1024 (it does not show --max-concurrency; the tables are per max concurrency, so ISL/OSL and request count are left blank)',
                     'ROCm 6.3.0; docker lmsysorg/sglang:v0.5.0rc0-rocm630-mi30x named for reproduction', 'Speedup Ratio column not transcribed (derived)']
            if spec: notes.append('speculative: MTP via NEXTN (num-steps 2, eagle-topk 1, num-draft-tokens 3)')
            w.writerow(row(row_id=f'{SRC}-{tab[-1]}-c{conc}-{"mtp" if spec else "base"}', source_id=SRC, source_ref=REF + f' {tab}',
                engine='SGLang', engine_version='v0.4.10.post1', backend='attention-backend aiter; chunked-prefill-size 131072; mem-fraction-static 0.85',
                hardware_id='mi300x', hardware_as_stated='8 AMD MI300X GPUs', n_devices=8, parallelism='tp=8', model='DeepSeek-V3',
                total_params_b=671, active_params_b=37, params_basis="DeepSeek's published total/active counts (not printed in this source)",
                quant='', model_size_basis='not stated in source', metric='e2e_ms', unit='ms per request', value=v, value_as_stated=v,
                table_heading=f'{head}, Max Concurrency {conc}, column "{label}"', measured_date='2025-08-18',
                flag='stat_unspecified' + (';speculative_decoding' if spec else ''), notes='; '.join(notes), scenario='online-concurrency',
                concurrency=conc, dataset=ds))
print(n)
