import sys, re, subprocess; sys.path.insert(0, '/tmp/sev')
from common import writer, row
REPO = '/work/.mirror/vllm-project+recipes/repo'
COMMIT = subprocess.check_output(['git', '-C', REPO, 'rev-parse', 'HEAD'], text=True).strip()
SRC = 'VLLM-RECIPES'
KEYS = [('Request throughput (req/s)', 'req_per_s', 'req/s'), ('Output token throughput (tok/s)', 'tput_out', 'tok/s (output, whole server)'),
        ('Total Token throughput (tok/s)', 'tput_total', 'tok/s (input+output, whole server)'),
        ('Mean TTFT (ms)', 'ttft_ms_mean', 'ms'), ('Median TTFT (ms)', 'ttft_ms_p50', 'ms'), ('P99 TTFT (ms)', 'ttft_ms_p99', 'ms'),
        ('Mean TPOT (ms)', 'tpot_ms_mean', 'ms'), ('Median TPOT (ms)', 'tpot_ms_p50', 'ms'), ('P99 TPOT (ms)', 'tpot_ms_p99', 'ms'),
        ('Mean ITL (ms)', 'itl_ms_mean', 'ms'), ('Median ITL (ms)', 'itl_ms_p50', 'ms'), ('P99 ITL (ms)', 'itl_ms_p99', 'ms')]
# (doc, heading that precedes the block, meta)
BLOCKS = [
    ('moonshotai/Kimi-K2-Think.md', '### TP8 Benchmark Output', dict(model='moonshotai/Kimi-K2-Thinking', hw='8*H200', hid='h200', nd=8, par='tp=8', tb=1000, ab=32,
        launch='vllm serve moonshotai/Kimi-K2-Thinking --tensor-parallel-size 8 --enable-auto-tool-choice --tool-call-parser kimi_k2 --reasoning-parser kimi_k2 --trust-remote-code',
        bench='vllm bench serve --model moonshotai/Kimi-K2-Thinking --dataset-name random --random-input 8000 --random-output 4000 --request-rate 100 --num-prompt 1000 --trust-remote-code', isl=8000, osl=4000, rate='100')),
    ('moonshotai/Kimi-K2-Think.md', '### TP8+DCP8 Benchmark Output', dict(model='moonshotai/Kimi-K2-Thinking', hw='8*H200', hid='h200', nd=8, par='tp=8,dcp=8 (decode context parallel)', tb=1000, ab=32,
        launch='vllm serve moonshotai/Kimi-K2-Thinking --tensor-parallel-size 8 --decode-context-parallel-size 8 --enable-auto-tool-choice --tool-call-parser kimi_k2 --reasoning-parser kimi_k2 --trust-remote-code',
        bench='vllm bench serve --model moonshotai/Kimi-K2-Thinking --dataset-name random --random-input 8000 --random-output 4000 --request-rate 100 --num-prompt 1000 --trust-remote-code', isl=8000, osl=4000, rate='100')),
    ('DeepSeek/DeepSeek-V3_2.md', '### TP8 Benchmark Output', dict(model='deepseek-ai/DeepSeek-V3.2', hw='8xH20', hid='', nd=8, par='tp=8', tb=671, ab=37,
        launch='vllm serve deepseek-ai/DeepSeek-V3.2 --tensor-parallel-size 8 --tokenizer-mode deepseek_v32 --tool-call-parser deepseek_v32 --enable-auto-tool-choice --reasoning-parser deepseek_v3',
        bench='vllm bench serve --model deepseek-ai/DeepSeek-V3.2 --dataset-name random --random-input 2048 --random-output 1024 --request-rate 10 --num-prompt 100 --trust-remote-code', isl=2048, osl=1024, rate='10')),
]
w = writer(sys.argv[1]); n = 0
for doc, head, m in BLOCKS:
    text = subprocess.check_output(['git', '-C', REPO, 'show', f'HEAD:{doc}'], text=True)
    i = text.index(head); blk = text[i:text.index('```', text.index('Serving Benchmark Result', i))]
    assert blk.count('Serving Benchmark Result') == 1
    vals = dict(re.findall(r'^([A-Za-z][A-Za-z0-9 ()/.,-]*?):\s+(-?[0-9.]+)\s*$', blk, re.M))
    for k, metric, unit in KEYS:
        v = vals[k]; n += 1
        w.writerow(row(row_id=f"{SRC}-{doc.split('/')[1][:-3]}-{head.split()[1]}-{metric}", source_id=SRC, source_ref=f'github:vllm-project/recipes@{COMMIT}:{doc} (section "{head.strip("# ")}")',
            engine='vLLM', engine_version='', backend=m['launch'], hardware_id=m['hid'], hardware_as_stated=m['hw'], n_devices=m['nd'], parallelism=m['par'],
            model=m['model'], total_params_b=m['tb'], active_params_b=m['ab'], params_basis="model vendor's published total/active counts (not printed in this source)",
            quant='', model_size_basis='not stated in source', prompt_tokens=m['isl'], gen_tokens=m['osl'], metric=metric, unit=unit, value=v, value_as_stated=v,
            table_heading=f'{head.strip("# ")}: Serving Benchmark Result', flag='nominal_random_lengths' + (';hw_form_factor_assumed' if m['hid'] == 'h200' else ''),
            notes='; '.join([f'bench: {m["bench"]}', f"Successful requests {vals.get('Successful requests')}, Failed requests {vals.get('Failed requests','')}, Total input tokens {vals.get('Total input tokens')}, Total generated tokens {vals.get('Total generated tokens')} (generated tokens below nominal: no --ignore-eos)", 'vLLM version not stated in the recipe']),
            scenario='online-rate', request_rate=m['rate'], num_requests=vals.get('Successful requests'), dataset='random (vllm bench serve)'))
print(n)
