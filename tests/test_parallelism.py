"""The `parallelism` cell of published serving tables, in every spelling they use."""

from __future__ import annotations

import pytest

from tokometer.errors import InputError
from tokometer.fitting.parallelism import Parallelism, parse_parallelism

SPELLINGS = [
    # cell, n_devices, (tp, pp, ep, dp, n_gpus, nodes)
    ("tp=8", None, (8, 1, 1, 1, 8, 1)),
    ("TP8", None, (8, 1, 1, 1, 8, 1)),
    ("TP 8", None, (8, 1, 1, 1, 8, 1)),
    ("tp=8,ep=8", None, (8, 1, 8, 1, 8, 1)),
    ("tp=8,ep=2", None, (8, 1, 2, 1, 8, 1)),
    ("dp=4,ep=4", None, (1, 1, 4, 4, 4, 1)),
    ("DEP8", None, (1, 1, 8, 8, 8, 1)),
    ("DP8+EP8", None, (1, 1, 8, 8, 8, 1)),
    ("TP8EP8", None, (8, 1, 8, 1, 8, 1)),
    ("tp=8 (dp-attention)", None, (8, 1, 1, 8, 8, 1)),
    ("tp=16 (2 nodes)", None, (16, 1, 1, 1, 16, 2)),
    ("pp=2,tp=4", None, (4, 2, 1, 1, 8, 1)),
    ("TP4xPP2", None, (4, 2, 1, 1, 8, 1)),
    ("tp=1", None, (1, 1, 1, 1, 1, 1)),
    ("", None, (1, 1, 1, 1, 1, 1)),
    ("", 4, (4, 1, 1, 1, 4, 1)),
    ("tensor parallel", 2, (2, 1, 1, 1, 2, 1)),
]


@pytest.mark.parametrize("cell, n_devices, expected", SPELLINGS)
def test_every_spelling_reads_into_one_value(cell: str, n_devices: int | None, expected: tuple[int, ...]) -> None:
    p = parse_parallelism(cell, n_devices)
    assert isinstance(p, Parallelism)
    assert (p.tp, p.pp, p.ep, p.dp, p.n_gpus, p.nodes) == expected


def test_notes_keep_what_the_cell_said_beyond_the_degrees() -> None:
    assert "dp-attention" in parse_parallelism("tp=8 (dp-attention)").note
    assert "2 nodes" in parse_parallelism("tp=16 (2 nodes)").note
    assert parse_parallelism("tp=8").note == ""


@pytest.mark.parametrize("cell, n_devices, layout", [
    ("tp=8,ep=8", 8, (8, 1, 8)),  # SGLang --tp 8 --ep 8: attention TP 8, experts over the 8 GPUs
    ("DEP8", None, (1, 8, 8)),  # attention DP 8 x EP 8 on 8 GPUs
    ("tp=8 (dp-attention)", 8, (1, 8, 1)),  # --tp 8 --enable-dp-attention: dp defaults to tp
    ("tp=8,dp=4,ep=4 (dp-attention)", 8, (2, 4, 4)),  # 4 attention ranks of 2 GPUs
    ("ep=72 (9 nodes, dp-attention)", 72, (1, 72, 72)),  # large-scale EP: one rank per GPU
    ("dp=32,ep=32 (4 nodes)", 32, (1, 32, 32)),
    ("pp=2,tp=4", None, (4, 1, 1)),
])
def test_expert_and_data_parallel_cells_read_into_the_cost_models_layout(
    cell: str, n_devices: int | None, layout: tuple[int, int, int]
) -> None:
    par = parse_parallelism(cell, n_devices)
    assert par.layout() == layout
    tp, dp, _ = layout
    assert tp * dp * par.pp == par.n_gpus  # the layout covers the row's GPUs, no more, no less
    assert par.unmodelled() is None


def test_a_split_that_does_not_divide_the_gpus_says_why() -> None:
    assert "does not divide" in (parse_parallelism("tp=8,ep=3", 8).unmodelled() or "")


def test_plain_tensor_and_pipeline_splits_are_modelled() -> None:
    for cell in ("tp=8", "pp=2,tp=4", "tp=16 (2 nodes)", ""):
        assert parse_parallelism(cell).unmodelled() is None


@pytest.mark.parametrize("cell", ["banana", "tp=eight", "tp=0", "tp=8,tp=4", "zz=3"])
def test_an_unreadable_spelling_is_an_input_error_naming_the_cell(cell: str) -> None:
    with pytest.raises(InputError) as info:
        parse_parallelism(cell)
    assert repr(cell) in str(info.value)
