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

Links between nodes (`INTERCONNECTS`, `parse_interconnect`), per GPU and per direction, for
multi-node layouts (`--nodes`, `--inter-link`):

- InfiniBand NDR, 400 Gb/s per GPU: one ConnectX-7 per GPU in a DGX H100/H200 ("NVIDIA DGX H100/H200
  User Guide", hardware overview: 8 x single-port ConnectX-7 VPI, up to 400 Gb/s InfiniBand or
  Ethernet), 50 GB/s per direction. HDR (200 Gb/s, DGX A100's ConnectX-6) 25 GB/s. XDR, 800 Gb/s per
  GPU: ConnectX-8 SuperNIC on GB300 / B300 systems (NVIDIA Quantum-X800 InfiniBand platform), 100 GB/s.
- RoCE at 400 GbE (Spectrum-X, the same ConnectX-7 in Ethernet mode): 50 GB/s; 200 GbE 25 GB/s.
- The network hop: NCCL prices a network step at 5 us for its low-latency tree and 2.7-14 us for the
  ring protocols (`hwLat[NCCL_HW_NET]` in `src/graph/tuning.cc`); 5 us per hop is used for IB and RoCE,
  where NVLink's is 2 us.
- An NVLink domain (`nvl72`: GB200/GB300 NVL72, `nvl36`): every GPU of the rack reaches every other
  over NVLink 5 at 1.8 TB/s bidirectional per GPU (NVIDIA GB200 NVL72 product page), 900 GB/s per
  direction, NVLink's 2 us hop; the domain spans `domain_gpus` GPUs, so EP and TP inside it never
  touch a NIC.
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
    domain_gpus: int = 0  # an NVLink domain across nodes (NVL72): GPUs that share it; 0 for a NIC or a node's own link

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


NET_HOP_US = 5.0  # NCCL tuning.cc hwLat[NCCL_HW_NET], low-latency tree
INTERCONNECT_SOURCES = {
    "dgx-h100": "https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html",
    "quantum-x800": "https://www.nvidia.com/en-us/networking/products/infiniband/quantum-x800/",
    "gb200-nvl72": "https://www.nvidia.com/en-us/data-center/gb200-nvl72/",
    "nccl-tuning": "https://github.com/NVIDIA/nccl/blob/master/src/graph/tuning.cc",
}
# name -> (per-direction GB/s per GPU, hop us, NVLink domain GPUs, source)
INTERCONNECTS: dict[str, tuple[float, float, int, str]] = {
    "ib-hdr": (25.0, NET_HOP_US, 0, "InfiniBand HDR 200 Gb/s per GPU (DGX A100 ConnectX-6); hop: NCCL tuning.cc NET latency"),
    "ib-ndr": (50.0, NET_HOP_US, 0, f"InfiniBand NDR 400 Gb/s per GPU (ConnectX-7, {INTERCONNECT_SOURCES['dgx-h100']}); hop: NCCL tuning.cc NET latency"),
    "ib-xdr": (100.0, NET_HOP_US, 0, f"InfiniBand XDR 800 Gb/s per GPU (ConnectX-8, {INTERCONNECT_SOURCES['quantum-x800']}); hop: NCCL tuning.cc NET latency"),
    "roce-200": (25.0, NET_HOP_US, 0, "RoCE 200 GbE per GPU; hop: NCCL tuning.cc NET latency"),
    "roce-400": (50.0, NET_HOP_US, 0, "RoCE 400 GbE per GPU (Spectrum-X, ConnectX-7 in Ethernet mode); hop: NCCL tuning.cc NET latency"),
    "nvl36": (900.0, NVLINK_HOP_US, 36, f"NVLink 5 domain of 36 GPUs, 1.8 TB/s bidirectional per GPU ({INTERCONNECT_SOURCES['gb200-nvl72']})"),
    "nvl72": (900.0, NVLINK_HOP_US, 72, f"NVLink 5 domain of 72 GPUs, 1.8 TB/s bidirectional per GPU ({INTERCONNECT_SOURCES['gb200-nvl72']})"),
}
INTERCONNECT_ALIASES = {
    "ndr": "ib-ndr", "infiniband": "ib-ndr", "ib": "ib-ndr", "xdr": "ib-xdr", "hdr": "ib-hdr",
    "roce": "roce-400", "nvl-72": "nvl72", "gb200-nvl72": "nvl72", "nvl-36": "nvl36",
}


def parse_interconnect(text: str | None) -> Link:
    """The link between nodes: ib-ndr (default), ib-xdr, ib-hdr, roce-400, roce-200, nvl72, nvl36, or GB/s per GPU."""
    key = (text or "ib-ndr").strip().lower()
    key = INTERCONNECT_ALIASES.get(key, key)
    if key in INTERCONNECTS:
        bw, hop, domain, source = INTERCONNECTS[key]
        return Link(name=key, kind="nvlink" if domain else "custom", bandwidth_gb_per_s=bw, hop_latency_us=hop,
                    source=source, domain_gpus=domain)
    try:
        value = float(key.removesuffix("gb/s").strip())
    except ValueError:
        raise InputError(
            f"unknown inter-node link {text!r}: use {', '.join(INTERCONNECTS)} or a bandwidth in GB/s per GPU",
            field="inter_link",
        ) from None
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"{{inter_link}} bandwidth must be a positive number of GB/s, got {text!r}", field="inter_link")
    return Link(name=f"{value:g} GB/s", kind="custom", bandwidth_gb_per_s=value, hop_latency_us=NET_HOP_US,
                source="user-supplied bandwidth per GPU; NCCL's network hop latency assumed")


def alltoall_time_s(payload_bytes: float, devices: int, local_devices: int, local: Link, remote: Link | None) -> float:
    """One all-to-all where each of `devices` GPUs sends `payload_bytes` spread evenly over all of them
    (its own share stays): `(local_devices - 1) / devices` of it over the node's link, the rest over
    `remote` (the NIC), both at once; the slower part and one hop of the slowest link used."""
    if devices <= 1:
        return 0.0
    fixed, per_byte = alltoall_costs(devices, local_devices, local, remote)
    return fixed + per_byte * payload_bytes


def alltoall_costs(devices: int, local_devices: int, local: Link, remote: Link | None) -> tuple[float, float]:
    """(seconds fixed, seconds per byte a GPU sends) of `alltoall_time_s`."""
    if devices <= 1:
        return 0.0, 0.0
    local_devices = max(1, min(local_devices, devices))
    intra = (local_devices - 1) / devices / local.effective_bytes_per_s
    inter = 0.0
    hop = local.hop_latency_us
    if local_devices < devices:
        if remote is None:
            raise ValueError("an all-to-all across nodes needs the inter-node link")
        inter = (devices - local_devices) / devices / remote.effective_bytes_per_s
        hop = max(hop, remote.hop_latency_us)
    return (ALLREDUCE_LAUNCH_US + hop) * US, max(intra, inter)


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
