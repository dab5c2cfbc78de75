"""Pipeline parallelism's arithmetic: how a model's layers split over stages, and how much of a long
prefill the stages overlap (docs/PHYSICS.md section 7)."""

from __future__ import annotations


def layer_split_counts(n_layers: int, stages: int) -> tuple[int, ...]:
    """Layers per pipeline stage under llama.cpp's layer split (`-sm layer`, its multi-GPU default).

    Equal shares, with the output layer counted as one more layer (`n_layers + 1` slots): layer `i` goes
    to stage `s` whose cumulative share first exceeds `i / (n_layers + 1)` (llama.cpp `llm_load_tensors`,
    `std::upper_bound` over the split fractions). The first stage ends up with a layer or two more
    than the last, which also holds the output: 4 stages of 32 layers are 9, 8, 8, 7.
    """
    stages = max(1, stages)
    slots = n_layers + 1
    # layer i lands on stage floor(i * stages / slots), so stage s holds the layers from
    # ceil(s * slots / stages) up to ceil((s + 1) * slots / stages): closed form, whatever n_layers is
    starts = [min(n_layers, -(-s * slots // stages)) for s in range(stages + 1)]
    return tuple(starts[s + 1] - starts[s] for s in range(stages))


def pipeline_prefill_factor(n_chunks: int, chunk_tokens: int, batch_tokens: int | None, stages: int, n_layers: int = 0) -> float:
    """Prefill time over `stages` pipeline stages, as a share of the same work on one device.

    A prompt split into m chunks (micro-batches) flows through the stages: the first chunk crosses
    every stage, each later one leaves the pipeline one bottleneck interval after the previous, the
    bottleneck being the slowest stage, or, when fewer chunks may be in flight than there are stages,
    the whole pass divided by that window w:

        factor = (1 + (m - 1) * max(s_max, 1 / w)) / m

    s_max is the largest stage's share of the layers (`layer_split_counts`; 1 / p for an even split,
    which gives the GPipe figure (m + p - 1) / (m p)); m counts every chunk of the prompt, since
    llama.cpp's scheduler does not drain the pipeline between its n_batch calls. w = batch_tokens /
    chunk_tokens: llama.cpp keeps 4 ubatches in flight (its scheduler's copies, GGML_SCHED_MAX_COPIES,
    equal to n_batch / n_ubatch = 2048 / 512 by default), so 6 or 8 GPUs speed a long prompt up by 4x
    at most. One chunk (m = 1) gains nothing. Sources: the GPipe schedule (Huang et al. 2019,
    arXiv:1811.06965); llama.cpp pipeline parallelism (ggml-org/llama.cpp#6017).
    """
    if stages <= 1:
        return 1.0
    window = max(1, (batch_tokens or chunk_tokens) // max(1, chunk_tokens))
    m = max(1, n_chunks)
    counts = layer_split_counts(n_layers, stages) if n_layers >= stages else ()
    largest = max(counts) / n_layers if counts else 1.0 / stages
    return (1.0 + (m - 1) * max(largest, 1.0 / window)) / m
