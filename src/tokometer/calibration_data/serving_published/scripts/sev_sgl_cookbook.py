"""sgl-project/sgl-cookbook model pages: sglang.bench_serving outputs -> serving format rows."""
import csv, re, subprocess, sys, shlex, os
HDR = open('/work/main/src/tokometer/calibration_data/serving.csv').readline().strip().split(',')
REPO = '/work/.mirror/sgl-project+sgl-cookbook/repo'
COMMIT = subprocess.check_output(['git', '-C', REPO, 'rev-parse', 'HEAD'], text=True).strip()
SRC = 'SGL-COOKBOOK'
HWMAP = [  # regex -> (catalog id, flag)
    (r'\bGB200\b', 'gb200', ''), (r'\bGB300\b', '', ''), (r'\bB300\b', 'b300', ''), (r'\bB200\b', 'b200', ''), (r'\bH200\b', 'h200', 'hw_form_factor_assumed'),
    (r'\bH100\b', 'h100-sxm', 'hw_form_factor_assumed'), (r'\bH800\b', '', ''), (r'\bH20\b', '', ''), (r'\bA100\b', 'a100', ''),
    (r'MI300X', 'mi300x', ''), (r'MI325X', 'mi325x', ''), (r'MI355X?', 'mi355x', ''), (r'MI350X', '', ''),
    (r'RTX PRO 6000', '', ''), (r'\bL40S\b', 'l40s', ''),
]
PARAMS = {  # model substring (lower) -> (total_b, active_b)
    'deepseek-r1': (671, 37), 'deepseek-v3': (671, 37), 'kimi-k2': (1000, 32), 'glm-4.6': (355, 32), 'glm-4.7-flash': (30, 3),
    'glm-5': (744, 40), 'gpt-oss-120b': (117, 5.1), 'gpt-oss-20b': (21, 3.6), 'minimax-m2': (230, 10),
    'qwen3-235b-a22b': (235, 22), 'qwen3-30b-a3b': (30, 3), 'qwen3-coder-480b-a35b': (480, 35), 'qwen3-coder-30b-a3b': (30, 3),
    'llama-4-scout': (109, 17), 'llama-4-maverick': (400, 17), 'llama-3.1-70b': (70, 70), 'llama-3.1-8b': (8, 8), 'llama-3.1-405b': (405, 405),
    'ernie-4.5-21b-a3b': (21, 3), 'ernie-4.5-300b-a47b': (300, 47), 'qwen3-next-80b-a3b': (80, 3),
}
KEYS = [
    ('Request throughput (req/s)', 'req_per_s', 'req/s'),
    ('Input token throughput (tok/s)', 'tput_in', 'tok/s (input, whole server)'),
    ('Output token throughput (tok/s)', 'tput_out', 'tok/s (output, whole server)'),
    ('Total token throughput (tok/s)', 'tput_total', 'tok/s (input+output, whole server)'),
    ('Mean E2E Latency (ms)', 'e2e_ms_mean', 'ms'), ('Median E2E Latency (ms)', 'e2e_ms_p50', 'ms'), ('P99 E2E Latency (ms)', 'e2e_ms_p99', 'ms'),
    ('Mean TTFT (ms)', 'ttft_ms_mean', 'ms'), ('Median TTFT (ms)', 'ttft_ms_p50', 'ms'), ('P99 TTFT (ms)', 'ttft_ms_p99', 'ms'),
    ('Mean TPOT (ms)', 'tpot_ms_mean', 'ms'), ('Median TPOT (ms)', 'tpot_ms_p50', 'ms'), ('P99 TPOT (ms)', 'tpot_ms_p99', 'ms'),
    ('Mean ITL (ms)', 'itl_ms_mean', 'ms'), ('Median ITL (ms)', 'itl_ms_p50', 'ms'), ('P99 ITL (ms)', 'itl_ms_p99', 'ms'),
]
def fv(toks, names):
    for i, t in enumerate(toks):
        for n in names:
            if t == n and i + 1 < len(toks): return toks[i + 1]
            if t.startswith(n + '='): return t.split('=', 1)[1]
    return None
files = [l for l in subprocess.check_output(['git', '-C', REPO, 'ls-tree', '-r', '--name-only', 'HEAD', 'docs/autoregressive'], text=True).split('\n') if l.endswith('.md')]
out = csv.DictWriter(open(sys.argv[1], 'w', newline=''), fieldnames=HDR); out.writeheader()
nrows = 0; skipped = []; nb = 0
for path in files:
    text = subprocess.check_output(['git', '-C', REPO, 'show', f'HEAD:{path}'], text=True)
    if 'Serving Benchmark Result' not in text: continue
    L = text.split('\n')
    env = {}; deploy = ''; bench = ''; heading = ''; i = 0
    while i < len(L):
        s = L[i].strip()
        m = re.match(r'^(?:[-*]\s+)?(Hardware|Model|Tensor Parallelism|SGLang [Vv]ersion|sglang version)\s*:\s*(.+)$', s)
        if m:
            k = m.group(1).lower()
            if k == 'hardware':
                env = {}  # a new test environment starts
            env[k] = m.group(2).strip()
        if s.startswith('#'):
            heading = s.lstrip('#').strip()
        if s.startswith('```'):
            j = i + 1; code = []
            while j < len(L) and not L[j].strip().startswith('```'):
                code.append(L[j]); j += 1
            body = '\n'.join(code)
            joined = ' '.join(x.strip().rstrip('\\').strip() for x in code if x.strip() and not x.strip().startswith('#'))
            if 'Serving Benchmark Result' in body:
                nb += 1
                vals = {}; dup = set()
                for b in code:
                    mm = re.match(r'^\s*([A-Za-z][A-Za-z0-9 ()/.,-]*?):\s+(-?[0-9.]+|inf)\s*$', b)
                    if mm:
                        if mm.group(1) in vals: dup.add(mm.group(1))
                        vals[mm.group(1)] = mm.group(2)
                reason = ''
                dt = shlex.split(deploy) if deploy else []
                bt = shlex.split(bench) if bench else []
                hw = env.get('hardware', '')
                hits = [(rx, hid, fl) for rx, hid, fl in HWMAP if re.search(rx, hw, re.I)]
                if not deploy or not bench: reason = 'no deploy/bench command before block'
                elif len({hid or rx for rx, hid, fl in hits}) != 1: reason = f'hardware line names {len(hits)} GPU types: {hw!r}'
                mc = fv(bt, ['--max-concurrency'])
                if not reason and mc and vals.get('Max request concurrency') not in (mc,):
                    reason = f'bench --max-concurrency {mc} != printed {vals.get("Max request concurrency")}'
                npr = fv(bt, ['--num-prompts'])
                if not reason and npr and vals.get('Successful requests') != npr:
                    reason = f'bench --num-prompts {npr} != printed successful requests {vals.get("Successful requests")}'
                if reason:
                    skipped.append((path, heading, reason)); i = j + 1; continue
                rx, hid, hflag = hits[0]
                model = fv(dt, ['--model-path', '--model']) or (dt[dt.index('serve') + 1] if 'serve' in dt else '')
                tp = fv(dt, ['--tp', '--tp-size', '--tensor-parallel-size'])
                dp = fv(dt, ['--dp', '--dp-size', '--data-parallel-size'])
                ep = fv(dt, ['--ep', '--ep-size', '--expert-parallel-size'])
                pp = fv(dt, ['--pp', '--pp-size'])
                nn = fv(dt, ['--nnodes'])
                par = [f'tp={tp}' if tp else 'tp=1']
                if pp: par.append(f'pp={pp}')
                if dp: par.append(f'dp={dp}')
                if ep: par.append(f'ep={ep}')
                dpa = '--enable-dp-attention' in dt
                partxt = ','.join(par) + (' (dp-attention)' if dpa else '') + (f' ({nn} nodes)' if nn else '')
                try:
                    nd = int(tp or 1) * int(pp or 1) * (1 if dpa else int(dp or 1))
                except ValueError:
                    nd = ''
                low = (model + ' ' + deploy).lower()
                quant = ''
                qf = fv(dt, ['--quantization'])
                if qf: quant = qf
                else:
                    for qn in ('nvfp4', 'mxfp4', 'fp4', 'fp8', 'int4', 'awq', 'gptq', 'w4a8', 'bf16'):
                        if re.search(r'[-_/]' + qn + r'\b', model.lower()): quant = qn.upper() + ' (from model name)'; break
                kv = fv(dt, ['--kv-cache-dtype']) or ''
                spec = fv(dt, ['--speculative-algorithm', '--speculative-algo'])
                flags = []
                if hflag: flags.append(hflag)
                isl = fv(bt, ['--random-input-len', '--random-input', '--input-len']) or ''
                osl = fv(bt, ['--random-output-len', '--random-output', '--output-len']) or ''
                dsn = fv(bt, ['--dataset-name']) or 'sharegpt (bench_serving default)'
                rr = fv(bt, ['--random-range-ratio'])
                if dsn == 'random' and rr is None: flags.append('nominal_random_lengths')
                if dsn != 'random': isl = osl = ''
                rate = fv(bt, ['--request-rate']) or vals.get('Traffic request rate', '')
                if mc: scen = 'online-concurrency'
                elif rate in ('inf', ''): scen = 'offline'
                else: scen = 'online-rate'
                notes = [f'deploy: {deploy}', f'bench: {bench}'] + (['no --tp flag in the deploy command (engine default tp=1)'] if not tp else []) + [ f'test environment: ' + '; '.join(f'{k}: {v}' for k, v in env.items()), f'doc heading: {heading}']
                if spec:
                    notes.append(f'speculative: {spec} (flags in deploy command)'); flags.append('speculative_decoding')
                if dsn == 'random':
                    notes.append(f"random dataset, --random-range-ratio {rr if rr is not None else 'not set (bench_serving default)'}; Total input tokens {vals.get('Total input tokens','')}, Total generated tokens {vals.get('Total generated tokens','')}")
                if 'Accept length' in vals: notes.append(f"Accept length printed: {vals['Accept length']}")
                tb = next((v for k, v in PARAMS.items() if k in low), ('', ''))
                for k, metric, unit in KEYS:
                    if k not in vals or k in dup: continue
                    nrows += 1
                    out.writerow({
                        'row_id': f"{SRC}-{os.path.basename(path)[:-3]}-b{nb:03d}-{metric}", 'source_id': SRC,
                        'source_ref': f'github:sgl-project/sgl-cookbook@{COMMIT}:{path} (heading "{heading}")',
                        'engine': 'SGLang', 'engine_version': env.get('sglang version', ''),
                        'backend': deploy, 'hardware_id': hid, 'hardware_as_stated': hw, 'n_devices': nd, 'parallelism': partxt,
                        'model': model, 'params_as_stated': '', 'total_params_b': tb[0], 'active_params_b': tb[1],
                        'params_basis': "model vendor's published total/active counts (not printed in this source)" if tb[0] else '',
                        'quant': quant, 'quant_nominal_bits': '', 'bits_per_weight': '', 'model_size': '', 'model_size_unit': '',
                        'model_size_basis': 'not stated in source', 'batch_size': '', 'prompt_tokens': isl, 'gen_tokens': osl,
                        'metric': metric, 'unit': unit, 'value': vals[k], 'value_as_stated': vals[k],
                        'table_heading': f'Serving Benchmark Result block {nb} ({heading})', 'measured_date': '',
                        'flag': ';'.join(flags), 'notes': '; '.join(notes), 'scenario': scen,
                        'request_rate': rate if scen == 'online-rate' else '', 'concurrency': mc or '',
                        'num_requests': vals.get('Successful requests', ''), 'dataset': dsn, 'kv_cache_dtype': kv,
                        'max_num_seqs_or_batch': fv(dt, ['--max-running-requests']) or ''})
            elif 'bench_serving' in joined or 'bench serve' in joined:
                bench = joined
            elif 'launch_server' in joined or 'sglang serve' in joined:
                deploy = joined
            i = j + 1; continue
        i += 1
print(nrows, 'rows', nb, 'blocks', len(skipped), 'skipped')
for s in skipped: print(s)
