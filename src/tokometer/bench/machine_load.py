"""How busy this machine is: the CPU's busy share (/proc/stat, else the load average) and the GPU's
utilisation (NVML, else torch), sampled by `tokometer probe` before and after each measurement,
because a probe on a busy machine measures the other work too (see `bench/probe.py`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class LoadSample:
    """How busy the machine is: the share of all CPU time spent busy, and GPU utilisation (0-1,
    None where nothing reports it)."""

    cpu_busy_share: float | None
    gpu_busy_share: float | None = None
    source: str = ""

    def busy(self, cpu_limit: float, gpu_limit: float) -> bool:
        return (self.cpu_busy_share or 0.0) > cpu_limit or (self.gpu_busy_share or 0.0) > gpu_limit

    def words(self) -> str:
        parts = [f"CPU {self.cpu_busy_share:.0%} busy" if self.cpu_busy_share is not None else "CPU load unknown"]
        if self.gpu_busy_share is not None:
            parts.append(f"GPU {self.gpu_busy_share:.0%} utilised")
        return ", ".join(parts)


LoadSource = Callable[[], LoadSample]

# a machine is busy above these shares; a STREAM probe under 25 % of the cores' load already reads low
CPU_BUSY_LIMIT = 0.25
GPU_BUSY_LIMIT = 0.10
AGREEMENT = 0.10  # two idle measurements agree when bandwidth and matmul differ by at most 10 %


def _proc_stat_times() -> tuple[int, int] | None:
    """(idle, total) jiffies of all CPUs from /proc/stat (idle counts iowait too)."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return idle, sum(values[:8])


def cpu_busy_share(interval_s: float = 0.5) -> float | None:
    """Share of all cores' time spent busy over `interval_s` (/proc/stat), else the 1-minute load
    average over the core count, else None."""
    first = _proc_stat_times()
    if first is not None:
        time.sleep(interval_s)
        second = _proc_stat_times()
        if second is not None and second[1] > first[1]:
            return max(0.0, min(1.0, 1.0 - (second[0] - first[0]) / (second[1] - first[1])))
    try:
        return min(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except (OSError, AttributeError):
        return None


def gpu_busy_share() -> float | None:
    """GPU 0's utilisation through NVML (pynvml), else torch's view of it; None without either."""
    try:
        import pynvml  # type: ignore[import-not-found, unused-ignore]

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            return float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu) / 100.0
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        pass
    try:
        import torch  # type: ignore[import-not-found, unused-ignore]

        if torch.cuda.is_available():
            return float(torch.cuda.utilization(0)) / 100.0
    except Exception:
        pass
    return None


def system_load() -> LoadSample:
    """The machine's load now: CPU from /proc/stat (or the load average), GPU where a library reports it."""
    return LoadSample(cpu_busy_share(), gpu_busy_share(), source="/proc/stat" if _proc_stat_times() else "loadavg")
