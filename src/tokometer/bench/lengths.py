"""The random workload's request lengths: input and output tokens drawn uniform around a target.

`bench --input-len L --output-len O --range-ratio R` draws each request's prompt length uniform over
the whole numbers of [floor(L (1 - R)), ceil(L (1 + R))] and its output length over
[max(1, floor(O (1 - R))), ceil(O (1 + R))], both ends included, R in [0, 1): the bounds of vLLM's
random dataset (`vllm/benchmarks/datasets.py`, `RandomDataset.get_sampling_params`, and `vllm bench
serve --random-input-len/--random-output-len/--random-range-ratio`). R = 0 gives every request the
same lengths, as InferenceMAX's fixed ISL/OSL runs do. The draws come from the run's seeded
generator (`--seed`), so a seed repeats them. Pure: no I/O.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LengthRange:
    """Whole token counts from `low` to `high`, both included."""

    low: int
    high: int

    def draw(self, rng: random.Random) -> int:
        return self.low if self.low == self.high else rng.randint(self.low, self.high)


def length_range(target: int, range_ratio: float, *, at_least: int = 0) -> LengthRange:
    """[floor(target (1 - R)), ceil(target (1 + R))], the low end raised to `at_least`."""
    low = max(at_least, math.floor(target * (1.0 - range_ratio)))
    high = max(low, math.ceil(target * (1.0 + range_ratio)))
    return LengthRange(low, high)


__all__ = ["LengthRange", "length_range"]
