"""Write the hostile corpus replayed by tests/test_hostile_corpus.py: `python tests/data/hostile/build.py`.

One folder per door. A file named `ok-...` must give a correct result; every other file must give
a clean error (CLI: exit 2, at most 3 lines, no traceback; web: 400/422) within 2 s. Catalog files
are named `<catalog>-<case>.toml` and copied into a tokometer home as `<catalog>.toml`. Files that
git cannot hold (a FIFO, /dev/zero, a folder) are made by the test itself.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
DEEP = "[" * 10_000 + "]" * 10_000

HARDWARE = """[my-gpu]
name = "My GPU"
vendor = "me"
kind = "gpu"
segment = "desktop"
memory_gb = {memory}
memory_bandwidth_gb_per_s = {bandwidth}
launch_year = 2024
source = "my own measurement"
"""
MODEL = """[my-model]
name = "My model"
source = "my own config"
[my-model.config]
model_type = "llama"
hidden_size = 4096
intermediate_size = 14336
num_attention_heads = 32
num_key_value_heads = {kv}
num_hidden_layers = {layers}
vocab_size = 128256
"""
CONFIG = {
    "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_key_value_heads": 8, "num_hidden_layers": 32, "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2,
}
TRACE = "arrival_s,prompt_tokens,output_tokens\n0,100,20\n0.5,200,30\n"
RUN = {
    "started_at": "2025-01-01T00:00:00+00:00", "status": "complete", "source": "tokometer", "model": "m", "mode": "speed",
    "summary": {"requests_ok": 1, "requests_total": 1, "decode_tps": {"n": 1, "median": 50.0}},
    "levels": [], "notes": [],
    "requests": [{"seq": 0, "phase": "decode", "ok": True, "t0_s": 0.0, "event_times_s": [0.1, 0.2], "output_tokens": 2, "prompt_tokens": 10}],
}


def put(path: str, data: str | bytes) -> None:
    target = HERE / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))


def with_(base: dict, **changes: object) -> str:
    return json.dumps({**base, **changes})


def main() -> None:
    ok_hw = HARDWARE.format(memory=24, bandwidth=1000)
    put("catalog/ok-hardware-bom.toml", b"\xef\xbb\xbf" + ok_hw.encode())
    put("catalog/hardware-utf16.toml", ok_hw.encode("utf-16"))
    put("catalog/hardware-utf16-no-bom.toml", ok_hw.encode("utf-16-le"))
    put("catalog/hardware-binary.toml", bytes(range(256)) * 4)
    put("catalog/hardware-latin1.toml", ok_hw.replace("My GPU", "Mon GPU à moi").encode("latin-1"))
    put("catalog/hardware-inf-bandwidth.toml", HARDWARE.format(memory=24, bandwidth="inf"))
    put("catalog/hardware-nan-memory.toml", HARDWARE.format(memory="nan", bandwidth=1000))
    put("catalog/hardware-1e300-bandwidth.toml", HARDWARE.format(memory=24, bandwidth="1e300"))
    put("catalog/hardware-huge-integer.toml", HARDWARE.format(memory=10**40, bandwidth=1000))
    put("catalog/hardware-not-toml.toml", "[my-gpu\nname = ")
    put("catalog/hardware-deep-array.toml", ok_hw + "notes = " + DEEP[:4000] + DEEP[-4000:] + "\n")
    put("catalog/engines-deep-inline-array.toml", "[e]\nname = 'x'\nnotes = " + DEEP + "\n")
    put("catalog/engines-deep-inline-table.toml", "[e]\nname = 'x'\nnotes = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n")
    put("catalog/models-billion-layers.toml", MODEL.format(kv=8, layers=10**9))
    put("catalog/models-zero-kv-heads.toml", MODEL.format(kv=0, layers=32))
    put("catalog/models-inf-layers.toml", MODEL.format(kv=8, layers="inf"))
    put("catalog/models-config-not-table.toml", '[my-model]\nname = "m"\nsource = "s"\nconfig = "llama"\n')

    put("config/experts-64-of-8.json", with_(CONFIG, num_experts_per_tok=64))
    put("config/experts-9-of-8.json", with_(CONFIG, num_experts_per_tok=9))
    put("config/zero-kv-heads.json", with_(CONFIG, num_key_value_heads=0))
    put("config/billion-layers.json", with_(CONFIG, num_hidden_layers=10**9))
    put("config/infinite-hidden.json", json.dumps(CONFIG).replace('"hidden_size": 4096', '"hidden_size": Infinity'))
    put("config/nan-heads.json", json.dumps(CONFIG).replace('"num_attention_heads": 32', '"num_attention_heads": NaN'))
    put("config/1e308-vocab.json", with_(CONFIG, vocab_size=1e308))
    put("config/5000-digit-vocab.json", json.dumps(CONFIG).replace('"vocab_size": 32000', '"vocab_size": ' + "9" * 5000))
    put("config/string-layers.json", with_(CONFIG, num_hidden_layers="32"))
    put("config/deep.json", '{"model_type": "llama", "x": ' + DEEP + "}")
    put("config/utf16.json", json.dumps(CONFIG).encode("utf-16"))
    put("config/list.json", "[1, 2, 3]")
    put("config/ok-bom.json", b"\xef\xbb\xbf" + json.dumps(CONFIG).encode())

    put("trace/csv-field-over-128k.csv", "arrival_s,prompt_tokens,output_tokens\n0," + "9" * 140_000 + ",5\n")
    put("trace/jsonl-deep.jsonl", '{"arrival_s": 0, "x": ' + DEEP + "}\n")
    put("trace/jsonl-deep-first.jsonl", DEEP + "\n")
    put("trace/utf16.csv", TRACE.encode("utf-16"))
    put("trace/binary.csv", b"arrival_s,prompt_tokens,output_tokens\n0,1\x00\x00,2\n")
    put("trace/inf-arrival.csv", "arrival_s,prompt_tokens,output_tokens\ninf,100,20\n")
    put("trace/nan-prompt.jsonl", '{"arrival_s": 0, "prompt_tokens": NaN, "output_tokens": 5}\n')
    put("trace/1e30-output.csv", "arrival_s,prompt_tokens,output_tokens\n0,100,1e30\n")
    put("trace/negative-prompt.csv", "arrival_s,prompt_tokens,output_tokens\n0,-5,20\n")
    put("trace/no-columns.csv", "a,b,c\n1,2,3\n")
    put("trace/empty.csv", "")
    put("trace/ok-bom.csv", b"\xef\xbb\xbf" + TRACE.encode())

    put("import/summary-is-a-string.json", with_(RUN, summary="fast"))
    put("import/request-metrics-string.json", with_(RUN, requests=[{**RUN["requests"][0], "metrics": "x"}]))
    put("import/request-without-seq.json", with_(RUN, requests=[{k: v for k, v in RUN["requests"][0].items() if k != "seq"}]))
    put("import/prompt-count-1e30.json", with_(RUN, requests=[{**RUN["requests"][0], "prompt_tokens": 10**30}]))
    put("import/seq-beyond-int64.json", with_(RUN, requests=[{**RUN["requests"][0], "seq": 2**64}]))
    put("import/levels-a-number.json", with_(RUN, levels=5))
    put("import/stats-median-string.json", with_(RUN, summary={"decode_tps": {"median": "fast"}}))
    put("import/event-times-strings.json", with_(RUN, requests=[{**RUN["requests"][0], "event_times_s": ["a"]}]))
    put("import/status-unknown.json", with_(RUN, status="exploded"))
    put("import/deep.json", DEEP)
    put("import/nan-everywhere.json", json.dumps(RUN).replace("50.0", "NaN"))
    put("import/llama-bench-1e30-prompt.json", json.dumps([{"n_prompt": 10**30, "n_gen": 0, "avg_ts": 100.0, "samples_ts": [100.0]}]))
    put("import/llama-bench-1e30-float-prompt.json", json.dumps([{"n_prompt": 1e30, "n_gen": 0, "avg_ts": 100.0, "samples_ts": [100.0]}]))
    put("import/utf16.json", json.dumps(RUN).encode("utf-16"))
    put("import/ok-run.json", json.dumps(RUN))

    put("web/deep-array.json", DEEP)
    put("web/deep-in-object.json", '{"model": ' + DEEP + "}")
    put("web/infinity.json", '{"params_b": Infinity, "bits": 16, "bandwidth_gb_per_s": 1000, "seconds": Infinity, "rates": [Infinity]}')
    put("web/huge-numbers.json", '{"params_b": 1e308, "bits": 1e308, "bandwidth_gb_per_s": 1e-308, "seconds": 1e308, "ttft_ms": 1e308, "tok_s": 1e-308}')
    put("web/rates-a-number.json", '{"rates": 5, "values": 5, "batches": 5, "rates_per_s": 5}')
    put("web/5000-digits.json", '{"batch": ' + "9" * 5000 + "}")
    put("web/utf16.json", '{"model": "llama-3.1-8b"}'.encode("utf-16"))
    put("web/types-swapped.json", '{"model": 7, "hw": [], "tp": {}, "seconds": "x", "lang": 3, "text": [], "rates": {}}')


if __name__ == "__main__":
    main()
