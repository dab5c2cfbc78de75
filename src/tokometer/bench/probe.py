"""Measure this machine: memory bandwidth and matmul throughput, saved as the `local` hardware.

CPU (always available): a STREAM-like numpy probe. Three float64 arrays, each several times the
last-level cache, so every pass goes to DRAM; `copy` (a = b: 2 array transfers) and `triad`
(a = b + s*c, which numpy runs as two passes: 5 array transfers), each run on 1 thread and on
all cores (numpy releases the GIL on large arrays, so threads work on disjoint slices), best of
several repetitions. Bandwidth = bytes moved / seconds, decimal GB/s (docs/PHYSICS.md, Units).
Matmul: float32 GEMM `2 n^3` FLOPs / seconds, best over a few repetitions and sizes.

GPU (when torch is installed and sees CUDA, ROCm or Apple MPS): device-to-device copy and triad
on device tensors, fp16 and fp32 GEMM, synchronised before the clock stops.

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
    m = 2048 if quick else 8192
    for dtype, key in ((torch.float16, "fp16"), (torch.float32, "fp32")):
        x = torch.randn(m, m, dtype=dtype, device=device)
        y = torch.randn(m, m, dtype=dtype, device=device)

        def gemm(x: Any = x, y: Any = y) -> None:
            x @ y

        timed(gemm)()
        rate, _ = _best_rate(timed(gemm), 2.0 * m**3, 3 if quick else 10, deadline + 10, min_repetitions=GEMM_MIN_REPS)
        rates[key] = rate / 1e12
        del x, y
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
    )


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
    entry["launch_year"] = (today or date.today()).year
    entry["source"] = f"tokometer probe {day}"
    entry["notes"] = (
        f"Measured, not a datasheet: {result.device} copy {result.copy_gb_per_s:.1f} GB/s, triad "
        f"{result.triad_gb_per_s:.1f} GB/s (best of {result.repetitions} passes over {result.array_bytes / 1e6:.0f} MB arrays"
        + (f", {result.threads} threads" if result.device == "cpu" else "")
        + ")"
        + (f"; fp32 GEMM {result.fp32_tflops:.3f} TFLOPS" if result.fp32_tflops else "")
        + (f"; fp16 GEMM {result.fp16_tflops:.2f} TFLOPS" if result.fp16_tflops else "")
        + (" (quick probe)" if result.quick else "")
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
