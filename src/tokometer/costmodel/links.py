"""Links between devices and to the host, and what crossing them costs (docs/PHYSICS.md, section 7).

Link constants (one place, with their sources):

- All-reduce of `S` bytes on `n` devices, the cheaper of NCCL's two ring protocols (its own cost
  model, NVIDIA/nccl `src/graph/tuning.cc`: each protocol costs `base + steps * hop + S / bw`):
  low-latency `t_LL = launch + 2 (n - 1) hop + 2 (n - 1) / n * S / (eta_link BW / 4)` (LL moves
  8-byte flag+data words, so NCCL rates its all-reduce at a quarter of the bus bandwidth) and
  bulk `t_simple = t_LL's latency + 4.8 us + 2 (n - 1) * extra_hop + 2 (n - 1) / n * S / (eta_link BW)`
  (Simple's base latency 8.4 us vs LL's 3.6 us; its per-step latency 3.4 us vs 0.47 us on NVLink,
  5.7 vs 1.0 us on PCIe). Decode-sized messages (`B * hidden * 2`, kB to a few MB) ride LL at a
  quarter of the link; prefill chunks (tens of MB) ride Simple at nearly its full rate. Checks: 1 MiB
  at TP 4 on H100 NVLink gives 35 us, where vLLM's custom all-reduce measures 40 us
  (sgl-project/sglang#2904); the single-rate formula gave 22 us.
  `2 (n - 1)` is the ring algorithm's step count (NCCL maintainer, NVIDIA/nccl-tests#123).
  `launch = 6 us` and the NVLink `hop = 2 us` reproduce nccl-tests#123's DGX-A100 figures
  (10 us at 2 GPUs, 34 us at 8); 2 us is also the P2P-write latency over NVLink reported by
  `p2pBandwidthLatencyTest` (NVIDIA/cuda-samples#230: 1.8-2.3 us), and H100 NVLS reaches ~6 us at
  2 GPUs (NVIDIA/nccl#1259).
- A PCIe hop without peer-to-peer (consumer cards, or through the host) costs about 13 us:
  `p2pBandwidthLatencyTest` "P2P=Disabled" latencies of 11-20 us (NVIDIA/cuda-samples#230,
  NVIDIA/nccl#1127). The same figure is used for a link given only as a bandwidth.
- `eta_link = 0.8`: bulk transfers reach about 80 % of the link's rate (H100 NVLink 376 of
  450 GB/s per direction, NVIDIA/nccl#1264; PCIe 4.0 x16 about 25 of 31.5 GB/s).
- PCIe per-lane rates per direction (PCI-SIG base specifications, 128b/130b encoding):
  gen3 0.985, gen4 1.969, gen5 3.938 GB/s. NVLink: half the catalog's bidirectional figure.
- Activations cross links in 16-bit floats: 2 bytes per element.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from tokometer.domain.specs import HardwareSpec, ModelSpec, _Plain
from tokometer.domain.units import GB, US
from tokometer.errors import InputError

ACTIVATION_BYTES = 2.0
LINK_EFFICIENCY = 0.8
ALLREDUCE_LAUNCH_US = 6.0
NVLINK_HOP_US = 2.0
PCIE_HOP_US = 13.0
LL_BANDWIDTH_SHARE = 0.25  # NCCL's LL ring all-reduce: a quarter of the bus bandwidth (tuning.cc)
SIMPLE_EXTRA_BASE_US = 4.8  # NCCL base latency, ring Simple 8.4 us minus ring LL 3.6 us (tuning.cc)
SIMPLE_EXTRA_HOP_US = {"nvlink": 3.4 - 0.47, "pcie": 5.7 - 1.0}  # per ring step, Simple minus LL (tuning.cc)
PCIE_LANE_GB_PER_S = {3: 0.985, 4: 1.969, 5: 3.938}
PCIE_LANES = (1, 2, 4, 8, 16)
LINK_SOURCES = (
    "https://github.com/NVIDIA/nccl-tests/issues/123",
    "https://github.com/NVIDIA/cuda-samples/issues/230",
    "https://github.com/NVIDIA/nccl/issues/1127",
    "https://github.com/NVIDIA/nccl/issues/1259",
    "https://github.com/NVIDIA/nccl/issues/1264",
    "https://github.com/NVIDIA/nccl/blob/master/src/graph/tuning.cc",
    "https://github.com/sgl-project/sglang/pull/2904",
)
LinkKind = Literal["nvlink", "pcie", "custom"]


@dataclass(frozen=True, slots=True)
class Link(_Plain):
    """A device-to-device (or device-to-host) link: per-direction bandwidth and one hop's latency."""

    name: str
    kind: LinkKind
    bandwidth_gb_per_s: float  # per direction, datasheet
    hop_latency_us: float
    source: str = ""

    @property
    def effective_bytes_per_s(self) -> float:
        return LINK_EFFICIENCY * self.bandwidth_gb_per_s * GB


def pcie_link(gen: int, lanes: int = 16) -> Link:
    """PCIe gen 3/4/5 with 1-16 lanes: per-lane rate x lanes, per direction."""
    if gen not in PCIE_LANE_GB_PER_S:
        raise InputError(f"PCIe generation {gen} is not modelled (3, 4 or 5)", field="link")
    if lanes not in PCIE_LANES:
        raise InputError(f"PCIe lane count must be one of {', '.join(map(str, PCIE_LANES))}, got {lanes}", field="link")
    return Link(
        name=f"pcie{gen}x{lanes}",
        kind="pcie",
        bandwidth_gb_per_s=PCIE_LANE_GB_PER_S[gen] * lanes,
        hop_latency_us=PCIE_HOP_US,
        source="PCI-SIG per-lane rates; hop latency from p2pBandwidthLatencyTest (P2P disabled)",
    )


def host_link(hardware: HardwareSpec) -> Link:
    """The device's own PCIe connection to the host (PCIe 4.0 x16 when the catalog does not say)."""
    gen = hardware.pcie_gen if hardware.pcie_gen in PCIE_LANE_GB_PER_S else 4
    lanes = hardware.pcie_lanes if hardware.pcie_lanes in PCIE_LANES else 16
    assert gen is not None and lanes is not None
    return pcie_link(gen, lanes)


_PCIE = re.compile(r"^pcie(?:[\s_-]*gen)?[\s_-]*(\d+)(?:[\s_-]*x(\d+))?$")


def parse_link(text: str | None, hardware: HardwareSpec) -> Link:
    """`nvlink`, `pcie3`/`pcie4`/`pcie5` with optional `xLANES` (`pcie4x8`), or a bandwidth in GB/s.

    Without a value: NVLink when the catalog gives the device one, else its own PCIe.
    """
    if text is None or not text.strip():
        return nvlink(hardware) if hardware.nvlink_gb_per_s else host_link(hardware)
    key = text.strip().lower()
    if key == "nvlink":
        return nvlink(hardware)
    match = _PCIE.match(key)
    if match:
        return pcie_link(int(match.group(1)), int(match.group(2) or 16))
    try:
        value = float(key.removesuffix("gb/s").strip())
    except ValueError:
        raise InputError(
            f"unknown link {text!r}: use nvlink, pcie3, pcie4 or pcie5 (optionally with lanes, "
            "e.g. pcie4x8) or a bandwidth in GB/s",
            field="link",
        ) from None
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"{{link}} bandwidth must be a positive number of GB/s, got {text!r}", field="link")
    return Link(
        name=f"{value:g} GB/s",
        kind="custom",
        bandwidth_gb_per_s=value,
        hop_latency_us=PCIE_HOP_US,
        source="user-supplied bandwidth; PCIe hop latency assumed",
    )


def nvlink(hardware: HardwareSpec) -> Link:
    if not hardware.nvlink_gb_per_s:
        raise InputError(
            f"{hardware.name} has no NVLink figure in the catalog; give {{link}} pcie4, pcie5 or a bandwidth in GB/s",
            field="link",
        )
    return Link(
        name="nvlink",
        kind="nvlink",
        bandwidth_gb_per_s=hardware.nvlink_gb_per_s / 2.0,
        hop_latency_us=NVLINK_HOP_US,
        source=f"{hardware.name} NVLink {hardware.nvlink_gb_per_s:g} GB/s bidirectional, halved per direction",
    )


def allreduce_costs(devices: int, link: Link) -> tuple[tuple[float, float], tuple[float, float]]:
    """The ring all-reduce's two protocols as (seconds fixed, seconds per byte of payload): NCCL's
    low-latency LL at a quarter of the link's rate, and Simple at the full rate after a longer
    start-up (module docstring). A step costs the cheaper one: `min(a + b S)` over the two."""
    steps = 2.0 * (devices - 1)
    latency = (ALLREDUCE_LAUNCH_US + steps * link.hop_latency_us) * US
    per_byte = steps / devices / link.effective_bytes_per_s
    extra_hop = SIMPLE_EXTRA_HOP_US["nvlink" if link.kind == "nvlink" else "pcie"]
    simple = latency + (SIMPLE_EXTRA_BASE_US + steps * extra_hop) * US
    return (latency, per_byte / LL_BANDWIDTH_SHARE), (simple, per_byte)


ALLREDUCE_PROTOCOLS = ("low-latency", "bulk")  # in the order `allreduce_costs` returns them


def _protocol_times_s(payload_bytes: float, devices: int, link: Link) -> list[float]:
    return [fixed + per_byte * payload_bytes for fixed, per_byte in allreduce_costs(devices, link)]


def allreduce_time_s(payload_bytes: float, devices: int, link: Link) -> float:
    """Ring all-reduce of `payload_bytes`: the cheaper of NCCL's LL and Simple protocols; 0 on one device."""
    if devices <= 1:
        return 0.0
    return min(_protocol_times_s(payload_bytes, devices, link))


def allreduce_protocol(payload_bytes: float, devices: int, link: Link) -> str:
    """Which protocol `allreduce_time_s` priced: "low-latency" (LL) or "bulk" (Simple)."""
    times = _protocol_times_s(payload_bytes, devices, link)
    return ALLREDUCE_PROTOCOLS[times.index(min(times))]


def hop_time_s(payload_bytes: float, link: Link) -> float:
    """One point-to-point transfer: `hop + S / (eta_link BW)`."""
    return link.hop_latency_us * US + payload_bytes / link.effective_bytes_per_s


def activation_bytes(model: ModelSpec, tokens: float) -> float:
    """What crosses a link per sync: `tokens * hidden * 2` bytes (0 for a bare model with no hidden size)."""
    return tokens * model.hidden_size * ACTIVATION_BYTES
