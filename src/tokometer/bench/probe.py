"""Measure this machine: memory bandwidth and matmul throughput, saved as the `local` hardware.

CPU (always available): a STREAM-like numpy probe. Three float64 arrays, each several times the
last-level cache, so every pass goes to DRAM; `copy` (a = b: 2 array transfers) and `triad`
(a = b + s*c, which numpy runs as two passes: 5 array transfers), each run on 1 thread and on
all cores (numpy releases the GIL on large arrays, so threads work on disjoint slices), best of
several repetitions. Bandwidth = bytes moved / seconds, decimal GB/s (docs/PHYSICS.md, Units).
Matmul: float32 GEMM `2 n^3` FLOPs / seconds, best over a few repetitions and sizes.

GPU (when torch is installed and sees CUDA, ROCm or Apple MPS): device-to-device copy and triad
on device tensors, synchronised before the clock stops, and the matrix peak of each format the
device runs: fp32, fp16, bf16, and where torch exposes them fp8 (`torch._scaled_mm`, e4m3) and int8
(`torch._int_mm`). On the CPU, numpy multiplies fp32 and fp64 only: the low-precision formats are
not measured there, and the profile says so.

A probe on a busy machine measures the other work (a build once cut the bandwidth 7.3x), so
`probe_checked` samples the machine's load before and after each measurement (`LoadSource`: the
CPU busy share from /proc/stat or the load average, GPU utilisation through NVML or torch when
they are installed), repeats until two idle measurements agree, and reports whether it could. The
CLI refuses to save a profile measured under load unless `--force`. A `--quick` probe is a lower
bound (smaller arrays, fewer repetitions) and is labelled so.

`save_local_profile` writes entry `local` into `tokometer_home()/hardware.toml` (the user
catalog, same schema as the shipped one; other entries in the file are kept) and clears the
catalog caches, so `--hw local` predicts for this very machine.
"""

from __future__ import annotations

import json
import os
import platform
import re
import time
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from tokometer.errors import CatalogError

DEFAULT_LLC_BYTES = 64 * 2**20


@dataclass(frozen=True)
class ProbeResult:
    device: str  # cpu | cuda | rocm | mps
    name: str
    vendor: str
    kind: str  # cpu | gpu | soc
    segment: str
    backend: str
    memory_gb: float
    memory_bandwidth_gb_per_s: float
    copy_gb_per_s: float
    triad_gb_per_s: float
    fp32_tflops: float | None
    fp16_tflops: float | None
    threads: int
    array_bytes: int
    repetitions: int
    elapsed_s: float
    quick: bool
    details: dict[str, Any] = field(default_factory=dict)
    # matrix peak per format measured on this device, TFLOPS (int8: TOPS): fp64, fp32, fp16, bf16, fp8, int8
    matrix_tflops: dict[str, float] = field(default_factory=dict)
    formats_note: str = ""  # which formats could not be measured here, and why

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- machine facts ----------------------------------------------------------------------------


def total_memory_gb() -> float | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError, AttributeError):
        return None


def available_memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def last_level_cache_bytes() -> int:
    best = 0
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    if base.is_dir():
        for index in base.glob("index*"):
            try:
                text = (index / "size").read_text().strip()
            except OSError:
                continue
            match = re.match(r"(\d+)([KMG]?)", text)
            if match:
                size = int(match.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[match.group(2)]
                best = max(best, size)
    if not best:
        try:
            best = int(os.sysconf("SC_LEVEL3_CACHE_SIZE") or 0)
        except (ValueError, OSError, AttributeError):
            best = 0
    return best or DEFAULT_LLC_BYTES


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _vendor(name: str) -> str:
    lowered = name.lower()
    for key, vendor in (("amd", "amd"), ("ryzen", "amd"), ("epyc", "amd"), ("intel", "intel"), ("xeon", "intel"), ("apple", "apple"), ("nvidia", "nvidia")):
        if key in lowered:
            return vendor
    return "generic"


def _is_laptop() -> bool:
    supply = Path("/sys/class/power_supply")
    return supply.is_dir() and any(p.name.startswith("BAT") for p in supply.iterdir())


# --- CPU probe --------------------------------------------------------------------------------

CPU_FORMATS_NOTE = (
    "numpy on the CPU multiplies fp32 and fp64 only: fp16/bf16, fp8 and int8 matrix peaks are not "
    "measured here (a GPU through torch measures them)"
)


def _best_rate(
    run: Callable[[], None], bytes_moved: float, repetitions: int, deadline: float, *, min_repetitions: int = 1
) -> tuple[float, int]:
    """Best bytes/s over `repetitions` runs, stopping early at `deadline` but never before `min_repetitions`."""
    best = 0.0
    done = 0
    for _ in range(max(repetitions, min_repetitions)):
        start = time.perf_counter()
        run()
        elapsed = time.perf_counter() - start
        done += 1
        if elapsed > 0:
            best = max(best, bytes_moved / elapsed)
        if done >= min_repetitions and (done >= repetitions or time.perf_counter() > deadline):
            break
    return best, done


# the GEMM sizes and the best-of-N of the matmul probe. Two quick probes once read 0.258 and 0.0488 TFLOPS:
# at 256-1024 a GEMM lasts microseconds to milliseconds, the stream test had used up the shared deadline so
# each size ran once, and one scheduler hiccup set the figure. Now: sizes large enough to time (>= 1024),
# a warm-up per size, and at least GEMM_MIN_REPS runs each whatever the deadline.
QUICK_GEMM_SIZES = (1024, 2048)
FULL_GEMM_SIZES = (1024, 2048, 3072)
GEMM_MIN_REPS = 3


def _cpu_stream(n: int, cores: int, reps: int, deadline: float) -> tuple[dict[str, float], int]:
    """Best copy and triad GB/s on 1 and `cores` threads over three float64 arrays of n elements."""
    import numpy as np

    a = np.zeros(n)
    b = np.ones(n)
    c = np.full(n, 2.0)
    results: dict[str, float] = {}
    rounds = 0
    with ThreadPoolExecutor(max_workers=cores) as pool:
        for width in sorted({1, cores}):
            bounds = [slice(i * n // width, (i + 1) * n // width) for i in range(width)]

            def copy_one(s: slice) -> None:
                np.copyto(a[s], b[s])

            def triad_one(s: slice) -> None:
                np.multiply(c[s], 3.0, out=a[s])
                np.add(a[s], b[s], out=a[s])

            def copy(bounds: list[slice] = bounds) -> None:
                list(pool.map(copy_one, bounds))

            def triad(bounds: list[slice] = bounds) -> None:
                list(pool.map(triad_one, bounds))

            copy()  # first touch, page faults
            rate, k = _best_rate(copy, 2.0 * n * 8, reps, deadline)
            results[f"copy_{width}t"] = rate / 1e9
            rounds += k
            rate, k = _best_rate(triad, 5.0 * n * 8, reps, deadline)
            results[f"triad_{width}t"] = rate / 1e9
            rounds += k
    return results, rounds


def measure_cpu(*, quick: bool = False, threads: int | None = None, budget_s: float | None = None) -> ProbeResult:
    """STREAM-like copy/triad on DRAM-sized numpy arrays, and a float32 GEMM."""
    import numpy as np

    start = time.perf_counter()
    budget = budget_s if budget_s is not None else (4.0 if quick else 30.0)
    deadline = start + budget
    llc = last_level_cache_bytes()
    per_array = max((2 if quick else 4) * llc, (32 if quick else 256) * 2**20)
    available = available_memory_bytes()
    if available:
        per_array = min(per_array, max(16 * 2**20, available // 8))
    n = per_array // 8
    cores = threads or os.cpu_count() or 1
    results, rounds = _cpu_stream(n, cores, 4 if quick else 10, deadline)
    copy_gb_s = max(v for k, v in results.items() if k.startswith("copy"))
    triad_gb_s = max(v for k, v in results.items() if k.startswith("triad"))

    # BLAS speed depends on the size (blocking, threads): the peak is the best of a few sizes
    flops_rate = 0.0
    sizes = QUICK_GEMM_SIZES if quick else FULL_GEMM_SIZES
    gemm_deadline = time.perf_counter() + (2.0 if quick else 10.0)  # its own budget, not what the stream left
    for m in sizes:
        x = np.random.default_rng(0).random((m, m), dtype=np.float32)
        y = np.random.default_rng(1).random((m, m), dtype=np.float32)

        def gemm(x: Any = x, y: Any = y) -> None:
            x @ y

        gemm()  # warm-up (BLAS threads)
        rate, _ = _best_rate(gemm, 2.0 * m**3, 5 if quick else 8, gemm_deadline, min_repetitions=GEMM_MIN_REPS)
        flops_rate = max(flops_rate, rate)
    fp64_rate = 0.0
    m64 = sizes[0] if quick else sizes[1]
    x64 = np.random.default_rng(2).random((m64, m64))
    y64 = np.random.default_rng(3).random((m64, m64))

    def gemm64() -> None:
        x64 @ y64

    gemm64()
    fp64_rate, _ = _best_rate(gemm64, 2.0 * m64**3, 3, time.perf_counter() + (1.0 if quick else 4.0), min_repetitions=GEMM_MIN_REPS)
    name = cpu_name()
    memory = total_memory_gb() or 16.0
    return ProbeResult(
        device="cpu",
        name=name,
        vendor=_vendor(name),
        kind="cpu",
        segment="laptop" if _is_laptop() else ("server" if cores >= 32 else "desktop"),
        backend="cpu",
        memory_gb=round(memory, 2),
        memory_bandwidth_gb_per_s=max(copy_gb_s, triad_gb_s),
        copy_gb_per_s=copy_gb_s,
        triad_gb_per_s=triad_gb_s,
        fp32_tflops=flops_rate / 1e12 if flops_rate else None,
        fp16_tflops=None,
        threads=cores,
        array_bytes=n * 8,
        repetitions=rounds,
        elapsed_s=time.perf_counter() - start,
        quick=quick,
        details={
            "last_level_cache_bytes": llc,
            "gemm_sizes": list(sizes),
            "rates_gb_per_s": results,
            "memory_gb_from_os": total_memory_gb() is not None,
        },
        matrix_tflops={k: v / 1e12 for k, v in (("fp32", flops_rate), ("fp64", fp64_rate)) if v},
        formats_note=CPU_FORMATS_NOTE,
    )


# --- GPU probe through torch ------------------------------------------------------------------


def measure_torch(*, quick: bool = False) -> ProbeResult | None:
    """Device bandwidth and GEMM through torch (CUDA/ROCm or Apple MPS); None without a device."""
    try:
        import torch  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    start = time.perf_counter()
    if torch.cuda.is_available():
        device = "cuda"
        props = torch.cuda.get_device_properties(0)
        name = str(props.name)
        memory_gb = props.total_memory / 1e9
        backend = "rocm" if getattr(torch.version, "hip", None) else "cuda"
        vendor = "amd" if backend == "rocm" else "nvidia"
        kind, segment = "gpu", _gpu_segment(name)

        def sync() -> None:
            torch.cuda.synchronize()

    elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        device = "mps"
        name = f"Apple GPU (MPS) on {cpu_name()}"
        memory_gb = total_memory_gb() or 16.0
        backend, vendor, kind, segment = "metal", "apple", "soc", "soc"

        def sync() -> None:
            torch.mps.synchronize()

    else:
        return None
    size = (256 if quick else 1024) * 2**20
    deadline = start + (6.0 if quick else 40.0)

    def timed(fn: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            fn()
            sync()

        return run

    def stream() -> tuple[float, float, int]:
        n = size // 4
        a = torch.empty(n, dtype=torch.float32, device=device)
        b = torch.ones(n, dtype=torch.float32, device=device)
        c = torch.full((n,), 2.0, dtype=torch.float32, device=device)
        reps = 5 if quick else 20
        timed(lambda: a.copy_(b))()
        copy_rate, k1 = _best_rate(timed(lambda: a.copy_(b)), 2.0 * size, reps, deadline)
        triad_rate, k2 = _best_rate(timed(lambda: torch.add(b, c, alpha=3.0, out=a)), 3.0 * size, reps, deadline)
        return copy_rate, triad_rate, k1 + k2  # the tensors are freed on return

    copy_rate, triad_rate, passes = stream()
    rates: dict[str, float] = {}
    skipped: list[str] = []
    m = 2048 if quick else 8192
    for key, make_gemm in _torch_gemms(torch, device, m):
        try:
            gemm = make_gemm()
            timed(gemm)()
        except Exception as exc:  # a format this device, build or backend lacks: say so, measure the rest
            skipped.append(f"{key} ({type(exc).__name__})")
            continue
        rate, _ = _best_rate(timed(gemm), 2.0 * m**3, 3 if quick else 10, deadline + 10, min_repetitions=GEMM_MIN_REPS)
        rates[key] = rate / 1e12
        del gemm
    return ProbeResult(
        device=device,
        name=name,
        vendor=vendor,
        kind=kind,
        segment=segment,
        backend=backend,
        memory_gb=round(memory_gb, 2),
        memory_bandwidth_gb_per_s=max(copy_rate, triad_rate) / 1e9,
        copy_gb_per_s=copy_rate / 1e9,
        triad_gb_per_s=triad_rate / 1e9,
        fp32_tflops=rates.get("fp32"),
        fp16_tflops=rates.get("fp16"),
        threads=1,
        array_bytes=size,
        repetitions=passes,
        elapsed_s=time.perf_counter() - start,
        quick=quick,
        details={"torch": str(torch.__version__), "gemm_n": m},
        matrix_tflops=dict(rates),
        formats_note=("not measured on this device: " + ", ".join(skipped)) if skipped else "",
    )


def _torch_gemms(torch: Any, device: str, m: int) -> list[tuple[str, Callable[[], Callable[[], None]]]]:
    """(format, a factory of one m x m x m GEMM) for every format torch may run on `device`.

    fp8 multiplies e4m3 operands with `torch._scaled_mm` (Hopper, Ada, MI300 and newer); int8 with
    `torch._int_mm` (int32 accumulate). A factory raises where the device or build lacks the format.
    """

    def plain(dtype_name: str) -> Callable[[], Callable[[], None]]:
        def make() -> Callable[[], None]:
            dtype = getattr(torch, dtype_name)
            x = torch.randn(m, m, dtype=dtype, device=device)
            y = torch.randn(m, m, dtype=dtype, device=device)

            def gemm() -> None:
                x @ y

            return gemm

        return make

    def fp8() -> Callable[[], None]:
        x = torch.randn(m, m, device=device).to(torch.float8_e4m3fn)
        y = torch.randn(m, m, device=device).to(torch.float8_e4m3fn).t()  # column-major, as cuBLASLt wants
        one = torch.tensor(1.0, device=device)

        def gemm() -> None:
            torch._scaled_mm(x, y, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        return gemm

    def int8() -> Callable[[], None]:
        x = torch.randint(-8, 8, (m, m), dtype=torch.int8, device=device)
        y = torch.randint(-8, 8, (m, m), dtype=torch.int8, device=device)

        def gemm() -> None:
            torch._int_mm(x, y)

        return gemm

    return [("fp16", plain("float16")), ("bf16", plain("bfloat16")), ("fp32", plain("float32")), ("fp8", fp8), ("int8", int8)]


def _gpu_segment(name: str) -> str:
    lowered = name.lower()
    if any(k in lowered for k in ("h100", "h200", "h800", "a100", "a800", "b100", "b200", "gb200", "l40", "a10", " l4", "v100", "t4", "instinct", "mi2", "mi3")):
        return "datacenter"
    if any(k in lowered for k in ("laptop", "mobile", "max-q")):
        return "laptop"
    if any(k in lowered for k in ("rtx a", "rtx pro", "quadro", "ada generation", "radeon pro")):
        return "workstation"
    return "desktop"


def probe(*, quick: bool = False, device: str = "auto") -> ProbeResult:
    """`auto`: the GPU through torch when one is there, else the CPU."""
    if device in ("auto", "gpu"):
        found = measure_torch(quick=quick)
        if found is not None:
            return found
        if device == "gpu":
            from tokometer.errors import InputError

            raise InputError("no GPU found: `tokometer probe --device gpu` needs torch with CUDA, ROCm or MPS")
    return measure_cpu(quick=quick)


# --- the machine's load, before and after ---------------------------------------------------


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


@dataclass(frozen=True)
class Attempt:
    result: ProbeResult
    before: LoadSample
    after: LoadSample
    idle: bool


@dataclass(frozen=True)
class CheckedProbe:
    """The probe's best idle measurement (else its last), every attempt with its load, and whether
    two idle attempts agreed."""

    result: ProbeResult
    attempts: tuple[Attempt, ...]
    idle: bool  # the result was measured with the machine idle before and after
    stable: bool  # two idle measurements agreed within AGREEMENT

    def verdict(self) -> str:
        n = len(self.attempts)
        if not self.idle:
            worst = max(self.attempts, key=lambda a: max(a.before.cpu_busy_share or 0, a.after.cpu_busy_share or 0, a.before.gpu_busy_share or 0, a.after.gpu_busy_share or 0))
            return (f"the machine was busy in all {n} attempt(s) (before: {worst.before.words()}; after: {worst.after.words()}): "
                    "the figures measure the other work too")
        if not self.stable:
            return f"idle, but {n} attempt(s) gave no two measurements within {AGREEMENT:.0%} of each other: treat the figures as rough"
        return f"idle before and after, two measurements within {AGREEMENT:.0%} ({n} attempt(s))"

    def to_dict(self) -> dict[str, Any]:
        return {
            "idle": self.idle,
            "stable": self.stable,
            "verdict": self.verdict(),
            "attempts": [
                {"before": asdict(a.before), "after": asdict(a.after), "idle": a.idle,
                 "memory_bandwidth_gb_per_s": a.result.memory_bandwidth_gb_per_s,
                 "matrix_tflops": a.result.matrix_tflops}
                for a in self.attempts
            ],
        }


def _agree(a: ProbeResult, b: ProbeResult) -> bool:
    def close(x: float | None, y: float | None) -> bool:
        if not x or not y:
            return x == y
        return abs(x - y) <= AGREEMENT * max(x, y)

    return close(a.memory_bandwidth_gb_per_s, b.memory_bandwidth_gb_per_s) and close(a.fp32_tflops, b.fp32_tflops) and close(a.fp16_tflops, b.fp16_tflops)


def probe_checked(
    *,
    quick: bool = False,
    device: str = "auto",
    load: LoadSource | None = None,
    attempts: int | None = None,
    measure: Callable[[], ProbeResult] | None = None,
    on_attempt: Callable[[int, int, Attempt], None] | None = None,
) -> CheckedProbe:
    """Measure, with the load sampled before and after each attempt, until two idle attempts agree
    (at most `attempts`: 3, 2 when quick). The result is the best idle attempt (peaks are best-of),
    else the last one. `on_attempt(n, limit, attempt)` is told after each attempt (the CLI's progress)."""
    sample = load or system_load
    run = measure or (lambda: probe(quick=quick, device=device))
    limit = attempts or (2 if quick else 3)
    done: list[Attempt] = []
    stable = False
    for _ in range(limit):
        before = sample()
        result = run()
        after = sample()
        idle = not before.busy(CPU_BUSY_LIMIT, GPU_BUSY_LIMIT) and not after.busy(CPU_BUSY_LIMIT, GPU_BUSY_LIMIT)
        done.append(Attempt(result, before, after, idle))
        if on_attempt is not None:
            on_attempt(len(done), limit, done[-1])
        calm = [a.result for a in done if a.idle]
        if len(calm) >= 2 and any(_agree(calm[-1], other) for other in calm[:-1]):
            stable = True
            break
    calm_attempts = [a for a in done if a.idle]
    if calm_attempts:
        best = max(calm_attempts, key=lambda a: a.result.memory_bandwidth_gb_per_s).result
    else:
        best = done[-1].result
    return CheckedProbe(best, tuple(done), idle=bool(calm_attempts), stable=stable)


# --- the `local` profile ----------------------------------------------------------------------

_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(round(value, 4))
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def profile_entry(result: ProbeResult, today: date | None = None) -> dict[str, Any]:
    """The `local` hardware entry, in the shipped catalog's schema."""
    day = (today or date.today()).isoformat()
    entry: dict[str, Any] = {
        "name": f"This machine: {result.name}" + (f" ({result.threads} threads)" if result.device == "cpu" else ""),
        "vendor": result.vendor,
        "kind": result.kind,
        "segment": result.segment,
        "backend": result.backend,
        "memory_gb": float(result.memory_gb),
        "memory_bandwidth_gb_per_s": round(result.memory_bandwidth_gb_per_s, 2),
    }
    if result.fp32_tflops:
        entry["fp32_tflops"] = round(result.fp32_tflops, 4)
    if result.fp16_tflops:
        entry["fp16_tflops"] = round(result.fp16_tflops, 4)
    if result.matrix_tflops.get("fp8"):
        entry["fp8_tflops"] = round(result.matrix_tflops["fp8"], 4)
    if result.matrix_tflops.get("int8"):
        entry["int8_tops"] = round(result.matrix_tflops["int8"], 4)
    entry["launch_year"] = (today or date.today()).year
    entry["source"] = f"tokometer probe {day}"
    entry["notes"] = (
        f"Measured, not a datasheet: {result.device} copy {result.copy_gb_per_s:.1f} GB/s, triad "
        f"{result.triad_gb_per_s:.1f} GB/s (best of {result.repetitions} passes over {result.array_bytes / 1e6:.0f} MB arrays"
        + (f", {result.threads} threads" if result.device == "cpu" else "")
        + ")"
        + (f"; fp32 GEMM {result.fp32_tflops:.3f} TFLOPS" if result.fp32_tflops else "")
        + (f"; fp16 GEMM {result.fp16_tflops:.2f} TFLOPS" if result.fp16_tflops else "")
        + "".join(f"; {k} GEMM {v:.3g} {'TOPS' if k == 'int8' else 'TFLOPS'}" for k, v in result.matrix_tflops.items() if k not in ("fp16", "fp32"))
        + (f"; {result.formats_note}" if result.formats_note else "")
        + (" (quick probe: a lower bound, smaller arrays and fewer repetitions)" if result.quick else "")
        + ". launch_year is the probe year."
    )
    return entry


def render_entry(entry_id: str, entry: dict[str, Any]) -> str:
    return f"[{entry_id}]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in entry.items())


def replace_table(text: str, entry_id: str, block: str) -> str:
    """`text` with table `[entry_id]` (and its sub-tables) replaced by `block`, or `block` appended."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        match = _HEADER.match(line)
        if match:
            name = match.group(1).strip().strip('"')
            skipping = name == entry_id or name.startswith(entry_id + ".")
        if not skipping:
            out.append(line)
    kept = "".join(out).rstrip("\n")
    return (kept + "\n\n" if kept else "") + block


def save_local_profile(result: ProbeResult, home: Path | None = None, *, entry_id: str = "local") -> Path:
    """Write/replace `[local]` in the user hardware catalog, validate it, clear the catalog caches."""
    from tokometer.catalog import HARDWARE_SCHEMA, clear_caches, hardware_catalog, tokometer_home
    from tokometer.catalog.schema import check_entry

    path = (home or tokometer_home()) / "hardware.toml"
    existing = ""
    if path.is_file():
        existing = path.read_text(encoding="utf-8")
        try:
            tomllib.loads(existing)
        except tomllib.TOMLDecodeError as exc:
            raise CatalogError(f"{path}: not valid TOML ({exc}); fix or move it before `tokometer probe` writes to it") from None
    entry = profile_entry(result)
    text = replace_table(existing, entry_id, render_entry(entry_id, entry))
    parsed = tomllib.loads(text)
    check_entry(path, entry_id, parsed[entry_id], HARDWARE_SCHEMA)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    clear_caches()
    hardware_catalog().get(entry_id)  # fail loudly now, not at the next --hw local
    return path
