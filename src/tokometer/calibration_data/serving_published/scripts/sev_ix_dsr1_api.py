"""InferenceX production-API snapshot (DeepSeek-R1-0528) -> serving format rows."""
import csv, json, sys
HDR = open('/work/main/src/tokometer/calibration_data/serving.csv').readline().strip().split(',')
SRC = 'IX-DSR1-API'
COMMIT = '528c4146b8f502fcbce8df7870a935a970cbae25'
REF = (f'github:SemiAnalysisAI/InferenceX-app@{COMMIT}:packages/app/cypress/fixtures/api/benchmarks.json '
       '(capture of https://inferencex.semianalysis.com/api/v1/benchmarks?model=DeepSeek-R1-0528 by scripts/capture-cypress-fixtures.ts; '
       'copy read from fork vngcloud/InferenceX-app, same commit); run: {run}')
ENG = {'sglang': 'SGLang', 'trt': 'TensorRT-LLM', 'dynamo-trt': 'Dynamo + TensorRT-LLM', 'dynamo-sglang': 'Dynamo + SGLang',
       'atom': 'ATOM', 'mori-sglang': 'SGLang (MoRI)'}
HW = {'h100': 'h100-sxm', 'h200': 'h200', 'b200': 'b200', 'b300': 'b300', 'gb200': 'gb200', 'gb300': '',
      'mi300x': 'mi300x', 'mi325x': 'mi325x', 'mi355x': 'mi355x'}
HWFLAG = {'h100': 'hw_form_factor_assumed', 'h200': 'hw_form_factor_assumed'}
MET = [  # key, metric, unit
    ('output_tput_per_gpu', 'tput_out', 'output tokens/s per GPU'),
    ('tput_per_gpu', 'tput_total', 'total (input+output) tokens/s per GPU'),
    ('input_tput_per_gpu', 'tput_in', 'input tokens/s per GPU'),
    ('median_intvty', 'tput_out_per_user', 'tokens/s/user (median interactivity)'),
    ('mean_ttft', 'ttft_s_mean', 's'), ('median_ttft', 'ttft_s_p50', 's'), ('p99_ttft', 'ttft_s_p99', 's'),
    ('mean_tpot', 'tpot_s_mean', 's'), ('median_tpot', 'tpot_s_p50', 's'), ('p99_tpot', 'tpot_s_p99', 's'),
    ('mean_itl', 'itl_s_mean', 's'), ('median_itl', 'itl_s_p50', 's'), ('p99_itl', 'itl_s_p99', 's'),
    ('mean_e2el', 'e2e_s_mean', 's'), ('median_e2el', 'e2e_s_p50', 's'), ('p99_e2el', 'e2e_s_p99', 's'),
]
raw = open(sys.argv[1]).read()
data = json.loads(raw)
out = csv.DictWriter(open(sys.argv[2], 'w', newline=''), fieldnames=HDR)
out.writeheader()
n = 0
for i, r in enumerate(data):
    assert r['model'] == 'dsr1'
    def side(p):
        s = f"tp={r[p+'_tp']},ep={r[p+'_ep']}" + (' (dp-attention)' if r[p+'_dp_attention'] else '')
        return s
    flags = []
    if r['disagg']:
        par = (f"disaggregated: prefill {side('prefill')} x{r['prefill_num_workers']} workers; "
               f"decode {side('decode')} x{r['decode_num_workers']} workers")
        ndev = ''
        flags.append('disaggregated')
    else:
        par = side('decode')
        ndev = r['decode_tp']
    if r['is_multinode']:
        flags.append('multinode')
    if HWFLAG.get(r['hardware']):
        flags.append(HWFLAG[r['hardware']])
    spec = r['spec_method']
    notes = [f"InferenceX fixed-seq-len sweep; API fields as printed: framework={r['framework']}, precision={r['precision']}, "
             f"spec_method={spec}, disagg={str(r['disagg']).lower()}, is_multinode={str(r['is_multinode']).lower()}, "
             f"prefill_tp={r['prefill_tp']}, prefill_ep={r['prefill_ep']}, prefill_dp_attention={str(r['prefill_dp_attention']).lower()}, "
             f"prefill_num_workers={r['prefill_num_workers']}, decode_tp={r['decode_tp']}, decode_ep={r['decode_ep']}, "
             f"decode_dp_attention={str(r['decode_dp_attention']).lower()}, decode_num_workers={r['decode_num_workers']}, "
             f"num_prefill_gpu={r['num_prefill_gpu']}, num_decode_gpu={r['num_decode_gpu']}, image={r['image']}"]
    if spec != 'none':
        notes.append(f'speculative: {spec}')
        flags.append('speculative_decoding')
    if not r['disagg']:
        notes.append('n_devices = decode_tp of the aggregated replica (API num_*_gpu fields kept above as printed)')
    notes.append('ISL/OSL are the nominal random-dataset lengths (InferenceX benchmark_lib.sh passes --random-range-ratio; ratio not in the API row)')
    notes.append('latencies in seconds as the API returns them; quant kept as printed (fp4 format not named in the API row)')
    flags.append('nominal_random_lengths')
    for key, metric, unit in MET:
        if key not in r['metrics'] or r['metrics'][key] is None:
            continue
        v = r['metrics'][key]
        n += 1
        out.writerow({
            'row_id': f'{SRC}-{i:03d}-{metric}', 'source_id': SRC, 'source_ref': REF.format(run=r['run_url']),
            'engine': ENG[r['framework']], 'engine_version': r['image'] or '',
            'backend': r['framework'], 'hardware_id': HW[r['hardware']], 'hardware_as_stated': r['hardware'],
            'n_devices': ndev, 'parallelism': par, 'model': 'DeepSeek-R1-0528', 'params_as_stated': '',
            'total_params_b': 671, 'active_params_b': 37,
            'params_basis': 'DeepSeek published total/active counts (not printed in this source)',
            'quant': r['precision'], 'quant_nominal_bits': '', 'bits_per_weight': '', 'model_size': '', 'model_size_unit': '',
            'model_size_basis': 'not stated in source', 'batch_size': '', 'prompt_tokens': r['isl'], 'gen_tokens': r['osl'],
            'metric': metric, 'unit': unit, 'value': repr(v), 'value_as_stated': json.dumps(v),
            'table_heading': f"api/v1/benchmarks row {i} ({r['hardware']} {r['framework']} {r['precision']} isl={r['isl']} osl={r['osl']} conc={r['conc']})",
            'measured_date': r['date'], 'flag': ';'.join(flags), 'notes': '; '.join(notes),
            'scenario': 'online-concurrency', 'request_rate': '', 'concurrency': r['conc'], 'num_requests': '',
            'dataset': 'random (synthetic, vllm/sglang bench_serving --dataset-name random)', 'kv_cache_dtype': '',
            'max_num_seqs_or_batch': ''})
print(n, 'rows from', len(data), 'records')
