"""GPUStack performance-lab docs (vllm bench serve outputs) -> serving format rows."""
import csv, re, subprocess, sys, shlex
HDR = open('/work/main/src/tokometer/calibration_data/serving.csv').readline().strip().split(',')
REPO = '/work/.mirror/gpustack+gpustack/repo'
COMMIT = subprocess.check_output(['git', '-C', REPO, 'rev-parse', 'HEAD'], text=True).strip()
DOCS = {  # doc -> (hardware_id, model, total_b, active_b)
    'deepseek-r1/h200.md': ('h200', 671, 37), 'deepseek-v3.2/h200.md': ('h200', 671, 37),
    'glm-4.5-air/a100.md': ('a100-80gb-sxm', 106, 12), 'glm-4.5-air/h100.md': ('h100-sxm', 106, 12),
    'glm-4.x/a100.md': ('a100-80gb-sxm', 355, 32), 'glm-4.x/h100.md': ('h100-sxm', 355, 32), 'glm-4.x/h200.md': ('h200', 355, 32),
    'gpt-oss-120b/a100.md': ('a100-80gb-sxm', 117, 5.1), 'gpt-oss-120b/h100.md': ('h100-sxm', 117, 5.1),
    'gpt-oss-20b/a100.md': ('a100-80gb-sxm', 21, 3.6), 'gpt-oss-20b/h100.md': ('h100-sxm', 21, 3.6),
    'qwen3-14b/a100.md': ('a100-80gb-sxm', 14, 14), 'qwen3-14b/h100.md': ('h100-sxm', 14, 14),
    'qwen3-235b-a22b/a100.md': ('a100-80gb-sxm', 235, 22), 'qwen3-235b-a22b/h100.md': ('h100-sxm', 235, 22),
    'qwen3-32b/a100.md': ('a100-80gb-sxm', 32, 32), 'qwen3-32b/h100.md': ('h100-sxm', 32, 32),
    'qwen3-8b/h100-latency.md': ('h100-sxm', 8, 8),
}
KEYS = [
    ('Request throughput (req/s)', 'req_per_s', 'req/s'),
    ('Output token throughput (tok/s)', 'tput_out', 'tok/s (output, whole server)'),
    ('Total Token throughput (tok/s)', 'tput_total', 'tok/s (input+output, whole server)'),
    ('Mean TTFT (ms)', 'ttft_ms_mean', 'ms'), ('Median TTFT (ms)', 'ttft_ms_p50', 'ms'), ('P99 TTFT (ms)', 'ttft_ms_p99', 'ms'),
    ('Mean TPOT (ms)', 'tpot_ms_mean', 'ms'), ('Median TPOT (ms)', 'tpot_ms_p50', 'ms'), ('P99 TPOT (ms)', 'tpot_ms_p99', 'ms'),
    ('Mean ITL (ms)', 'itl_ms_mean', 'ms'), ('Median ITL (ms)', 'itl_ms_p50', 'ms'), ('P99 ITL (ms)', 'itl_ms_p99', 'ms'),
    ('Mean Latency(s)', 'e2e_s_mean', 's'), ('Median Latency(s)', 'e2e_s_p50', 's'), ('P99 Latency(s)', 'e2e_s_p99', 's'),
]
def flagval(toks, names, default=None):
    for i, t in enumerate(toks):
        for n in names:
            if t == n and i + 1 < len(toks):
                return toks[i + 1]
            if t.startswith(n + '='):
                return t.split('=', 1)[1]
    return default
out = csv.DictWriter(open(sys.argv[1], 'w', newline=''), fieldnames=HDR)
out.writeheader()
nrows = 0; nblocks = 0; skipped = []
for doc, (hwid, tot, act) in DOCS.items():
    text = subprocess.check_output(['git', '-C', REPO, 'show', f'HEAD:docs/performance-lab/{doc}'], text=True)
    L = text.split('\n')
    # header facts
    hw_line = ''; versions = {}; dslist = {}
    for i, l in enumerate(L):
        if l.startswith('### Hardware'):
            hw_line = next(x for x in L[i + 1:] if x.strip()).strip()
        m = re.match(r'^- (vLLM|SGLang|TensorRT-LLM):?\s+(\S+)', l.strip())
        if m and m.group(1) not in versions:
            versions[m.group(1)] = m.group(2)
        m = re.match(r'^\s*- (Very long|Long|Medium|Short) prompt: (\d+) input tokens, (\d+) output tokens', l)
        if m:
            dslist[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    section = ''; sub = ''; serve = ''; expect_serve = False; in_code = False; code = []; comment = ''
    i = 0
    while i < len(L):
        l = L[i]; s = l.strip()
        if s.startswith('```'):
            if not in_code:
                in_code = True; code = []; comment = ''
            else:
                in_code = False
                if expect_serve:
                    serve = ' '.join(x.strip().rstrip('\\') for x in code if x.strip()); expect_serve = False
            i += 1; continue
        if not in_code:
            if s.startswith('#'):
                section = s.lstrip('#').strip(); sub = ''
            elif s.startswith('??? info'):
                expect_serve = 'serving script' in s.lower()
            elif s and not s.startswith(('|', '!', 'Result', '<')) and len(s) < 40 and not s.startswith('-'):
                sub = s
            i += 1; continue
        code.append(l)
        if s.startswith('# '):
            comment = s[2:].strip()
        if 'Serving Benchmark Result' in s:
            block = []
            j = i + 1
            while j < len(L) and not re.match(r'^\s*=+\s*$', L[j]):
                block.append(L[j]); j += 1
            nblocks += 1
            vals = {}; dup = set(); meta = {}
            for b in block:
                m = re.match(r'^\s*([A-Za-z][A-Za-z0-9 ()/.,-]*?):\s+(-?[0-9.]+)\s*$', b)
                if m:
                    k = m.group(1).strip()
                    if k in vals: dup.add(k)
                    vals[k] = m.group(2)
            toks = shlex.split(serve) if serve else []
            if 'trtllm-serve' in serve: eng = 'TensorRT-LLM'
            elif 'sglang' in serve: eng = 'SGLang'
            elif 'vllm' in serve: eng = 'vLLM'
            else:
                skipped.append((doc, section, 'no serving script')); i = j; continue
            # served model id
            if eng == 'vLLM': model_id = toks[toks.index('serve') + 1]
            elif eng == 'SGLang': model_id = flagval(toks, ['--model-path', '--model'])
            else: model_id = toks[toks.index('trtllm-serve') + 1]
            tp = flagval(toks, ['-tp', '--tp', '--tp-size', '--tp_size', '--tensor-parallel-size'], None)
            pp = flagval(toks, ['-pp', '--pp', '--pp-size', '--pp_size', '--pipeline-parallel-size'], None)
            dp = flagval(toks, ['-dp', '--dp', '--dp-size', '--data-parallel-size'], None)
            ep = flagval(toks, ['--ep-size', '--ep_size', '--ep'], None)
            par = []
            if tp: par.append(f'tp={tp}')
            if pp: par.append(f'pp={pp}')
            if dp: par.append(f'dp={dp}')
            if ep: par.append(f'ep={ep}')
            sfx = []
            if '--enable-expert-parallel' in toks: sfx.append('expert-parallel')
            if '--enable-dp-attention' in toks: sfx.append('dp-attention')
            partxt = (','.join(par) if par else 'tp=1') + (f" ({', '.join(sfx)})" if sfx else '')
            try:
                ndev = int(tp or 1) * int(pp or 1) * (int(dp or 1) if '--enable-dp-attention' not in toks else 1)
            except ValueError:
                ndev = ''
            low = serve.lower()
            quant = ''
            for qn in ('nvfp4', 'mxfp4', 'fp8', 'awq', 'gptq', 'w4a16', 'w8a8', 'int4', 'int8'):
                if qn in model_id.lower() or re.search(r'(--quantization|-q)[ =]' + qn, low):
                    quant = qn.upper(); break
            kv = flagval(toks, ['--kv-cache-dtype'], '') or ''
            label = comment or ''
            flags = []
            variant = ''
            if label and not re.match(r'(random|sharegpt)', label, re.I):
                variant = label; label = ''
                flags.append('variant_flags_in_block_label')
            if label:
                ds = label
                m = re.match(r'random (\d+)K? input', label, re.I)
                isl = osl = ''
                num = re.search(r'random (\S+) input', label, re.I)
                if num:
                    key = num.group(1).upper()
                    table = {'32K': 'Very long', '4K': 'Long', '2K': 'Medium', '128': 'Short'}
                    if key in table and table[key] in dslist:
                        isl, osl = dslist[table[key]]; flags.append('isl_osl_from_doc_dataset_list')
            else:
                ds = 'ShareGPT (no label on the block; the doc benchmarks ShareGPT with vllm bench serve)'
                isl = osl = ''; flags.append('dataset_from_doc_default')
            conc = vals.get('Maximum request concurrency', '')
            scen = 'online-concurrency' if conc else 'offline'
            spec = [t for t in toks if 'speculative' in t or 'spec' in t]
            if 'speculative' in variant:
                spec = ['(block label) ' + variant]
            notes = [f'serving script: {serve}', f'doc section: {section}' + (f' / {sub}' if sub else ''),
                     f'hardware line: {hw_line}', f'benchmark block label: {(label or variant) or "(none)"}' + (' (variant of the serving script above; its flags may not be in the serving script text)' if variant else ''),
                     f"Total input tokens {vals.get('Total input tokens','')}, Total generated tokens {vals.get('Total generated tokens','')}, Benchmark duration (s) {vals.get('Benchmark duration (s)','')}",
                     'scenario offline = no max concurrency printed (vllm bench serve default request rate inf)'] + (['no parallelism flag in the serving script (engine default tp=1)'] if not par else [])
            if spec:
                notes.append('speculative: ' + ' '.join(spec)); flags.append('speculative_decoding')
            for k, metric, unit in KEYS:
                if k not in vals: continue
                if k in dup:
                    skipped.append((doc, section, f'duplicate key {k}')); continue
                v = vals[k]
                nrows += 1
                out.writerow({
                    'row_id': f"GPS-PERFLAB-{doc.replace('/', '-').replace('.md', '')}-b{nblocks:03d}-{metric}",
                    'source_id': 'GPS-PERFLAB', 'source_ref': f'github:gpustack/gpustack@{COMMIT}:docs/performance-lab/{doc} (section "{section}")',
                    'engine': eng, 'engine_version': versions.get(eng, ''), 'backend': serve,
                    'hardware_id': hwid, 'hardware_as_stated': hw_line, 'n_devices': ndev, 'parallelism': partxt,
                    'model': model_id, 'params_as_stated': '', 'total_params_b': tot, 'active_params_b': act,
                    'params_basis': "model vendor's published total/active counts (not printed in this source)",
                    'quant': quant, 'quant_nominal_bits': '', 'bits_per_weight': '', 'model_size': '', 'model_size_unit': '',
                    'model_size_basis': 'not stated in source', 'batch_size': '', 'prompt_tokens': isl, 'gen_tokens': osl,
                    'metric': metric, 'unit': unit, 'value': v, 'value_as_stated': v,
                    'table_heading': f'Serving Benchmark Result block {nblocks} in {doc}', 'measured_date': '',
                    'flag': ';'.join(flags), 'notes': '; '.join(notes), 'scenario': scen, 'request_rate': '',
                    'concurrency': conc, 'num_requests': vals.get('Successful requests', ''), 'dataset': ds,
                    'kv_cache_dtype': kv, 'max_num_seqs_or_batch': flagval(toks, ['--max-num-seqs', '--max-running-requests', '--max_batch_size'], '') or ''})
            i = j; continue
        i += 1
print(nrows, 'rows', nblocks, 'blocks'); print('skipped', len(skipped)); [print(x) for x in skipped[:30]]
