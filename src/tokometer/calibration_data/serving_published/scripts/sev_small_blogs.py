import sys; sys.path.insert(0, '/tmp/sev')
from common import writer, row
out = sys.argv[1]
if 'VLLM-FP8KV' in out:
    SRC = 'VLLM-FP8KV'
    REF = 'github:vllm-project/vllm-project.github.io@c3a01c4a5807c8d900ae468897e45263373e534e:_posts/2026-04-22-fp8-kvcache.md (vLLM blog "The State of FP8 KV-Cache and Attention Quantization in vLLM", 2026-04-22)'
    T = {('Table 4', 'meta-llama/Llama-3.1-8B', 8, 8): [('BF16', 'auto (BF16)', '763.6', '15.18', '450.3'), ('FP8', 'fp8', '742.8', '12.93', '517.5')],
         ('Table 5', 'gpt-oss-20b', 21, 3.6): [('BF16', 'auto (BF16)', '468.9', '8.09', '831.6'), ('FP8', 'fp8', '451.7', '7.90', '853.0'), ('FP8 skip-SW', 'fp8 (sliding-window layers kept BF16: --kv-cache-dtype-skip-layers sliding_window)', '456.4', '7.70', '871.8')]}
    w = writer(out); n = 0
    for (tab, model, tb, ab), rows in T.items():
        for cfg, kv, ttft, itl, tput in rows:
            for metric, unit, v, col in (('ttft_ms_p50', 'ms', ttft, 'Median TTFT (ms)'), ('itl_ms_p50', 'ms', itl, 'Median ITL (ms)'), ('tput_out', 'output tok/s (one GPU)', tput, 'Output tok/s')):
                n += 1
                w.writerow(row(row_id=f'{SRC}-{tab[-1]}-{cfg.replace(" ", "")}-{metric}', source_id=SRC, source_ref=REF + f' {tab}',
                    engine='vLLM', engine_version='', backend='FlashAttention-3 (vLLM fork) attention backend, per the post\'s Hopper setup',
                    hardware_id='h100-sxm', hardware_as_stated='single H100 GPU ("All Hopper experiments run on a single H100 GPU")', n_devices=1, parallelism='tp=1',
                    model=model, total_params_b=tb, active_params_b=ab, params_basis='nominal (from model name as printed)' if tb == 8 else "OpenAI's published total/active counts (not printed in this source)",
                    quant='', model_size_basis='not stated in source', prompt_tokens=20000, gen_tokens=2000, metric=metric, unit=unit, value=v, value_as_stated=v,
                    table_heading=f'{tab}, Config {cfg}, column "{col}"', flag='approx_lengths;hw_form_factor_assumed',
                    notes='; '.join(['post text: "150 requests at concurrency 8, each with ~20k input tokens and ~2k output tokens (±15% variance)"',
                                     'vLLM version for this table not printed (the post compares v0.10.2 vs v0.19.1 elsewhere)', 'Total duration (s) column not transcribed',
                                     f'KV cache config: {cfg}']),
                    scenario='online-concurrency', concurrency=8, num_requests=150, dataset='synthetic (~20k in / ~2k out, ±15%)', kv_cache_dtype=kv))
    print(n)
else:
    SRC = 'LMSYS-GPTOSS'
    REF = 'https://lmsys.org/blog/2025-08-27-gpt-oss (published page, table "Low-Latency Performance (Batch Size = 1)"); repository draft github:lm-sys/lm-sys.github.io:blog/2025-08-27-gpt-oss.md; reproduction commands github:sgl-project/sglang@1dc322ca15c48c959c2a84a9fc6421897973789a:benchmark/gpt_oss/README.md'
    T = [('NVIDIA B200', 'b200', 4, 'tp=4', 'MXFP4', 'openai/gpt-oss-120b', '416.02 tok/s', '416.02'), ('NVIDIA H100', 'h100-sxm', 8, 'tp=8', 'MXFP4', 'openai/gpt-oss-120b', '318.53 tok/s', '318.53'),
         ('NVIDIA B200', 'b200', 4, 'tp=4', 'BF16', 'lmsys/gpt-oss-120b-bf16', '315.63 tok/s', '315.63'), ('NVIDIA H100', 'h100-sxm', 8, 'tp=8', 'BF16', 'lmsys/gpt-oss-120b-bf16', '293.12 tok/s', '293.12')]
    w = writer(out); n = 0
    for hw, hid, nd, par, q, model, vs, v in T:
        n += 1
        launch = f'python3 -m sglang.launch_server --model {model} --tp {nd}' + (' --attention-backend triton' if hid.startswith('h100') else '')
        w.writerow(row(row_id=f'{SRC}-{hid}-{q}', source_id=SRC, source_ref=REF, engine='SGLang', engine_version='v0.5.1.post3 (checkout in the reproduction README)',
            backend=launch, hardware_id=hid, hardware_as_stated=hw, n_devices=nd, parallelism=par, model=model, total_params_b=117, active_params_b=5.1,
            params_basis="OpenAI's published total/active counts (not printed in this source)", quant=q, model_size_basis='not stated in source',
            batch_size=1, prompt_tokens=1024, gen_tokens=512, metric='tput_out', unit='tok/s (single-batch decode throughput)', value=v, value_as_stated=vs,
            table_heading=f'Low-Latency Performance (Batch Size = 1), row {q}, column {hw}', measured_date='', flag='hw_form_factor_assumed' if hid.startswith('h100') else '',
            notes='; '.join(['post: "we measured single-batch decode throughput"; footnote of the repository draft: "B200 was tested with TP=4, H100 with TP=8 and triton attention"',
                             'benchmark per the reproduction README: sglang.bench_one_batch_server --batch-size 1 --input-len 1024 --output-len 512', 'decode-phase throughput of one request, not end-to-end']),
            scenario='static-batch', concurrency=1, dataset='synthetic (bench_one_batch_server)', max_num_seqs_or_batch=1))
    print(n)
