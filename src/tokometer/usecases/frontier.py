"""The serving frontier: throughput per GPU against interactivity, over concurrency and parallel layouts.

The field compares serving setups by the Pareto set of (output tokens/s per GPU, output tokens/s per
user) across concurrency and TP/DP/EP layouts (SemiAnalysis InferenceMAX draws these nightly from
measurements). For each (hardware, format) and each layout that fits, the simulator runs a closed loop of
`c` users at each concurrency (fixed prompt and output lengths, the engine's scheduler) and reports:

- tokens/s per GPU: the run's output tokens/s over the replica's GPUs;
- tokens/s per user: 1 / mean TPOT, what one stream sees while generating (InferenceMAX's
  "interactivity");
- TTFT (mean and p99), which the two axes leave out.

A point is on the frontier when no other point is at least as good on both axes and better on one.

With speculative decoding given (`spec`: method, drafted tokens, acceptance, draft model), each layout
is simulated both without and with it, as vendors publish their low-latency points with MTP or EAGLE
and their throughput points without: the frontier then says at which concurrency speculation stops
paying (its verify pass costs more than the steps it saves once the batch is compute-bound).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from tokometer.costmodel.serving import ServingResult, Workload, fixed
from tokometer.errors import InputError, TokometerError
from tokometer.usecases.simulate import Deployment, deploy, run

CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
TP_LAYOUTS = ((1, 1, 1), (2, 1, 1), (4, 1, 1), (8, 1, 1))  # (tp, dp, ep)
MOE_LAYOUTS = ((1, 2, 2), (1, 4, 4), (1, 8, 8), (1, 16, 16))
GPUS_PER_NODE = 8
INTER_LINK = "ib-ndr"
MIN_REQUESTS = 32  # each point simulates at least this many requests, and twice its concurrency


@dataclass(frozen=True)
class FrontierPoint:
    hardware: str
    quant: str
    layout: str
    gpus: int
    concurrency: int
    result: ServingResult
    on_frontier: bool = False
    spec: str | None = None  # "mtp k=3 a=0.85" when the point speculates

    @property
    def tok_s_per_gpu(self) -> float:
        return self.result.tput_out_tok_s / self.gpus

    @property
    def tok_s_per_user(self) -> float:
        tpot = self.result.tpot_s.mean
        return 1.0 / tpot if tpot else 0.0

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {
            "hardware": self.hardware, "quant": self.quant, "layout": self.layout, "gpus": self.gpus,
            "concurrency": self.concurrency, "tok_s_per_gpu": self.tok_s_per_gpu, "tok_s_per_user": self.tok_s_per_user,
            "ttft_mean_s": r.ttft_s.mean, "ttft_p99_s": r.ttft_s.p99, "tpot_mean_s": r.tpot_s.mean,
            "output_tok_s": r.tput_out_tok_s, "on_frontier": self.on_frontier, "spec": self.spec,
        }


@dataclass(frozen=True)
class Frontier:
    points: tuple[FrontierPoint, ...]
    skipped: dict[str, int]

    @property
    def pareto(self) -> tuple[FrontierPoint, ...]:
        """The frontier, from the most interactive to the most throughput per GPU."""
        return tuple(sorted((p for p in self.points if p.on_frontier), key=lambda p: -p.tok_s_per_user))

    def to_dict(self) -> dict[str, Any]:
        return {"frontier": [p.to_dict() for p in self.pareto], "points": [p.to_dict() for p in self.points],
                "skipped": self.skipped}


def pareto_flags(values: Sequence[tuple[float, float]]) -> list[bool]:
    """Whether each (x, y) is on the Pareto frontier when both are maximised: no other point is at least
    as large on both and larger on one."""
    flags = []
    for i, (x, y) in enumerate(values):
        dominated = any(
            (a >= x and b >= y and (a > x or b > y)) for j, (a, b) in enumerate(values) if j != i
        )
        flags.append(not dominated)
    return flags


def layout_name(dep: Deployment) -> str:
    lay = dep.setup.layout
    text = f"tp{lay.tp}" + (f" dp{lay.dp}" if lay.dp > 1 else "") + (f" ep{lay.ep}" if lay.ep > 1 else "")
    return text + (f", {lay.nodes} nodes" if lay.nodes > 1 else "")


def frontier(
    model: Any, *, hardware: Sequence[str], quants: Sequence[str | None], engine: str = "vllm",
    prompt: int = 1024, output: int = 1024, concurrencies: Sequence[int] = CONCURRENCIES,
    layouts: Sequence[tuple[int, int, int]] | None = None, overlap: bool = False, seed: int = 0,
    spec: Mapping[str, Any] | None = None,
) -> Frontier:
    """Simulate every (hardware, format, layout that fits, concurrency) and mark the Pareto set.

    `layouts` (tp, dp, ep): None tries TP 1-8 and, for a MoE model, DP x EP over 2-16 GPUs (16 as two
    nodes of 8 over InfiniBand NDR). `spec`: `deploy`'s speculation keywords (`spec_method`,
    `spec_tokens`, `spec_acceptance`, `draft_model`); each layout is then run without and with it."""
    if prompt < 1 or output < 1:
        raise InputError("--prompt and --output must be at least 1 token")
    if not concurrencies or any(c < 1 for c in concurrencies):
        raise InputError("the concurrencies must be whole numbers of users, 1 or more")
    points: list[FrontierPoint] = []
    skipped: dict[str, int] = {}

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    for hw in hardware:
        for q in quants:
            tried: list[tuple[int, int, int]] = list(layouts or TP_LAYOUTS)
            moe_added = layouts is not None
            i = 0
            while i < len(tried):
                tp, dp, ep = tried[i]
                i += 1
                devices = tp * dp
                nodes = max(1, devices // GPUS_PER_NODE) if devices > GPUS_PER_NODE else 1
                place = partial(deploy, model, hw, quant=q, engine=engine, tp=tp, dp=dp, ep=ep, nodes=nodes,
                                inter_link=INTER_LINK if nodes > 1 else None, overlap=overlap and ep > 1)
                try:
                    dep = place()
                except TokometerError:
                    skip("does not fit")
                    continue
                if not moe_added and dep.setup.model.is_moe:
                    tried += [lay for lay in MOE_LAYOUTS if lay[2] <= dep.setup.model.n_experts]
                    moe_added = True
                if dep.kv_capacity_tokens < prompt + output:
                    skip("KV cache cannot hold one request")
                    continue
                variants: list[tuple[Deployment, str | None]] = [(dep, None)]
                if spec:
                    try:
                        fast = place(**spec)  # the same layout with the drafter
                    except InputError:
                        raise  # a method the engine or model cannot run: the user's input, said once
                    except TokometerError:
                        skip("does not fit with the drafter")
                    else:
                        if fast.kv_capacity_tokens >= prompt + output and fast.speculation is not None:
                            sp = fast.speculation
                            variants.append((fast, f"{sp.method} k={sp.draft_tokens} a={sp.acceptance:g}"))
                        else:
                            skip("KV cache cannot hold one request beside the drafter")
                for d, label in variants:
                    name = layout_name(d) + (f" + {label}" if label else "")
                    for c in concurrencies:
                        wl = Workload("closed", max(MIN_REQUESTS, 2 * c), fixed(prompt), fixed(output), concurrency=c)
                        res = run(d, wl, seed=seed)
                        if res.completed == 0 or not res.tpot_s.mean:
                            skip("no request completed")
                            continue
                        points.append(FrontierPoint(d.setup.hardware.id, q or "default", name, d.devices, c, res, spec=label))
    if not points:
        raise InputError("no layout of this model fits the hardware given; nothing to draw")
    flags = pareto_flags([(p.tok_s_per_gpu, p.tok_s_per_user) for p in points])
    marked = tuple(replace(p, on_frontier=f) for p, f in zip(points, flags, strict=True))
    return Frontier(marked, skipped)


def parse_concurrencies(text: str | None) -> tuple[int, ...]:
    """`1,2,4,8` (users); None: powers of two from 1 to 1024."""
    if text is None:
        return CONCURRENCIES
    out = []
    for part in text.split(","):
        try:
            value = float(part.strip())
        except ValueError:
            raise InputError(f"concurrencies are whole numbers of users like 1,8,64, got {part.strip()!r}") from None
        if not (math.isfinite(value) and value >= 1 and value == int(value)):
            raise InputError(f"a concurrency must be a whole number of users, 1 or more, got {part.strip()!r}")
        out.append(int(value))
    return tuple(out)
