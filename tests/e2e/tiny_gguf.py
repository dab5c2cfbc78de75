"""A small llama-architecture GGUF (Q8_0 by default) with random weights and a real SentencePiece-style vocabulary.

llama.cpp loads it, tokenizes prompts and streams tokens like any model (the text is nonsense).
The vocabulary: `<unk>`, `<s>`, `</s>`, the 256 byte-fallback tokens `<0x00>`..`<0xFF>`, single
characters, and every prefix of `▁word` for the benchmark's filler words, scored longer-first so
the SPM merge reaches whole words (one token per filler word, as `tokometer.bench.prompts` assumes).
The rows of `output.weight` for special and byte tokens are zero, so greedy decoding always picks a
printable word piece and never end-of-sequence (llama-cpp-python has no ignore_eos).
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tokometer.bench.prompts import WORDS


@dataclass(frozen=True)
class TinyLlama:
    n_embd: int = 1024
    n_layer: int = 8
    n_head: int = 8
    n_head_kv: int = 4
    n_ff: int = 2816
    n_ctx: int = 4096

    def vocab(self) -> tuple[list[str], list[float], list[int]]:
        import gguf

        tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
        types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
        pieces: list[str] = ["▁"] + list(string.ascii_letters + string.digits + string.punctuation)
        for word in WORDS:
            piece = "▁" + word
            pieces += [piece[:k] for k in range(2, len(piece) + 1)]
        seen = set(tokens)
        unique = [p for p in pieces if not (p in seen or seen.add(p))]  # type: ignore[func-returns-value]
        tokens += unique
        types += [gguf.TokenType.NORMAL] * len(unique)
        scores = [0.0] * (3 + 256) + [float(len(p)) for p in unique]  # longer pieces merge first
        return tokens, scores, [int(t) for t in types]

    def write(self, path: Path, seed: int = 0, quant: str = "q8_0") -> dict[str, float]:
        """Write the GGUF (matrices in Q8_0 or F16, norms in F32); return parameter count and weight bytes."""
        import gguf

        qtype = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "f16": gguf.GGMLQuantizationType.F16}[quant]

        rng = np.random.default_rng(seed)
        tokens, scores, types = self.vocab()
        n_vocab = len(tokens)
        head_dim = self.n_embd // self.n_head
        writer = gguf.GGUFWriter(str(path), "llama")
        writer.add_name("tokometer tiny llama (random weights)")
        writer.add_context_length(self.n_ctx)
        writer.add_embedding_length(self.n_embd)
        writer.add_block_count(self.n_layer)
        writer.add_feed_forward_length(self.n_ff)
        writer.add_head_count(self.n_head)
        writer.add_head_count_kv(self.n_head_kv)
        writer.add_rope_dimension_count(head_dim)
        writer.add_rope_freq_base(10000.0)
        writer.add_layer_norm_rms_eps(1e-5)
        writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if quant == "q8_0" else gguf.LlamaFileType.MOSTLY_F16)
        writer.add_vocab_size(n_vocab)
        writer.add_tokenizer_model("llama")
        writer.add_token_list(tokens)
        writer.add_token_scores(scores)
        writer.add_token_types(types)
        writer.add_unk_token_id(0)
        writer.add_bos_token_id(1)
        writer.add_eos_token_id(2)
        writer.add_add_bos_token(True)
        writer.add_add_eos_token(False)

        params = 0
        weight_bytes = 0

        def matrix(name: str, data: np.ndarray) -> None:
            nonlocal params, weight_bytes
            params += data.size
            if qtype == gguf.GGMLQuantizationType.F16:
                stored = data.astype(np.float16)
                writer.add_tensor(name, stored)
            else:
                stored = gguf.quants.quantize(data, qtype)
                writer.add_tensor(name, stored, raw_dtype=qtype)
            weight_bytes += stored.nbytes

        def tensor(name: str, shape: tuple[int, ...], scale: float = 0.02) -> None:
            matrix(name, rng.standard_normal(shape, dtype=np.float32) * scale)

        def norm(name: str) -> None:
            nonlocal params, weight_bytes
            data = np.ones(self.n_embd, dtype=np.float32)
            writer.add_tensor(name, data)
            params += data.size
            weight_bytes += data.nbytes

        tensor("token_embd.weight", (n_vocab, self.n_embd))
        kv = self.n_head_kv * head_dim
        for i in range(self.n_layer):
            norm(f"blk.{i}.attn_norm.weight")
            tensor(f"blk.{i}.attn_q.weight", (self.n_embd, self.n_embd))
            tensor(f"blk.{i}.attn_k.weight", (kv, self.n_embd))
            tensor(f"blk.{i}.attn_v.weight", (kv, self.n_embd))
            tensor(f"blk.{i}.attn_output.weight", (self.n_embd, self.n_embd))
            norm(f"blk.{i}.ffn_norm.weight")
            tensor(f"blk.{i}.ffn_gate.weight", (self.n_ff, self.n_embd))
            tensor(f"blk.{i}.ffn_up.weight", (self.n_ff, self.n_embd))
            tensor(f"blk.{i}.ffn_down.weight", (self.n_embd, self.n_ff))
        norm("output_norm.weight")
        output = rng.standard_normal((n_vocab, self.n_embd), dtype=np.float32) * 0.02
        output[: 3 + 256] = 0.0  # never emit specials, EOS or raw bytes
        matrix("output.weight", output)

        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        return {"params": float(params), "weight_bytes": float(weight_bytes), "n_vocab": float(n_vocab), "n_layer": float(self.n_layer)}
