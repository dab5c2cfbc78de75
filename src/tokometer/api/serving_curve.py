"""`tokometer.serving_curve`: one served workload at a chosen rate (or number of users) and the
latency-throughput curve around it, with its knee: what the web's Serving page and the runs overlay
draw. Each point is what `tokometer simulate --rate R --json` computes for the same inputs; the work
per call is bounded (`MAX_REQUESTS` per point, `MAX_RATES` points, `MAX_REPLICAS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokometer.api.result import JsonResult
from tokometer.costmodel.serving.speculation import METHODS
from tokometer.usecases.serving_curve import (
    MAX_RATES,
    MAX_REPLICAS,
    MAX_REQUESTS,
    MAX_SPEC_TOKENS,
    MAX_SYSTEM_PROMPTS,
    MAX_TURNS,
    ServingCurve,
    ServingQuery,
)

SPEC_METHODS: tuple[str, ...] = tuple(METHODS)  # speculative decoding methods the scheduler knows

__all__ = ["MAX_RATES", "MAX_REPLICAS", "MAX_REQUESTS", "MAX_SPEC_TOKENS", "MAX_SYSTEM_PROMPTS", "MAX_TURNS", "SPEC_METHODS",
           "ServingQuery", "ServingSweep", "serving_curve"]


@dataclass(frozen=True)
class ServingSweep(JsonResult):
    """The rate sweep with its knee, the chosen point and any closed loops (`curve`), on one deployment."""

    curve: ServingCurve

    def to_dict(self) -> dict[str, Any]:
        """The web's `/api/simulate` shape: each point's summary, the knee's rate, the chosen point's time shares."""
        return self.curve.to_dict()


def serving_curve(query: ServingQuery | None = None, /, **fields: Any) -> ServingSweep:
    """Simulate a `ServingQuery` (or its fields as keyword arguments: `model`, `hw`, `quant`, `engine`, `tp`,
    `replicas`, `prompt_tokens`, `output_tokens`, `num_requests`, `rate_per_s` or `concurrency`,
    `rates_per_s`, `concurrency_levels`, `slo_ttft_s`, `slo_tpot_s`, `seed`, and `tokometer simulate`'s
    speculative decoding (`spec_method`, `spec_tokens`, `spec_acceptance`, `draft_model`) and shared
    prefixes (`system_prompt`, `system_prompt_share`, `system_prompts`, `turns`)); out-of-range values are an
    `InputError` naming the field. Without `rates_per_s` the sweep runs from 10 % to 120 % of saturation.
    """
    from tokometer.usecases.serving_curve import serving_curve as run

    q = query if query is not None else ServingQuery(**fields)
    q.check()
    return ServingSweep(run(q))
