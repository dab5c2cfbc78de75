"""InferenceX blog posts (packages/app/content/blog/*.mdx): per-config result tables -> serving rows."""
import sys, re, subprocess; sys.path.insert(0, '/tmp/sev')
from common import writer, row
REPO = '/work/.mirror/vngcloud+InferenceX-app/repo'
COMMIT = subprocess.check_output(['git', '-C', REPO, 'rev-parse', 'HEAD'], text=True).strip()
SRC = 'IX-BLOG'
B = 'packages/app/content/blog/'
GLM5 = dict(model_tb=(744, 40))
M = {  # (file, table index) -> meta
 ('b200-glm5-nvfp4-vs-h200-fp8-3-6x-perf-per-dollar.mdx', 0): dict(model='zai-org/GLM-5-FP8', hid='h200', hw='H200 SXM', eng='SGLang', ver='v0.5.12', q='FP8', spec='MTP (EAGLE: --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4)', par='tp=8', nd=8, isl=8192, osl=1024, date='2026-05-25'),
 ('b200-glm5-nvfp4-vs-h200-fp8-3-6x-perf-per-dollar.mdx', 1): dict(model='zai-org/GLM-5-FP8', hid='b200', hw='B200 SXM', eng='SGLang', ver='v0.5.12', q='FP8', spec='MTP (EAGLE: --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4)', par='tp=8', nd=8, isl=8192, osl=1024, date='2026-05-25'),
 ('b200-glm5-nvfp4-vs-h200-fp8-3-6x-perf-per-dollar.mdx', 2): dict(model='nvidia/GLM-5-NVFP4', hid='b200', hw='B200 SXM', eng='SGLang', ver='v0.5.12', q='NVFP4', spec='MTP (EAGLE: --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4)', par='tp=4', nd=4, isl=8192, osl=1024, date='2026-05-25'),
 ('b200-glm5-nvfp4-vs-h200-fp8-3-6x-perf-per-dollar.mdx', 3): dict(model='nvidia/GLM-5-NVFP4', hid='b200', hw='B200 SXM', eng='SGLang', ver='v0.5.12', q='NVFP4', spec='MTP (EAGLE: --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4)', par='tp=8', nd=8, isl=8192, osl=1024, date='2026-05-25'),
 ('b200-minimax-m2-5-vllm-nvfp4-vs-h100-fp8-perf-per-dollar.mdx', 0): dict(model='MiniMaxAI/MiniMax-M2.5', hid='h100-sxm', hw='H100 SXM', eng='vLLM', ver='', q='FP8', spec=None, par='tp=8', nd=8, isl=8192, osl=1024, date='2026-05-22'),
 ('b200-minimax-m2-5-vllm-nvfp4-vs-h100-fp8-perf-per-dollar.mdx', 1): dict(model='MiniMaxAI/MiniMax-M2.5', hid='b200', hw='B200 SXM', eng='vLLM', ver='', q='FP8', spec=None, par='tp=2', nd=2, isl=8192, osl=1024, date='2026-05-22'),
 ('b200-minimax-m2-5-vllm-nvfp4-vs-h100-fp8-perf-per-dollar.mdx', 2): dict(model='MiniMaxAI/MiniMax-M2.5', hid='b200', hw='B200 SXM', eng='vLLM', ver='', q='FP8', spec=None, par='tp=4', nd=4, isl=8192, osl=1024, date='2026-05-22'),
 ('b200-minimax-m2-5-vllm-nvfp4-vs-h100-fp8-perf-per-dollar.mdx', 3): dict(model='nvidia/MiniMax-M2.5-NVFP4', hid='b200', hw='B200 SXM', eng='vLLM', ver='', q='NVFP4', spec=None, par='tp=2', nd=2, isl=8192, osl=1024, date='2026-05-22'),
 ('b200-minimax-m2-5-vllm-nvfp4-vs-h100-fp8-perf-per-dollar.mdx', 4): dict(model='nvidia/MiniMax-M2.5-NVFP4', hid='b200', hw='B200 SXM', eng='vLLM', ver='', q='NVFP4', spec=None, par='tp=1', nd=1, isl=8192, osl=1024, date='2026-05-22'),
 ('b200-minimax-m2-5-vllm-nvfp4-vs-h100-fp8-perf-per-dollar.mdx', 5): dict(model='nvidia/MiniMax-M2.5-NVFP4', hid='b200', hw='B200 SXM', eng='vLLM', ver='', q='NVFP4', spec=None, par=None, nd=None, isl=8192, osl=1024, date='2026-05-22'),
 ('b200-nvfp4-vs-h200-int4-kimi-k2-vllm-perf-per-dollar.mdx', 0): dict(model='Kimi K2.5 / K2.6', hid='h200', hw='H200 SXM', eng='vLLM', ver='', q='INT4', spec=None, par='tp=8', nd=8, isl=8192, osl=1024, date='2026-05-19'),
 ('b200-nvfp4-vs-h200-int4-kimi-k2-vllm-perf-per-dollar.mdx', 1): dict(model='Kimi K2.5 / K2.6', hid='b200', hw='B200 SXM', eng='vLLM', ver='', q='INT4', spec=None, par='tp=8', nd=8, isl=8192, osl=1024, date='2026-05-19'),
 ('b200-nvfp4-vs-h200-int4-kimi-k2-vllm-perf-per-dollar.mdx', 2): dict(model='Kimi K2.5 / K2.6', hid='b200', hw='B200 SXM', eng='vLLM', ver='', q='NVFP4', spec=None, par=None, nd=None, isl=8192, osl=1024, date='2026-05-19'),
 ('gb200-nvl72-kimi-k2-5-vllm-wide-ep-3x-vs-b200.mdx', 0): dict(model='Kimi-K2.5', hid='b200', hw='B200 (16 GPU pool)', eng='vLLM', ver='', q='', spec=None, par=None, nd=None, isl=8192, osl=1024, date='2026-03-27', extra='B200 vLLM, 2026-03-27 run, non disaggregated, 16 GPU pool'),
 ('gb200-nvl72-kimi-k2-5-vllm-wide-ep-3x-vs-b200.mdx', 1): dict(model='Kimi-K2.5', hid='gb200', hw='GB200 NVL72', eng='Dynamo + vLLM', ver='', q='', spec=None, par=None, nd=None, isl=8192, osl=1024, date='2026-04-07', disagg=True, extra='GB200 NVL72 Dynamo vLLM, 2026-04-07 run, disaggregated'),
 ('gb200-nvl72-vs-b200-disagg-deepseek-r1-fp4-dynamo-trt.mdx', 0): dict(model='DeepSeek-R1-0528', hid='gb200', hw='GB200 NVL72', eng='Dynamo + TensorRT-LLM', ver='', q='FP4', spec='MTP', par=None, nd=None, isl=1024, osl=1024, date='2026-05-22', disagg=True),
 ('gb200-nvl72-vs-b200-disagg-deepseek-r1-fp4-dynamo-trt.mdx', 1): dict(model='DeepSeek-R1-0528', hid='b200', hw='B200', eng='Dynamo + TensorRT-LLM', ver='', q='FP4', spec='MTP', par=None, nd=None, isl=1024, osl=1024, date='2026-05-22', disagg=True),
 ('gb300-nvl72-vs-gb200-nvl72-dsv4-pro-vllm-fp4.mdx', 0): dict(model='deepseek-ai/DeepSeek-V4-Pro', hid='gb200', hw='GB200 NVL72', eng='Dynamo + vLLM', ver='', q='FP4', spec=None, par=None, nd=None, isl=8192, osl=1024, date='2026-05-22', disagg=True),
 ('gb300-nvl72-vs-gb200-nvl72-dsv4-pro-vllm-fp4.mdx', 1): dict(model='deepseek-ai/DeepSeek-V4-Pro', hid='', hw='GB300 NVL72', eng='Dynamo + vLLM', ver='', q='FP4', spec=None, par=None, nd=None, isl=8192, osl=1024, date='2026-05-22', disagg=True),
 ('mi355x-deepseek-v4-pro-sglang-110x-in-26-days.mdx', 0): dict(model='deepseek-ai/DeepSeek-V4-Pro', hid='mi355x', hw='single MI355X 8-GPU node', eng='SGLang (amd/deepseek_v4 side branch)', ver='rocm/sgl-dev:v0.5.10rc0-rocm720-mi35x-20260414', q='FP8', spec=None, par='', nd=None, isl=8192, osl=1024, date='2026-04-25'),
 ('mi355x-deepseek-v4-pro-sglang-110x-in-26-days.mdx', 1): dict(model='deepseek-ai/DeepSeek-V4-Pro', hid='mi355x', hw='single MI355X 8-GPU node', eng='SGLang (amd/deepseek_v4 side branch)', ver='rocm/sgl-dev:rocm720-mi35x-583b1b6-20260501-DSv4', q='FP4', spec=None, par='', nd=None, isl=8192, osl=1024, date='2026-05-02'),
 ('mi355x-deepseek-v4-pro-sglang-110x-in-26-days.mdx', 2): dict(model='deepseek-ai/DeepSeek-V4-Pro', hid='mi355x', hw='single MI355X 8-GPU node', eng='SGLang (amd/deepseek_v4 side branch)', ver='', q='FP4', spec=None, par='', nd=None, isl=8192, osl=1024, date='2026-05-04'),
 ('mi355x-deepseek-v4-pro-sglang-110x-in-26-days.mdx', 3): dict(model='deepseek-ai/DeepSeek-V4-Pro', hid='mi355x', hw='single MI355X 8-GPU node', eng='SGLang (amd/deepseek_v4 side branch)', ver='', q='FP4', spec=None, par='', nd=None, isl=8192, osl=1024, date='2026-05-10'),
 ('mi355x-deepseek-v4-pro-sglang-110x-in-26-days.mdx', 4): dict(model='deepseek-ai/DeepSeek-V4-Pro', hid='mi355x', hw='single MI355X 8-GPU node', eng='SGLang (amd/deepseek_v4 side branch)', ver='v0.5.12 (per table label)', q='FP4', spec=None, par='', nd=None, isl=8192, osl=1024, date='2026-05-21'),
 ('mi355x-glm5-fp8-sglang-40-cheaper-than-b200.mdx', 1): dict(model='GLM-5', hid='mi355x', hw='MI355X', eng='SGLang', ver='v0.12 (as printed)', q='FP8', spec='MTP', par='tp=4', nd=4, isl=8192, osl=1024, date='2026-05-20'),
 ('mi355x-glm5-fp8-sglang-40-cheaper-than-b200.mdx', 2): dict(model='GLM-5', hid='mi355x', hw='MI355X', eng='SGLang', ver='v0.12 (as printed)', q='FP8', spec='MTP', par='tp=8', nd=8, isl=8192, osl=1024, date='2026-05-20'),
 ('mi355x-glm5-fp8-sglang-40-cheaper-than-b200.mdx', 3): dict(model='GLM-5', hid='b200', hw='B200', eng='SGLang', ver='v0.12 (as printed)', q='FP8', spec=None, par='tp=8', nd=8, isl=8192, osl=1024, date='2026-05-20'),
 ('mi355x-glm5-fp8-sglang-40-cheaper-than-b200.mdx', 4): dict(model='GLM-5', hid='mi355x', hw='MI355X', eng='SGLang', ver='v0.12 (as printed)', q='FP8', spec=None, par='tp=4', nd=4, isl=8192, osl=1024, date='2026-05-20'),
 ('mi355x-kimi-k2-5-vllm-aiter-7x-speedup.mdx', 0): dict(model='Kimi-K2.5', hid='mi355x', hw='MI355X', eng='vLLM', ver='', q='', spec=None, par=None, nd=None, isl=8192, osl=1024, date=None),
 ('mi355x-kimi-k2-5-vllm-aiter-7x-speedup.mdx', 1): dict(model='Kimi-K2.5', hid='mi355x', hw='MI355X', eng='vLLM', ver='', q='', spec=None, par=None, nd=None, isl=8192, osl=1024, date=None),
 ('mi355x-qwen3-5-sglang-v0-5-12-up-to-17x.mdx', 0): dict(model='Qwen3.5-397B-A17B', hid='mi355x', hw='MI355X', eng='SGLang', ver='v0.5.8 (per comparison table header "Feb v0.5.8")', q='FP8', spec=None, par='tp=8', nd=8, isl=8192, osl=1024, date='2026-02-20'),
 ('mi355x-qwen3-5-sglang-v0-5-12-up-to-17x.mdx', 1): dict(model='Qwen3.5-397B-A17B', hid='mi355x', hw='MI355X', eng='SGLang', ver='v0.5.10rc0 (per comparison table header "Apr v0.5.10rc0")', q='FP8', spec=None, par='tp=2', nd=2, isl=8192, osl=1024, date='2026-04-16'),
 ('mi355x-qwen3-5-sglang-v0-5-12-up-to-17x.mdx', 2): dict(model='Qwen3.5-397B-A17B', hid='mi355x', hw='MI355X', eng='SGLang', ver='v0.5.10rc0 (per comparison table header "Apr v0.5.10rc0")', q='FP8', spec=None, par='tp=4', nd=4, isl=8192, osl=1024, date='2026-04-16'),
 ('mi355x-qwen3-5-sglang-v0-5-12-up-to-17x.mdx', 3): dict(model='Qwen3.5-397B-A17B', hid='mi355x', hw='MI355X', eng='SGLang', ver='v0.5.12', q='FP8', spec=None, par='tp=2', nd=2, isl=8192, osl=1024, date='2026-05-19'),
 ('mi355x-qwen3-5-sglang-v0-5-12-up-to-17x.mdx', 4): dict(model='Qwen3.5-397B-A17B', hid='mi355x', hw='MI355X', eng='SGLang', ver='v0.5.12', q='FP8', spec=None, par='tp=4', nd=4, isl=8192, osl=1024, date='2026-05-19'),
 ('sglang-0-5-6-b200-deepseek-r1-fp4-up-to-1-8x.mdx', 0): dict(model='DeepSeek-R1', hid='b200', hw='B200', eng='SGLang', ver=None, q='NVFP4', spec=None, par='tp=4,ep=4', extra='table label: TP 4 / EP 4 decode, 16 GPU non-disaggregated pool', nd=None, isl=8192, osl=1024, date=None),
}
TB = [('glm-5', (744, 40)), ('minimax-m2.5', (230, 10)), ('kimi', (1000, 32)), ('deepseek-r1', (671, 37)), ('deepseek-v4-pro', (1600, 49)), ('qwen3.5-397b-a17b', (397, 17))]
def clean(c): return c.replace('**', '').strip()
def num(c): return clean(c).replace(',', '').replace('$', '').replace(' ms', '')
import json
FIX = {(r['hardware'], r['conc'], round(r['metrics']['tput_per_gpu'], 1)) for r in json.load(open('/tmp/sev_bench.json'))}
w = writer(sys.argv[1]); n = 0; used = set(); dups = 0
files = sorted({f for f, _ in M})
for f in files:
    text = subprocess.check_output(['git', '-C', REPO, 'show', f'HEAD:{B}{f}'], text=True)
    title = re.search(r"^title: '(.*)'$", text, re.M).group(1)
    pdate = re.search(r"^date: '([^']+)'", text, re.M).group(1)
    allrows = re.search(r'^All rows are .*$', text, re.M)
    L = text.split('\n'); k = -1
    for i, l in enumerate(L):
        if not (l.startswith('|') and 'tok/s/GPU' in l and 'Interactivity' not in l and 'Iso-' not in l and re.match(r'^\|\s*:?-+', L[i + 1])):
            continue
        k += 1
        if (f, k) not in M: continue
        used.add((f, k)); m = M[(f, k)]
        p = i - 1
        while not L[p].strip(): p -= 1
        label = L[p].strip()
        hdr = [clean(c) for c in l.strip().strip('|').split('|')]
        j = i + 2; r_i = 0
        while j < len(L) and L[j].startswith('|'):
            cells = [c.strip() for c in L[j].strip().strip('|').split('|')]
            d = dict(zip(hdr, cells)); j += 1; r_i += 1
            par, nd, date, ver = m['par'], m['nd'], m['date'], m['ver']
            extra = []
            if 'Prefill' in d:
                if m.get('disagg'):
                    par = f"disaggregated: prefill {clean(d['Prefill'])}; decode {clean(d['Decode'])}"
                else:
                    par = clean(d['Decode']).replace('TP ', 'tp=').replace('EP ', 'ep=').replace(', ', ',')
                    extra.append(f"table columns as printed: Prefill {clean(d['Prefill'])}, Decode {clean(d['Decode'])} (non-disaggregated 16 GPU pool)")
            if 'Recipe' in d:
                rr = clean(d['Recipe']); mm = re.match(r'TP=(\d+) / (\d+) GPUs?', rr); par = f'tp={mm.group(1)}'; nd = int(mm.group(2))
            if 'TP' in d and m['par'] is None:
                t = clean(d['TP']).replace('TP=', ''); par = f'tp={t}'; nd = int(t)
            if 'Decode TP' in d:
                par = f"tp={clean(d['Decode TP'])}"; nd = int(clean(d['Decode TP']))
            if 'Date' in d:
                dd = clean(d['Date']); extra.append(f'row date as printed: {dd} (year not printed; post dated {pdate})'); date = ''
            if 'Version' in d:
                v = clean(d['Version']); ver = v
                date = {'0.5.5': '2025-12-15', '0.5.6': '2025-12-31'}[v]
            low = m['model'].lower()
            tb = next((x for key, x in TB if key in low), ('', ''))
            flags = ['nominal_random_lengths']
            if m.get('disagg'): flags.append('disaggregated')
            if m['hid'] in ('h100-sxm', 'h200') : pass
            if m['spec']: flags.append('speculative_decoding')
            notes = [f'post: "{title}" (dated {pdate})', f'table label: {label[:300]}']
            if allrows: notes.append('post: ' + allrows.group(0)[:400])
            if m.get('extra'): notes.append(m['extra'])
            if m['spec']: notes.append(f"speculative: {m['spec']}")
            notes += extra
            notes.append('tok/s/GPU is InferenceX tput_per_gpu (input+output tokens per GPU; the posts compute cost per million total tokens from tput_per_gpu); TPOT statistic not printed; $/M column and Gain column not transcribed (derived)')
            conc = num(d['Conc'])
            if 'deepseek-r1' in low and (m['hid'], int(conc), round(float(num(d['tok/s/GPU'])), 1)) in FIX:
                dups += 1; continue  # same measurement already in IX-DSR1-API (benchmarks.json snapshot)
            for col, metric, unit in (('tok/s/GPU', 'tput_total', 'total tokens/s per GPU (tok/s/GPU)'), ('tok/s/user', 'tput_out_per_user', 'tokens/s/user'),
                                      ('TPOT (ms)', 'tpot_ms', 'ms'), ('TPOT', 'tpot_ms', 'ms')):
                if col not in d: continue
                vs = d[col].strip(); v = num(vs)
                float(v); n += 1
                w.writerow(row(row_id=f'{SRC}-{f[:-4]}-t{k}-r{r_i}-{metric}', source_id=SRC,
                    source_ref=f'github:SemiAnalysisAI/InferenceX-app@{COMMIT}:{B}{f} (fork vngcloud/InferenceX-app; published at https://inferencex.semianalysis.com/blog/{f[:-4]}), table {k}',
                    engine=m['eng'], engine_version=ver or '', backend='', hardware_id=m['hid'], hardware_as_stated=m['hw'], n_devices=nd if nd else '',
                    parallelism=par or '', model=m['model'], total_params_b=tb[0], active_params_b=tb[1],
                    params_basis=("DeepSeek's published total/active counts (not printed in this post)" if 'deepseek-r1' in low else 'as printed in InferenceX posts (total/active)') if tb[0] else '', quant=m['q'], model_size_basis='not stated in source',
                    prompt_tokens=m['isl'], gen_tokens=m['osl'], metric=metric, unit=unit, value=v, value_as_stated=vs,
                    table_heading=f'{label[:120]} row {r_i} column "{col}"', measured_date=date or '',
                    flag=';'.join(flags + (['stat_unspecified'] if metric == 'tpot_ms' else [])), notes='; '.join(notes),
                    scenario='online-concurrency', concurrency=conc, dataset='random (InferenceX fixed-seq-len)'))
missing = set(M) - used
print(n, 'rows', 'missing tables:', missing, 'dsr1 rows dropped as duplicates of IX-DSR1-API:', dups)
