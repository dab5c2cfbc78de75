"""A plan you can launch: the command (and options file) that starts a deployment on an engine.

`plan --emit ENGINE` turns a plan row (hardware, format, TP/DP/EP/PP, nodes, colocated or P:D split) into
`vllm serve`, `python -m sglang.launch_server`, `trtllm-serve` with its options YAML, or `llama-server`
commands, one per node and pool. Every flag comes from `catalog/data/launch_flags.toml`, pinned from each
engine's documentation with its version; `check_flags` refuses a flag the pinned list does not hold, so a
renamed option shows up as a failing test rather than a command that does not start.
"""

from __future__ import annotations

import functools
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokometer.errors import InputError
from tokometer.usecases.simulate import Deployment

LAUNCH_FLAGS_FILE = Path(__file__).resolve().parent.parent / "catalog" / "data" / "launch_flags.toml"
EMIT_ENGINES = ("vllm", "sglang", "tensorrt-llm", "llama-cpp")
ENGINE_ALIASES = {"trtllm": "tensorrt-llm", "trt-llm": "tensorrt-llm", "llama.cpp": "llama-cpp", "llama-server": "llama-cpp"}
HEAD = "HEAD_NODE_IP"  # placeholder the user replaces with the first node's address
PORT = 8000


@dataclass(frozen=True)
class Launch:
    """The commands that start one plan row: one per node (and per pool when split), plus files they read."""

    engine: str
    version: str
    doc: str
    commands: tuple[tuple[str, str], ...]  # (what it starts, the command line)
    files: dict[str, str] = field(default_factory=dict)  # file name -> contents
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "version": self.version, "doc": self.doc,
                "commands": [{"role": r, "command": c} for r, c in self.commands], "files": self.files,
                "notes": list(self.notes)}

    def render(self) -> str:
        lines = [f"# {self.engine} {self.version} ({self.doc.split(';')[0]})"]
        for name, text in self.files.items():
            lines += [f"cat > {name} <<'EOF'", text.rstrip(), "EOF"]
        for role, command in self.commands:
            lines += [f"# {role}", command]
        lines += [f"# note: {n}" for n in self.notes]
        return "\n".join(lines)


@functools.cache
def pinned_flags() -> dict[str, dict[str, Any]]:
    return tomllib.loads(LAUNCH_FLAGS_FILE.read_text(encoding="utf-8"))


def engine_key(name: str) -> str:
    key = ENGINE_ALIASES.get(name.strip().lower(), name.strip().lower())
    if key not in EMIT_ENGINES:
        raise InputError(f"--emit takes one of {', '.join(EMIT_ENGINES)}, got {name!r}")
    return key


def used_flags(engine: str, command: str) -> list[str]:
    """The options a command line passes (tokens starting with '-', values skipped)."""
    exe = str(pinned_flags()[engine]["executable"])
    rest = command.split(exe, 1)[1] if exe in command else command
    return [t for t in rest.split() if t.startswith("-") and not t.lstrip("-").replace(".", "").isdigit()]


def check_flags(engine: str, launch: Launch) -> None:
    """Every flag of every command is in the engine's pinned list (else a ValueError naming it)."""
    allowed = set(pinned_flags()[engine]["flags"])
    for _, command in launch.commands:
        for flag in used_flags(engine, command):
            if flag not in allowed:
                raise ValueError(f"{engine} {pinned_flags()[engine]['version']}: flag {flag} is not in launch_flags.toml")


def _checkpoint(dep: Deployment, quant: str) -> tuple[str, list[str]]:
    """The model path to serve and notes on the checkpoint the format needs."""
    model = dep.setup.model
    hf = _hf_id(dep)
    notes = []
    native = (model.default_quant or "bf16").replace("_", "-")
    if quant not in (native, "bf16", "fp16", "fp8"):
        notes.append(f"serve a {quant} checkpoint of {hf} (the engine reads the format from its quantization_config)")
    return hf, notes


def _hf_id(dep: Deployment) -> str:
    from tokometer.catalog import model_catalog

    model = dep.setup.model
    try:
        entry = model_catalog().get(model.id or model.name)
        hf = getattr(entry, "hf_id", None)
    except Exception:  # a model from a file or bare numbers: its name stands for the path
        hf = None
    return str(hf or model.name)


def launch(dep: Deployment, quant: str, engine: str, *, replicas: int = 1, pools: tuple[int, int] | None = None) -> Launch:
    """The commands for `replicas` copies of `dep` (or a P:D split) on `engine`."""
    from tokometer.catalog import engine_catalog, quant_catalog
    from tokometer.usecases.formats import checkpoint_twin, engine_support

    key = engine_key(engine)
    pin = pinned_flags()[key]
    spec = engine_catalog().get(key)
    fmt = quant_catalog().get(quant)
    fmt = checkpoint_twin(spec, fmt) or fmt
    if engine_support(spec, fmt) == "no":
        raise InputError(f"{spec.name} does not run {fmt.name}; plan with -e {key} or --emit an engine that runs it")
    builder = {"vllm": _vllm, "sglang": _sglang, "tensorrt-llm": _trtllm, "llama-cpp": _llama_server}[key]
    commands, files, notes = builder(dep, quant, pools)
    if key != "llama-cpp":
        notes.append(PREFIX_NOTES[key])
    lay = dep.setup.layout
    if replicas > 1 and pools is None:
        notes.append(f"start {replicas} replicas of this, each on its own {lay.devices} GPUs, behind a load balancer")
    if pools is not None:
        notes.append(f"{pools[0]} prefill and {pools[1]} decode replicas of these, the KV crossing between them")
    out = Launch(key, str(pin["version"]), str(pin["doc"]), tuple(commands), files, tuple(notes))
    check_flags(key, out)
    return out


# Prefix caching: each emitted engine keeps a prefix cache by default, as the simulator assumes
# (`costmodel.serving.policies.prefix_cache`), so no flag turns it on; the notes say how to turn it off.
PREFIX_NOTES = {
    "vllm": "prefix caching: automatic prefix caching is on by default in vLLM V1 (--no-enable-prefix-caching turns it off)",
    "sglang": "prefix caching: RadixAttention is on by default (--disable-radix-cache turns it off)",
    "tensorrt-llm": "prefix caching: KV cache block reuse is on by default (kv_cache_config.enable_block_reuse)",
    "llama-cpp": "prefix caching: each slot reuses its previous prompt's common prefix (cache_prompt, on by default)",
}
# Speculative decoding, per engine (launch_flags.toml pins the flags and keys with their documentation)
VLLM_METHODS = {"draft": "draft_model", "mtp": "mtp", "eagle3": "eagle3", "ngram": "ngram"}
SGLANG_ALGORITHMS = {"draft": "STANDALONE", "mtp": "NEXTN", "eagle3": "EAGLE3", "ngram": "NGRAM"}
TRTLLM_DECODING = {"draft": "DraftTarget", "mtp": "MTP", "eagle3": "Eagle3", "ngram": "NGram"}
EAGLE3_HEAD = "EAGLE3_HEAD_PATH"  # placeholder: the EAGLE-3 head trained for this model (a Hub id or a path)


def _gguf(name: str, quant: str) -> str:
    return f"{name.replace(' ', '-')}-{quant.upper()}.gguf"


def _draft_path(dep: Deployment, notes: list[str]) -> str | None:
    """The drafter's checkpoint a command names: the draft model's Hub id, the EAGLE-3 head's placeholder, or None."""
    spec = dep.speculation
    assert spec is not None
    if spec.method == "draft":
        from tokometer.catalog import model_catalog

        entry = model_catalog().find(spec.draft_model or "")
        return str(getattr(entry, "hf_id", None) or spec.draft_model)
    if spec.method == "eagle3":
        notes.append(f"replace {EAGLE3_HEAD} with the EAGLE-3 head trained for {_hf_id(dep)}")
        return EAGLE3_HEAD
    return None


def _vllm_spec(dep: Deployment, notes: list[str]) -> list[str]:
    """`--speculative-config '{"method": ..., "num_speculative_tokens": k}'` (and the drafter's `model`)."""
    spec = dep.speculation
    if spec is None:
        return []
    config: dict[str, Any] = {"method": VLLM_METHODS[spec.method], "num_speculative_tokens": spec.draft_tokens}
    path = _draft_path(dep, notes)
    if path is not None:
        config["model"] = path
    return [f"--speculative-config '{json.dumps(config, separators=(',', ':'))}'"]


def _sglang_spec(dep: Deployment, notes: list[str]) -> list[str]:
    """`--speculative-algorithm` with a chain of k drafts: k steps, top-1 each, k + 1 tokens verified."""
    spec = dep.speculation
    if spec is None:
        return []
    k = spec.draft_tokens
    args = [f"--speculative-algorithm {SGLANG_ALGORITHMS[spec.method]}"]
    path = _draft_path(dep, notes)
    if path is not None:
        args.append(f"--speculative-draft-model-path {path}")
    if spec.method != "ngram":
        args += [f"--speculative-num-steps {k}", "--speculative-eagle-topk 1"]
    args.append(f"--speculative-num-draft-tokens {k + 1}")
    if spec.method == "ngram" and dep.setup.layout.dp > 1:
        notes.append("SGLang's NGRAM speculation does not run with DP attention (its speculative decoding docs)")
    return args


def _trtllm_spec(dep: Deployment, notes: list[str]) -> list[str]:
    """The options YAML's `speculative_config`: decoding type and k drafts (MTP: k next-n layers)."""
    spec = dep.speculation
    if spec is None:
        return []
    lines = ["speculative_config:", f"  decoding_type: {TRTLLM_DECODING[spec.method]}"]
    lines.append(f"  num_nextn_predict_layers: {spec.draft_tokens}" if spec.method == "mtp" else f"  max_draft_len: {spec.draft_tokens}")
    path = _draft_path(dep, notes)
    if path is not None:
        lines.append(f"  speculative_model_dir: {path}")
    return lines


def _per_rank(dep: Deployment) -> tuple[int, int]:
    """(max sequences, token budget) of one attention rank: the deployment's limits over `dp`."""
    pol = dep.policy
    dp = dep.setup.layout.dp
    return max(1, pol.max_num_seqs // dp), max(1, pol.max_num_batched_tokens // dp)


def _vllm(dep: Deployment, quant: str, pools: tuple[int, int] | None) -> tuple[list[tuple[str, str]], dict[str, str], list[str]]:
    lay = dep.setup.layout
    model, notes = _checkpoint(dep, quant)
    seqs, budget = _per_rank(dep)
    base = [f"vllm serve {model}", f"--tensor-parallel-size {lay.tp}"]
    if lay.pp > 1:
        base.append(f"--pipeline-parallel-size {lay.pp}")
    if quant == "fp8" and (dep.setup.model.default_quant or "bf16") != "fp8":
        base.append("--quantization fp8")
    if dep.setup.kv_bytes_per_element <= 1.0:
        base.append("--kv-cache-dtype fp8")
    base += [f"--max-num-seqs {seqs}", f"--max-num-batched-tokens {budget}", f"--port {PORT}"]
    if lay.ep > 1:
        base.append("--enable-expert-parallel")
    if lay.overlap:
        base.append("--enable-dbo")
    base += _vllm_spec(dep, notes)
    roles: list[tuple[str, list[str]]] = []
    if lay.dp > 1:
        local = lay.dp // lay.nodes if lay.nodes > 1 else lay.dp
        dp = [f"--data-parallel-size {lay.dp}"]
        if lay.nodes > 1:
            dp += [f"--data-parallel-size-local {local}", f"--data-parallel-address {HEAD}", "--data-parallel-rpc-port 13345"]
            roles.append((f"node 0 (API server and ranks 0-{local - 1})", base + dp))
            for n in range(1, lay.nodes):
                roles.append((f"node {n} (ranks {n * local}-{(n + 1) * local - 1})",
                              base + dp + [f"--data-parallel-start-rank {n * local}", "--headless"]))
        else:
            roles.append(("one node", base + dp))
    else:
        roles.append(("one node" if lay.nodes == 1 else "node 0", base))
    if pools is not None:
        kv = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, separators=(",", ":"))
        roles = [(f"{pool} pool, {r}", args + [f"--kv-transfer-config '{kv}'"]) for pool in ("prefill", "decode") for r, args in roles]
        notes.append("a proxy routes each request to a prefill instance, then to a decode instance (vLLM disagg_prefill docs)")
    return [(r, " ".join(a)) for r, a in roles], {}, notes


def _sglang(dep: Deployment, quant: str, pools: tuple[int, int] | None) -> tuple[list[tuple[str, str]], dict[str, str], list[str]]:
    lay = dep.setup.layout
    model, notes = _checkpoint(dep, quant)
    seqs, budget = _per_rank(dep)
    # SGLang counts every GPU in --tp-size; DP attention splits them into --dp-size ranks
    base = [f"python -m sglang.launch_server --model-path {model}", f"--tp-size {lay.tp * lay.dp}"]
    if lay.dp > 1:
        base += [f"--dp-size {lay.dp}", "--enable-dp-attention"]
    if lay.ep > 1:
        base.append(f"--ep-size {lay.ep}")
    if lay.pp > 1:
        base.append(f"--pp-size {lay.pp}")
    if lay.overlap:
        base.append("--enable-two-batch-overlap")
    if quant == "fp8" and (dep.setup.model.default_quant or "bf16") != "fp8":
        base.append("--quantization fp8")
    if dep.setup.kv_bytes_per_element <= 1.0:
        base.append("--kv-cache-dtype fp8_e4m3")
    base += [f"--max-running-requests {seqs * lay.dp}", f"--chunked-prefill-size {budget}", f"--port {PORT}"]
    base += _sglang_spec(dep, notes)
    roles: list[tuple[str, list[str]]] = []
    if lay.nodes > 1:
        for n in range(lay.nodes):
            roles.append((f"node {n}", base + [f"--nnodes {lay.nodes}", f"--node-rank {n}", f"--dist-init-addr {HEAD}:5000"]))
    else:
        roles.append(("one node", base))
    if pools is not None:
        roles = [(f"{pool} pool, {r}", args + [f"--disaggregation-mode {pool}"]) for pool in ("prefill", "decode") for r, args in roles]
        notes.append("SGLang's router (sglang_router --pd-disaggregation) sends each request to a prefill and a decode server")
    return [(r, " ".join(a)) for r, a in roles], {}, notes


def _trtllm(dep: Deployment, quant: str, pools: tuple[int, int] | None) -> tuple[list[tuple[str, str]], dict[str, str], list[str]]:
    lay = dep.setup.layout
    model, notes = _checkpoint(dep, quant)
    seqs, budget = _per_rank(dep)
    gpus = lay.tp * lay.dp
    yaml = ["enable_attention_dp: " + ("true" if lay.dp > 1 else "false"), "kv_cache_config:",
            f"  free_gpu_memory_fraction: {dep.policy.memory_fraction:g}"]
    if dep.setup.kv_bytes_per_element <= 1.0:
        yaml.append("  dtype: fp8")
    yaml += _trtllm_spec(dep, notes)
    args = [f"trtllm-serve {model}", "--backend pytorch", f"--tp_size {gpus}", f"--pp_size {lay.pp}",
            f"--ep_size {lay.ep}", f"--max_batch_size {seqs}", f"--max_num_tokens {budget}",
            "--extra_llm_api_options extra-llm-api-config.yml", f"--port {PORT}"]
    if lay.nodes > 1:
        notes.append(f"TensorRT-LLM spans nodes through MPI/Slurm: run this under `srun -N {lay.nodes} --ntasks-per-node "
                     f"{lay.gpus_per_node} trtllm-llmapi-launch`")
    if lay.overlap:
        notes.append("two-batch overlap is not a trtllm-serve option; the all-to-all is not hidden")
    if pools is not None:
        notes.append("disaggregated serving: start prefill and decode servers with this command and join them with "
                     "`trtllm-serve disaggregated` (its own YAML of context and generation servers)")
    return [("one node" if lay.nodes == 1 else "every node (launched by MPI)", " ".join(args))], \
        {"extra-llm-api-config.yml": "\n".join(yaml) + "\n"}, notes


def _llama_server(dep: Deployment, quant: str, pools: tuple[int, int] | None) -> tuple[list[tuple[str, str]], dict[str, str], list[str]]:
    lay = dep.setup.layout
    if lay.dp > 1 or lay.ep > 1 or lay.nodes > 1:
        raise InputError("llama-server runs one node without expert or data parallelism; --emit vllm, sglang or tensorrt-llm")
    if pools is not None:
        raise InputError("llama-server has no disaggregated prefill/decode; --emit vllm, sglang or tensorrt-llm")
    seqs, budget = _per_rank(dep)
    context = (dep.max_context_tokens or 8192)
    args = [f"llama-server -m {_gguf(dep.setup.model.name, quant)}", "-ngl 999", "-fa on",
            f"-np {seqs}", f"-c {min(int(dep.kv_capacity_tokens), context * seqs)}", f"-b {budget}", "-ub 512"]
    if lay.devices > 1:
        args.append("-sm row" if lay.tp > 1 else "-sm layer")
    if dep.setup.kv_bytes_per_element <= 1.0:
        args += ["-ctk q8_0", "-ctv q8_0"]
    spec = dep.speculation
    if spec is not None:  # llama-server speculates with a draft model only (`--model-draft`, `--draft-max`)
        if spec.method != "draft":
            raise InputError(f"llama-server has no {spec.method} speculation (only a draft model); --emit vllm, sglang or tensorrt-llm")
        args += [f"--model-draft {_gguf(spec.draft_model or 'DRAFT', quant)}", f"--draft-max {spec.draft_tokens}"]
    args.append(f"--port {PORT}")
    return [("one node", " ".join(args))], {}, ["-c is the total context over the -np slots", PREFIX_NOTES["llama-cpp"]]
