import sys; sys.path.insert(0, '/tmp/sev')
from common import writer, row
SRC = 'LMDEPLOY-DSV3'
REF = 'github:InternLM/lmdeploy@0c8ce4edce51199edc706449dda904dc13a2c47a:docs/en/benchmark/deepseekv3.md'
T = {
 ('v0.7.1 + `9528a74`', 'tp=16 (2 nodes)', 16): [(1024,10000,2048,1024,'3489.50','1743.56'),(1024,10000,2048,2048,'1665.07','1682.41'),(1024,10000,2048,4096,'725.01','1455.12'),(1024,10000,2048,8192,'253.17','1009.80'),(128,2000,2048,16384,'76.78','600.07'),(128,2000,2048,32768,'17.75','281.89')],
 ('v0.7.2 + `1e77ed2`', 'tp=16 (2 nodes)', 16): [(1024,10000,2048,1024,'3624.30','1810.91'),(1024,10000,2048,2048,'1753.75','1772.01'),(1024,10000,2048,4096,'764.61','1534.58'),(1024,10000,2048,8192,'281.32','1122.08'),(1024,2000,2048,16384,'98.92','773.06'),(1024,2000,2048,32768,'29.76','472.74')],
 ('v0.7.2 + `f24497f`', 'dp=32,ep=32 (4 nodes)', 32): [(128,2000,2048,1024,'8264.56','4064.52'),(128,2000,2048,2048,'6065.50','6017.63'),(128,2000,2048,4096,'3666.99','7199.48'),(128,2000,2048,8192,'1972.46','8010.31'),(128,2000,2048,16384,'993.55','7764.91'),(128,2000,2048,32768,'438.00','6956.78')],
}
w = writer(sys.argv[1]); n = 0
for (ver, par, nd), rows in T.items():
    for i, (bsz, npr, isl, osl, tin, tout) in enumerate(rows):
        for metric, unit, v, col in (('tput_in', 'input tokens/s (whole deployment)', tin, 'input token throughput (tok/s)'), ('tput_out', 'output tokens/s (whole deployment)', tout, 'output token throughput (tok/s)')):
            n += 1
            notes = ['section heading gives the version and commit: ' + ver,
                     'GPU model not stated in the doc; node count from the doc: "This performance data is measured using 4 nodes (DP32 + EP32), whereas the previous results were recorded using 2 nodes (TP16)"; n_devices = the TP/DP size printed',
                     'launch in the doc: lmdeploy serve api_server deepseek-ai/DeepSeek-V3 --backend pytorch --tp 16',
                     'benchmark script in the doc: benchmark/profile_restful_api.py --backend lmdeploy --dataset-name random --num-prompts N --random-input-len IN --random-output-len OUT (no request rate: all prompts issued at once)']
            w.writerow(row(row_id=f'{SRC}-{ver.split()[0]}-{ver.split("`")[1]}-{isl}-{osl}-{metric}', source_id=SRC, source_ref=REF + f' section "{ver}"',
                engine='LMDeploy', engine_version=ver.replace('`', ''), backend='pytorch backend', hardware_id='', hardware_as_stated='not stated (' + par.split('(')[1],
                n_devices=nd, parallelism=par, model='deepseek-ai/DeepSeek-V3', total_params_b=671, active_params_b=37,
                params_basis="DeepSeek's published total/active counts (not printed in this source)", quant='', model_size_basis='not stated in source',
                prompt_tokens=isl, gen_tokens=osl, metric=metric, unit=unit, value=v, value_as_stated=v,
                table_heading=f'Benchmark results / {ver}, row max bsz {bsz}, prompt no {npr}, input-len {isl}, output-len {osl}, column "{col}"',
                flag='hardware_not_stated;nominal_random_lengths;multinode', notes='; '.join(notes), scenario='offline', num_requests=npr,
                dataset='random (profile_restful_api.py --dataset-name random)', max_num_seqs_or_batch=bsz))
print(n)
