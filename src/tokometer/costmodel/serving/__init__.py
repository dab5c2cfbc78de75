"""Serving many streams: a step-level simulator of an engine's scheduler on the roofline (pure).

The scheduler knobs and the fitted serving efficiency are value types in `tokometer.domain.serving_specs`
(the catalog builds them, so they sit below the cost model). `cost` is the time of one mixed step,
`workload` the arrival processes and length distributions, `engine` one replica stepping through
time, `simulate` the driver with replicas and a router, `stats` the bounded-memory statistics. No I/O: traces and files are read by the use-case layer.
"""

from tokometer.costmodel.serving.cost import StepCost, kv_capacity_tokens, step_cost
from tokometer.costmodel.serving.simulate import ROUTERS, ServingResult, simulate
from tokometer.costmodel.serving.stats import StreamStat, Summary
from tokometer.costmodel.serving.workload import LengthDist, Workload, fixed
from tokometer.domain.serving_specs import SchedulerPolicy, ServingEfficiency

__all__ = [
    "ROUTERS",
    "LengthDist",
    "SchedulerPolicy",
    "ServingEfficiency",
    "ServingResult",
    "StepCost",
    "StreamStat",
    "Summary",
    "Workload",
    "fixed",
    "kv_capacity_tokens",
    "simulate",
    "step_cost",
]
