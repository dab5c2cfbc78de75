"""InferenceX 'Best GPU for X' posts (SemiAnalysisAI/InferenceX-app content/blog) -> serving rows.
Tables copied verbatim from read_file of the stored files into /tmp/sev/bestgpu/*.md (one row per line)."""
import sys, re; sys.path.insert(0, '/tmp/sev')
from common import writer, row
SRC = 'IX-BESTGPU'
POSTS = {  # file stem -> (blob path, commit, model, total_b, active_b, params_basis)
 'llama70b': ('best-gpu-for-llama70b-inference.mdx', '2d1d3d65df4d6cb7773de89d548becc15dafab44', 'Llama-3.3-70B', 70, 70, 'nominal (from model name as printed)'),
 'gptoss120b': ('best-gpu-for-gptoss120b-inference.mdx', '2d1d3d65df4d6cb7773de89d548becc15dafab44', 'gpt-oss-120b', 117, 5.1, "OpenAI's published total/active counts (not printed in this source; the post calls it dense)"),
 'minimaxm2.5': ('best-gpu-for-minimaxm2.5-inference.mdx', '2d1d3d65df4d6cb7773de89d548becc15dafab44', 'MiniMax-M2.5', 230, 10, 'as printed in other InferenceX posts (230B / 10B active)'),
 'glm5': ('best-gpu-for-glm5-inference.mdx', '2d1d3d65df4d6cb7773de89d548becc15dafab44', 'GLM-5', 744, 40, 'as printed in other InferenceX posts (744B / ~40B active)'),
 'qwen3.5': ('best-gpu-for-qwen3.5-inference.mdx', '7958e57e7d487653c4fcea4e204f2b61487200c2', 'Qwen-3.5-397B-A17B', 397, 17, 'as printed in the post (397B / 17B active)'),
 'kimik2.5': ('best-gpu-for-kimik2.5-inference.mdx', '2d1d3d65df4d6cb7773de89d548becc15dafab44', 'Kimi-K2.5', 1000, 32, 'as printed in other InferenceX posts (1T / 32B active)'),
}
ENG = {'trt': 'TensorRT-LLM', 'vllm': 'vLLM', 'sglang': 'SGLang', 'atom': 'ATOM', 'dynamo-trt': 'Dynamo + TensorRT-LLM'}
HW = {'NVIDIA B200': 'b200', 'NVIDIA GB200': 'gb200', 'NVIDIA H200': 'h200', 'NVIDIA H100': 'h100-sxm', 'AMD MI355X': 'mi355x', 'AMD MI325X': 'mi325x', 'AMD MI300X': 'mi300x'}
w = writer(sys.argv[1]); n = 0
for stem, (blob, commit, model, tb, ab, basis) in POSTS.items():
    seq = None; r_i = 0
    for line in open(f'/tmp/sev/bestgpu/{stem}.md'):
        line = line.rstrip('\n')
        if line.startswith('## '):
            seq = line[3:]; continue
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) == 9:
            gpu, prec, fw, tput, _cost, ttft, tpot, conc, date = cells
        else:
            gpu, prec, fw, tput, ttft, tpot, conc, date = cells
        r_i += 1
        isl, osl = {'8k/1k': (8192, 1024), '1k/1k': (1024, 1024)}[seq]
        heading = f'GPU Comparison — {seq}' if seq == '8k/1k' else 'Additional Results — 1k/1k Sequence Length'
        if stem == 'qwen3.5' and seq == '8k/1k':
            heading = 'GPU Comparison — Qwen-3.5-397B-A17B at 8k/1k'
        hid = HW[gpu]
        for metric, unit, vs, col in (('tput_total', 'total tokens/s per GPU (Throughput/GPU)', tput, 'Throughput/GPU (tok/s)'),
                                      ('ttft_ms_p50', 'ms', ttft, 'Median TTFT (ms)'), ('tpot_ms_p50', 'ms', tpot, 'Median TPOT (ms)')):
            v = vs.replace(',', ''); float(v); n += 1
            w.writerow(row(row_id=f'{SRC}-{stem}-{seq.replace("/", "")}-r{r_i}-{metric}', source_id=SRC,
                source_ref=f'github:SemiAnalysisAI/InferenceX-app@{commit}:packages/app/content/blog/{blob} (https://inferencex.semianalysis.com/blog/{blob[:-4]}), table "{heading}"',
                engine=ENG[fw], engine_version='', backend=fw, hardware_id=hid, hardware_as_stated=gpu, n_devices='', parallelism='',
                model=model, total_params_b=tb, active_params_b=ab, params_basis=basis, quant=prec, model_size_basis='not stated in source',
                prompt_tokens=isl, gen_tokens=osl, metric=metric, unit=unit, value=v, value_as_stated=vs,
                table_heading=f'{heading}, row {gpu} {prec} {fw}, column "{col}"', measured_date=date,
                flag='nominal_random_lengths;parallelism_not_stated' + (';hw_form_factor_assumed' if hid in ('h100-sxm', 'h200') else ''),
                notes='; '.join(['"One row per GPU showing the highest-throughput configuration. All data from automated InferenceX benchmarks." (post, last updated 2026-04-06)',
                                 'TP/EP/DP of the chosen configuration not printed; Throughput/GPU is InferenceX tput_per_gpu (input+output tokens per GPU, the basis of the posts\' $/Mtok); $/Mtok column not transcribed (derived)',
                                 'precision as printed (the FP4 format, NVFP4 or MXFP4, is not named in the table)']),
                scenario='online-concurrency', concurrency=conc.replace(',', ''), dataset='random (InferenceX fixed-seq-len)'))
print(n)
